#include "cli/fabric_command.h"

#include <chrono>
#include <memory>

#include "absl/strings/str_cat.h"
#include "cli/fabric_format.h"
#include "common/grpc_status.h"
#include "common/text_output.h"
#include "grpcpp/grpcpp.h"
#include "proto/weft/v1/fabric.grpc.pb.h"

namespace weft {
namespace {

using Fabric = weft::v1::FabricService::Stub;

// The twin at --fabric: a stub, the --timeout_ms deadline, and one wording for a twin
// that cannot be reached.
class FabricConnection {
 public:
  FabricConnection(const std::string& address, int timeout_ms)
      : address_(address),
        timeout_ms_(timeout_ms),
        stub_(weft::v1::FabricService::NewStub(
            grpc::CreateChannel(address, grpc::InsecureChannelCredentials()))) {}

  template <typename Request, typename Response>
  absl::Status Call(grpc::Status (Fabric::*method)(grpc::ClientContext*, const Request&, Response*),
                    const Request& request, Response* response) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(timeout_ms_));
    const grpc::Status status = (stub_.get()->*method)(&context, request, response);
    if (status.error_code() != grpc::StatusCode::UNAVAILABLE &&
        status.error_code() != grpc::StatusCode::DEADLINE_EXCEEDED) {
      return FromGrpcStatus(status);
    }
    return absl::Status(
        FromGrpcStatus(status).code(),
        absl::StrCat("cannot reach weft-fabric at ", address_, " (", status.error_message(),
                     "); is weft-fabric running? (--fabric HOST:PORT)"));
  }

 private:
  std::string address_;
  int timeout_ms_;
  std::unique_ptr<Fabric> stub_;
};

// Prints `response` as JSON or through `table`.
template <typename Response>
int Print(const CommandContext& context, const Response& response,
          std::string (*table)(const Response&)) {
  context.out << (context.json() ? FormatJson(response) : table(response));
  return kExitOk;
}

int Faults(FabricConnection& fabric, const CommandContext& context) {
  weft::v1::ListFaultsResponse response;
  absl::Status status = fabric.Call(&Fabric::ListFaults, weft::v1::ListFaultsRequest(), &response);
  if (!status.ok()) return context.Failed("fabric faults", status);
  return Print(context, response, &FormatFaultsTable);
}

int Inject(const std::string& kind, FabricConnection& fabric, const CommandContext& context) {
  absl::StatusOr<weft::v1::FabricFault> fault =
      MakeFabricFault(kind, context.options.node, context.options.fabric);
  if (!fault.ok()) return context.Usage(fault.status().message());
  weft::v1::InjectFaultRequest request;
  *request.mutable_fault() = *std::move(fault);
  weft::v1::InjectFaultResponse response;
  absl::Status status = fabric.Call(&Fabric::InjectFault, request, &response);
  if (!status.ok()) return context.Failed(absl::StrCat("fabric inject ", kind), status);
  if (context.json()) {
    context.out << FormatJson(response);
  } else {
    context.out << "injected " << response.fault().id() << " ("
                << FaultKindName(response.fault().kind()) << "); `weftctl fabric clear "
                << response.fault().id() << "` ends it\n";
  }
  return kExitOk;
}

int Clear(const std::string& id, FabricConnection& fabric, const CommandContext& context) {
  weft::v1::ClearFaultRequest request;
  request.set_id(id);
  weft::v1::ClearFaultResponse response;
  absl::Status status = fabric.Call(&Fabric::ClearFault, request, &response);
  if (!status.ok()) return context.Failed(absl::StrCat("fabric clear ", id), status);
  if (context.json()) {
    context.out << FormatJson(response);
  } else {
    context.out << (id == "all" ? "cleared every fault" : absl::StrCat("cleared ", id)) << "\n";
  }
  return kExitOk;
}

int Links(FabricConnection& fabric, const CommandContext& context) {
  weft::v1::ListLinksRequest request;
  request.set_prefix(context.options.fabric.prefix);
  request.set_busy_only(context.options.fabric.busy);
  weft::v1::ListLinksResponse response;
  absl::Status status = fabric.Call(&Fabric::ListLinks, request, &response);
  if (!status.ok()) return context.Failed("fabric links", status);
  return Print(context, response, &FormatLinksTable);
}

int Jobs(FabricConnection& fabric, const CommandContext& context) {
  weft::v1::ListFabricJobsResponse response;
  absl::Status status =
      fabric.Call(&Fabric::ListJobs, weft::v1::ListFabricJobsRequest(), &response);
  if (!status.ok()) return context.Failed("fabric jobs", status);
  return Print(context, response, &FormatFabricJobsTable);
}

}  // namespace

int RunFabricCommand(const std::vector<std::string>& args, const CommandContext& context) {
  if (args.size() < 2) {
    return context.Usage("'fabric' needs a subcommand: faults, inject, clear, links or jobs");
  }
  const std::string& sub = args[1];
  FabricConnection fabric(context.options.fabric.address, context.options.timeout_ms);
  const bool no_arguments = args.size() == 2;
  if (sub == "faults" && no_arguments) return Faults(fabric, context);
  if (sub == "links" && no_arguments) return Links(fabric, context);
  if (sub == "jobs" && no_arguments) return Jobs(fabric, context);
  if (sub == "inject" && args.size() == 3) return Inject(args[2], fabric, context);
  if (sub == "clear" && args.size() == 3) return Clear(args[2], fabric, context);
  if (sub == "inject") {
    return context.Usage(absl::StrCat("'fabric inject' needs one fault kind: ", FaultKindNames()));
  }
  if (sub == "clear") {
    return context.Usage("'fabric clear' needs a fault id (weftctl fabric faults) or 'all'");
  }
  if (sub == "faults" || sub == "links" || sub == "jobs") {
    return context.Usage(absl::StrCat("'fabric ", sub, "' takes no arguments"));
  }
  return context.Usage(absl::StrCat("unknown fabric subcommand '", sub,
                                    "'; one of: faults, inject, clear, links, jobs"));
}

}  // namespace weft
