#include "fabric/twin_host.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "common/status_macros.h"

namespace weft::fabric {
namespace {

// The usual RoCE netdev MTU: a 4096-byte path MTU plus RoCE v2 headers.
constexpr uint32_t kNetdevMtu = 4200;
constexpr char kGpuModel[] = "NVIDIA H100 80GB HBM3";

struct FaultKindName {
  weft::v1::FabricFaultKind proto;
  sim::TwinFaultKind twin;
};
constexpr FaultKindName kFaultKinds[] = {
    {weft::v1::FABRIC_FAULT_LINK_DOWN, sim::TwinFaultKind::kLinkDown},
    {weft::v1::FABRIC_FAULT_GRAY_LOSS, sim::TwinFaultKind::kGrayLoss},
    {weft::v1::FABRIC_FAULT_FLAPPING_LINK, sim::TwinFaultKind::kFlappingLink},
    {weft::v1::FABRIC_FAULT_PFC_STORM, sim::TwinFaultKind::kPfcStorm},
    {weft::v1::FABRIC_FAULT_DEGRADED_LINK, sim::TwinFaultKind::kDegradedLink},
    {weft::v1::FABRIC_FAULT_DEAD_NODE, sim::TwinFaultKind::kDeadNode},
};

bool NeedsCable(sim::TwinFaultKind kind) {
  return kind == sim::TwinFaultKind::kLinkDown || kind == sim::TwinFaultKind::kGrayLoss ||
         kind == sim::TwinFaultKind::kFlappingLink || kind == sim::TwinFaultKind::kDegradedLink;
}

std::string Hex16(uint32_t high, uint32_t low) { return absl::StrFormat("%02x%02x", high, low); }

// GIDs as mlx5 fills them for one IPv4 address: link-local and IPv4-mapped, v1 and v2.
void AddGids(uint32_t ipv4, weft::v1::Nic* nic) {
  const std::string link_local =
      absl::StrCat("fe80:0000:0000:0000:0000:0000:", Hex16(ipv4 >> 24, (ipv4 >> 16) & 0xff), ":",
                   Hex16((ipv4 >> 8) & 0xff, ipv4 & 0xff));
  const std::string mapped =
      absl::StrCat("0000:0000:0000:0000:0000:ffff:", Hex16(ipv4 >> 24, (ipv4 >> 16) & 0xff), ":",
                   Hex16((ipv4 >> 8) & 0xff, ipv4 & 0xff));
  const std::pair<std::string, weft::v1::GidType> gids[] = {
      {link_local, weft::v1::GID_TYPE_IB_ROCE_V1},
      {link_local, weft::v1::GID_TYPE_ROCE_V2},
      {mapped, weft::v1::GID_TYPE_IB_ROCE_V1},
      {mapped, weft::v1::GID_TYPE_ROCE_V2},
  };
  for (uint32_t index = 0; index < 4; ++index) {
    weft::v1::GidEntry* gid = nic->add_gids();
    gid->set_index(index);
    gid->set_gid(gids[index].first);
    gid->set_type(gids[index].second);
    gid->set_netdev(nic->netdev());
  }
}

weft::v1::Nic NicInventory(const sim::Nic& fabric_nic, int nics_on_node,
                           const sim::TwinNicReading& reading) {
  weft::v1::Nic nic;
  nic.set_device(reading.device);
  nic.set_port(1);
  nic.set_netdev(absl::StrCat("ens", fabric_nic.index + 1, "np0"));
  nic.set_pci_address(absl::StrFormat("0000:%02x:00.0", 0x1a + 0x10 * fabric_nic.index));
  nic.set_numa_node(fabric_nic.index < (nics_on_node + 1) / 2 ? 0 : 1);
  nic.set_link_layer("Ethernet");
  nic.set_state(reading.link_up ? weft::v1::PORT_STATE_ACTIVE : weft::v1::PORT_STATE_DOWN);
  nic.set_speed_mbps(static_cast<uint64_t>(reading.speed_bps / 1e6));
  nic.set_mtu(kNetdevMtu);
  nic.set_active_mtu(4096);
  nic.set_discovered_by("fabric twin");
  AddGids(fabric_nic.ipv4, &nic);
  return nic;
}

void AddGpus(int gpus, int nics, weft::v1::ReadNodeResponse* response) {
  for (int i = 0; i < gpus; ++i) {
    weft::v1::Gpu* gpu = response->add_gpus();
    gpu->set_index(i);
    gpu->set_pci_address(absl::StrFormat("0000:%02x:00.0", 0x18 + 0x10 * i));
    gpu->set_numa_node(i < (gpus + 1) / 2 ? 0 : 1);
    gpu->set_model(kGpuModel);
    if (nics > 0) gpu->set_closest_nic(absl::StrCat("mlx5_", int64_t{i} * nics / gpus));
  }
}

void CopyCounters(const sim::TwinNicReading& reading, weft::v1::FabricNicCounters* counters) {
  counters->mutable_port_counters()->insert(reading.port_counters.begin(),
                                            reading.port_counters.end());
  counters->mutable_hw_counters()->insert(reading.hw_counters.begin(), reading.hw_counters.end());
  counters->mutable_ethtool()->insert(reading.ethtool.begin(), reading.ethtool.end());
}

}  // namespace

std::string FaultIdName(int id) { return absl::StrCat("f", id); }

absl::StatusOr<int> ParseFaultId(absl::string_view id) {
  int number = 0;
  if (!absl::ConsumePrefix(&id, "f") || !absl::SimpleAtoi(id, &number) || number <= 0) {
    return absl::NotFoundError(absl::StrCat("no fault '", id,
                                            "': fault ids look like f1, f2 (weftctl fabric faults "
                                            "lists them), or 'all'"));
  }
  return number;
}

TwinHost::TwinHost(sim::Twin twin, int gpus_per_node)
    : gpus_per_node_(gpus_per_node), twin_(std::move(twin)) {}

bool TwinHost::HasNode(absl::string_view node) const {
  absl::MutexLock lock(&mu_);
  return twin_.NodeByName(node).ok();
}

std::vector<std::string> TwinHost::NodeNames() const {
  absl::MutexLock lock(&mu_);
  std::vector<std::string> names;
  for (const sim::TwinNode& node : twin_.topology().nodes) names.push_back(node.name);
  return names;
}

std::string TwinHost::DeadNodeFault(int node) const {
  for (const sim::TwinFault& fault : twin_.faults()) {
    if (fault.kind == sim::TwinFaultKind::kDeadNode && fault.node == node) {
      return FaultIdName(fault.id);
    }
  }
  return "";
}

absl::StatusOr<weft::v1::ReadNodeResponse> TwinHost::ReadNode(absl::string_view name) const {
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(const int node, twin_.NodeByName(name));
  if (const std::string fault = DeadNodeFault(node); !fault.empty()) {
    return absl::UnavailableError(absl::StrCat("node ", name, " is dead in the fabric twin (fault ",
                                               fault, "; weftctl fabric clear ", fault,
                                               " revives it)"));
  }
  const sim::TwinNode& twin_node = twin_.topology().nodes[node];
  weft::v1::ReadNodeResponse response;
  response.set_node(twin_node.name);
  response.set_rack(twin_node.rack);
  response.set_pod(twin_node.pod);
  response.set_fabric_time_s(twin_.time_s());
  const std::vector<sim::Nic>& nics = twin_.topology().fabric.nics();
  const int nics_on_node = static_cast<int>(
      std::count_if(nics.begin(), nics.end(), [&](const sim::Nic& n) { return n.node == node; }));
  for (int id = 0; id < static_cast<int>(nics.size()); ++id) {
    if (nics[id].node != node) continue;
    ASSIGN_OR_RETURN(const sim::TwinNicReading reading, twin_.ReadNic(id));
    ASSIGN_OR_RETURN(weft::v1::NicTunablesReading tunables, twin_.NicTunables(id));
    weft::v1::FabricNic* nic = response.add_nics();
    *nic->mutable_nic() = NicInventory(nics[id], nics_on_node, reading);
    CopyCounters(reading, nic->mutable_counters());
    *nic->mutable_tunables() = std::move(tunables);
  }
  AddGpus(gpus_per_node_, nics_on_node, &response);
  return response;
}

absl::StatusOr<int> TwinHost::NicOf(absl::string_view node, absl::string_view device) const {
  ASSIGN_OR_RETURN(const int node_id, twin_.NodeByName(node));
  return twin_.NicByDevice(node_id, device);
}

absl::Status TwinHost::SetNicTunables(const weft::v1::SetNicTunablesRequest& request) {
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(const int nic, NicOf(request.node(), request.device()));
  return twin_.SetNicTunables(nic, request.qos(), request.dcqcn());
}

absl::StatusOr<sim::TwinFault> TwinHost::FromProto(const weft::v1::FabricFault& fault) const {
  const auto kind = std::find_if(std::begin(kFaultKinds), std::end(kFaultKinds),
                                 [&](const FaultKindName& k) { return k.proto == fault.kind(); });
  if (kind == std::end(kFaultKinds)) {
    return absl::InvalidArgumentError(
        "fault kind unset: link_down, gray_loss, flapping_link, pfc_storm, degraded_link or "
        "dead_node");
  }
  sim::TwinFault out;
  out.kind = kind->twin;
  out.value = fault.value();
  const char* const kind_name = sim::TwinFaultKindName(out.kind);
  if (NeedsCable(out.kind)) {
    if (fault.link().empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          kind_name, " needs a link: a cable as weftctl fabric links names it, e.g. "
                     "tor-a--spine-0 or gpu-a01/mlx5_0--tor-a"));
    }
    ASSIGN_OR_RETURN(out.cable, twin_.CableByName(fault.link()));
  } else if (out.kind == sim::TwinFaultKind::kPfcStorm) {
    if (fault.node().empty() || fault.device().empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(kind_name, " needs a node and a NIC (e.g. --node gpu-b03 --nic mlx5_0)"));
    }
    ASSIGN_OR_RETURN(out.nic, NicOf(fault.node(), fault.device()));
  } else {
    if (fault.node().empty()) {
      return absl::InvalidArgumentError(absl::StrCat(kind_name, " needs a node"));
    }
    ASSIGN_OR_RETURN(out.node, twin_.NodeByName(fault.node()));
  }
  return out;
}

absl::StatusOr<weft::v1::FabricFault> TwinHost::ToProto(const sim::TwinFault& fault) const {
  weft::v1::FabricFault out;
  out.set_id(FaultIdName(fault.id));
  for (const FaultKindName& kind : kFaultKinds) {
    if (kind.twin == fault.kind) out.set_kind(kind.proto);
  }
  if (fault.cable >= 0) out.set_link(twin_.CableName(fault.cable));
  if (fault.nic >= 0) {
    const sim::Nic& nic = twin_.topology().fabric.nics()[fault.nic];
    out.set_node(twin_.topology().nodes[nic.node].name);
    out.set_device(absl::StrCat("mlx5_", nic.index));
  }
  if (fault.node >= 0) out.set_node(twin_.topology().nodes[fault.node].name);
  out.set_value(fault.value);
  out.set_injected_at_s(fault.injected_at_s);
  return out;
}

absl::StatusOr<weft::v1::FabricFault> TwinHost::InjectFault(const weft::v1::FabricFault& fault) {
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(const sim::TwinFault spec, FromProto(fault));
  ASSIGN_OR_RETURN(const sim::TwinFault injected, twin_.InjectFault(spec));
  return ToProto(injected);
}

absl::Status TwinHost::ClearFault(absl::string_view id) {
  absl::MutexLock lock(&mu_);
  if (id == "all") {
    twin_.ClearAllFaults();
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(const int number, ParseFaultId(id));
  return twin_.ClearFault(number);
}

weft::v1::ListFaultsResponse TwinHost::ListFaults() const {
  absl::MutexLock lock(&mu_);
  weft::v1::ListFaultsResponse response;
  for (const sim::TwinFault& fault : twin_.faults()) {
    absl::StatusOr<weft::v1::FabricFault> proto = ToProto(fault);
    if (proto.ok()) *response.add_faults() = *std::move(proto);
  }
  return response;
}

weft::v1::ListLinksResponse TwinHost::ListLinks(const weft::v1::ListLinksRequest& request) const {
  absl::MutexLock lock(&mu_);
  weft::v1::ListLinksResponse response;
  const sim::LiveModel& model = twin_.model();
  const std::vector<sim::Link>& links = model.fabric().links();
  for (int id = 0; id < static_cast<int>(links.size()); ++id) {
    const std::string from = twin_.VertexName(links[id].from);
    const std::string to = twin_.VertexName(links[id].to);
    if (!absl::StartsWith(from, request.prefix()) && !absl::StartsWith(to, request.prefix())) {
      continue;
    }
    const sim::PortState& port = model.ports()[id];
    if (request.busy_only() && port.rate_bps <= 0 && port.pause_rx_share <= 0) continue;
    weft::v1::FabricLink* link = response.add_links();
    link->set_name(twin_.CableName(id));
    link->set_from(from);
    link->set_to(to);
    link->set_capacity_bps(links[id].capacity_bps);
    link->set_rate_bps(port.rate_bps);
    link->set_utilization(port.utilization);
    link->set_queue_bytes(port.queue_bytes);
    link->set_mark_probability(port.mark_probability);
    link->set_pause_share(port.pause_rx_share);
    link->set_flows(port.flows);
    for (const sim::TwinFault& fault : twin_.faults()) {
      if (fault.kind == sim::TwinFaultKind::kLinkDown && fault.cable / 2 == id / 2) {
        link->set_down(true);
      }
    }
  }
  return response;
}

absl::Status TwinHost::StartJob(sim::TrainingJobSpec job, const std::vector<std::string>& nodes) {
  absl::MutexLock lock(&mu_);
  job.nodes.clear();
  for (const std::string& node : nodes) {
    ASSIGN_OR_RETURN(const int id, twin_.NodeByName(node));
    job.nodes.push_back(id);
  }
  return twin_.StartJob(std::move(job));
}

absl::Status TwinHost::StopJob(absl::string_view name) {
  absl::MutexLock lock(&mu_);
  return twin_.StopJob(name);
}

std::vector<TwinHost::JobView> TwinHost::Jobs() const {
  absl::MutexLock lock(&mu_);
  std::vector<JobView> views;
  for (sim::TwinJobStatus& status : twin_.jobs()) {
    JobView view;
    for (const int node : status.nodes) {
      const sim::TwinNode& twin_node = twin_.topology().nodes[node];
      view.nodes.push_back(twin_node.name);
      if (std::find(view.racks.begin(), view.racks.end(), twin_node.rack) == view.racks.end()) {
        view.racks.push_back(twin_node.rack);
      }
    }
    if (const int link = status.paths.hottest_link; link >= 0) {
      const sim::Link& hottest = twin_.topology().fabric.links()[link];
      view.hottest_link =
          absl::StrCat(twin_.VertexName(hottest.from), "->", twin_.VertexName(hottest.to));
    }
    view.status = std::move(status);
    views.push_back(std::move(view));
  }
  return views;
}

absl::Status TwinHost::Advance(double seconds) {
  absl::MutexLock lock(&mu_);
  return twin_.Advance(seconds);
}

double TwinHost::time_s() const {
  absl::MutexLock lock(&mu_);
  return twin_.time_s();
}

}  // namespace weft::fabric
