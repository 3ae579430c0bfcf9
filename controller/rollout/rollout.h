// Rollout planning and stepping: pure logic over a weft.v1.Rollout record, a view of
// the fleet and the time. No I/O: RolloutManager (rollout_manager.h) feeds it the
// inventory's rates and the desired-state manager's answers, performs the pushes it
// asks for and persists the record whenever it changes.
//
// Life of a rollout (phases of rollout.proto):
//   CANARY   the canary's nodes are sent the new version; once every one has answered
//            (ACK, NACK, or no answer within ack_timeout_s) it bakes, unless the share
//            of NACKs and timeouts is above max_nack_share: then it rolls back.
//   BAKING   bake_s (canary) or wave_bake_s (waves) pass while the KPIs of the changed
//            nodes are compared with the unchanged ones (or, once none is left, with
//            the cluster before the rollout). A KPI past its threshold for sustain_s
//            rolls back. Then the next wave starts, or the rollout is COMPLETED.
//   WAVE     like CANARY, for the next wave_size nodes (rack by rack, by name).
//   ROLLING_BACK  every node sent the new version is sent the previous state under
//            rollback_version (= version + 1, so agents only see versions grow); done
//            when each has answered or ack_timeout_s passed: ROLLED_BACK, or ABORTED
//            when an operator aborted.
//   PAUSED   nothing is sent or judged; resume returns to the paused phase (a bake
//            starts over).
// Versions: a rollout of version V reserves V + 1 for its rollback; the next rollout
// uses V + 2.
//
// Thread-compatible: callers serialize access to a record.
#ifndef WEFT_CONTROLLER_ROLLOUT_ROLLOUT_H_
#define WEFT_CONTROLLER_ROLLOUT_ROLLOUT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "proto/weft/v1/admin.pb.h"
#include "proto/weft/v1/policy.pb.h"
#include "proto/weft/v1/rollout.pb.h"

namespace weft::controller {

// One node as the rollout sees it at a tick.
struct FleetNode {
  std::string name;
  std::string rack;
  std::string pod;
  bool reporting = false;
  int nics = 0;
  weft::v1::NodeRates rates;  // the node's current rates (sum over its NICs)
  // From the desired-state manager.
  uint64_t applied_version = 0;
  uint64_t nacked_version = 0;
};

// What the controller must do after a step of the engine.
struct RolloutActions {
  std::vector<std::string> push_new;       // send the rollout's version
  std::vector<std::string> push_rollback;  // send the previous state (rollback_version)
  bool changed = false;                    // the record changed: persist it
  bool finished = false;                   // it reached COMPLETED, ROLLED_BACK or ABORTED
};

// Whether `phase` is COMPLETED, ROLLED_BACK or ABORTED.
bool IsTerminal(weft::v1::RolloutPhase phase);

// A new rollout of `policy` (already validated) as version `version` (>= 1) over
// `fleet` (any order), in phase CANARY with nothing sent yet: Advance sends the canary.
// The canary is canary_per_rack nodes of each rack (the first by name) or, with
// canary_per_rack 0, ceil(canary_share × nodes) nodes taken from the racks in turn;
// the rest go in waves of wave_size, rack by rack, by name. `previous` is the last good
// policy (nullptr: none). FAILED_PRECONDITION when the fleet is empty.
absl::StatusOr<weft::v1::Rollout> PlanRollout(std::string id, const weft::v1::Policy& policy,
                                              uint64_t version,
                                              const weft::v1::Policy* previous,
                                              uint64_t previous_version,
                                              const std::vector<FleetNode>& fleet,
                                              absl::Time now, std::string source);

// Moves `rollout` on as far as `fleet` and `now` allow (see the header comment).
RolloutActions AdvanceRollout(weft::v1::Rollout& rollout, const std::vector<FleetNode>& fleet,
                              absl::Time now);

// Operator actions, noted in the history with `who` (the caller's authenticated
// identity; "by hand" when empty). FAILED_PRECONDITION naming the phase when they do
// not apply: pause needs CANARY, BAKING or WAVE; resume needs PAUSED; abort needs a
// phase that is not terminal (and not already rolling back).
absl::Status PauseRollout(weft::v1::Rollout& rollout, absl::Time now,
                          absl::string_view who = "");
absl::Status ResumeRollout(weft::v1::Rollout& rollout, absl::Time now,
                           absl::string_view who = "");
absl::StatusOr<RolloutActions> AbortRollout(weft::v1::Rollout& rollout, absl::string_view reason,
                                            absl::Time now, absl::string_view who = "");

// Starts rolling back every node sent the new version, recording `reason`.
RolloutActions StartRollback(weft::v1::Rollout& rollout, absl::string_view reason,
                             absl::Time now);

// The KPIs of the changed nodes against the control group (see KpiThresholds).
weft::v1::KpiJudgement JudgeKpis(const weft::v1::Rollout& rollout,
                                 const std::vector<FleetNode>& fleet, absl::Time now);

// Per-node KPI means over the reporting nodes of `fleet`.
weft::v1::KpiBaseline BaselineOf(const std::vector<FleetNode>& fleet);

// "CANARY", "BAKING", ...: a phase as logs and weftctl show it.
std::string RolloutPhaseName(weft::v1::RolloutPhase phase);

}  // namespace weft::controller

#endif  // WEFT_CONTROLLER_ROLLOUT_ROLLOUT_H_
