#include "cli/node_format.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "common/pfc_share.h"
#include "google/protobuf/util/json_util.h"

namespace weft {
namespace {

using weft::v1::NodeState;
using weft::v1::NodeStatus;

std::string Fixed(double value, int digits) { return absl::StrFormat("%.*f", digits, value); }

double SampleTxGbps(const weft::v1::NicSample& s) {
  return s.port_counters().xmit_bytes().per_second() * 8 / 1e9;
}
double SampleRxGbps(const weft::v1::NicSample& s) {
  return s.port_counters().rcv_bytes().per_second() * 8 / 1e9;
}

std::string PortStateName(uint32_t state) {
  const std::string& name =
      weft::v1::PortState_Name(static_cast<weft::v1::PortState>(state));
  return name.empty() ? absl::StrCat(state) : name.substr(std::string("PORT_STATE_").size());
}

std::string RoceV2GidIndex(const weft::v1::Nic& nic) {
  for (const auto& gid : nic.gids()) {
    if (gid.type() == weft::v1::GID_TYPE_ROCE_V2) return absl::StrCat(gid.index());
  }
  return "-";
}

std::string StateCell(const NodeStatus& node) {
  std::string cell = NodeStateName(node.state());
  if (node.state() == weft::v1::NODE_STATE_DRAINED && !node.reporting()) {
    absl::StrAppend(&cell, " (down)");
  }
  return cell;
}

std::string FormatTimeUs(int64_t time_us) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", absl::FromUnixMicros(time_us),
                          absl::UTCTimeZone());
}

std::string OrDash(const std::string& value) { return value.empty() ? "-" : value; }

std::string DrainSourceName(weft::v1::DrainSource source) {
  switch (source) {
    case weft::v1::DRAIN_SOURCE_OPERATOR:
      return "operator";
    case weft::v1::DRAIN_SOURCE_AUTO:
      return "auto";
    default:
      return "unknown";
  }
}

// "operator dev-alice", "auto", "operator" (no identity recorded).
std::string DrainerName(weft::v1::DrainSource source, const std::string& who) {
  if (who.empty()) return DrainSourceName(source);
  return absl::StrCat(DrainSourceName(source), " ", who);
}

std::string EventCell(const weft::v1::Event& event) {
  switch (event.kind()) {
    case weft::v1::EVENT_KIND_REGISTERED:
      return "registered";
    case weft::v1::EVENT_KIND_STATE_CHANGED:
      return absl::StrCat(NodeStateName(event.from_state()), " -> ",
                          NodeStateName(event.to_state()));
    case weft::v1::EVENT_KIND_DRAINED:
      return absl::StrCat("drained by ", DrainerName(event.drained_by(), event.who()));
    case weft::v1::EVENT_KIND_UNDRAINED:
      return absl::StrCat("undrained by ", DrainerName(event.drained_by(), event.who()));
    case weft::v1::EVENT_KIND_RULE_FIRED:
      return absl::StrCat("fired ", event.finding().rule());
    case weft::v1::EVENT_KIND_RULE_CLEARED:
      return absl::StrCat("cleared ", event.finding().rule());
    default:
      return "unknown";
  }
}

// The number columns shared by the rack and pod tables.
std::vector<std::string> CountAndRateCells(const weft::v1::NodeCounts& n,
                                           const weft::v1::NodeRates& r) {
  return {absl::StrCat(n.total()),
          absl::StrCat(n.healthy()),
          absl::StrCat(n.degraded()),
          absl::StrCat(n.down()),
          absl::StrCat(n.drained()),
          Fixed(r.tx_gbps(), 1),
          Fixed(r.rx_gbps(), 1),
          FormatRatePerS(r.ecn_marked_per_s()),
          FormatRatePerS(r.cnp_sent_per_s()),
          FormatShare(r.pfc_rx_pause_share()),
          FormatShare(r.pfc_tx_pause_share())};
}

const std::vector<std::string> kCountAndRateHeader = {
    "NODES",   "HEALTHY", "DEGRADED",  "DOWN",  "DRAINED",
    "TX_GBPS", "RX_GBPS", "ECN_PKT/S", "CNP/S", "PFC_RX_PAUSED", "PFC_TX_PAUSED"};

std::string NoteCell(const NodeStatus& node) {
  std::vector<std::string> parts;
  if (!node.drain_reason().empty()) parts.push_back(node.drain_reason());
  const std::string findings = FindingsBrief(node);
  if (!findings.empty()) {
    parts.push_back(findings);
  } else if (node.state() == weft::v1::NODE_STATE_DEGRADED) {
    parts.push_back("recovering (no rule firing)");
  }
  return absl::StrJoin(parts, "; ");
}

}  // namespace

std::string FormatRatePerS(double per_s) {
  return per_s >= 100 ? Fixed(per_s, 0) : Fixed(per_s, 1);
}

std::string NodeStateName(NodeState state) {
  const std::string& name = weft::v1::NodeState_Name(state);
  const std::string prefix = "NODE_STATE_";
  return name.rfind(prefix, 0) == 0 ? name.substr(prefix.size()) : name;
}


std::string FormatNodesTable(const weft::v1::ListNodesResponse& response) {
  std::vector<const NodeStatus*> nodes;
  for (const auto& n : response.nodes()) nodes.push_back(&n);
  std::sort(nodes.begin(), nodes.end(), [](const NodeStatus* a, const NodeStatus* b) {
    return std::make_pair(a->info().rack(), a->info().name()) <
           std::make_pair(b->info().rack(), b->info().name());
  });
  std::vector<std::vector<std::string>> rows = {{"NODE", "RACK", "STATE", "NICS", "TX_GBPS",
                                                 "RX_GBPS", "ECN_PKT/S", "CNP/S",
                                                 "PFC_RX_PAUSED", "PFC_TX_PAUSED", "NOTE"}};
  for (const NodeStatus* n : nodes) {
    const auto& r = n->rates();
    const std::string note = NoteCell(*n);
    rows.push_back({n->info().name(), n->info().rack().empty() ? "-" : n->info().rack(),
                    StateCell(*n), absl::StrCat(n->info().nics_size()), Fixed(r.tx_gbps(), 1),
                    Fixed(r.rx_gbps(), 1), FormatRatePerS(r.ecn_marked_per_s()),
                    FormatRatePerS(r.cnp_sent_per_s()),
                    FormatShare(r.pfc_rx_pause_share()), FormatShare(r.pfc_tx_pause_share()),
                    note});
  }
  return FormatTable(rows);
}

std::string FormatNodeDetail(const NodeStatus& node) {
  const auto& info = node.info();
  std::string out;
  absl::StrAppend(&out, "Node:      ", info.name(), "\n");
  absl::StrAppend(&out, "Rack/Pod:  ", info.rack().empty() ? "-" : info.rack(), " / ",
                  info.pod().empty() ? "-" : info.pod(), "\n");
  absl::StrAppend(&out, "State:     ", StateCell(node), "\n");
  if (node.state() != node.health() &&
      node.health() != weft::v1::NODE_STATE_UNSPECIFIED) {
    absl::StrAppend(&out, "Health:    ", NodeStateName(node.health()), " by the health rules\n");
  }
  if (!node.drain_reason().empty()) {
    absl::StrAppend(&out, "Drained:   ", node.drain_reason(), " (by ",
                    DrainerName(node.drained_by(), node.drained_who()), ")\n");
  }
  absl::StrAppend(&out, "Agent:     ", info.agent_version(), "  session epoch ",
                  node.session_epoch(), "\n");
  if (node.last_seen_us() > 0) {
    absl::StrAppend(&out, "Last seen: ", FormatTimeUs(node.last_seen_us()), "\n");
  }
  if (node.findings_size() > 0) {
    absl::StrAppend(&out, "\nFindings\n");
    std::vector<std::vector<std::string>> finding_rows = {
        {"RULE", "NIC", "VALUE", "THRESHOLD", "SINCE", "DETAIL"}};
    for (const weft::v1::Finding& f : node.findings()) {
      finding_rows.push_back({f.rule(), absl::StrCat(f.device(), "/", f.port()),
                              absl::StrFormat("%g", f.value()),
                              absl::StrFormat("%g", f.threshold()),
                              f.since_us() > 0 ? FormatTimeUs(f.since_us()) : "-",
                              f.detail()});
    }
    absl::StrAppend(&out, FormatTable(finding_rows));
  }
  absl::StrAppend(&out, "\nNICs\n");
  std::vector<std::vector<std::string>> nic_rows = {
      {"DEVICE", "PORT", "NETDEV", "PCI", "NUMA", "STATE", "SPEED_GBPS", "MTU", "ROCEV2_GID",
       "TX_GBPS", "RX_GBPS", "ECN_PKT/S", "CNP_SENT/S", "CNP_HANDLED/S", "PFC_RX_PAUSED",
       "PFC_TX_PAUSED", "ERROR"}};
  for (const auto& status : node.nics()) {
    const auto& nic = status.nic();
    const auto& s = status.latest();
    const bool has_sample = status.has_latest() && s.error().empty();
    auto cell = [&](double v, bool rate) {
      return has_sample ? (rate ? FormatRatePerS(v) : Fixed(v, 1)) : std::string("-");
    };
    const PfcPauseShares pause = PauseSharesOf(s);
    auto share = [&](double v) { return has_sample && pause.has_pfc ? FormatShare(v) : "-"; };
    nic_rows.push_back(
        {nic.device(), absl::StrCat(nic.port()), nic.netdev(), nic.pci_address(),
         absl::StrCat(nic.numa_node()),
         has_sample ? PortStateName(s.port_state()) : PortStateName(nic.state()),
         Fixed(nic.speed_mbps() / 1000.0, 0), absl::StrCat(nic.mtu()), RoceV2GidIndex(nic),
         cell(SampleTxGbps(s), false), cell(SampleRxGbps(s), false),
         cell(s.congestion().np_ecn_marked_roce_packets().per_second(), true),
         cell(s.congestion().np_cnp_sent().per_second(), true),
         cell(s.congestion().rp_cnp_handled().per_second(), true),
         share(pause.rx), share(pause.tx), s.error().empty() ? "" : s.error()});
  }
  absl::StrAppend(&out, FormatTable(nic_rows));
  absl::StrAppend(&out, "\nGPUs\n");
  std::vector<std::vector<std::string>> gpu_rows = {
      {"INDEX", "PCI", "NUMA", "MODEL", "CLOSEST_NIC"}};
  for (const auto& gpu : info.gpus()) {
    gpu_rows.push_back({absl::StrCat(gpu.index()), gpu.pci_address(),
                        absl::StrCat(gpu.numa_node()), gpu.model().empty() ? "-" : gpu.model(),
                        gpu.closest_nic().empty() ? "-" : gpu.closest_nic()});
  }
  if (info.gpus().empty()) {
    absl::StrAppend(&out, "(none)\n");
  } else {
    absl::StrAppend(&out, FormatTable(gpu_rows));
  }
  return out;
}

std::string FindingsBrief(const NodeStatus& node) {
  constexpr int kNamed = 2;
  std::vector<std::string> named;
  for (int i = 0; i < node.findings_size() && i < kNamed; ++i) {
    named.push_back(absl::StrCat(node.findings(i).rule(), "@", node.findings(i).device()));
  }
  std::string brief = absl::StrJoin(named, ", ");
  if (node.findings_size() > kNamed) {
    absl::StrAppend(&brief, " +", node.findings_size() - kNamed, " more");
  }
  return brief;
}

std::string FormatEventsTable(const weft::v1::ListEventsResponse& response) {
  std::vector<std::vector<std::string>> rows = {{"TIME", "NODE", "EVENT", "DETAIL"}};
  for (const weft::v1::Event& event : response.events()) {
    rows.push_back({FormatTimeUs(event.time_us()), OrDash(event.node()), EventCell(event),
                    event.message()});
  }
  std::string out = FormatTable(rows);
  if (response.truncated()) {
    absl::StrAppend(&out, "(older matching events may be missing: the controller keeps the "
                          "newest ",
                    response.capacity(), " events, or --limit cut them)\n");
  }
  return out;
}

std::string FormatRacksTable(const weft::v1::ListRacksResponse& response) {
  std::vector<std::vector<std::string>> racks = {{"POD", "RACK"}};
  racks[0].insert(racks[0].end(), kCountAndRateHeader.begin(), kCountAndRateHeader.end());
  for (const weft::v1::RackStatus& rack : response.racks()) {
    std::vector<std::string> row = {OrDash(rack.pod()), OrDash(rack.rack())};
    const std::vector<std::string> cells = CountAndRateCells(rack.nodes(), rack.rates());
    row.insert(row.end(), cells.begin(), cells.end());
    racks.push_back(std::move(row));
  }
  std::vector<std::vector<std::string>> pods = {{"POD", "RACKS"}};
  pods[0].insert(pods[0].end(), kCountAndRateHeader.begin(), kCountAndRateHeader.end());
  for (const weft::v1::PodStatus& pod : response.pods()) {
    std::vector<std::string> row = {OrDash(pod.pod()), absl::StrCat(pod.racks())};
    const std::vector<std::string> cells = CountAndRateCells(pod.nodes(), pod.rates());
    row.insert(row.end(), cells.begin(), cells.end());
    pods.push_back(std::move(row));
  }
  return absl::StrCat("Racks\n", FormatTable(racks), "\nPods\n", FormatTable(pods));
}


}  // namespace weft
