#include "cli/topology_command.h"

#include <utility>

#include "absl/status/statusor.h"
#include "cli/topology_check.h"
#include "cli/topology_export.h"
#include "placement/topology.h"

namespace weft {
namespace {

using Placement = weft::v1::PlacementService::StubInterface;

// The controller's topology; a warning on `err` for each node it left out, saying
// `left_out` ("is not in the topology").
absl::StatusOr<weft::v1::ClusterSnapshot> ControllerTopology(absl::string_view left_out,
                                                             const CommandContext& context) {
  weft::v1::GetTopologyResponse response;
  absl::Status status = context.controller.Call(&Placement::GetTopology,
                                                weft::v1::GetTopologyRequest(), &response);
  if (!status.ok()) return status;
  for (const weft::v1::OmittedNode& omitted : response.omitted()) {
    context.err << "weftctl: warning: node " << omitted.node() << " " << left_out << ": "
                << omitted.reason() << "\n";
  }
  return std::move(*response.mutable_snapshot());
}

int Export(const CommandContext& context) {
  const WeftctlOptions& options = context.options;
  if (options.format.empty()) {
    return context.Usage("topology export needs --format slurm, k8s-labels or json");
  }
  absl::StatusOr<TopologyFormat> format = ParseTopologyFormat(options.format);
  if (!format.ok()) return context.Usage(format.status().message());

  absl::StatusOr<weft::v1::ClusterSnapshot> snapshot;
  if (options.offline) {
    if (options.topology.empty()) {
      return context.Usage("topology export --offline needs --topology FILE");
    }
    snapshot = placement::LoadStaticTopology(options.topology);
  } else {
    snapshot = ControllerTopology("is not in the topology", context);
  }
  if (!snapshot.ok()) return context.Failed("topology export", snapshot.status());
  absl::StatusOr<std::string> exported = ExportTopology(*snapshot, *format);
  if (!exported.ok()) return context.Failed("topology export", exported.status());
  context.out << *exported;
  return kExitOk;
}

int Check(const CommandContext& context) {
  const WeftctlOptions& options = context.options;
  if (options.topology.empty()) {
    return context.Usage("topology check needs --topology DESIGN.yaml (a static topology whose "
                         "racks declare tor or rail_switches)");
  }
  absl::StatusOr<weft::v1::ClusterSnapshot> observed;
  if (options.offline) {
    if (options.observed.empty()) {
      return context.Usage("topology check --offline needs --observed SNAPSHOT.json (from "
                           "weftctl topology export --format json)");
    }
    observed = LoadObservedSnapshot(options.observed);
  } else {
    observed = ControllerTopology("is not checked", context);
  }
  if (!observed.ok()) return context.Failed("topology check", observed.status());
  absl::StatusOr<TopologyCheckResult> result =
      RunTopologyCheck(options.topology, *observed, context.json());
  if (!result.ok()) return context.Failed("topology check", result.status());
  context.out << result->output;
  return result->exit_code;
}

}  // namespace

int RunTopologyCommand(const std::vector<std::string>& args, const CommandContext& context) {
  if (args.size() == 2 && args[1] == "check") return Check(context);
  if (args.size() != 2 || args[1] != "export") {
    return context.Usage(
        "'topology' has two subcommands: topology export --format slurm|k8s-labels|json, "
        "topology check --topology DESIGN.yaml");
  }
  return Export(context);
}

}  // namespace weft
