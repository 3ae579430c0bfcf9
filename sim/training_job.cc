#include "sim/training_job.h"

#include <algorithm>
#include <limits>
#include <map>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"

namespace weft::sim {
namespace {

absl::Status OutOfRange(const TrainingJobSpec& job, const std::string& field, double value,
                        const std::string& accepted) {
  return absl::InvalidArgumentError(absl::StrCat("job '", job.name, "': ", field, " = ", value,
                                                 " is out of range: accepted ", accepted));
}

// Node pairs (positions in a group, source → destination) and the bytes between them.
using PairBytes = std::map<std::pair<int, int>, double>;

void AddRing(int n, double bytes, PairBytes* pairs) {
  if (n < 2) return;
  for (int k = 0; k < n; ++k) (*pairs)[{k, (k + 1) % n}] += bytes;
}

// NCCL's double binary tree, as a heap-ordered tree over positions and the same tree over
// the positions reversed; every edge carries `bytes` each way in each tree.
void AddDoubleBinaryTree(int n, double bytes, PairBytes* pairs) {
  for (int mirrored = 0; mirrored < 2; ++mirrored) {
    auto at = [&](int i) { return mirrored ? n - 1 - i : i; };
    for (int i = 1; i < n; ++i) {
      const int child = at(i), parent = at((i - 1) / 2);
      (*pairs)[{child, parent}] += bytes;
      (*pairs)[{parent, child}] += bytes;
    }
  }
}

uint16_t TakePort(uint16_t* next_port) {
  const uint16_t port = *next_port;
  *next_port = port == 65535 ? kFirstEphemeralPort : static_cast<uint16_t>(port + 1);
  return port;
}

}  // namespace

const char* PhaseName(PhaseKind kind) {
  switch (kind) {
    case PhaseKind::kAllToAll:
      return "all-to-all";
    case PhaseKind::kPipelineSendRecv:
      return "pipeline send/recv";
    case PhaseKind::kAllReduce:
      return "all-reduce";
  }
  return "?";
}

absl::StatusOr<std::vector<JobPhase>> BuildJobPhases(const Fabric& fabric,
                                                     const TrainingJobSpec& job,
                                                     uint16_t* next_port) {
  const ModelSpec& m = job.model;
  const ParallelLayout& layout = job.layout;
  constexpr double kInf = std::numeric_limits<double>::infinity();
  if (!(m.parameters > 0) || m.parameters == kInf) {
    return OutOfRange(job, "model.parameters", m.parameters, "(0, inf)");
  }
  if (!(m.bytes_per_gradient_element > 0 && m.bytes_per_gradient_element <= 16)) {
    return OutOfRange(job, "model.bytes_per_gradient_element", m.bytes_per_gradient_element,
                      "(0, 16]");
  }
  if (!(m.tokens_per_iteration > 0) || m.tokens_per_iteration == kInf) {
    return OutOfRange(job, "model.tokens_per_iteration", m.tokens_per_iteration, "(0, inf)");
  }
  if (!(m.compute_s_per_iteration >= 0) || m.compute_s_per_iteration == kInf) {
    return OutOfRange(job, "model.compute_s_per_iteration", m.compute_s_per_iteration,
                      "[0, inf)");
  }
  if (!(m.alltoall_bytes_per_node >= 0) || m.alltoall_bytes_per_node == kInf) {
    return OutOfRange(job, "model.alltoall_bytes_per_node", m.alltoall_bytes_per_node,
                      "[0, inf)");
  }
  if (!(m.activation_bytes_per_node >= 0) || m.activation_bytes_per_node == kInf) {
    return OutOfRange(job, "model.activation_bytes_per_node", m.activation_bytes_per_node,
                      "[0, inf)");
  }
  if (!(job.host_bps_per_node > 0)) {
    return OutOfRange(job, "host_bps_per_node", job.host_bps_per_node, "(0, inf]");
  }
  if (job.dscp < -1 || job.dscp > 63) {
    return OutOfRange(job, "dscp", job.dscp, "[0, 63] or -1 (the sender's RoCE DSCP)");
  }
  const int n = static_cast<int>(job.nodes.size());
  if (n == 0) return OutOfRange(job, "nodes.size()", 0, "at least 1 node");
  if (layout.pipeline_stages < 1 || n % layout.pipeline_stages != 0) {
    return OutOfRange(job, "layout.pipeline_stages", layout.pipeline_stages,
                      absl::StrCat("a divisor of the job's ", n, " nodes"));
  }
  if (layout.expert_group_nodes < 0 ||
      (layout.expert_group_nodes > 0 && n % layout.expert_group_nodes != 0)) {
    return OutOfRange(job, "layout.expert_group_nodes", layout.expert_group_nodes,
                      absl::StrCat("0 (no all-to-all) or a divisor of the job's ", n, " nodes"));
  }
  if (layout.expert_group_nodes == 0 && m.alltoall_bytes_per_node > 0) {
    return OutOfRange(job, "layout.expert_group_nodes", 0,
                      "at least 1 when model.alltoall_bytes_per_node > 0");
  }

  // The node's NICs by index.
  std::vector<std::vector<int>> node_nics(fabric.num_nodes());
  for (int id = 0; id < static_cast<int>(fabric.nics().size()); ++id) {
    const Nic& nic = fabric.nics()[id];
    std::vector<int>& list = node_nics[nic.node];
    if (static_cast<int>(list.size()) <= nic.index) list.resize(nic.index + 1, -1);
    list[nic.index] = id;
  }
  absl::flat_hash_map<int, int> seen;
  int nics = -1;
  for (int k = 0; k < n; ++k) {
    const int node = job.nodes[k];
    if (node < 0 || node >= fabric.num_nodes()) {
      return OutOfRange(job, absl::StrCat("nodes[", k, "]"), node,
                        absl::StrCat("[0, ", fabric.num_nodes(), ") (the fabric's nodes)"));
    }
    if (auto [it, inserted] = seen.try_emplace(node, k); !inserted) {
      return OutOfRange(job, absl::StrCat("nodes[", k, "]"), node,
                        absl::StrCat("a node not already at nodes[", it->second, "]"));
    }
    const int count = static_cast<int>(node_nics[node].size());
    if (count == 0 || (nics >= 0 && count != nics)) {
      return OutOfRange(job, absl::StrCat("nodes[", k, "]"), node,
                        absl::StrCat("a node with ", nics < 0 ? 1 : nics,
                                     nics < 0 ? "+ NICs" : " NICs, as nodes[0] has"));
    }
    nics = count;
  }

  std::vector<JobPhase> phases;
  // Emits one flow per rail for each pair of node positions in `group`.
  auto emit = [&](PhaseKind kind, double bytes_per_rank, int group_ranks,
                  const std::vector<std::pair<std::vector<int>, PairBytes>>& groups) {
    JobPhase phase;
    phase.kind = kind;
    phase.bytes_per_rank = bytes_per_rank;
    phase.group_ranks = group_ranks;
    for (const auto& [group, pairs] : groups) {
      for (const auto& [pair, bytes] : pairs) {
        if (bytes <= 0) continue;
        for (int rail = 0; rail < nics; ++rail) {
          phase.flows.push_back({.src_nic = node_nics[group[pair.first]][rail],
                                 .dst_nic = node_nics[group[pair.second]][rail],
                                 .udp_src_port = TakePort(next_port)});
          phase.flow_bytes.push_back(bytes / nics);
        }
      }
    }
    if (phase.flows.empty()) return;
    if (job.host_bps_per_node != kAsFastAsAllowed) {
      absl::flat_hash_map<int, int> flows_from_node;
      for (const FlowSpec& flow : phase.flows) ++flows_from_node[fabric.nics()[flow.src_nic].node];
      for (FlowSpec& flow : phase.flows) {
        flow.demand_bps =
            job.host_bps_per_node / flows_from_node[fabric.nics()[flow.src_nic].node];
      }
    }
    phases.push_back(std::move(phase));
  };
  auto slice = [&](int first, int count) {
    return std::vector<int>(job.nodes.begin() + first, job.nodes.begin() + first + count);
  };

  // All-to-all inside expert groups: A/g to each peer.
  if (layout.expert_group_nodes > 0 && m.alltoall_bytes_per_node > 0) {
    const int g = layout.expert_group_nodes;
    std::vector<std::pair<std::vector<int>, PairBytes>> groups;
    for (int first = 0; first < n; first += g) {
      PairBytes pairs;
      for (int a = 0; a < g; ++a) {
        for (int b = 0; b < g; ++b) {
          if (a != b) pairs[{a, b}] = m.alltoall_bytes_per_node / g;
        }
      }
      groups.push_back({slice(first, g), std::move(pairs)});
    }
    emit(PhaseKind::kAllToAll, m.alltoall_bytes_per_node, g, groups);
  }

  // Pipeline: node j of stage s ↔ node j of stage s + 1, activations forward and their
  // gradients backward.
  const int stages = layout.pipeline_stages;
  const int per_stage = n / stages;
  if (stages > 1 && m.activation_bytes_per_node > 0) {
    PairBytes pairs;
    for (int s = 0; s + 1 < stages; ++s) {
      for (int j = 0; j < per_stage; ++j) {
        const int from = s * per_stage + j, to = (s + 1) * per_stage + j;
        pairs[{from, to}] += m.activation_bytes_per_node;
        pairs[{to, from}] += m.activation_bytes_per_node;
      }
    }
    emit(PhaseKind::kPipelineSendRecv, m.activation_bytes_per_node, 2,
         {{job.nodes, std::move(pairs)}});
  }

  // Data-parallel all-reduce over each stage's nodes.
  const double gradient_bytes = m.parameters * m.bytes_per_gradient_element / stages;
  if (per_stage > 1) {
    std::vector<std::pair<std::vector<int>, PairBytes>> groups;
    for (int s = 0; s < stages; ++s) {
      PairBytes pairs;
      if (layout.all_reduce == AllReduceAlgorithm::kRing) {
        AddRing(per_stage, 2.0 * (per_stage - 1) / per_stage * gradient_bytes, &pairs);
      } else {
        AddDoubleBinaryTree(per_stage, gradient_bytes / 2, &pairs);
      }
      groups.push_back({slice(s * per_stage, per_stage), std::move(pairs)});
    }
    emit(PhaseKind::kAllReduce, gradient_bytes, per_stage, groups);
  }
  if (phases.empty() && m.compute_s_per_iteration == 0) {
    return OutOfRange(job, "model.compute_s_per_iteration", 0,
                      "(0, inf) for a job that does not communicate");
  }
  return phases;
}

absl::StatusOr<TrainingRun> TrainingRun::Create(Fabric fabric, const DcqcnParams& params,
                                                std::vector<TrainingJobSpec> jobs) {
  uint16_t next_port = kFirstEphemeralPort;
  std::vector<std::vector<JobPhase>> phases;
  std::vector<double> uplink_share, bytes;
  absl::flat_hash_map<int, int> owner;
  for (int j = 0; j < static_cast<int>(jobs.size()); ++j) {
    absl::StatusOr<std::vector<JobPhase>> built = BuildJobPhases(fabric, jobs[j], &next_port);
    if (!built.ok()) {
      return absl::Status(built.status().code(),
                          absl::StrCat("jobs[", j, "] ", built.status().message()));
    }
    for (int node : jobs[j].nodes) {
      if (auto [it, inserted] = owner.try_emplace(node, j); !inserted) {
        return absl::InvalidArgumentError(
            absl::StrCat("jobs[", j, "] job '", jobs[j].name, "': node ", node,
                         " is also in jobs[", it->second, "] '", jobs[it->second].name,
                         "'; accepted: nodes no other job holds"));
      }
    }
    double total = 0, up = 0;
    for (const JobPhase& phase : *built) {
      for (size_t f = 0; f < phase.flows.size(); ++f) {
        const FlowSpec& spec = phase.flows[f];
        absl::StatusOr<std::vector<int>> path =
            fabric.EcmpPath({spec.src_nic, spec.dst_nic, spec.udp_src_port});
        if (!path.ok()) {
          return absl::Status(path.status().code(),
                              absl::StrCat("jobs[", j, "] job '", jobs[j].name,
                                           "': ", path.status().message()));
        }
        bool crosses = false;
        for (int k : *path) {
          const Link& link = fabric.links()[k];
          crosses |= link.from.kind == Vertex::Kind::kSwitch &&
                     link.to.kind == Vertex::Kind::kSwitch &&
                     fabric.switches()[link.from.id].tier == SwitchTier::kLeaf &&
                     fabric.switches()[link.to.id].tier == SwitchTier::kSpine;
        }
        total += phase.flow_bytes[f];
        if (crosses) up += phase.flow_bytes[f];
      }
    }
    uplink_share.push_back(total > 0 ? up / total : 0);
    bytes.push_back(total);
    phases.push_back(*std::move(built));
  }
  absl::StatusOr<LiveModel> model = LiveModel::Create(std::move(fabric), params);
  if (!model.ok()) return model.status();
  return TrainingRun(*std::move(model), std::move(jobs), std::move(phases),
                     std::move(uplink_share), std::move(bytes));
}

TrainingRun::TrainingRun(LiveModel model, std::vector<TrainingJobSpec> jobs,
                         std::vector<std::vector<JobPhase>> phases,
                         std::vector<double> uplink_share, std::vector<double> bytes)
    : model_(std::move(model)),
      jobs_(std::move(jobs)),
      phases_(std::move(phases)),
      uplink_share_(std::move(uplink_share)),
      bytes_(std::move(bytes)) {}

JobProgress StartJobProgress(const ModelSpec& model) {
  JobProgress job;
  job.remaining = model.compute_s_per_iteration;
  return job;
}

double SecondsToStageEnd(const JobProgress& job) {
  constexpr double kNever = std::numeric_limits<double>::infinity();
  if (job.halted) return kNever;
  if (job.stage == 0) return job.remaining;
  return job.progress_per_s > 0 ? job.remaining / job.progress_per_s : kNever;
}

double PhaseProgressPerS(const JobPhase& phase, const std::vector<double>& flow_rates_bps) {
  double progress = std::numeric_limits<double>::infinity();
  for (size_t f = 0; f < phase.flows.size(); ++f) {
    progress = std::min(progress, flow_rates_bps[f] / 8 / phase.flow_bytes[f]);
  }
  return progress;
}

namespace {

PhaseReport ReportPhase(const JobPhase& phase, double time_s) {
  PhaseReport r;
  r.kind = phase.kind;
  r.time_s = time_s;
  r.algbw_bytes_per_s = phase.bytes_per_rank / r.time_s;
  const double k = phase.group_ranks;
  r.busbw_bytes_per_s = r.algbw_bytes_per_s * (phase.kind == PhaseKind::kAllReduce  ? 2 * (k - 1) / k
                                               : phase.kind == PhaseKind::kAllToAll ? (k - 1) / k
                                                                                    : 1.0);
  return r;
}

}  // namespace

std::optional<IterationReport> StepJob(JobProgress* job, const std::vector<JobPhase>& phases,
                                       const ModelSpec& model, double dt_s) {
  const double until_s = SecondsToStageEnd(*job);
  job->stage_elapsed_s += std::min(dt_s, until_s);
  job->iteration_elapsed_s += std::min(dt_s, until_s);
  if (!(until_s <= dt_s * (1 + 1e-12))) {
    if (!job->halted) job->remaining -= job->stage == 0 ? dt_s : dt_s * job->progress_per_s;
    return std::nullopt;
  }
  // The stage ends now.
  if (job->stage == 0) {
    job->current.compute_s = job->stage_elapsed_s;
  } else {
    const PhaseReport r = ReportPhase(phases[job->stage - 1], job->stage_elapsed_s);
    job->current.communication_s += r.time_s;
    job->current.phases.push_back(r);
  }
  job->stage_elapsed_s = 0;
  ++job->stage;
  job->remaining = 1;
  if (job->stage <= static_cast<int>(phases.size())) return std::nullopt;
  IterationReport done = std::move(job->current);
  done.iteration_s = job->iteration_elapsed_s;
  done.tokens_per_s = model.tokens_per_iteration / done.iteration_s;
  job->current = IterationReport();
  job->iteration_elapsed_s = 0;
  job->stage = 0;
  job->remaining = model.compute_s_per_iteration;
  return done;
}

absl::StatusOr<std::vector<JobReport>> TrainingRun::Run(int iterations) {
  if (iterations < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("iterations = ", iterations, " is out of range: accepted [1, inf)"));
  }
  const int num_jobs = static_cast<int>(jobs_.size());
  std::vector<JobProgress> states(num_jobs);
  std::vector<bool> done(num_jobs, false);
  std::vector<JobReport> reports(num_jobs);
  for (int j = 0; j < num_jobs; ++j) {
    states[j] = StartJobProgress(jobs_[j].model);
    reports[j].name = jobs_[j].name;
    reports[j].uplink_byte_share = uplink_share_[j];
    reports[j].bytes_per_iteration = bytes_[j];
  }
  solves_ = 0;
  std::vector<int> solved_stages;  // the stage of every job at the last solve
  for (;;) {
    std::vector<int> stages(num_jobs);
    bool running = false;
    for (int j = 0; j < num_jobs; ++j) {
      stages[j] = done[j] ? 0 : states[j].stage;
      running |= !done[j];
    }
    if (!running) break;
    if (stages != solved_stages) {
      std::vector<FlowSpec> flows;
      for (int j = 0; j < num_jobs; ++j) {
        if (stages[j] == 0) continue;
        const JobPhase& phase = phases_[j][stages[j] - 1];
        flows.insert(flows.end(), phase.flows.begin(), phase.flows.end());
      }
      if (absl::Status s = model_.SetFlows(std::move(flows)); !s.ok()) return s;
      ++solves_;
      size_t offset = 0;
      for (int j = 0; j < num_jobs; ++j) {
        if (stages[j] == 0) continue;
        const JobPhase& phase = phases_[j][stages[j] - 1];
        std::vector<double> rates;
        for (size_t f = 0; f < phase.flows.size(); ++f) {
          rates.push_back(model_.flows()[offset + f].rate_bps);
        }
        offset += phase.flows.size();
        states[j].progress_per_s = PhaseProgressPerS(phase, rates);
        if (!(states[j].progress_per_s > 0)) {
          return absl::InternalError(absl::StrCat("job '", jobs_[j].name, "': ",
                                                  PhaseName(phase.kind),
                                                  " got no rate on the fabric"));
        }
      }
      solved_stages = stages;
    }
    // The next event: some job's compute or phase ends.
    double dt = std::numeric_limits<double>::infinity();
    for (int j = 0; j < num_jobs; ++j) {
      if (!done[j]) dt = std::min(dt, SecondsToStageEnd(states[j]));
    }
    for (int j = 0; j < num_jobs; ++j) {
      if (done[j]) continue;
      std::optional<IterationReport> finished = StepJob(&states[j], phases_[j], jobs_[j].model, dt);
      if (!finished.has_value()) continue;
      reports[j].iterations.push_back(*std::move(finished));
      done[j] = static_cast<int>(reports[j].iterations.size()) == iterations;
    }
  }
  return reports;
}

}  // namespace weft::sim
