#include "bench/sim/job_models.h"

#include <utility>

namespace weft::bench {
namespace {

using sim::AllReduceAlgorithm;
using sim::TrainingJobSpec;

constexpr double kGpuFlops = 989e12 * 0.40;

}  // namespace

double ComputeSeconds(double active_parameters) {
  return 6 * active_parameters * kTokensPerNode / (kGpusPerNode * kGpuFlops);
}

TrainingJobSpec DenseJob(std::string name, double parameters, AllReduceAlgorithm algorithm,
                         int nodes) {
  TrainingJobSpec spec;
  spec.name = std::move(name);
  spec.model = {.parameters = parameters,
                .bytes_per_gradient_element = 2,
                .tokens_per_iteration = kTokensPerNode * nodes,
                .compute_s_per_iteration = ComputeSeconds(parameters)};
  spec.layout.all_reduce = algorithm;
  return spec;
}

double MoeAllToAllBytesPerNode() { return 27 * 4 * kTokensPerNode * 6 * 2048 * 2.0; }

TrainingJobSpec MoeJob(std::string name, int nodes, int expert_group_nodes) {
  TrainingJobSpec spec;
  spec.name = std::move(name);
  spec.model = {.parameters = 1.4e9,
                .bytes_per_gradient_element = 2,
                .tokens_per_iteration = kTokensPerNode * nodes,
                .compute_s_per_iteration = ComputeSeconds(2.8e9),
                .alltoall_bytes_per_node = MoeAllToAllBytesPerNode()};
  spec.layout.expert_group_nodes = expert_group_nodes;
  return spec;
}

double PipelineActivationBytesPerNode(int hidden) { return 16 * 4096 * hidden * 2.0; }

TrainingJobSpec PipelineJob(std::string name, double parameters, int hidden, int nodes,
                            int stages) {
  TrainingJobSpec spec;
  spec.name = std::move(name);
  spec.model = {.parameters = parameters,
                .bytes_per_gradient_element = 2,
                .tokens_per_iteration = kTokensPerNode * nodes,
                .compute_s_per_iteration = ComputeSeconds(parameters),
                .activation_bytes_per_node = PipelineActivationBytesPerNode(hidden)};
  spec.layout.pipeline_stages = stages;
  return spec;
}

}  // namespace weft::bench
