// The training jobs the fabric-twin benches run (bench/sim/placement_on_twin,
// twin_bench, dcqcn_on_jobs): real model sizes on nodes of 8 H100s, so that compute and
// communication keep their real proportions. Compute per iteration = 6 · active
// parameters · tokens / (GPUs · 989 TFLOP/s · 40 % MFU), one 4096-token sequence per GPU
// per iteration (tokens grow with the nodes, compute per iteration does not).
// Each builder returns a spec without nodes: the caller (a placer) fills them.
// Pure functions; thread-safe.
#ifndef WEFT_BENCH_SIM_JOB_MODELS_H_
#define WEFT_BENCH_SIM_JOB_MODELS_H_

#include <string>

#include "sim/training_job.h"

namespace weft::bench {

inline constexpr int kGpusPerNode = 8;
inline constexpr double kTokensPerNode = kGpusPerNode * 4096.0;

// Seconds of forward + backward per iteration for `active_parameters`.
double ComputeSeconds(double active_parameters);

// A dense model of `parameters`, bf16 gradients, all-reduced over `nodes` nodes.
sim::TrainingJobSpec DenseJob(std::string name, double parameters,
                              sim::AllReduceAlgorithm algorithm, int nodes);

// DeepSeek-MoE-16B-like: 2.8e9 active, 1.4e9 all-reduced (non-routed), all-to-all in
// expert groups of `expert_group_nodes`: 27 MoE layers × 4 (dispatch, combine; forward,
// backward) × tokens per node × top-6 × hidden 2048 × 2 bytes = 87 GB per node per
// iteration.
sim::TrainingJobSpec MoeJob(std::string name, int nodes, int expert_group_nodes);
double MoeAllToAllBytesPerNode();

// A dense model of `parameters` in `stages` pipeline stages: 16 micro-batches per
// replica, 4096 × `hidden` × 2 bytes each way per micro-batch.
sim::TrainingJobSpec PipelineJob(std::string name, double parameters, int hidden, int nodes,
                                 int stages);
double PipelineActivationBytesPerNode(int hidden);

}  // namespace weft::bench

#endif  // WEFT_BENCH_SIM_JOB_MODELS_H_
