#include "bench/placement/baselines.h"

#include <algorithm>

namespace weft::bench {

using placement::NodeId;
using placement::PodId;
using placement::RackId;
using placement::Topology;

namespace {

bool Usable(const Topology& topo, const std::vector<char>& taken, NodeId id) {
  const placement::TopoNode& n = topo.node(id);
  return !taken[id] && n.healthy && !n.drained;
}

void SortByName(const Topology& topo, std::vector<NodeId>* nodes) {
  std::sort(nodes->begin(), nodes->end(),
            [&](NodeId a, NodeId b) { return topo.node(a).name < topo.node(b).name; });
}

// Racks' usable nodes, by rack id.
std::vector<std::vector<NodeId>> FreeByRack(const Topology& topo,
                                            const std::vector<char>& taken) {
  std::vector<std::vector<NodeId>> out(topo.racks().size());
  for (RackId r = 0; r < static_cast<RackId>(topo.racks().size()); ++r) {
    for (NodeId id : topo.rack(r).nodes) {
      if (Usable(topo, taken, id)) out[r].push_back(id);
    }
    SortByName(topo, &out[r]);
  }
  return out;
}

// Takes racks of `racks` with the most free nodes first until `nodes` are chosen.
std::vector<NodeId> MostFreeRacksFirst(const Topology& topo,
                                       const std::vector<std::vector<NodeId>>& free,
                                       std::vector<RackId> racks, int nodes) {
  std::stable_sort(racks.begin(), racks.end(),
                   [&](RackId a, RackId b) { return free[a].size() > free[b].size(); });
  std::vector<NodeId> chosen;
  for (RackId r : racks) {
    for (NodeId id : free[r]) {
      if (static_cast<int>(chosen.size()) == nodes) break;
      chosen.push_back(id);
    }
  }
  if (static_cast<int>(chosen.size()) < nodes) return {};
  SortByName(topo, &chosen);
  return chosen;
}

}  // namespace

std::string BaselineName(Baseline baseline) {
  switch (baseline) {
    case Baseline::kFirstFit:
      return "first fit (hostname order)";
    case Baseline::kTreeBestFit:
      return "tree best fit";
    case Baseline::kRandom:
      return "random";
  }
  return "";
}

std::vector<NodeId> PlaceBaseline(Baseline baseline, const Topology& topo,
                                  const std::vector<char>& taken, int nodes,
                                  std::mt19937_64& rng) {
  std::vector<NodeId> usable;
  for (NodeId id = 0; id < static_cast<NodeId>(topo.nodes().size()); ++id) {
    if (Usable(topo, taken, id)) usable.push_back(id);
  }
  if (static_cast<int>(usable.size()) < nodes) return {};
  switch (baseline) {
    case Baseline::kFirstFit: {
      SortByName(topo, &usable);
      usable.resize(nodes);
      return usable;
    }
    case Baseline::kRandom: {
      std::shuffle(usable.begin(), usable.end(), rng);
      usable.resize(nodes);
      SortByName(topo, &usable);
      return usable;
    }
    case Baseline::kTreeBestFit:
      break;
  }
  const std::vector<std::vector<NodeId>> free = FreeByRack(topo, taken);
  // Leaf level: the rack with the fewest free nodes that still fits.
  RackId best_rack = -1;
  for (RackId r = 0; r < static_cast<RackId>(free.size()); ++r) {
    if (static_cast<int>(free[r].size()) < nodes) continue;
    if (best_rack < 0 || free[r].size() < free[best_rack].size()) best_rack = r;
  }
  if (best_rack >= 0) {
    return std::vector<NodeId>(free[best_rack].begin(), free[best_rack].begin() + nodes);
  }
  // Spine level: the pod with the fewest free nodes that still fits.
  PodId best_pod = -1;
  size_t best_pod_free = 0;
  for (PodId p = 0; p < static_cast<PodId>(topo.pods().size()); ++p) {
    size_t pod_free = 0;
    for (RackId r : topo.pod(p).racks) pod_free += free[r].size();
    if (static_cast<int>(pod_free) < nodes) continue;
    if (best_pod < 0 || pod_free < best_pod_free) best_pod = p, best_pod_free = pod_free;
  }
  if (best_pod >= 0) return MostFreeRacksFirst(topo, free, topo.pod(best_pod).racks, nodes);
  std::vector<RackId> all(topo.racks().size());
  for (RackId r = 0; r < static_cast<RackId>(all.size()); ++r) all[r] = r;
  return MostFreeRacksFirst(topo, free, all, nodes);
}

}  // namespace weft::bench
