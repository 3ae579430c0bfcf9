// `weftctl fabric`: the fabric twin daemon weft-fabric (FabricService,
// proto/weft/v1/fabric.proto) at --fabric HOST:PORT, plaintext because the twin is a
// loopback simulation with nothing to protect:
//   fabric faults                      the faults injected now
//   fabric inject KIND [--node N] [--nic D] [--link L] [--value X]
//   fabric clear ID|all
//   fabric links [--prefix P] [--busy] per cable direction: capacity, load, queue, marks
//   fabric jobs                        the twin's synthetic training jobs
// --output json prints the service's answer as proto3 JSON. A handler of the command
// table (cli/command_table.h); thread-compatible.
#ifndef WEFT_CLI_FABRIC_COMMAND_H_
#define WEFT_CLI_FABRIC_COMMAND_H_

#include <string>
#include <vector>

#include "cli/command_context.h"

namespace weft {

int RunFabricCommand(const std::vector<std::string>& args, const CommandContext& context);

}  // namespace weft

#endif  // WEFT_CLI_FABRIC_COMMAND_H_
