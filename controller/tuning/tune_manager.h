// TuneManager: the controller's closed-loop DCQCN tuner (issue 21) over tuning/'s pure
// logic. Propose starts a search (one at a time, on a worker thread of its own) for the
// policy in force (RolloutManager::PolicyInForce) and keeps the result as a proposal
// (weft.v1.TuneProposal) with its evidence; Apply turns a PROPOSED one into a policy
// (tuning::ApplyProposal: a new profile assigned to the scope) and starts an ordinary
// rollout of it, which canaries, bakes on the live KPIs, waves and rolls back on its own.
// Tick follows applied proposals to their rollout's end, and marks unapplied ones
// SUPERSEDED once another policy is in force (their baseline is stale).
//
// Learning from the live fabric: a proposal the live KPIs rolled back records its score
// as the model's error for its scope; a later proposal for the same scope must beat the
// baseline by more than the largest such error, or it ends NO_BETTER saying so.
//
// Automatic proposals (tuning/trigger.h): every check_interval, when no search runs,
// Tick reads the running jobs (their declared traffic and KPIs, through the narrow
// RunningJobsSource the composition root gives it), feeds the Trigger, counts a firing by
// reason, and with auto_propose starts a whole-cluster search recording the trigger and
// what it saw; with auto_apply a triggered proposal that ends PROPOSED is applied once
// through Apply, as an operator would. Every search, on request or triggered, weighs its
// scenarios by the traffic mix at its start (tuning::WeighScenarios). The trigger's
// reference, the mix the profile in force was tuned for, moves to a proposal's mix when
// its rollout completes or when its search found nothing better than the profile in force.
//
// Proposals live in memory (the newest `history` of them): a restarted controller has
// none, while the rollouts they started are durable as every rollout is.
//
// Thread-safe. Lock order: this manager, then the RolloutManager's. The destructor stops
// a running search at its next evaluation and waits for it.
//
// Example:
//   TuneManager tuner(&rollouts, &metrics, &clock, TuneManagerOptions{});
//   ASSIGN_OR_RETURN(weft::v1::TuneProposal started, tuner.Propose(request, "alice"));
//   ... tuner.Get(started.id()) until its state is no longer EVALUATING ...
//   ASSIGN_OR_RETURN(weft::v1::TuneProposal applied, tuner.Apply(started.id(), "alice"));
#ifndef WEFT_CONTROLLER_TUNING_TUNE_MANAGER_H_
#define WEFT_CONTROLLER_TUNING_TUNE_MANAGER_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "controller/rollout/rollout_manager.h"
#include "controller/tuning/tune_metrics.h"
#include "proto/weft/v1/policy.pb.h"
#include "proto/weft/v1/tune.pb.h"
#include "tuning/objective.h"
#include "tuning/traffic_mix.h"
#include "tuning/trigger.h"

namespace weft::controller {

struct TuneManagerOptions {
  uint32_t max_evaluations = 40;
  absl::Duration max_wall = absl::Minutes(2);
  // Scenarios, seeds and objective weights every candidate is evaluated on.
  tuning::EvaluatorOptions evaluation;
  size_t history = 100;  // proposals kept
  // Automatic proposals (ControllerConfig.tuning.automatic).
  tuning::TriggerOptions trigger;
  absl::Duration check_interval = absl::Minutes(1);
  bool auto_propose = false;
  bool auto_apply = false;  // needs auto_propose
};

// What the tuner reads of the running jobs: each one's declared traffic
// (tuning::DeclaredTraffic of its reservation) and, for those that reported progress,
// its KPI. The composition root reads them from the PlacementManager.
struct RunningJobs {
  std::vector<tuning::JobTraffic> traffic;
  std::vector<tuning::JobKpi> kpis;
};
using RunningJobsSource = std::function<RunningJobs()>;

class TuneManager {
 public:
  // `rollouts`, `metrics` and `clock` outlive the manager. `jobs` is called from Tick
  // and Propose without this manager's lock held; null: no jobs are known (equal
  // scenario weights, no automatic proposals). Options the trigger refuses
  // (tuning::ValidateTriggerOptions; the config's validation refuses them first) leave
  // automatic proposals off, logged as an error.
  TuneManager(RolloutManager* rollouts, TuneMetrics* metrics, const Clock* clock,
              TuneManagerOptions options, RunningJobsSource jobs = nullptr);
  ~TuneManager();
  TuneManager(const TuneManager&) = delete;
  TuneManager& operator=(const TuneManager&) = delete;

  // Starts a search and returns the proposal in EVALUATING. INVALID_ARGUMENT for a bad
  // request (budget above the controller's, an empty name in the scope);
  // FAILED_PRECONDITION while another search runs or when no policy is in force.
  absl::StatusOr<weft::v1::TuneProposal> Propose(const weft::v1::ProposeRequest& request,
                                                 const std::string& requested_by)
      ABSL_LOCKS_EXCLUDED(mu_);

  // `id` empty: the newest. NOT_FOUND naming the id.
  absl::StatusOr<weft::v1::TuneProposal> Get(const std::string& id) const
      ABSL_LOCKS_EXCLUDED(mu_);
  weft::v1::ListProposalsResponse List() const ABSL_LOCKS_EXCLUDED(mu_);

  // Rolls a PROPOSED proposal out. FAILED_PRECONDITION naming its state otherwise, or
  // the rollout's own refusal (one already active, ...); the proposal is unchanged then.
  absl::StatusOr<weft::v1::TuneProposal> Apply(const std::string& id,
                                               const std::string& applied_by)
      ABSL_LOCKS_EXCLUDED(mu_);

  // Follows applied proposals' rollouts, marks stale ones SUPERSEDED, applies a
  // triggered PROPOSED one with auto_apply, and checks the trigger when a check is due.
  // The controller's ticker calls it.
  void Tick() ABSL_LOCKS_EXCLUDED(mu_);

  // Waits until no search runs (tests, shutdown).
  void AwaitIdle() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Entry {
    weft::v1::TuneProposal proposal;
    weft::v1::Policy policy;  // the policy in force when the search started
    std::string scope_key;
    tuning::TrafficMix mix;                  // the running jobs' at the start
    std::vector<tuning::Scenario> scenarios;  // weighed by `mix`
    bool auto_apply_tried = false;
  };
  // Why a search starts and the mix it weighs its scenarios by.
  struct Origin {
    weft::v1::TuneTrigger trigger = weft::v1::TUNE_TRIGGER_ON_REQUEST;
    std::string detail;
    tuning::TrafficMix mix;
  };

  absl::StatusOr<weft::v1::TuneProposal> StartSearch(const weft::v1::ProposeRequest& request,
                                                       const std::string& requested_by,
                                                       const Origin& origin,
                                                       std::thread* finished)
      ABSL_LOCKS_EXCLUDED(mu_);
  // The running jobs' mix now (empty without a source).
  tuning::TrafficMix CurrentMix() const ABSL_LOCKS_EXCLUDED(mu_);
  void CheckTrigger() ABSL_LOCKS_EXCLUDED(mu_);
  // The profile in force is now the best known for the entry's mix: the trigger's
  // reference when the entry was for the whole cluster.
  void TunedFor(const Entry& entry) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void RunSearch(std::string id) ABSL_LOCKS_EXCLUDED(mu_);
  Entry* FindLocked(const std::string& id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The largest score the live fabric refused for `scope_key` (0: none yet).
  double ModelErrorLocked(const std::string& scope_key) const ABSL_SHARED_LOCKS_REQUIRED(mu_);

  RolloutManager* const rollouts_;
  TuneMetrics* const metrics_;
  const Clock* const clock_;
  const TuneManagerOptions options_;
  const RunningJobsSource jobs_;

  mutable absl::Mutex mu_;
  std::vector<Entry> entries_ ABSL_GUARDED_BY(mu_);  // oldest first
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  bool searching_ ABSL_GUARDED_BY(mu_) = false;
  std::thread worker_ ABSL_GUARDED_BY(mu_);
  std::optional<tuning::Trigger> trigger_ ABSL_GUARDED_BY(mu_);  // unset: no automatic checks
  absl::Time next_check_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  // Set by the destructor: the search's clock reads the infinite future, so its wall-time
  // bound stops it at the next evaluation.
  std::atomic<bool> stopping_{false};
};

// "racks=rack-a,rack-b pods=... nodes=..." or "cluster": a scope's key and its name in
// messages.
std::string ScopeKey(const weft::v1::TuneScope& scope);

}  // namespace weft::controller

#endif  // WEFT_CONTROLLER_TUNING_TUNE_MANAGER_H_
