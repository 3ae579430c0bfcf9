#include "agent/inspect.h"

#include <algorithm>
#include <functional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "agent/counter_math.h"
#include "agent/tunables/tunable_params.h"
#include "common/text_output.h"

namespace weft::agent {
namespace {

using weft::v1::NicSample;

std::string PortStateName(uint32_t state) {
  const std::string& name = weft::v1::PortState_Name(static_cast<weft::v1::PortState>(state));
  return name.empty() ? absl::StrCat(state) : name.substr(std::string("PORT_STATE_").size());
}

// One counter row: its name and how to find it in a sample (nullptr when absent).
struct CounterRow {
  std::string name;
  std::function<const weft::v1::Counter*(const NicSample&)> get;
};

std::vector<CounterRow> CounterRows(const weft::v1::TelemetryBatch& batch) {
  std::vector<CounterRow> rows;
  auto port = [](const NicSample& s) { return s.has_port_counters() ? &s.port_counters() : nullptr; };
  auto cc = [](const NicSample& s) { return s.has_congestion() ? &s.congestion() : nullptr; };
  auto rt = [](const NicSample& s) { return s.has_retransmission() ? &s.retransmission() : nullptr; };
  auto rdma = [](const NicSample& s) { return s.has_rdma_traffic() ? &s.rdma_traffic() : nullptr; };
  // Every Counter field of the groups, in proto order, by reflection: a counter added to
  // telemetry.proto shows up here without a change. A counter the sample lacks is null.
  auto add_group = [&rows](const google::protobuf::Descriptor* d, absl::string_view prefix,
                           auto group) {
    for (int i = 0; i < d->field_count(); ++i) {
      const google::protobuf::FieldDescriptor* f = d->field(i);
      rows.push_back({absl::StrCat(prefix, f->name()),
                      [group, f](const NicSample& s) -> const weft::v1::Counter* {
                        const google::protobuf::Message* m = group(s);
                        if (m == nullptr || !m->GetReflection()->HasField(*m, f)) return nullptr;
                        return static_cast<const weft::v1::Counter*>(
                            &m->GetReflection()->GetMessage(*m, f));
                      }});
    }
  };
  add_group(weft::v1::PortCounters::descriptor(), "", port);
  add_group(weft::v1::CongestionCounters::descriptor(), "", cc);
  add_group(weft::v1::RetransmissionCounters::descriptor(), "", rt);
  add_group(weft::v1::RdmaTrafficCounters::descriptor(), "rdma_", rdma);
  // PFC rows for every priority any NIC reports.
  std::vector<bool> prio(8, false);
  for (const NicSample& s : batch.samples()) {
    for (const auto& p : s.pfc()) {
      if (p.priority() < 8) prio[p.priority()] = true;
    }
  }
  for (uint32_t p = 0; p < 8; ++p) {
    if (!prio[p]) continue;
    for (const auto& [suffix, getter] :
         std::vector<std::pair<std::string, const weft::v1::Counter& (weft::v1::PriorityPfcCounters::*)() const>>{
             {"rx_pause", &weft::v1::PriorityPfcCounters::rx_pause},
             {"tx_pause", &weft::v1::PriorityPfcCounters::tx_pause},
             {"rx_pause_duration_us", &weft::v1::PriorityPfcCounters::rx_pause_duration_us},
             {"tx_pause_duration_us", &weft::v1::PriorityPfcCounters::tx_pause_duration_us}}) {
      rows.push_back({absl::StrCat("prio", p, "_", suffix),
                      [p, getter = getter](const NicSample& s) -> const weft::v1::Counter* {
                        for (const auto& entry : s.pfc()) {
                          if (entry.priority() == p) return &(entry.*getter)();
                        }
                        return nullptr;
                      }});
    }
  }
  return rows;
}

// The tunables table: one row per parameter, one column per NIC, back in the canonical
// text of agent/tunables/tunable_params.h.
std::string FormatTunables(const weft::v1::NodeSnapshot& snapshot, std::string* problems) {
  std::vector<std::vector<std::string>> rows = {{"TUNABLE"}};
  std::vector<ParamMap> values;
  for (const weft::v1::NicTunablesReading& nic : snapshot.tunables()) {
    rows[0].push_back(nic.device());
    weft::v1::DesiredState state;
    *state.mutable_qos() = nic.qos();
    *state.mutable_dcqcn() = nic.dcqcn();
    ParamMap& map = values.emplace_back();
    for (const ParamValue& p : DesiredParameters(state)) map[p.parameter] = p.value;
    // Group the unreadable parameters by reason: one line per NIC and reason.
    std::vector<std::pair<std::string, std::vector<std::string>>> by_reason;
    for (const weft::v1::ParameterError& e : nic.unreadable()) {
      map.erase(e.parameter());  // e.g. DesiredParameters() derives trust from the map
      auto it = std::find_if(by_reason.begin(), by_reason.end(),
                             [&e](const auto& entry) { return entry.first == e.reason(); });
      if (it == by_reason.end()) it = by_reason.insert(by_reason.end(), {e.reason(), {}});
      it->second.push_back(e.parameter());
    }
    for (const auto& [reason, parameters] : by_reason) {
      absl::StrAppend(problems, "tunable ", nic.device(), ": ", absl::StrJoin(parameters, ", "),
                      ": ", reason, "\n");
    }
  }
  for (const std::string& name : AllParameterNames()) {
    std::vector<std::string> cells = {name};
    for (size_t n = 0; n < values.size(); ++n) {
      auto it = values[n].find(name);
      std::string cell = it == values[n].end() ? "-" : it->second;
      // An empty switch list is "none", which DesiredParameters() leaves out.
      const bool readable = std::none_of(
          snapshot.tunables(n).unreadable().begin(), snapshot.tunables(n).unreadable().end(),
          [&name](const weft::v1::ParameterError& e) { return e.parameter() == name; });
      if (cell == "-" && readable && (name == kRpEnabledParam || name == kNpEnabledParam)) {
        cell = "none";
      }
      cells.push_back(std::move(cell));
    }
    rows.push_back(std::move(cells));
  }
  return FormatTable(rows);
}

}  // namespace

void AddTunables(const std::vector<NicTunables*>& nics, weft::v1::NodeSnapshot* snapshot) {
  for (NicTunables* nic : nics) {
    weft::v1::NicTunablesReading* reading = snapshot->add_tunables();
    reading->set_device(nic->device());
    ParamMap params;
    for (const std::string& name : AllParameterNames()) {
      absl::StatusOr<std::string> value = nic->Read(name);
      if (value.ok()) {
        params[name] = *value;
      } else {
        weft::v1::ParameterError* error = reading->add_unreadable();
        error->set_device(nic->device());
        error->set_parameter(name);
        error->set_reason(std::string(value.status().message()));
      }
    }
    ParamsToProto(params, reading->mutable_qos(), reading->mutable_dcqcn());
  }
}

weft::v1::NodeSnapshot MakeSnapshot(const NodeInventory& inventory,
                                    const std::vector<RawNicReading>& readings) {
  weft::v1::NodeSnapshot snapshot;
  for (const auto& nic : inventory.nics) *snapshot.mutable_node()->add_nics() = nic;
  for (const auto& gpu : inventory.gpus) *snapshot.mutable_node()->add_gpus() = gpu;
  for (const auto& note : inventory.notes) snapshot.add_notes(note);
  for (const RawNicReading& reading : readings) {
    if (snapshot.telemetry().collected_at_us() == 0) {
      snapshot.mutable_telemetry()->set_collected_at_us(absl::ToUnixMicros(reading.timestamp));
    }
    *snapshot.mutable_telemetry()->add_samples() =
        ComputeNicUpdate(/*previous=*/nullptr, reading).sample;
  }
  return snapshot;
}

std::string FormatSnapshotTable(const weft::v1::NodeSnapshot& snapshot) {
  std::string out = "NICs\n";
  std::vector<std::vector<std::string>> nics = {
      {"DEVICE", "PORT", "NETDEV", "PCI", "NUMA", "LINK", "STATE", "SPEED_GBPS", "MTU",
       "PATH_MTU", "ROCEV2_GIDS", "LLDP_NEIGHBOR", "SEEN_BY"}};
  for (const auto& nic : snapshot.node().nics()) {
    std::vector<std::string> v2;
    for (const auto& gid : nic.gids()) {
      if (gid.type() == weft::v1::GID_TYPE_ROCE_V2) v2.push_back(absl::StrCat(gid.index()));
    }
    nics.push_back({nic.device(), absl::StrCat(nic.port()), nic.netdev(), nic.pci_address(),
                    absl::StrCat(nic.numa_node()), nic.link_layer(), PortStateName(nic.state()),
                    absl::StrCat(nic.speed_mbps() / 1000.0), absl::StrCat(nic.mtu()),
                    nic.active_mtu() == 0 ? "-" : absl::StrCat(nic.active_mtu()),
                    v2.empty() ? "-" : absl::StrJoin(v2, ","),
                    nic.has_lldp_neighbor() ? absl::StrCat(nic.lldp_neighbor().chassis_name(), " ",
                                                           nic.lldp_neighbor().port_id())
                                            : "-",
                    nic.discovered_by().empty() ? "-" : nic.discovered_by()});
  }
  absl::StrAppend(&out, FormatTable(nics), "\nGPUs\n");
  if (snapshot.node().gpus().empty()) {
    absl::StrAppend(&out, "(none found)\n");
  } else {
    std::vector<std::vector<std::string>> gpus = {
        {"INDEX", "PCI", "NUMA", "MODEL", "CLOSEST_NIC"}};
    for (const auto& gpu : snapshot.node().gpus()) {
      gpus.push_back({absl::StrCat(gpu.index()), gpu.pci_address(), absl::StrCat(gpu.numa_node()),
                      gpu.model(), gpu.closest_nic().empty() ? "-" : gpu.closest_nic()});
    }
    absl::StrAppend(&out, FormatTable(gpus));
  }

  const auto& samples = snapshot.telemetry().samples();
  std::vector<std::vector<std::string>> counters = {{"COUNTER"}};
  for (const NicSample& s : samples) counters[0].push_back(s.device());
  for (const CounterRow& row : CounterRows(snapshot.telemetry())) {
    std::vector<std::string> cells = {row.name};
    bool any = false;
    for (const NicSample& s : samples) {
      const weft::v1::Counter* c = s.error().empty() ? row.get(s) : nullptr;
      any = any || c != nullptr;
      cells.push_back(c == nullptr ? "-" : absl::StrCat(c->total()));
    }
    // A counter no NIC has (an optional counter left off) is no row.
    if (any) counters.push_back(std::move(cells));
  }
  absl::StrAppend(&out, "\nCounters (cumulative)\n", FormatTable(counters));
  std::string problems;
  if (!snapshot.tunables().empty()) {
    absl::StrAppend(&out, "\nQoS and DCQCN tunables\n", FormatTunables(snapshot, &problems));
  }
  for (const auto& note : snapshot.notes()) absl::StrAppend(&problems, "note    ", note, "\n");
  for (const auto& nic : snapshot.node().nics()) {
    for (const auto& w : nic.discovery_warnings()) {
      absl::StrAppend(&problems, "warning ", nic.device(), ": ", w, "\n");
    }
  }
  for (const NicSample& s : samples) {
    if (!s.error().empty()) absl::StrAppend(&problems, "error   ", s.device(), ": ", s.error(), "\n");
    for (const auto& w : s.warnings()) absl::StrAppend(&problems, "warning ", w, "\n");
    if (!s.missing_counters().empty()) {
      absl::StrAppend(&problems, "missing ", s.device(), " port ", s.port(), ": ",
                      absl::StrJoin(s.missing_counters(), ", "), "\n");
    }
  }
  if (!problems.empty()) absl::StrAppend(&out, "\n", problems);
  return out;
}

}  // namespace weft::agent
