#include "cli/node_commands.h"

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "cli/event_filter.h"
#include "cli/node_format.h"
#include "common/text_output.h"

namespace weft {
namespace {

using Admin = weft::v1::AdminService::StubInterface;

// `node`, `drain` and `undrain` take exactly one node name.
bool HasOneNodeName(const std::vector<std::string>& args) { return args.size() == 2; }

int NeedsOneNodeName(const std::vector<std::string>& args, const CommandContext& context) {
  return context.Usage(absl::StrCat("'", args[0], "' needs one node name"));
}

}  // namespace

int RunNodesCommand(const std::vector<std::string>& args, const CommandContext& context) {
  if (args.size() != 1) return context.Usage("'nodes' takes no arguments");
  weft::v1::ListNodesRequest request;
  request.set_rack(context.options.rack);
  weft::v1::ListNodesResponse response;
  absl::Status status = context.controller.Call(&Admin::ListNodes, request, &response);
  if (!status.ok()) return context.Failed("list nodes", status);
  context.out << (context.json() ? FormatJson(response) : FormatNodesTable(response));
  return kExitOk;
}

int RunNodeCommand(const std::vector<std::string>& args, const CommandContext& context) {
  if (!HasOneNodeName(args)) return NeedsOneNodeName(args, context);
  weft::v1::GetNodeRequest request;
  request.set_name(args[1]);
  weft::v1::GetNodeResponse response;
  absl::Status status = context.controller.Call(&Admin::GetNode, request, &response);
  if (!status.ok()) return context.Failed(absl::StrCat("node ", args[1]), status);
  context.out << (context.json() ? FormatJson(response.node())
                                 : FormatNodeDetail(response.node()));
  return kExitOk;
}

int RunDrainCommand(const std::vector<std::string>& args, const CommandContext& context) {
  if (!HasOneNodeName(args)) return NeedsOneNodeName(args, context);
  const std::string& name = args[1];
  weft::v1::DrainNodeRequest request;
  request.set_name(name);
  request.set_reason(context.options.reason);
  weft::v1::DrainNodeResponse response;
  absl::Status status = context.controller.Call(&Admin::DrainNode, request, &response);
  if (!status.ok()) return context.Failed(absl::StrCat("drain ", name), status);
  if (context.json()) {
    context.out << FormatJson(response.node());
  } else {
    context.out << "drained " << name << " (" << response.node().drain_reason() << ")\n";
  }
  return kExitOk;
}

int RunUndrainCommand(const std::vector<std::string>& args, const CommandContext& context) {
  if (!HasOneNodeName(args)) return NeedsOneNodeName(args, context);
  const std::string& name = args[1];
  weft::v1::UndrainNodeRequest request;
  request.set_name(name);
  weft::v1::UndrainNodeResponse response;
  absl::Status status = context.controller.Call(&Admin::UndrainNode, request, &response);
  if (!status.ok()) return context.Failed(absl::StrCat("undrain ", name), status);
  if (context.json()) {
    context.out << FormatJson(response.node());
  } else {
    context.out << "undrained " << name << ", now " << NodeStateName(response.node().state())
                << "\n";
  }
  return kExitOk;
}

int RunEventsCommand(const std::vector<std::string>& args, const CommandContext& context) {
  if (args.size() != 1) return context.Usage("'events' takes no arguments (use --node)");
  absl::StatusOr<weft::v1::ListEventsRequest> request = MakeEventsRequest(
      context.options.node, context.options.since, context.options.limit);
  if (!request.ok()) return context.Usage(request.status().message());
  weft::v1::ListEventsResponse response;
  absl::Status status = context.controller.Call(&Admin::ListEvents, *request, &response);
  if (!status.ok()) return context.Failed("list events", status);
  context.out << (context.json() ? FormatJson(response) : FormatEventsTable(response));
  return kExitOk;
}

int RunRacksCommand(const std::vector<std::string>& args, const CommandContext& context) {
  if (args.size() != 1) return context.Usage("'racks' takes no arguments (use --pod)");
  weft::v1::ListRacksRequest request;
  request.set_pod(context.options.pod);
  weft::v1::ListRacksResponse response;
  absl::Status status = context.controller.Call(&Admin::ListRacks, request, &response);
  if (!status.ok()) return context.Failed("list racks", status);
  context.out << (context.json() ? FormatJson(response) : FormatRacksTable(response));
  return kExitOk;
}

}  // namespace weft
