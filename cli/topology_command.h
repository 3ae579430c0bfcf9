// `weftctl topology export --format slurm|k8s-labels|json [--offline --topology T.yaml]`
// (cli/topology_export.h) and `weftctl topology check --topology DESIGN.yaml
// [--offline --observed SNAPSHOT.json]` (cli/topology_check.h). Without --offline both
// read the controller's topology (PlacementService.GetTopology) and warn on `err` about
// the nodes it left out. Handler of the command table (cli/command_table.h): `args`
// starts with "topology"; the return value is the exit status (cli/command_context.h;
// `check` exits 1 on findings). Thread-compatible.
#ifndef WEFT_CLI_TOPOLOGY_COMMAND_H_
#define WEFT_CLI_TOPOLOGY_COMMAND_H_

#include <string>
#include <vector>

#include "cli/command_context.h"

namespace weft {

int RunTopologyCommand(const std::vector<std::string>& args, const CommandContext& context);

}  // namespace weft

#endif  // WEFT_CLI_TOPOLOGY_COMMAND_H_
