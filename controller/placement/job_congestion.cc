#include "controller/placement/job_congestion.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "controller/inventory/inventory.h"

namespace weft::controller {

NodesByName IndexNodesByName(const std::vector<weft::v1::NodeStatus> &nodes) {
  NodesByName index;
  for (const weft::v1::NodeStatus &node : nodes) index[node.info().name()] = &node;
  return index;
}

std::optional<std::string> NodeFindingOf(const std::string &name,
                                         const weft::v1::NodeStatus *status) {
  if (status == nullptr) return absl::StrCat(name, ": not registered");
  if (status->state() == weft::v1::NODE_STATE_HEALTHY) return std::nullopt;
  std::vector<std::string> why;
  if (status->state() == weft::v1::NODE_STATE_DRAINED && !status->drain_reason().empty()) {
    why.push_back(status->drain_reason());
  }
  if (!status->reporting()) why.push_back("not reporting");
  for (const weft::v1::Finding &finding : status->findings()) {
    // One rule firing on several NICs is one cause to a person reading the
    // job's line.
    if (std::find(why.begin(), why.end(), finding.rule()) == why.end()) {
      why.push_back(finding.rule());
    }
  }
  std::string line = absl::StrCat(name, ": ", NodeStateName(status->state()));
  if (!why.empty()) absl::StrAppend(&line, " (", absl::StrJoin(why, ", "), ")");
  return line;
}

weft::v1::JobCongestion JobCongestionOf(const weft::v1::PlacementResponse &reservation,
                                        const NodesByName &nodes) {
  weft::v1::JobCongestion congestion;
  for (const std::string &name : reservation.ring_order()) {
    auto it = nodes.find(name);
    const weft::v1::NodeStatus *status = it == nodes.end() ? nullptr : it->second;
    if (std::optional<std::string> finding = NodeFindingOf(name, status)) {
      congestion.add_findings(*std::move(finding));
    }
    if (status == nullptr) continue;
    const weft::v1::NodeRates &rates = status->rates();
    congestion.set_ecn_marked_per_s(congestion.ecn_marked_per_s() + rates.ecn_marked_per_s());
    congestion.set_cnp_sent_per_s(congestion.cnp_sent_per_s() + rates.cnp_sent_per_s());
    congestion.set_retransmits_per_s(congestion.retransmits_per_s() +
                                     rates.retransmissions_per_s());
    congestion.set_pfc_pause_share(std::max(
        {congestion.pfc_pause_share(), rates.pfc_rx_pause_share(), rates.pfc_tx_pause_share()}));
  }
  return congestion;
}

}  // namespace weft::controller
