// RolloutManager: the controller's policy rollouts. It validates and diffs policies,
// starts a rollout (at most one is active), steps it on the controller's ticker with
// the inventory's rates and the desired-state manager's answers (the logic is in
// rollout.h), sends what each step asks through the DesiredStateManager, and saves the
// record through a RolloutStore after every change.
//
// Which desired state a node should have (used for nodes the DesiredStateManager has
// no record of: nodes that registered later, and every node after a restart) follows
// the newest rollout that involved it: the new version once it was sent, the rollback
// version when it was rolled back, otherwise the last completed rollout's version.
//
// Restart (Recover): records are loaded; the active one resumes where it was (a step
// waiting for answers waits anew, a bake starts over, since the KPIs were not watched
// while the controller was down). A record that cannot be read is moved aside and the
// manager cannot tell what it changed: the active rollout, if any, rolls back; and any
// node whose agent reports a version no readable record explains is sent its last good
// state under a fresh version.
//
// Thread-safety: every method may be called from any thread (one mutex). Lock order:
// this manager, then the Inventory's and the DesiredStateManager's.
#ifndef WEFT_CONTROLLER_ROLLOUT_ROLLOUT_MANAGER_H_
#define WEFT_CONTROLLER_ROLLOUT_ROLLOUT_MANAGER_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "controller/rollout/desired_state.h"
#include "controller/inventory/inventory.h"
#include "controller/rollout/rollout.h"
#include "controller/rollout/rollout_metrics.h"
#include "store/rollout_store.h"
#include "proto/weft/v1/rollout.pb.h"

namespace weft::controller {

class RolloutManager {
 public:
  // All pointers must outlive the manager.
  RolloutManager(Inventory* inventory, DesiredStateManager* desired, store::RolloutStore* store,
                 RolloutMetrics* metrics, const Clock* clock);

  RolloutManager(const RolloutManager&) = delete;
  RolloutManager& operator=(const RolloutManager&) = delete;

  // Loads the stored rollouts (see the header comment). Call once, before Tick.
  // INTERNAL when the store cannot be listed.
  absl::Status Recover();

  // ParsePolicy, then compiles it for every registered node. INVALID_ARGUMENT with
  // every problem.
  absl::StatusOr<weft::v1::ValidatePolicyResponse> Validate(
      const weft::v1::PolicyRequest& request) const;
  // What the policy would change against each registered node's desired state.
  absl::StatusOr<weft::v1::DiffPolicyResponse> Diff(const weft::v1::PolicyRequest& request) const;
  // Starts a rollout and sends the canary; `started_by` (the caller's authenticated
  // identity) goes into the record. FAILED_PRECONDITION while one is active or when no
  // node is registered; INTERNAL when the record cannot be saved (nothing is sent then).
  absl::StatusOr<weft::v1::Rollout> Start(const weft::v1::PolicyRequest& request,
                                          const std::string& started_by = "");

  // Starts a rollout of a policy already parsed and validated (the tuner's); `source`
  // names it in the record ("tune-3"). Same errors as Start.
  absl::StatusOr<weft::v1::Rollout> StartPolicy(const weft::v1::Policy& policy,
                                                const std::string& source,
                                                const std::string& started_by = "");

  // The policy in force: that of the newest completed rollout. FAILED_PRECONDITION when
  // no rollout has completed yet.
  absl::StatusOr<weft::v1::Policy> PolicyInForce() const;

  // `id` empty means the newest rollout. NOT_FOUND when there is none.
  absl::StatusOr<weft::v1::Rollout> Get(const std::string& id) const;
  // Operator actions on the active rollout (`id` empty or its id), noted in its history
  // with `who` (the caller's authenticated identity). NOT_FOUND when it is not the
  // active one; FAILED_PRECONDITION when the phase does not allow it.
  absl::StatusOr<weft::v1::Rollout> Pause(const std::string& id, const std::string& who = "");
  absl::StatusOr<weft::v1::Rollout> Resume(const std::string& id, const std::string& who = "");
  absl::StatusOr<weft::v1::Rollout> Abort(const std::string& id, const std::string& reason,
                                          const std::string& who = "");
  // Newest first.
  weft::v1::ListRolloutsResponse List() const;

  // Adopts nodes without a desired state and steps the active rollout. Called by the
  // controller's ticker; does its work at most once per `min_interval`.
  void Tick(absl::Duration min_interval = absl::Seconds(1));

  // Watches `path` (ControllerConfig.policy_file): Tick starts a rollout of it when the
  // file's modification time changed, it holds a valid policy that differs from the
  // newest rollout's, no rollout is active, and `grace` has passed since the first Tick
  // (so agents re-register after a controller start before a canary is chosen). An
  // invalid or unreadable file is logged once per change and left alone. Call before
  // the first Tick.
  void WatchPolicyFile(std::string path, absl::Duration grace = absl::Seconds(10));

 private:
  struct Expected {
    weft::v1::DesiredState state;  // content, node_name and version
    uint64_t last_good_version = 0;
  };

  weft::v1::Rollout* ActiveLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<weft::v1::Rollout> StartLocked(const weft::v1::Policy& policy,
                                                const std::string& source,
                                                const std::string& started_by, absl::Time now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void CheckPolicyFileLocked(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  const weft::v1::Rollout* NewestCompletedLocked() const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  std::vector<FleetNode> FleetLocked(const std::vector<weft::v1::NodeStatus>& nodes) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  std::optional<Expected> ExpectedLocked(const weft::v1::NodeInfo& node) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  void AdoptLocked(const std::vector<weft::v1::NodeStatus>& nodes)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Sends what `actions` asks, saves the record when it changed, updates the metrics.
  void ExecuteLocked(weft::v1::Rollout& rollout, const RolloutActions& actions,
                     const std::vector<weft::v1::NodeStatus>& nodes)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void PublishLocked() ABSL_SHARED_LOCKS_REQUIRED(mu_);
  absl::StatusOr<weft::v1::Rollout*> OperatorTargetLocked(const std::string& id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  Inventory* const inventory_;
  DesiredStateManager* const desired_;
  store::RolloutStore* const store_;
  RolloutMetrics* const metrics_;
  const Clock* const clock_;

  mutable absl::Mutex mu_;
  // Every rollout, oldest first (by version). Only the newest may be active.
  std::vector<weft::v1::Rollout> rollouts_ ABSL_GUARDED_BY(mu_);
  uint64_t next_version_ ABSL_GUARDED_BY(mu_) = 1;
  // Set when a record could not be read at Recover: nodes whose agents report a version
  // no record explains get their last good state under this version.
  uint64_t unexplained_version_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Time last_tick_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  absl::Time first_tick_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  std::string policy_file_ ABSL_GUARDED_BY(mu_);
  absl::Duration policy_grace_ ABSL_GUARDED_BY(mu_);
  // The file's modification time when it was last looked at (-1: never).
  int64_t policy_mtime_ns_ ABSL_GUARDED_BY(mu_) = -1;
};

}  // namespace weft::controller

#endif  // WEFT_CONTROLLER_ROLLOUT_ROLLOUT_MANAGER_H_
