// Synthetic training jobs on the fabric twin (issue 20): what a scheduler's jobs do to
// the fabric once placed, and what the fabric does to them. A job is a model (parameters
// all-reduced, bytes per gradient element, tokens and compute time per iteration, MoE
// all-to-all and pipeline activation bytes), a parallel layout and its nodes in rank
// order (fabric node ids, from placement/engine.h or a baseline placer). Bench
// `bench/sim/placement_on_twin` compares placers with it.
//
// A rank here is a node: the node's GPUs reduce inside it over NVLink in no time, and
// the node's bytes are split evenly over its NICs, NIC i talking to NIC i of the peer
// (rail-aligned, as NCCL does with one channel per NIC). Every phase becomes one flow
// per (source NIC, destination NIC) pair with its own UDP source port (so ECMP spreads
// them as NCCL's queue pairs are spread), and a byte count per flow:
//   data-parallel all-reduce of S = parameters · bytes_per_gradient_element /
//     pipeline_stages per node, over the n nodes of each pipeline stage:
//     ring: node k → node k+1 (mod n), 2(n−1)/n · S per node, S/nics per NIC (the
//       bandwidth-optimal ring; Patarasuk & Yuan, JPDC 2009; NCCL's ring);
//     double binary tree (NCCL ≥ 2.4): per rail a heap-ordered binary tree over the
//       ranks and the same tree over the ranks reversed, each carrying S/2 up (reduce)
//       and down (broadcast), pipelined so every edge runs at once; a pair in both trees
//       is one flow of S;
//   MoE all-to-all inside expert groups of g consecutive nodes: A bytes per node split
//     over the g ranks (nccl-tests' convention, the chunk to itself stays), A/g to each
//     peer;
//   pipeline send/recv between consecutive stages of m nodes: node j of stage s ↔ node j
//     of stage s+1, activation bytes forward and the same bytes of activation gradients
//     backward, both at once (1F1B's steady state).
// The live model gives every flow its max-min rate over its ECMP path (sim/live_model.h)
// with the flows of every job's phase in progress at that moment, solved together. A
// phase progresses at the pace of its slowest flow (a ring step waits for its slowest
// edge): its fraction done grows at min over its flows of rate / bytes, so alone its
// time is max over flows of bytes / rate. The faster flows keep the max-min rate they
// were given, more than the phase lets them use; only links shared between jobs (ToR
// uplinks, spine ports) can feel that, and only when one job's flows see different
// bottlenecks there.
//
// Per iteration: compute, then the all-to-all, the pipeline send/recv and the
// all-reduce, one after another with no overlap (a bound: real frameworks overlap the
// all-reduce with the backward pass). iteration = compute + Σ phases; tokens/s =
// tokens_per_iteration / iteration; bus bandwidth as nccl-tests define it
// (PERFORMANCE.md): algbw = S / t, busbw = algbw · 2(n−1)/n (all-reduce),
// algbw · (g−1)/g (all-to-all), algbw (send/recv); here per node, across its NICs.
//
// Pure logic; not thread-safe (one thread creates and runs a TrainingRun).
//
// Example:
//   TrainingJobSpec job{.name = "llama-7b", .model = {...}, .nodes = {0, 1, 2, 3}};
//   ASSIGN_OR_RETURN(TrainingRun run, TrainingRun::Create(std::move(fabric),
//                                                         DcqcnParams(), {job}));
//   ASSIGN_OR_RETURN(std::vector<JobReport> reports, run.Run(/*iterations=*/3));
#ifndef WEFT_SIM_TRAINING_JOB_H_
#define WEFT_SIM_TRAINING_JOB_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "sim/dcqcn_fluid.h"
#include "sim/fabric.h"
#include "sim/live_model.h"

namespace weft::sim {

struct ModelSpec {
  double parameters = 0;                  // all-reduced by data parallelism; > 0
  double bytes_per_gradient_element = 2;  // bf16; (0, 16]
  double tokens_per_iteration = 0;        // global batch × sequence length; > 0
  double compute_s_per_iteration = 0;     // forward + backward, all nodes at once; >= 0
  double alltoall_bytes_per_node = 0;     // MoE: per iteration (all layers, both ways); >= 0
  double activation_bytes_per_node = 0;   // pipeline: per iteration to the next stage; >= 0
};

enum class AllReduceAlgorithm { kRing, kDoubleBinaryTree };

struct ParallelLayout {
  AllReduceAlgorithm all_reduce = AllReduceAlgorithm::kRing;
  int pipeline_stages = 1;     // contiguous node ranges in rank order; divides the nodes
  int expert_group_nodes = 0;  // 0: no all-to-all; else divides the nodes
};

struct TrainingJobSpec {
  std::string name;
  ModelSpec model;
  ParallelLayout layout;
  std::vector<int> nodes;  // fabric node ids in rank order; distinct, same NIC count
  // A host-driven transport (TCP): the bits per second a node's cores can push for the
  // job, split evenly over the node's outgoing flows of each phase as their demand
  // (FlowSpec::demand_bps); > 0. Infinite (the default): the NIC moves the bytes (RoCE),
  // no host cap.
  double host_bps_per_node = kAsFastAsAllowed;
  // The DSCP its flows carry, [0, 63]; -1 (the default): each sender's RoCE DSCP. Only the
  // twin (sim/twin.h) maps it, by the sender's DSCP table, to a priority and so a traffic
  // class (e.g. a storage job on DSCP 10 -> priority 1 -> TC 0 under the recipe);
  // TrainingRun has no NIC tables and keeps every flow on the RoCE priority.
  int dscp = -1;
};

enum class PhaseKind { kAllToAll, kPipelineSendRecv, kAllReduce };
const char* PhaseName(PhaseKind kind);

// One communication phase of one job, as flows.
struct JobPhase {
  PhaseKind kind = PhaseKind::kAllReduce;
  double bytes_per_rank = 0;  // S (all-reduce), A (all-to-all), activation bytes
  int group_ranks = 0;        // n or g; 2 for send/recv
  std::vector<FlowSpec> flows;
  std::vector<double> flow_bytes;  // per flow, same order
};

// The phases of `job` on `fabric` in iteration order (phases without flows left out).
// UDP source ports are taken from *next_port on (49152-65535, wrapping). Fails with
// InvalidArgument naming the job, the field, its value and the accepted range.
absl::StatusOr<std::vector<JobPhase>> BuildJobPhases(const Fabric& fabric,
                                                     const TrainingJobSpec& job,
                                                     uint16_t* next_port);

struct PhaseReport {
  PhaseKind kind = PhaseKind::kAllReduce;
  double time_s = 0;
  double algbw_bytes_per_s = 0;
  double busbw_bytes_per_s = 0;
};

struct IterationReport {
  double compute_s = 0;
  double communication_s = 0;
  double iteration_s = 0;
  double tokens_per_s = 0;
  std::vector<PhaseReport> phases;  // iteration order
};

// One job's place in its iteration loop (compute, then each phase in order, then again):
// the event-driven stepping TrainingRun::Run and the twin (sim/twin.h) share. Each caller
// sets progress_per_s from the rates of the phase in progress whenever it solves, and
// steps every job by the time to the next event (SecondsToStageEnd of some job, or
// whatever else the caller must stop at).
struct JobProgress {
  int stage = 0;                  // 0: compute; k >= 1: phases[k - 1]
  double remaining = 0;           // compute: seconds; phase: fraction left
  double stage_elapsed_s = 0;     // summed per step, not now − start: no clock rounding
  double iteration_elapsed_s = 0;
  double progress_per_s = 0;      // phase: fraction per second at the current rates
  bool halted = false;            // time passes, nothing is done (a dead node)
  IterationReport current;
};

// The UDP source port the first job's first flow takes (the ephemeral range's start).
inline constexpr uint16_t kFirstEphemeralPort = 49152;

// A job about to compute its first iteration.
JobProgress StartJobProgress(const ModelSpec& model);

// Seconds until the stage in progress ends at the current pace (inf when halted or when
// the phase has no rate).
double SecondsToStageEnd(const JobProgress& job);

// The fraction of `phase` done per second when its flows carry `flow_rates_bps` (same
// order as phase.flows): the pace of its slowest flow, min of rate / bytes.
double PhaseProgressPerS(const JobPhase& phase, const std::vector<double>& flow_rates_bps);

// Moves `job` forward by dt_s. When its stage ends within dt_s (within a relative 1e-12),
// it is recorded and the next stage begins (progress_per_s is then stale: the caller
// solves again); returns the iteration this completed, if any.
std::optional<IterationReport> StepJob(JobProgress* job, const std::vector<JobPhase>& phases,
                                       const ModelSpec& model, double dt_s);

struct JobReport {
  std::string name;
  std::vector<IterationReport> iterations;
  // Bytes of the job's flows whose ECMP path leaves a ToR/leaf for a spine, over all the
  // job's bytes, per iteration.
  double uplink_byte_share = 0;
  double bytes_per_iteration = 0;  // all flows, all phases
};

class TrainingRun {
 public:
  // Checks every job (BuildJobPhases' messages, prefixed "jobs[i]") and that no node is in
  // two jobs; routes the flows.
  static absl::StatusOr<TrainingRun> Create(Fabric fabric, const DcqcnParams& params,
                                            std::vector<TrainingJobSpec> jobs);

  // Runs every job for `iterations` iterations from time 0 (all start computing at once),
  // re-solving the live model whenever the set of phases in progress changes.
  // Reports in job order. Fails on iterations < 1.
  absl::StatusOr<std::vector<JobReport>> Run(int iterations);

  int solves() const { return solves_; }  // live-model solves in the last Run

 private:
  TrainingRun(LiveModel model, std::vector<TrainingJobSpec> jobs,
              std::vector<std::vector<JobPhase>> phases, std::vector<double> uplink_share,
              std::vector<double> bytes);

  LiveModel model_;
  std::vector<TrainingJobSpec> jobs_;
  std::vector<std::vector<JobPhase>> phases_;
  std::vector<double> uplink_share_;
  std::vector<double> bytes_;
  int solves_ = 0;
};

}  // namespace weft::sim

#endif  // WEFT_SIM_TRAINING_JOB_H_
