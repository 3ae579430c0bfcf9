#include "agent/linux/linux_backend.h"

#include <fnmatch.h>

#include <algorithm>
#include <map>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "agent/host_counters.h"
#include "agent/tunables/linux_tunables.h"
#include "common/status_macros.h"

namespace weft::agent {
namespace {

constexpr char kIbClass[] = "sys/class/infiniband";
constexpr char kPciDevices[] = "sys/bus/pci/devices";
constexpr uint64_t kNvidiaVendor = 0x10de;

bool MatchesAny(const std::vector<std::string>& patterns, const std::string& name) {
  for (const auto& p : patterns) {
    if (fnmatch(p.c_str(), name.c_str(), 0) == 0) return true;
  }
  return false;
}

bool AllZeroGid(absl::string_view gid) {
  for (char c : gid) {
    if (c != '0' && c != ':') return false;
  }
  return true;
}

// Number of leading path components two resolved sysfs paths share.
int CommonDepth(absl::string_view a, absl::string_view b) {
  std::vector<absl::string_view> pa = absl::StrSplit(a, '/', absl::SkipEmpty());
  std::vector<absl::string_view> pb = absl::StrSplit(b, '/', absl::SkipEmpty());
  int depth = 0;
  while (depth < static_cast<int>(std::min(pa.size(), pb.size())) && pa[depth] == pb[depth]) {
    ++depth;
  }
  return depth;
}

// How long absent counter files stay unprobed: optional counters can be switched on at
// run time, and a firmware update can add files.
constexpr absl::Duration kReprobeAbsentEvery = absl::Seconds(60);

// The root-relative paths where `spec` may live, best first.
std::vector<std::string> CounterPaths(const std::string& port_dir, const HostCounterSpec& spec) {
  if (spec.group == CounterGroup::kPort) {
    std::vector<std::string> paths;
    if (spec.ext_file != nullptr) paths.push_back(absl::StrCat(port_dir, "/counters_ext/", spec.ext_file));
    paths.push_back(absl::StrCat(port_dir, "/counters/", spec.file));
    return paths;
  }
  // A switchdev representor's hardware counters carry a vport_ prefix.
  return {absl::StrCat(port_dir, "/hw_counters/", spec.file),
          absl::StrCat(port_dir, "/hw_counters/", kVportPrefix, spec.file)};
}

// Why a file could not be used, without its path: "Permission denied".
std::string Reason(const absl::Status& status) {
  absl::string_view message = status.message();
  const size_t colon = message.rfind(": ");
  return std::string(colon == absl::string_view::npos ? message : message.substr(colon + 2));
}

}  // namespace

std::string NvidiaGpuModel(uint32_t device_id) {
  static const std::map<uint32_t, const char*> kModels = {
      {0x20b0, "A100 SXM4 40GB"}, {0x20b2, "A100 SXM4 80GB"}, {0x20b5, "A100 PCIe 80GB"},
      {0x20f1, "A100 PCIe 40GB"}, {0x2330, "H100 SXM5 80GB"}, {0x2331, "H100 PCIe"},
      {0x2324, "H800"},           {0x2335, "H200 SXM 141GB"}, {0x233a, "H800 NVL"},
      {0x2901, "B200"},           {0x26b9, "L40S"},           {0x27b8, "L4"},
  };
  auto it = kModels.find(device_id);
  if (it != kModels.end()) return it->second;
  char buf[32];
  snprintf(buf, sizeof(buf), "NVIDIA 0x%04x", device_id);
  return buf;
}

LinuxNicBackend::LinuxNicBackend(LinuxBackendOptions options, EthtoolReader* ethtool,
                                 const Clock* clock)
    : options_(std::move(options)), sysfs_(options_.root), ethtool_(ethtool), clock_(clock) {}

LinuxNicBackend::LinuxNicBackend(LinuxBackendOptions options,
                                 std::unique_ptr<EthtoolReader> ethtool, const Clock* clock)
    : LinuxNicBackend(std::move(options), ethtool.get(), clock) {
  owned_ethtool_ = std::move(ethtool);
}

bool LinuxNicBackend::Selected(const std::string& device, const std::string& netdev) const {
  if (!options_.include_devices.empty() && !MatchesAny(options_.include_devices, device)) {
    return false;
  }
  if (MatchesAny(options_.exclude_devices, device)) return false;
  if (!options_.include_netdevs.empty() && !MatchesAny(options_.include_netdevs, netdev)) {
    return false;
  }
  return !MatchesAny(options_.exclude_netdevs, netdev);
}

absl::StatusOr<weft::v1::Nic> LinuxNicBackend::DiscoverPort(const std::string& device,
                                                            uint32_t port) {
  const std::string dev_dir = absl::StrCat(kIbClass, "/", device);
  const std::string port_dir = absl::StrCat(dev_dir, "/ports/", port);
  weft::v1::Nic nic;
  nic.set_device(device);
  nic.set_port(port);
  // A port whose state cannot be read is still reported (state UNSPECIFIED): its
  // counters may be fine.
  absl::StatusOr<std::string> state_text = sysfs_.ReadString(port_dir + "/state");
  if (!state_text.ok() && !sysfs_.Exists(port_dir)) return state_text.status();
  absl::StatusOr<weft::v1::PortState> state =
      state_text.ok() ? ParsePortState(*state_text) : state_text.status();
  if (state.ok()) {
    nic.set_state(*state);
  } else {
    nic.add_discovery_warnings(absl::StrCat("port state: ", state.status().message()));
  }
  if (auto layer = sysfs_.ReadString(port_dir + "/link_layer"); layer.ok()) {
    nic.set_link_layer(*layer);
  }
  if (auto rate = sysfs_.ReadString(port_dir + "/rate"); rate.ok()) {
    if (auto mbps = ParseRateMbps(*rate); mbps.ok()) nic.set_speed_mbps(*mbps);
  }
  if (auto pci = sysfs_.LinkTargetName(dev_dir + "/device"); pci.ok()) {
    nic.set_pci_address(*pci);
  }
  auto numa = sysfs_.ReadI64(dev_dir + "/device/numa_node");
  nic.set_numa_node(numa.ok() ? static_cast<int32_t>(*numa) : -1);

  // The GID table: non-zero entries with a type; their netdev names the port's netdev.
  if (auto gids = sysfs_.List(port_dir + "/gids"); gids.ok()) {
    std::vector<uint32_t> indices;
    for (const auto& name : *gids) {
      uint32_t index;
      if (absl::SimpleAtoi(name, &index)) indices.push_back(index);
    }
    std::sort(indices.begin(), indices.end());
    for (uint32_t index : indices) {
      auto gid = sysfs_.ReadString(absl::StrCat(port_dir, "/gids/", index));
      if (!gid.ok() || AllZeroGid(*gid)) continue;
      auto type_text = sysfs_.ReadString(absl::StrCat(port_dir, "/gid_attrs/types/", index));
      if (!type_text.ok()) continue;  // sysfs answers EINVAL for an unused slot
      auto type = ParseGidType(*type_text);
      if (!type.ok()) continue;
      weft::v1::GidEntry* entry = nic.add_gids();
      entry->set_index(index);
      entry->set_gid(*gid);
      entry->set_type(*type);
      if (auto ndev = sysfs_.ReadString(absl::StrCat(port_dir, "/gid_attrs/ndevs/", index));
          ndev.ok()) {
        entry->set_netdev(*ndev);
        if (nic.netdev().empty()) nic.set_netdev(*ndev);
      }
    }
  }
  if (nic.netdev().empty()) {
    // No GID yet (link never came up): the PCI function's net/ entry.
    if (auto nets = sysfs_.List(dev_dir + "/device/net"); nets.ok() && !nets->empty()) {
      nic.set_netdev(nets->front());
    }
  }
  if (!nic.netdev().empty()) {
    if (auto mtu = sysfs_.ReadU64(absl::StrCat("sys/class/net/", nic.netdev(), "/mtu"));
        mtu.ok()) {
      nic.set_mtu(static_cast<uint32_t>(*mtu));
    }
  }
  return nic;
}

std::vector<weft::v1::Gpu> LinuxNicBackend::DiscoverGpus(
    const std::vector<weft::v1::Nic>& nics) {
  std::vector<weft::v1::Gpu> gpus;
  auto devices = sysfs_.List(kPciDevices);
  if (!devices.ok()) return gpus;
  // Resolved PCI paths of the NICs, for tree distance.
  std::vector<std::string> nic_paths;
  for (const auto& nic : nics) {
    // A device without a PCI link (no `device` symlink) is nowhere in the PCI tree.
    auto path = nic.pci_address().empty()
                    ? absl::StatusOr<std::string>(absl::NotFoundError("no PCI address"))
                    : sysfs_.Resolve(absl::StrCat(kPciDevices, "/", nic.pci_address()));
    nic_paths.push_back(path.ok() ? *path : "");
  }
  for (const auto& address : *devices) {
    const std::string dir = absl::StrCat(kPciDevices, "/", address);
    auto vendor = sysfs_.ReadU64(dir + "/vendor");
    auto pci_class = sysfs_.ReadU64(dir + "/class");
    if (!vendor.ok() || !pci_class.ok() || *vendor != kNvidiaVendor) continue;
    const uint64_t base_sub = *pci_class >> 8;  // 0x0302 3D controller, 0x0300 VGA
    if (base_sub != 0x0302 && base_sub != 0x0300) continue;
    weft::v1::Gpu gpu;
    gpu.set_index(static_cast<uint32_t>(gpus.size()));
    gpu.set_pci_address(address);
    auto numa = sysfs_.ReadI64(dir + "/numa_node");
    gpu.set_numa_node(numa.ok() ? static_cast<int32_t>(*numa) : -1);
    auto device_id = sysfs_.ReadU64(dir + "/device");
    gpu.set_model(device_id.ok() ? NvidiaGpuModel(static_cast<uint32_t>(*device_id))
                                 : "NVIDIA");
    auto gpu_path = sysfs_.Resolve(dir);
    // Closest NIC: deepest common ancestor in the PCI tree (same switch beats same root
    // complex), then same NUMA node, then discovery order.
    int best = -1;
    std::pair<int, int> best_score{-1, -1};
    for (size_t i = 0; i < nics.size(); ++i) {
      const int depth =
          gpu_path.ok() && !nic_paths[i].empty() ? CommonDepth(*gpu_path, nic_paths[i]) : 0;
      const int same_numa = nics[i].numa_node() == gpu.numa_node() ? 1 : 0;
      const std::pair<int, int> score{depth, same_numa};
      if (score > best_score) {
        best_score = score;
        best = static_cast<int>(i);
      }
    }
    if (best >= 0) gpu.set_closest_nic(nics[best].device());
    gpus.push_back(gpu);
  }
  return gpus;
}

absl::StatusOr<NodeInventory> LinuxNicBackend::Discover() {
  auto devices = sysfs_.List(kIbClass);
  if (!devices.ok()) {
    return absl::NotFoundError(absl::StrCat("no RDMA devices: ", devices.status().message(),
                                            " (is the mlx5_ib / rdma driver loaded?)"));
  }
  NodeInventory inventory;
  std::vector<Port> ports;
  for (const auto& device : *devices) {
    auto port_names = sysfs_.List(absl::StrCat(kIbClass, "/", device, "/ports"));
    if (!port_names.ok()) continue;  // vanished while we looked
    for (const auto& port_name : *port_names) {
      uint32_t port = 0;
      if (!absl::SimpleAtoi(port_name, &port)) continue;
      auto nic = DiscoverPort(device, port);
      if (!nic.ok() || !Selected(device, nic->netdev())) continue;
      ports.push_back(Port{device, port, nic->netdev(), nic->link_layer(), nullptr});
      inventory.nics.push_back(*std::move(nic));
    }
  }
  if (options_.verbs != nullptr) {
    const std::string reason =
        options_.verbs_no_device_reason ? options_.verbs_no_device_reason() : "";
    IfindexToName netdev_of = options_.netdev_of_ifindex;
    if (!netdev_of) netdev_of = NetdevOfIfindex;
    std::string note = ApplyVerbsView(*options_.verbs, reason, netdev_of, &inventory.nics);
    if (!note.empty()) inventory.notes.push_back(std::move(note));
  }
  inventory.gpus = DiscoverGpus(inventory.nics);
  ports_ = std::move(ports);
  tunables_.clear();
  std::vector<std::string> not_roce;
  for (const weft::v1::Nic& nic : inventory.nics) {
    if (!IsRoceLinkLayer(nic.link_layer())) {
      not_roce.push_back(absl::StrCat(nic.device(), " port ", nic.port(), " (", nic.link_layer(), ")"));
      continue;
    }
    tunables_.push_back(MakeLinuxNicTunables(options_.root, nic, options_.dcb.get()));
  }
  if (!not_roce.empty()) {
    inventory.notes.push_back(absl::StrCat(
        absl::StrJoin(not_roce, ", "),
        ": not RoCE; QoS (trust, PFC, ETS, ToS) and DCQCN tunables are Ethernet settings, so "
        "they are neither read nor written there; counters, state and rate are reported"));
  }
  discovered_ = true;
  return inventory;
}

std::vector<NicTunables*> LinuxNicBackend::Tunables() {
  std::vector<NicTunables*> out;
  for (const std::unique_ptr<NicTunables>& nic : tunables_) out.push_back(nic.get());
  return out;
}

std::unique_ptr<LinuxNicBackend::PortFiles> LinuxNicBackend::OpenPortFiles(const Port& port) {
  const std::string port_dir = absl::StrCat(kIbClass, "/", port.device, "/ports/", port.port);
  auto files = std::make_unique<PortFiles>();
  if (absl::StatusOr<SysfsFile> state = SysfsFile::Open(sysfs_, port_dir + "/state"); state.ok()) {
    files->state.push_back(*std::move(state));
  } else {
    files->state_error = Reason(state.status());
  }
  for (size_t i = 0; i < HostCounterSpecs().size(); ++i) files->unopened.push_back(i);
  ProbeCounters(port, files.get());
  return files;
}

void LinuxNicBackend::ProbeCounters(const Port& port, PortFiles* files) {
  const std::string port_dir = absl::StrCat(kIbClass, "/", port.device, "/ports/", port.port);
  files->probed_at = clock_->Now();
  files->absent.clear();
  const bool has_hw_counters = sysfs_.Exists(port_dir + "/hw_counters");
  if (!has_hw_counters) files->absent.push_back("hw_counters/");
  std::vector<size_t> still_unopened;
  for (size_t i : files->unopened) {
    const HostCounterSpec& spec = HostCounterSpecs()[i];
    absl::Status why = absl::NotFoundError("absent");
    bool opened = false;
    for (const std::string& path : CounterPaths(port_dir, spec)) {
      absl::StatusOr<SysfsFile> file = SysfsFile::Open(sysfs_, path);
      if (file.ok()) {
        files->counters.push_back({i, *std::move(file)});
        opened = true;
        break;
      }
      if (!absl::IsNotFound(file.status())) why = file.status();
    }
    if (opened) continue;
    still_unopened.push_back(i);
    if (!ExpectedOnPort(spec, has_hw_counters, IsRoceLinkLayer(port.link_layer))) continue;
    files->absent.push_back(absl::IsNotFound(why) ? std::string(spec.file)
                                                  : absl::StrCat(spec.file, ": ", Reason(why)));
  }
  files->unopened = std::move(still_unopened);
}

RawNicReading LinuxNicBackend::ReadPort(Port& port) {
  RawNicReading reading;
  reading.device = port.device;
  reading.port = port.port;
  reading.timestamp = clock_->Now();
  const std::string port_dir = absl::StrCat(kIbClass, "/", port.device, "/ports/", port.port);
  if (port.files == nullptr) {
    port.files = OpenPortFiles(port);
  } else if (!port.files->unopened.empty() &&
             reading.timestamp - port.files->probed_at >= kReprobeAbsentEvery) {
    ProbeCounters(port, port.files.get());  // only the files not open yet
  }
  PortFiles& files = *port.files;
  // A read(2) that finds the attribute gone drops the open files, so the next
  // collection reopens them: a driver reload gives the port new attribute files.
  bool reopen = false;
  std::vector<std::string> missing = files.absent;

  if (!files.state.empty()) {
    absl::StatusOr<std::string> state_text = files.state.front().ReadString();
    if (!state_text.ok()) {
      reopen = true;
      reading.warnings.push_back(
          absl::StrCat(port.device, ": port state: ", Reason(state_text.status())));
    } else if (auto state = ParsePortState(*state_text); state.ok()) {
      reading.port_state = *state;
    } else {
      reading.warnings.push_back(absl::StrCat(port.device, ": ", state.status().message()));
    }
  } else {
    reading.warnings.push_back(absl::StrCat(port.device, ": port state: ", files.state_error));
  }

  RawNicCounters& c = reading.counters;
  for (const OpenCounter& counter : files.counters) {
    const HostCounterSpec& spec = HostCounterSpecs()[counter.spec];
    absl::StatusOr<std::string> text = counter.file.ReadString();
    if (!text.ok()) {
      // ENODEV/ENOENT: the attribute went away (a driver reload); reopen everything.
      reopen = reopen || absl::IsNotFound(text.status());
      if (spec.group != CounterGroup::kOptional) {
        missing.push_back(absl::StrCat(spec.file, ": ", Reason(text.status())));
      }
      continue;
    }
    if (IsNoPma(*text)) {
      if (spec.group != CounterGroup::kOptional) {
        missing.push_back(absl::StrCat(spec.file, ": ", kNoPmaText));
      }
      continue;
    }
    absl::StatusOr<uint64_t> value = ParseU64(*text);
    if (!value.ok()) {
      missing.push_back(
          absl::StrCat(spec.file, ": not a number: '", absl::CHexEscape(text->substr(0, 32)), "'"));
      continue;
    }
    SetHostCounter(spec, *value, &c);
  }
  if (!sysfs_.Exists(port_dir)) {
    // The device went away while we read it: what we read is not one consistent sample.
    port.files.reset();
    reading.error = absl::StrCat("device ", port.device, " disappeared while being read");
    reading.counters = RawNicCounters();
    return reading;
  }
  if (reopen) port.files.reset();
  std::sort(missing.begin(), missing.end());
  reading.missing_counters = std::move(missing);

  if (!port.netdev.empty()) {
    auto stats = ethtool_->ReadStats(port.netdev);
    if (stats.ok()) {
      c.pfc = PfcFromEthtool(*stats);
    } else {
      reading.warnings.push_back(absl::StrCat(port.device, ": ethtool statistics of ",
                                              port.netdev, ": ", stats.status().message()));
    }
  }
  return reading;
}

absl::StatusOr<std::vector<RawNicReading>> LinuxNicBackend::ReadCounters() {
  if (!discovered_) {
    RETURN_IF_ERROR(Discover().status());
  }
  std::vector<RawNicReading> readings;
  readings.reserve(ports_.size());
  for (Port& port : ports_) readings.push_back(ReadPort(port));
  return readings;
}

}  // namespace weft::agent
