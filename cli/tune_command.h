// `weftctl tune propose [--scope S,...] [--dry-run] [--strategy surrogate|annealing]
// [--seed N] [--max-evaluations N] [--wait] | status [ID] | history | apply ID` over the
// controller's TuneService (proto/weft/v1/tune.proto). `propose` starts a search in the
// fabric twin's models and, with --wait, follows it to the end; `status` shows a
// proposal's parameters against the profile in force and the evidence per scenario;
// `apply` rolls it out (weftctl rollout status follows the rollout). Rendering is pure;
// RunTuneCommand, the command table's handler, calls the controller through the context.
//
// A scope entry is a rack ("rack-a"), or "pod:NAME" or "node:NAME".
//
// Exit status: 0 on success, 1 when the controller refuses or cannot be reached (or a
// waited search failed), 2 on a usage error.
#ifndef WEFT_CLI_TUNE_COMMAND_H_
#define WEFT_CLI_TUNE_COMMAND_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cli/command_context.h"
#include "proto/weft/v1/tune.pb.h"

namespace weft {

// The scope --scope names; INVALID_ARGUMENT naming an entry with an unknown prefix or
// no name.
absl::StatusOr<weft::v1::TuneScope> ParseTuneScope(const std::vector<std::string>& entries);

// A proposal for people: state, scope, score, the parameters it changes and the
// evidence per scenario.
std::string FormatTuneProposal(const weft::v1::TuneProposal& proposal);

// One row per proposal, oldest first: ID STATE SCOPE SCORE EVALUATIONS CREATED ROLLOUT
// REASON.
std::string FormatTuneHistory(const weft::v1::ListProposalsResponse& proposals);

// `args` starts with "tune".
int RunTuneCommand(const std::vector<std::string>& args, const CommandContext& context);

}  // namespace weft

#endif  // WEFT_CLI_TUNE_COMMAND_H_
