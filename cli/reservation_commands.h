// weftctl's placement commands over the controller's PlacementService: `place` (or
// `place --offline`, the same engine on a topology file, no controller), `release ID |
// --job J`, `renew (ID | --job J) [--ttl S]`, `reservations` and `jobs` (every
// reservation with its job's progress and congestion, cli/job_format.h). Request building and
// rendering are cli/place_command.h; these handlers parse nothing themselves, call the
// controller through CommandContext::controller and print. Handlers of the command
// table (cli/command_table.h): `args` starts with the command's name; the return value
// is the exit status (cli/command_context.h). Thread-compatible.
#ifndef WEFT_CLI_RESERVATION_COMMANDS_H_
#define WEFT_CLI_RESERVATION_COMMANDS_H_

#include <string>
#include <vector>

#include "cli/command_context.h"

namespace weft {

int RunPlaceCommand(const std::vector<std::string>& args, const CommandContext& context);

// `release` and `renew`: args[0] says which.
int RunReleaseOrRenewCommand(const std::vector<std::string>& args,
                             const CommandContext& context);

int RunReservationsCommand(const std::vector<std::string>& args, const CommandContext& context);

int RunJobsCommand(const std::vector<std::string>& args, const CommandContext& context);

}  // namespace weft

#endif  // WEFT_CLI_RESERVATION_COMMANDS_H_
