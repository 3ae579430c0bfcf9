#include "controller/health/rack_summary.h"

#include <map>
#include <set>
#include <utility>

namespace weft::controller {
namespace {

void Count(weft::v1::NodeState state, weft::v1::NodeCounts* counts) {
  counts->set_total(counts->total() + 1);
  switch (state) {
    case weft::v1::NODE_STATE_HEALTHY:
      counts->set_healthy(counts->healthy() + 1);
      break;
    case weft::v1::NODE_STATE_DEGRADED:
      counts->set_degraded(counts->degraded() + 1);
      break;
    case weft::v1::NODE_STATE_DOWN:
      counts->set_down(counts->down() + 1);
      break;
    case weft::v1::NODE_STATE_DRAINED:
      counts->set_drained(counts->drained() + 1);
      break;
    default:
      break;
  }
}

struct Totals {
  weft::v1::NodeCounts counts;
  NicRates rates;
};

}  // namespace

weft::v1::ListRacksResponse AggregateRacks(const std::vector<NodeSummary>& nodes,
                                           absl::string_view pod) {
  std::map<std::pair<std::string, std::string>, Totals> racks;
  std::map<std::string, Totals> pods;
  std::map<std::string, std::set<std::string>> racks_of_pod;
  // Nodes usually come rack by rack (sorted by name, and names follow racks): a node
  // in the same rack as the one before reuses its entries instead of looking them up
  // (map entries do not move), which is most of the cost at thousands of nodes.
  const NodeSummary* previous = nullptr;
  Totals* rack = nullptr;
  Totals* in_pod = nullptr;
  for (const NodeSummary& node : nodes) {
    if (!pod.empty() && node.pod != pod) continue;
    if (previous == nullptr || node.pod != previous->pod || node.rack != previous->rack) {
      rack = &racks[{node.pod, node.rack}];
      in_pod = &pods[node.pod];
      racks_of_pod[node.pod].insert(node.rack);
      previous = &node;
    }
    Count(node.state, &rack->counts);
    rack->rates += node.rates;
    Count(node.state, &in_pod->counts);
    in_pod->rates += node.rates;
  }
  weft::v1::ListRacksResponse response;
  for (const auto& [key, totals] : racks) {
    weft::v1::RackStatus* rack = response.add_racks();
    rack->set_pod(key.first);
    rack->set_rack(key.second);
    *rack->mutable_nodes() = totals.counts;
    *rack->mutable_rates() = ToProto(totals.rates);
  }
  for (const auto& [name, totals] : pods) {
    weft::v1::PodStatus* status = response.add_pods();
    status->set_pod(name);
    status->set_racks(static_cast<uint32_t>(racks_of_pod[name].size()));
    *status->mutable_nodes() = totals.counts;
    *status->mutable_rates() = ToProto(totals.rates);
  }
  return response;
}

}  // namespace weft::controller
