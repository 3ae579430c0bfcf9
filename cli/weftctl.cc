// weftctl: the operator's command line for a Weft controller.
//
//   weftctl [--controller HOST:PORT] [--output table|json] COMMAND ...
//     (TLS, client certificates and tokens: --tls_ca, --tls_cert, --tls_key, --token,
//      --token_file, --insecure; cli/transport.h)
//     nodes [--rack R]              one row per node with its state and rates
//     node NAME                     a node's NICs, GPUs and current rates
//     drain NAME --reason "..."     take a node out of placement
//     undrain NAME                  put a drained node back
//     events [--node N] [--since 10m|RFC3339] [--limit N]
//                                   the controller's event log, oldest first
//     racks [--pod P]               per rack and per pod: nodes by state and rates
//     place --job J (--nodes N | --ranks R --gpus-per-node G) [...] [--format F]
//                                   place a job's ranks and reserve the nodes
//                                   (cli/place_command.h: flags and formats)
//     place --offline --topology T.yaml [--occupancy O.yaml] ...
//                                   the same engine on a topology file, no controller
//     release ID | --job J          end a reservation
//     renew (ID | --job J) [--ttl S]
//                                   extend a reservation's lease
//     reservations                  the live reservations
//     topology export --format slurm|k8s-labels|json [--offline --topology T.yaml]
//                                   the rack/pod tiers for schedulers
//                                   (cli/topology_export.h)
//     topology check --topology DESIGN.yaml [--offline --observed SNAPSHOT.json]
//                                   LLDP cabling against the design (cli/topology_check.h);
//                                   exit 1 when there are findings
//     prometheus targets [--out FILE]
//                                   the agents' /metrics as a Prometheus file_sd file
//                                   (cli/prometheus_command.h)
//     audit [--who W] [--method M] [--since 10m|RFC3339] [--limit N]
//                                   who changed what, when, with what result
//                                   (cli/audit_command.h)
//     policy validate FILE          a QoS/DCQCN policy, offline (cli/policy_command.h)
//     policy diff FILE              what it would change on the controller's nodes
//     rollout start FILE | status [ID] | pause | resume | abort [--reason R] | history
//                                   staged rollout of a policy (cli/rollout_command.h)
// Flags may be written with dashes or underscores (--gpus-per-node, --gpus_per_node).
//
// Exit status: 0 on success, 1 when the controller (or the offline engine) refuses or
// cannot be reached, 2 on a usage error.
#include <cstdint>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "cli/audit_command.h"
#include "cli/command_table.h"
#include "cli/event_filter.h"
#include "cli/flag_spelling.h"
#include "cli/node_format.h"
#include "cli/place_command.h"
#include "cli/policy_command.h"
#include "cli/rollout_command.h"
#include "cli/prometheus_command.h"
#include "cli/topology_check.h"
#include "cli/topology_export.h"
#include "cli/transport.h"
#include "common/text_output.h"
#include "placement/topology.h"
#include "grpcpp/grpcpp.h"
#include "proto/weft/v1/admin.grpc.pb.h"
#include "proto/weft/v1/placement.grpc.pb.h"

ABSL_FLAG(std::string, controller, "127.0.0.1:7400", "controller gRPC address, HOST:PORT");
ABSL_FLAG(std::string, output, "table", "output format: table or json");
ABSL_FLAG(std::string, tls_ca, "", "TLS: CA that signed the controller's certificate (PEM)");
ABSL_FLAG(std::string, tls_cert, "", "TLS: client certificate (PEM; its OU is the role)");
ABSL_FLAG(std::string, tls_key, "", "TLS: client private key (PEM)");
ABSL_FLAG(std::string, token, "", "bearer token (needs --tls_ca); see also --token_file");
ABSL_FLAG(std::string, token_file, "", "file whose first line is the bearer token");
ABSL_FLAG(bool, insecure, false, "plaintext to a non-loopback controller");
ABSL_FLAG(std::string, rack, "", "nodes: only nodes of this rack");
ABSL_FLAG(std::string, reason, "", "drain: why the node is drained (shown to operators)");
ABSL_FLAG(std::string, node, "", "events: only this node's events");
ABSL_FLAG(std::string, since, "",
          "events, audit: only entries since a duration ago (10m, 1h30m) or an RFC 3339 "
          "time");
ABSL_FLAG(int, limit, 0, "events, audit: at most this many (the newest); 0 for all");
ABSL_FLAG(std::string, who, "", "audit: only calls by this caller");
ABSL_FLAG(std::string, method, "", "audit: only this RPC (DrainNode or its full name)");
ABSL_FLAG(std::string, pod, "", "racks: only racks of this pod");
ABSL_FLAG(std::string, out, "",
          "prometheus targets: file to replace atomically (default: stdout)");
ABSL_FLAG(int, timeout_ms, 5000, "deadline of each call to the controller, milliseconds");
ABSL_FLAG(std::string, job, "",
          "place: the job id (keys the reservation); release, renew: the job whose "
          "reservation");
ABSL_FLAG(uint32_t, nodes, 0, "place: number of nodes");
ABSL_FLAG(uint32_t, ranks, 0, "place: number of ranks (a multiple of --gpus-per-node)");
ABSL_FLAG(uint32_t, gpus_per_node, 0,
          "place: GPUs (ranks) per node; 0: the GPU count all nodes share");
ABSL_FLAG(std::string, pattern, "", "place: ring, alltoall or pipeline (default ring)");
ABSL_FLAG(uint32_t, tp, 0, "place: tensor-parallel size");
ABSL_FLAG(uint32_t, pp, 0, "place: pipeline-parallel size");
ABSL_FLAG(uint32_t, dp, 0, "place: data-parallel size");
ABSL_FLAG(uint32_t, ep, 0, "place: expert-parallel size");
ABSL_FLAG(std::string, qos, "", "place: training (default), storage or control");
ABSL_FLAG(std::vector<std::string>, exclude, {}, "place: nodes not to use, comma-separated");
ABSL_FLAG(std::vector<std::string>, within, {},
          "place: use only these nodes (e.g. a Slurm job's allocation), comma-separated");
ABSL_FLAG(uint32_t, max_racks, 0, "place: at most this many racks; 0: no limit");
ABSL_FLAG(bool, one_pod, false, "place: all nodes in one pod");
ABSL_FLAG(std::optional<double>, max_congestion, std::nullopt,
          "place: skip nodes more congested than this (0..1)");
ABSL_FLAG(uint32_t, ttl, 0, "place, renew: lease in seconds; 0: the controller's default");
ABSL_FLAG(uint64_t, gradient_bytes, 0, "place: gradient bytes per rank per iteration");
ABSL_FLAG(uint64_t, alltoall_bytes, 0, "place: all-to-all bytes per rank per iteration");
ABSL_FLAG(uint64_t, activation_bytes, 0, "place: activation bytes per rank per iteration");
ABSL_FLAG(std::string, format, "",
          "place: table, hostfile, env or json (default table, json with --output json); "
          "topology export: slurm, k8s-labels or json");
ABSL_FLAG(bool, offline, false,
          "place, topology export: use --topology instead of the controller");
ABSL_FLAG(std::string, topology, "",
          "with --offline: a static topology YAML/JSON file; topology check: the design");
ABSL_FLAG(std::string, observed, "",
          "topology check --offline: the observed snapshot (topology export --format json)");
ABSL_FLAG(std::string, occupancy, "",
          "place --offline: YAML of nodes already taken (weft.v1.Occupancy)");

namespace weft {
namespace {


int Usage(const std::string& problem) {
  std::cerr << "weftctl: " << problem << "\n\nusage: " << UsageText() << "\n";
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

// A refusal of the offline engine or a bad input file: like the controller's.
int OfflineFailed(const std::string& what, const absl::Status& status) {
  std::cerr << "weftctl: " << what << ": " << status.message() << "\n";
  return 1;
}

PlaceFlags PlaceFlagsFromFlags() {
  PlaceFlags flags;
  flags.job = absl::GetFlag(FLAGS_job);
  flags.nodes = absl::GetFlag(FLAGS_nodes);
  flags.ranks = absl::GetFlag(FLAGS_ranks);
  flags.gpus_per_node = absl::GetFlag(FLAGS_gpus_per_node);
  flags.pattern = absl::GetFlag(FLAGS_pattern);
  flags.tp = absl::GetFlag(FLAGS_tp);
  flags.pp = absl::GetFlag(FLAGS_pp);
  flags.dp = absl::GetFlag(FLAGS_dp);
  flags.ep = absl::GetFlag(FLAGS_ep);
  flags.qos = absl::GetFlag(FLAGS_qos);
  flags.exclude = absl::GetFlag(FLAGS_exclude);
  flags.max_racks = absl::GetFlag(FLAGS_max_racks);
  flags.one_pod = absl::GetFlag(FLAGS_one_pod);
  flags.max_congestion = absl::GetFlag(FLAGS_max_congestion);
  flags.ttl_s = absl::GetFlag(FLAGS_ttl);
  flags.gradient_bytes = absl::GetFlag(FLAGS_gradient_bytes);
  flags.alltoall_bytes = absl::GetFlag(FLAGS_alltoall_bytes);
  flags.activation_bytes = absl::GetFlag(FLAGS_activation_bytes);
  return flags;
}

class Weftctl {
 public:
  Weftctl(std::shared_ptr<grpc::Channel> channel, bool json)
      : stub_(weft::v1::AdminService::NewStub(channel)),
        placement_(weft::v1::PlacementService::NewStub(channel)),
        json_(json) {}

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
    if (command == "place") {
      if (args.size() != 1) return Usage("'place' takes no arguments (use --job, --nodes, ...)");
      return Place();
    }
    if (command == "reservations") {
      if (args.size() != 1) return Usage("'reservations' takes no arguments");
      return Reservations();
    }
    if (command == "release" || command == "renew") {
      const std::string job = absl::GetFlag(FLAGS_job);
      if (args.size() == 1 && !job.empty()) {
        absl::StatusOr<std::string> id = ReservationOfJobFromController(job);
        if (!id.ok()) return 1;
        return command == "release" ? Release(*id) : Renew(*id);
      }
      if (args.size() != 2 || !job.empty()) {
        return Usage(absl::StrCat("'", command,
                                  "' needs one reservation id (weftctl reservations) or --job J"));
      }
      return command == "release" ? Release(args[1]) : Renew(args[1]);
    }
    if (command == "topology") {
      if (args.size() == 2 && args[1] == "check") return CheckTopology();
      if (args.size() != 2 || args[1] != "export") {
        return Usage(
            "'topology' has two subcommands: topology export --format slurm|k8s-labels|json, "
            "topology check --topology DESIGN.yaml");
      }
      return ExportTopology();
    }
    if (command == "audit") {
      return RunAuditCommand(args, *stub_, absl::GetFlag(FLAGS_timeout_ms),
                             AuditFlags{absl::GetFlag(FLAGS_who), absl::GetFlag(FLAGS_method),
                                        absl::GetFlag(FLAGS_since), absl::GetFlag(FLAGS_limit)},
                             json_, std::cout, std::cerr);
    }
    if (command == "prometheus") {
      return RunPrometheusCommand(args, *stub_, absl::GetFlag(FLAGS_timeout_ms),
                                  absl::GetFlag(FLAGS_out), std::cout, std::cerr);
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

  int Place() {
    std::string format_name = absl::GetFlag(FLAGS_format);
    if (format_name.empty()) format_name = json_ ? "json" : "table";
    absl::StatusOr<PlaceFormat> format = ParsePlaceFormat(format_name);
    if (!format.ok()) return Usage(std::string(format.status().message()));
    absl::StatusOr<weft::v1::PlacementRequest> request =
        MakePlacementRequest(PlaceFlagsFromFlags());
    if (!request.ok()) return Usage(std::string(request.status().message()));

    weft::v1::PlacementResponse response;
    if (absl::GetFlag(FLAGS_offline)) {
      if (absl::GetFlag(FLAGS_topology).empty()) {
        return Usage("place --offline needs --topology FILE (a static topology, e.g. from "
                     "weftctl topology export --format json)");
      }
      absl::StatusOr<weft::v1::PlacementResponse> placed =
          PlaceOffline(absl::GetFlag(FLAGS_topology), absl::GetFlag(FLAGS_occupancy),
                       absl::GetFlag(FLAGS_within), *request);
      if (!placed.ok()) {
        return OfflineFailed(absl::StrCat("place ", request->job_id()), placed.status());
      }
      response = *std::move(placed);
    } else {
      if (!absl::GetFlag(FLAGS_occupancy).empty()) {
        return Usage(
            "--occupancy is for --offline placement; the controller knows its reservations");
      }
      if (!absl::GetFlag(FLAGS_within).empty()) {
        weft::v1::GetTopologyResponse topology;
        grpc::Status status = placement_->GetTopology(
            Context().get(), weft::v1::GetTopologyRequest(), &topology);
        if (!status.ok()) return RpcFailed("place --within: get the topology", status);
        absl::Status restricted =
            RestrictToNodes(topology.snapshot(), absl::GetFlag(FLAGS_within), &*request);
        if (!restricted.ok()) return Usage(std::string(restricted.message()));
      }
      grpc::Status status = placement_->Place(Context().get(), *request, &response);
      if (!status.ok()) return RpcFailed(absl::StrCat("place ", request->job_id()), status);
    }
    std::cout << FormatPlacement(response, *format);
    return 0;
  }

  // The reservation of `job`; prints why not (and returns an error) when there is none.
  absl::StatusOr<std::string> ReservationOfJobFromController(const std::string& job) {
    weft::v1::ListReservationsResponse list;
    grpc::Status status = placement_->ListReservations(
        Context().get(), weft::v1::ListReservationsRequest(), &list);
    if (!status.ok()) {
      RpcFailed("list reservations", status);
      return absl::UnavailableError("");
    }
    absl::StatusOr<std::string> id = ReservationOfJob(list, job);
    if (!id.ok()) std::cerr << "weftctl: " << id.status().message() << "\n";
    return id;
  }

  int Release(const std::string& id) {
    weft::v1::ReleaseRequest request;
    request.set_reservation_id(id);
    weft::v1::ReleaseResponse response;
    grpc::Status status = placement_->Release(Context().get(), request, &response);
    if (!status.ok()) return RpcFailed(absl::StrCat("release ", id), status);
    if (json_) {
      std::cout << FormatJson(response);
    } else {
      std::cout << "released " << id << "\n";
    }
    return 0;
  }

  int Renew(const std::string& id) {
    weft::v1::RenewRequest request;
    request.set_reservation_id(id);
    request.set_lease_ttl_s(absl::GetFlag(FLAGS_ttl));
    weft::v1::RenewResponse response;
    grpc::Status status = placement_->Renew(Context().get(), request, &response);
    if (!status.ok()) return RpcFailed(absl::StrCat("renew ", id), status);
    if (json_) {
      std::cout << FormatJson(response);
    } else {
      std::cout << "renewed " << id << " until " << FormatUnixSeconds(response.expires_at_unix_s())
                << "\n";
    }
    return 0;
  }

  int Reservations() {
    weft::v1::ListReservationsResponse response;
    grpc::Status status = placement_->ListReservations(
        Context().get(), weft::v1::ListReservationsRequest(), &response);
    if (!status.ok()) return RpcFailed("list reservations", status);
    std::cout << (json_ ? FormatJson(response) : FormatReservationsTable(response));
    return 0;
  }

  int ExportTopology() {
    if (absl::GetFlag(FLAGS_format).empty()) {
      return Usage("topology export needs --format slurm, k8s-labels or json");
    }
    absl::StatusOr<TopologyFormat> format = ParseTopologyFormat(absl::GetFlag(FLAGS_format));
    if (!format.ok()) return Usage(std::string(format.status().message()));

    weft::v1::ClusterSnapshot snapshot;
    if (absl::GetFlag(FLAGS_offline)) {
      if (absl::GetFlag(FLAGS_topology).empty()) {
        return Usage("topology export --offline needs --topology FILE");
      }
      absl::StatusOr<weft::v1::ClusterSnapshot> loaded =
          placement::LoadStaticTopology(absl::GetFlag(FLAGS_topology));
      if (!loaded.ok()) return OfflineFailed("topology export", loaded.status());
      snapshot = *std::move(loaded);
    } else {
      weft::v1::GetTopologyResponse response;
      grpc::Status status = placement_->GetTopology(
          Context().get(), weft::v1::GetTopologyRequest(), &response);
      if (!status.ok()) return RpcFailed("topology export", status);
      for (const weft::v1::OmittedNode& omitted : response.omitted()) {
        std::cerr << "weftctl: warning: node " << omitted.node()
                  << " is not in the topology: " << omitted.reason() << "\n";
      }
      snapshot = std::move(*response.mutable_snapshot());
    }
    absl::StatusOr<std::string> exported = weft::ExportTopology(snapshot, *format);
    if (!exported.ok()) return OfflineFailed("topology export", exported.status());
    std::cout << *exported;
    return 0;
  }

  int CheckTopology() {
    if (absl::GetFlag(FLAGS_topology).empty()) {
      return Usage("topology check needs --topology DESIGN.yaml (a static topology whose "
                   "racks declare tor or rail_switches)");
    }
    weft::v1::ClusterSnapshot observed;
    if (absl::GetFlag(FLAGS_offline)) {
      if (absl::GetFlag(FLAGS_observed).empty()) {
        return Usage("topology check --offline needs --observed SNAPSHOT.json (from weftctl "
                     "topology export --format json)");
      }
      absl::StatusOr<weft::v1::ClusterSnapshot> loaded =
          LoadObservedSnapshot(absl::GetFlag(FLAGS_observed));
      if (!loaded.ok()) return OfflineFailed("topology check", loaded.status());
      observed = *std::move(loaded);
    } else {
      weft::v1::GetTopologyResponse response;
      grpc::Status status = placement_->GetTopology(
          Context().get(), weft::v1::GetTopologyRequest(), &response);
      if (!status.ok()) return RpcFailed("topology check", status);
      for (const weft::v1::OmittedNode& omitted : response.omitted()) {
        std::cerr << "weftctl: warning: node " << omitted.node()
                  << " is not checked: " << omitted.reason() << "\n";
      }
      observed = std::move(*response.mutable_snapshot());
    }
    absl::StatusOr<TopologyCheckResult> result =
        RunTopologyCheck(absl::GetFlag(FLAGS_topology), observed, json_);
    if (!result.ok()) return OfflineFailed("topology check", result.status());
    std::cout << result->output;
    return result->exit_code;
  }

  std::unique_ptr<weft::v1::AdminService::Stub> stub_;
  std::unique_ptr<weft::v1::PlacementService::Stub> placement_;
  bool json_;
};

}  // namespace
}  // namespace weft

int main(int argc, char** argv) {
  const std::string usage = weft::UsageText();
  absl::SetProgramUsageMessage(usage);
  // --help, -h and `help` [COMMAND] answer on stdout and exit 0, before Abseil's own
  // --help (which lists every flag of every library and exits 1).
  std::string help_command;
  if (weft::IsHelpRequest(std::vector<std::string>(argv + 1, argv + argc), &help_command)) {
    if (help_command.empty()) {
      std::cout << "usage: " << usage << "\n";
      return 0;
    }
    std::cout << *weft::CommandHelpText(help_command);
    return 0;
  }
  // Accept --gpus-per-node for Abseil's --gpus_per_node.
  std::vector<std::string> spelled =
      weft::UnderscoreFlagNames(std::vector<std::string>(argv + 1, argv + argc));
  spelled.insert(spelled.begin(), argv[0]);
  std::vector<char*> spelled_argv;
  for (std::string& arg : spelled) spelled_argv.push_back(arg.data());
  std::vector<char*> positional =
      absl::ParseCommandLine(static_cast<int>(spelled_argv.size()), spelled_argv.data());
  std::vector<std::string> args(positional.begin() + 1, positional.end());
  if (args.empty()) return weft::Usage("no command given");
  const std::string output = absl::GetFlag(FLAGS_output);
  if (output != "table" && output != "json") {
    return weft::Usage(absl::StrCat("--output '", output, "' is not one of: table, json"));
  }
  weft::TransportFlags transport{absl::GetFlag(FLAGS_controller), absl::GetFlag(FLAGS_tls_ca),
                                 absl::GetFlag(FLAGS_tls_cert),   absl::GetFlag(FLAGS_tls_key),
                                 absl::GetFlag(FLAGS_token),      absl::GetFlag(FLAGS_token_file),
                                 absl::GetFlag(FLAGS_insecure)};
  absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials =
      weft::WeftctlCredentials(transport);
  if (!credentials.ok()) return weft::Usage(std::string(credentials.status().message()));
  auto channel = grpc::CreateChannel(absl::GetFlag(FLAGS_controller), *credentials);
  if (args[0] == "policy" || args[0] == "rollout") {
    auto rollouts = weft::v1::RolloutService::NewStub(channel);
    const weft::RolloutCliOptions options{absl::GetFlag(FLAGS_controller), output == "json",
                                          absl::GetFlag(FLAGS_timeout_ms),
                                          absl::GetFlag(FLAGS_reason)};
    return args[0] == "policy"
               ? weft::RunPolicyCommand(args, *rollouts, options, std::cout, std::cerr)
               : weft::RunRolloutCommand(args, *rollouts, options, std::cout, std::cerr);
  }
  weft::Weftctl weftctl(channel, output == "json");
  return weftctl.Run(args);
}
