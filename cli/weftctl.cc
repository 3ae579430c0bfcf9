// weftctl: the operator's command line for a Weft controller.
//
//   weftctl [--controller HOST:PORT] [--output table|json] COMMAND ...
//     nodes [--rack R]              one row per node with its state and rates
//     node NAME                     a node's NICs, GPUs and current rates
//     drain NAME --reason "..."     take a node out of placement
//     undrain NAME                  put a drained node back
//     events [--node N] [--since 10m|RFC3339] [--limit N]
//                                   the controller's event log, oldest first
//     racks [--pod P]               per rack and per pod: nodes by state and rates
//
// Exit status: 0 on success, 1 when the controller refuses or cannot be reached,
// 2 on a usage error.
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "cli/event_filter.h"
#include "cli/node_format.h"
#include "grpcpp/grpcpp.h"
#include "proto/weft/v1/admin.grpc.pb.h"

ABSL_FLAG(std::string, controller, "127.0.0.1:7400", "controller gRPC address, HOST:PORT");
ABSL_FLAG(std::string, output, "table", "output format: table or json");
ABSL_FLAG(std::string, rack, "", "nodes: only nodes of this rack");
ABSL_FLAG(std::string, reason, "", "drain: why the node is drained (shown to operators)");
ABSL_FLAG(std::string, node, "", "events: only this node's events");
ABSL_FLAG(std::string, since, "",
          "events: only events since a duration ago (10m, 1h30m) or an RFC 3339 time");
ABSL_FLAG(int, limit, 0, "events: at most this many (the newest); 0 for all");
ABSL_FLAG(std::string, pod, "", "racks: only racks of this pod");
ABSL_FLAG(int, timeout_ms, 5000, "deadline of each call to the controller, milliseconds");

namespace weft {
namespace {

constexpr char kUsage[] =
    "weftctl [--controller HOST:PORT] [--output table|json] COMMAND\n"
    "  nodes [--rack R]            list nodes with state and rates\n"
    "  node NAME                   show one node's NICs, GPUs and rates\n"
    "  drain NAME --reason \"...\"   drain a node\n"
    "  undrain NAME                undrain a node\n"
    "  events [--node N] [--since 10m|2026-11-30T06:00:00Z] [--limit N]\n"
    "                              state changes, drains, rule firings, oldest first\n"
    "  racks [--pod P]             per rack and per pod: nodes by state and rates";

int Usage(const std::string& problem) {
  std::cerr << "weftctl: " << problem << "\n\nusage: " << kUsage << "\n";
  return 2;
}

int RpcFailed(const std::string& what, const grpc::Status& status) {
  std::cerr << "weftctl: " << what << ": ";
  if (status.error_code() == grpc::StatusCode::UNAVAILABLE ||
      status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
    std::cerr << "cannot reach the controller at " << absl::GetFlag(FLAGS_controller) << " ("
              << status.error_message() << "); is weft-controller running? (--controller)\n";
  } else {
    std::cerr << status.error_message() << "\n";
  }
  return 1;
}

class Weftctl {
 public:
  explicit Weftctl(std::unique_ptr<weft::v1::AdminService::Stub> stub, bool json)
      : stub_(std::move(stub)), json_(json) {}

  int Run(const std::vector<std::string>& args) {
    const std::string& command = args[0];
    if (command == "nodes") {
      if (args.size() != 1) return Usage("'nodes' takes no arguments");
      return Nodes();
    }
    if (command == "events") {
      if (args.size() != 1) return Usage("'events' takes no arguments (use --node)");
      return Events();
    }
    if (command == "racks") {
      if (args.size() != 1) return Usage("'racks' takes no arguments (use --pod)");
      return Racks();
    }
    if (command == "node" || command == "drain" || command == "undrain") {
      if (args.size() != 2) return Usage(absl::StrCat("'", command, "' needs one node name"));
      if (command == "node") return Node(args[1]);
      if (command == "drain") return Drain(args[1]);
      return Undrain(args[1]);
    }
    return Usage(absl::StrCat("unknown command '", command, "'"));
  }

 private:
  std::unique_ptr<grpc::ClientContext> Context() {
    auto context = std::make_unique<grpc::ClientContext>();
    context->set_deadline(std::chrono::system_clock::now() +
                          std::chrono::milliseconds(absl::GetFlag(FLAGS_timeout_ms)));
    return context;
  }

  int Nodes() {
    weft::v1::ListNodesRequest request;
    request.set_rack(absl::GetFlag(FLAGS_rack));
    weft::v1::ListNodesResponse response;
    grpc::Status status = stub_->ListNodes(Context().get(), request, &response);
    if (!status.ok()) return RpcFailed("list nodes", status);
    std::cout << (json_ ? FormatJson(response) : FormatNodesTable(response));
    return 0;
  }

  int Node(const std::string& name) {
    weft::v1::GetNodeRequest request;
    request.set_name(name);
    weft::v1::GetNodeResponse response;
    grpc::Status status = stub_->GetNode(Context().get(), request, &response);
    if (!status.ok()) return RpcFailed(absl::StrCat("node ", name), status);
    std::cout << (json_ ? FormatJson(response.node()) : FormatNodeDetail(response.node()));
    return 0;
  }

  int Drain(const std::string& name) {
    weft::v1::DrainNodeRequest request;
    request.set_name(name);
    request.set_reason(absl::GetFlag(FLAGS_reason));
    weft::v1::DrainNodeResponse response;
    grpc::Status status = stub_->DrainNode(Context().get(), request, &response);
    if (!status.ok()) return RpcFailed(absl::StrCat("drain ", name), status);
    if (json_) {
      std::cout << FormatJson(response.node());
    } else {
      std::cout << "drained " << name << " (" << response.node().drain_reason() << ")\n";
    }
    return 0;
  }

  int Undrain(const std::string& name) {
    weft::v1::UndrainNodeRequest request;
    request.set_name(name);
    weft::v1::UndrainNodeResponse response;
    grpc::Status status = stub_->UndrainNode(Context().get(), request, &response);
    if (!status.ok()) return RpcFailed(absl::StrCat("undrain ", name), status);
    if (json_) {
      std::cout << FormatJson(response.node());
    } else {
      std::cout << "undrained " << name << ", now " << NodeStateName(response.node().state())
                << "\n";
    }
    return 0;
  }

  int Events() {
    absl::StatusOr<weft::v1::ListEventsRequest> request =
        MakeEventsRequest(absl::GetFlag(FLAGS_node), absl::GetFlag(FLAGS_since),
                          absl::GetFlag(FLAGS_limit));
    if (!request.ok()) return Usage(std::string(request.status().message()));
    weft::v1::ListEventsResponse response;
    grpc::Status status = stub_->ListEvents(Context().get(), *request, &response);
    if (!status.ok()) return RpcFailed("list events", status);
    std::cout << (json_ ? FormatJson(response) : FormatEventsTable(response));
    return 0;
  }

  int Racks() {
    weft::v1::ListRacksRequest request;
    request.set_pod(absl::GetFlag(FLAGS_pod));
    weft::v1::ListRacksResponse response;
    grpc::Status status = stub_->ListRacks(Context().get(), request, &response);
    if (!status.ok()) return RpcFailed("list racks", status);
    std::cout << (json_ ? FormatJson(response) : FormatRacksTable(response));
    return 0;
  }

  std::unique_ptr<weft::v1::AdminService::Stub> stub_;
  bool json_;
};

}  // namespace
}  // namespace weft

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(weft::kUsage);
  std::vector<char*> positional = absl::ParseCommandLine(argc, argv);
  std::vector<std::string> args(positional.begin() + 1, positional.end());
  if (args.empty()) return weft::Usage("no command given");
  const std::string output = absl::GetFlag(FLAGS_output);
  if (output != "table" && output != "json") {
    return weft::Usage(absl::StrCat("--output '", output, "' is not one of: table, json"));
  }
  auto channel = grpc::CreateChannel(absl::GetFlag(FLAGS_controller),
                                     grpc::InsecureChannelCredentials());
  weft::Weftctl weftctl(weft::v1::AdminService::NewStub(channel), output == "json");
  return weftctl.Run(args);
}
