// weftctl's node commands over the controller's AdminService: `nodes [--rack R]`,
// `node NAME`, `drain NAME --reason R`, `undrain NAME`, `events [--node N] [--since S]
// [--limit N]` and `racks [--pod P]`. Each asks the controller through
// CommandContext::controller and prints a table (cli/node_format.h) or, with
// --output json, the answer as JSON. Handlers of the command table
// (cli/command_table.h): `args` starts with the command's name; the return value is
// the exit status (cli/command_context.h). Thread-compatible.
#ifndef WEFT_CLI_NODE_COMMANDS_H_
#define WEFT_CLI_NODE_COMMANDS_H_

#include <string>
#include <vector>

#include "cli/command_context.h"

namespace weft {

int RunNodesCommand(const std::vector<std::string>& args, const CommandContext& context);
int RunNodeCommand(const std::vector<std::string>& args, const CommandContext& context);
int RunDrainCommand(const std::vector<std::string>& args, const CommandContext& context);
int RunUndrainCommand(const std::vector<std::string>& args, const CommandContext& context);
int RunEventsCommand(const std::vector<std::string>& args, const CommandContext& context);
int RunRacksCommand(const std::vector<std::string>& args, const CommandContext& context);

}  // namespace weft

#endif  // WEFT_CLI_NODE_COMMANDS_H_
