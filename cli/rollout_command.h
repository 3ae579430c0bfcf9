// `weftctl rollout start FILE | status [ID] | pause [ID] | resume [ID] |
// abort [ID] [--reason R] | history` over the controller's RolloutService
// (proto/weft/v1/rollout.proto). `status` shows the phase, each step's progress (the
// canary and every wave: nodes, ACKs, NACKs, silent nodes, bake) and the KPIs the
// rollout is judging, changed nodes against their control group. Rendering is pure;
// RunRolloutCommand, the command table's handler, calls the controller through the
// context.
//
// Exit status: 0 on success, 1 when the controller refuses or cannot be reached (or
// the file cannot be read), 2 on a usage error.
#ifndef WEFT_CLI_ROLLOUT_COMMAND_H_
#define WEFT_CLI_ROLLOUT_COMMAND_H_

#include <string>
#include <vector>

#include "absl/time/time.h"
#include "cli/command_context.h"
#include "proto/weft/v1/rollout.pb.h"

namespace weft {

// The rollout for people, as of `now` (for the bake's progress).
std::string FormatRolloutStatus(const weft::v1::Rollout& rollout, absl::Time now);

// One row per rollout, newest first: ID VERSION PHASE CREATED FINISHED SOURCE REASON.
std::string FormatRolloutHistory(const weft::v1::ListRolloutsResponse& rollouts);

// `args` starts with "rollout"; `rollout abort` sends --reason.
int RunRolloutCommand(const std::vector<std::string>& args, const CommandContext& context);

}  // namespace weft

#endif  // WEFT_CLI_ROLLOUT_COMMAND_H_
