// The benchmark's link-level time model for one iteration's collectives: time is
// bounded by the most loaded link, links being each node's NICs (egress and ingress
// separately) and each rack's ToR uplinks. Defaults: 8 NICs x 400 Gb/s per node
// (400 GB/s per direction); rack uplinks oversubscribed `oversubscription`:1, of which
// a job gets the share of its own nodes in the rack (its nodes x NIC rate /
// oversubscription): the rest of a busy rack's uplink belongs to the other jobs there.
// The spine layer between pods is taken as non-blocking. Pure; thread-safe.
#ifndef WEFT_BENCH_PLACEMENT_FABRIC_MODEL_H_
#define WEFT_BENCH_PLACEMENT_FABRIC_MODEL_H_

#include <vector>

#include "placement/traffic_model.h"

namespace weft::bench {

struct FabricModel {
  double node_bytes_per_s = 8 * 400e9 / 8;
  double oversubscription = 4;
};

// Seconds for the traffic in `loads`, node i of the job sitting in rack node_rack[i].
double IterationSeconds(const FabricModel& model, const placement::LinkLoads& loads,
                        const std::vector<int>& node_rack);

}  // namespace weft::bench

#endif  // WEFT_BENCH_PLACEMENT_FABRIC_MODEL_H_
