#include "cli/reservation_commands.h"

#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "cli/job_format.h"
#include "cli/place_command.h"
#include "common/text_output.h"

namespace weft {
namespace {

using Placement = weft::v1::PlacementService::StubInterface;

int Place(const CommandContext& context) {
  const WeftctlOptions& options = context.options;
  std::string format_name = options.format;
  if (format_name.empty()) format_name = context.json() ? "json" : "table";
  absl::StatusOr<PlaceFormat> format = ParsePlaceFormat(format_name);
  if (!format.ok()) return context.Usage(format.status().message());
  absl::StatusOr<weft::v1::PlacementRequest> request = MakePlacementRequest(options.place);
  if (!request.ok()) return context.Usage(request.status().message());

  weft::v1::PlacementResponse response;
  if (options.offline) {
    if (options.topology.empty()) {
      return context.Usage("place --offline needs --topology FILE (a static topology, e.g. from "
                           "weftctl topology export --format json)");
    }
    absl::StatusOr<weft::v1::PlacementResponse> placed =
        PlaceOffline(options.topology, options.occupancy, options.within, *request);
    if (!placed.ok()) {
      return context.Failed(absl::StrCat("place ", request->job_id()), placed.status());
    }
    response = *std::move(placed);
  } else {
    if (!options.occupancy.empty()) {
      return context.Usage(
          "--occupancy is for --offline placement; the controller knows its reservations");
    }
    if (!options.within.empty()) {
      weft::v1::GetTopologyResponse topology;
      absl::Status status = context.controller.Call(
          &Placement::GetTopology, weft::v1::GetTopologyRequest(), &topology);
      if (!status.ok()) return context.Failed("place --within: get the topology", status);
      absl::Status restricted = RestrictToNodes(topology.snapshot(), options.within, &*request);
      if (!restricted.ok()) return context.Usage(restricted.message());
    }
    // A pre-job check makes the call last its seconds and their judging.
    absl::Status status = context.controller.CallFor(
        &Placement::Place, *request, &response,
        request->precheck_seconds() == 0 ? absl::ZeroDuration()
                                         : absl::Seconds(request->precheck_seconds() + 60));
    if (!status.ok()) return context.Failed(absl::StrCat("place ", request->job_id()), status);
  }
  context.out << FormatPlacement(response, *format);
  if (*format == PlaceFormat::kHostfile || *format == PlaceFormat::kEnv) {
    context.err << FormatPrecheck(response);
  }
  return kExitOk;
}

// The reservation of `job`; prints why not (and returns an error) when there is none.
absl::StatusOr<std::string> ReservationOfJobFromController(const std::string& job,
                                                           const CommandContext& context) {
  weft::v1::ListReservationsResponse list;
  absl::Status status = context.controller.Call(
      &Placement::ListReservations, weft::v1::ListReservationsRequest(), &list);
  if (!status.ok()) {
    context.Failed("list reservations", status);
    return status;
  }
  absl::StatusOr<std::string> id = ReservationOfJob(list, job);
  if (!id.ok()) context.err << "weftctl: " << id.status().message() << "\n";
  return id;
}

int Release(const std::string& id, const CommandContext& context) {
  weft::v1::ReleaseRequest request;
  request.set_reservation_id(id);
  weft::v1::ReleaseResponse response;
  absl::Status status = context.controller.Call(&Placement::Release, request, &response);
  if (!status.ok()) return context.Failed(absl::StrCat("release ", id), status);
  if (context.json()) {
    context.out << FormatJson(response);
  } else {
    context.out << "released " << id << "\n";
  }
  return kExitOk;
}

int Renew(const std::string& id, const CommandContext& context) {
  weft::v1::RenewRequest request;
  request.set_reservation_id(id);
  request.set_lease_ttl_s(context.options.place.ttl_s);
  weft::v1::RenewResponse response;
  absl::Status status = context.controller.Call(&Placement::Renew, request, &response);
  if (!status.ok()) return context.Failed(absl::StrCat("renew ", id), status);
  if (context.json()) {
    context.out << FormatJson(response);
  } else {
    context.out << "renewed " << id << " until "
                << FormatUnixSeconds(response.expires_at_unix_s()) << "\n";
  }
  return kExitOk;
}

}  // namespace

int RunPlaceCommand(const std::vector<std::string>& args, const CommandContext& context) {
  if (args.size() != 1) {
    return context.Usage("'place' takes no arguments (use --job, --nodes, ...)");
  }
  return Place(context);
}

int RunReleaseOrRenewCommand(const std::vector<std::string>& args,
                             const CommandContext& context) {
  const std::string& command = args[0];
  const std::string& job = context.options.place.job;
  auto release_or_renew = [&](const std::string& id) {
    return command == "release" ? Release(id, context) : Renew(id, context);
  };
  if (args.size() == 1 && !job.empty()) {
    absl::StatusOr<std::string> id = ReservationOfJobFromController(job, context);
    if (!id.ok()) return kExitFailed;
    return release_or_renew(*id);
  }
  if (args.size() != 2 || !job.empty()) {
    return context.Usage(absl::StrCat(
        "'", command, "' needs one reservation id (weftctl reservations) or --job J"));
  }
  return release_or_renew(args[1]);
}

int RunReservationsCommand(const std::vector<std::string>& args, const CommandContext& context) {
  if (args.size() != 1) return context.Usage("'reservations' takes no arguments");
  weft::v1::ListReservationsResponse response;
  absl::Status status = context.controller.Call(
      &Placement::ListReservations, weft::v1::ListReservationsRequest(), &response);
  if (!status.ok()) return context.Failed("list reservations", status);
  context.out << (context.json() ? FormatJson(response) : FormatReservationsTable(response));
  return kExitOk;
}

int RunJobsCommand(const std::vector<std::string>& args, const CommandContext& context) {
  if (args.size() != 1) return context.Usage("'jobs' takes no arguments");
  weft::v1::ListJobsResponse response;
  absl::Status status =
      context.controller.Call(&Placement::ListJobs, weft::v1::ListJobsRequest(), &response);
  if (!status.ok()) return context.Failed("list jobs", status);
  context.out << (context.json() ? FormatJson(response) : FormatJobsTable(response));
  return kExitOk;
}

}  // namespace weft
