// `weftctl pingmesh status | matrix [--rack R]` and `weftctl check --nodes a,b,...
// [--seconds S]` over the controller's PingmeshService
// (proto/weft/v1/pingmesh.proto). `status` shows the plan (probed nodes, streams, rate,
// whether it meets the detection target), the verdicts in force (which host, NIC, switch
// or link is blamed, for what, since when and on what evidence) and what is not probed;
// `matrix` the probes' loss and RTT rack to rack, or node to node from one rack; `check`
// has the nodes probe each other for S seconds and says per node whether it passed and,
// if not, what is blamed (exit 1 when any node failed, so a job prolog can gate on it).
// Rendering is pure; RunPingmeshCommand, the command table's handler, calls the
// controller through the context.
//
// Exit status: 0 on success, 1 when the controller refuses or cannot be reached, 2 on a
// usage error; `check` also exits 1 when a node failed.
#ifndef WEFT_CLI_PINGMESH_COMMAND_H_
#define WEFT_CLI_PINGMESH_COMMAND_H_

#include <string>
#include <vector>

#include "cli/command_context.h"
#include "proto/weft/v1/pingmesh.pb.h"

namespace weft {

std::string FormatPingmeshStatus(const weft::v1::PingmeshStatus& status);
std::string FormatPingmeshMatrix(const weft::v1::PingmeshMatrix& matrix);

// PASS or FAIL, a row per node, the verdicts.
std::string FormatCheck(const weft::v1::CheckResponse& check);

// `args` starts with "check".
int RunCheckCommand(const std::vector<std::string>& args, const CommandContext& context);

// `args` starts with "pingmesh".
int RunPingmeshCommand(const std::vector<std::string>& args, const CommandContext& context);

}  // namespace weft

#endif  // WEFT_CLI_PINGMESH_COMMAND_H_
