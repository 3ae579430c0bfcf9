// Pingmesh's evaluation on the fabric twin (issue 22): pinglists for a twin cluster,
// every stream's probes sent window by window through sim/probe_model.h under injected
// faults, the localiser fed with the windows, its verdicts scored against the faults.
//
// The fault mix is 007's (NSDI'18): 1 to 10 links dropping a share uniform in
// [1e-4, 1e-2], healthy links dropping up to 1e-6; plus, per trial, one link at exactly
// 1e-3 (the gray-loss target), up to `max_dead_nics` dead NICs, a black-holed
// switch-to-switch link with probability `black_hole_probability`, a slow host (software
// delay + `slow_host_extra_us`) with probability `slow_host_probability`, and host-delay
// noise (jitter and spikes) on every host. Faults start after `warmup_s` and last to the
// end of the trial.
//
// Scoring: a link verdict is right when its component holds a faulty link (the two
// directions of a NIC cable are one component), a NIC verdict when that NIC is dead, a
// host verdict when that host is slow. Precision is over the verdicts active at the end,
// recall over the faults, time to detect from the onset to the end of the window in
// which a right verdict is raised.
//
// One thread per Evaluation.
#ifndef WEFT_BENCH_PINGMESH_EVALUATION_H_
#define WEFT_BENCH_PINGMESH_EVALUATION_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "bench/pingmesh/twin_pingmesh.h"
#include "pingmesh/localiser.h"
#include "pingmesh/pinglist.h"
#include "sim/fabric.h"
#include "sim/probe_model.h"

namespace weft::bench {

struct EvaluationSpec {
  sim::RailOptions fabric;  // rail-optimised; a group of nodes is a rack
  pingmesh::PinglistOptions pinglist;
  pingmesh::LocaliserOptions localiser;
  sim::ProbeNoise noise;
  double warmup_s = 2;
  double run_s = 20;  // after the onset
  int min_link_faults = 1;
  int max_link_faults = 10;
  double min_drop = 1e-4;
  double max_drop = 1e-2;
  double healthy_drop_max = 1e-6;
  double gray_target_drop = 1e-3;  // one extra link at this rate per trial; 0: none
  int max_dead_nics = 2;
  double black_hole_probability = 0.5;
  double slow_host_probability = 0.5;
  double slow_host_extra_us = 2000;
};

enum class FaultKind { kGrayLink, kGrayTarget, kBlackHole, kDeadNic, kSlowHost };
const char* FaultKindName(FaultKind kind);

struct FaultOutcome {
  FaultKind kind = FaultKind::kGrayLink;
  std::string component;
  double drop = 0;
  bool detected = false;     // a right verdict active at the end
  double detect_s = -1;      // first right verdict raised, seconds after the onset
};

struct TrialResult {
  std::vector<FaultOutcome> faults;
  int verdicts = 0;        // active at the end
  int right_verdicts = 0;  // of those, naming an injected fault
  std::vector<std::string> wrong;  // the wrong ones, for reading
  int wrong_raises = 0;    // verdicts raised at any time that named no fault
  std::vector<std::string> wrongly_raised;  // those, with the time after the onset
  // CPU time per window (one thread), the localiser's Add and EndWindow and the probe
  // model's sending.
  double localiser_ms_per_window = 0;  // from the second window on
  double localiser_setup_ms = 0;       // registering every stream and the first window
  double probe_ms_per_window = 0;
};

struct Summary {
  int trials = 0;
  int faults = 0;
  double precision = 0;
  double recall = 0;
  double f1 = 0;
  // Recall and p95 time to detect per kind (-1: none detected).
  std::vector<std::pair<FaultKind, double>> recall_by_kind;
  std::vector<std::pair<FaultKind, double>> p95_detect_s_by_kind;
  std::vector<std::pair<FaultKind, double>> max_detect_s_by_kind;
  double wrong_raises_per_trial = 0;
  double localiser_ms_per_window = 0;
  double localiser_setup_ms = 0;
};
Summary Summarise(const std::vector<TrialResult>& trials);

class Evaluation {
 public:
  static absl::StatusOr<std::unique_ptr<Evaluation>> Create(const EvaluationSpec& spec);

  const pingmesh::PinglistPlan& plan() const { return plan_; }
  int nodes() const { return fabric_.num_nodes(); }
  int nics() const { return static_cast<int>(fabric_.nics().size()); }
  int links() const { return static_cast<int>(fabric_.links().size()); }

  // One trial with its own faults and noise, drawn from `seed`.
  absl::StatusOr<TrialResult> RunTrial(uint64_t seed);

 private:
  explicit Evaluation(const EvaluationSpec& spec);

  EvaluationSpec spec_;
  sim::Fabric fabric_;
  std::unique_ptr<TwinResolver> resolver_;
  pingmesh::PinglistPlan plan_;
  std::vector<pingmesh::ProbeKey> keys_;
  std::vector<sim::ProbeStream> streams_;
  std::vector<double> probes_per_s_;  // by stream, from its pinglist entry
};

}  // namespace weft::bench

#endif  // WEFT_BENCH_PINGMESH_EVALUATION_H_
