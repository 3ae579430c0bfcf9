// `weftctl prometheus targets [--out FILE]`: the agents' /metrics endpoints, from the
// controller's inventory (AdminService.ListNodes), as a Prometheus file_sd target file.
// Prometheus re-reads the file when it changes (deploy/prometheus/prometheus.yml), so
// run this from a timer or after adding nodes and new nodes are scraped without
// editing Prometheus' config. The file is replaced atomically (written beside it,
// then renamed), so Prometheus never reads half of it.
//
// Output: one target group per node, sorted by name, labelled with its place:
//   [{"targets": ["10.1.0.5:7411"], "labels": {"node": "gpu-a01", "rack": "rack-a",
//     "pod": "pod-1"}}, ...]
// A node's address is the metrics_address its agent registered; a wildcard host
// (0.0.0.0, ::, or none) is replaced by the node's name, which must then resolve.
// Nodes whose agent serves no /metrics are left out and counted on stderr.
//
// Thread-compatible; the formatting and the file writing are pure of gRPC.
#ifndef WEFT_CLI_PROMETHEUS_COMMAND_H_
#define WEFT_CLI_PROMETHEUS_COMMAND_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "cli/command_context.h"
#include "proto/weft/v1/admin.pb.h"

namespace weft {

// The address Prometheus should scrape for a registered metrics address; "" when the
// node has none.
std::string ScrapeAddress(const weft::v1::NodeInfo& node);

// The file_sd JSON for `nodes` (see above). `skipped` (may be null) receives the
// names of nodes left out for lack of a /metrics address.
std::string FormatFileSdTargets(const weft::v1::ListNodesResponse& nodes,
                                std::vector<std::string>* skipped);

// Replaces `path` with `contents` atomically: a temporary file in the same directory,
// fsync, rename. On failure the old file (if any) is untouched and no temporary is
// left; the error names the path and the system error.
absl::Status WriteFileAtomically(const std::string& path, absl::string_view contents);

// Runs `weftctl prometheus ARGS...` (args[0] is "prometheus"). Writes to --out
// (`context.options.out`), or to `context.out` when it is empty. Returns the exit
// status: 0, 1 when the controller or the file system refuses, 2 on a usage error
// (messages on `context.err`).
int RunPrometheusCommand(const std::vector<std::string>& args, const CommandContext& context);

}  // namespace weft

#endif  // WEFT_CLI_PROMETHEUS_COMMAND_H_
