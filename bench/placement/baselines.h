// Baseline placers the benchmark compares the engine with. Each chooses `nodes` free,
// healthy, undrained nodes and returns them in rank order, which for all of them is
// hostname order (how a scheduler hands a host list to mpirun / torchrun):
//   kFirstFit    the first free nodes in hostname order (Slurm's default linear
//                selection without a topology plugin);
//   kTreeBestFit like Slurm's topology/tree: the smallest single rack that fits; else
//                the smallest pod whose free nodes fit, taking its racks with the most
//                free nodes first; else the whole cluster the same way. (An
//                approximation of the plugin's behaviour, not its code.)
//   kRandom      a uniformly random choice.
// Pure functions; thread-safe apart from the caller's random engine.
#ifndef WEFT_BENCH_PLACEMENT_BASELINES_H_
#define WEFT_BENCH_PLACEMENT_BASELINES_H_

#include <random>
#include <string>
#include <vector>

#include "placement/topology.h"

namespace weft::bench {

enum class Baseline { kFirstFit, kTreeBestFit, kRandom };

std::string BaselineName(Baseline baseline);

// The chosen nodes in hostname order, or an empty vector when fewer than `nodes` are
// free. `taken` is indexed by NodeId.
std::vector<placement::NodeId> PlaceBaseline(Baseline baseline,
                                             const placement::Topology& topo,
                                             const std::vector<char>& taken, int nodes,
                                             std::mt19937_64& rng);

}  // namespace weft::bench

#endif  // WEFT_BENCH_PLACEMENT_BASELINES_H_
