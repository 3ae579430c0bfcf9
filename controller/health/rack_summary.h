// Rack and pod aggregates: node counts by state and summed fabric rates per rack
// (one ToR switch) and per pod (one spine group), so congestion hot spots show up
// where they are. Pure aggregation over per-node summaries the inventory takes under
// its lock; served by AdminService.ListRacks and exported as the weft_rack_* gauges.
// Thread-compatible: plain values and a free function.
#ifndef WEFT_CONTROLLER_HEALTH_RACK_SUMMARY_H_
#define WEFT_CONTROLLER_HEALTH_RACK_SUMMARY_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "controller/health/nic_rates.h"
#include "proto/weft/v1/admin.pb.h"

namespace weft::controller {

// One node as the aggregation sees it: where it is, its state, its current rates
// (zero while it is not reporting).
struct NodeSummary {
  std::string pod;
  std::string rack;
  weft::v1::NodeState state = weft::v1::NODE_STATE_UNSPECIFIED;
  NicRates rates;
};

// Racks keyed by (pod, rack) sorted that way, and pods sorted by name; only the pod
// `pod` when it is not empty. Nodes without a rack or pod form the rack or pod "".
weft::v1::ListRacksResponse AggregateRacks(const std::vector<NodeSummary>& nodes,
                                           absl::string_view pod);

}  // namespace weft::controller

#endif  // WEFT_CONTROLLER_HEALTH_RACK_SUMMARY_H_
