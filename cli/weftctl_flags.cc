#include "cli/weftctl_flags.h"

#include <cstdint>
#include <optional>

#include "absl/flags/flag.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/flags/parse.h"
#include "cli/flag_spelling.h"

ABSL_FLAG(std::string, controller, "127.0.0.1:7400", "controller gRPC address, HOST:PORT");
ABSL_FLAG(std::string, output, "table", "output format: table or json");
ABSL_FLAG(std::string, tls_ca, "", "TLS: CA that signed the controller's certificate (PEM)");
ABSL_FLAG(std::string, tls_cert, "", "TLS: client certificate (PEM; its OU is the role)");
ABSL_FLAG(std::string, tls_key, "", "TLS: client private key (PEM)");
ABSL_FLAG(std::string, token, "", "bearer token (needs --tls_ca); see also --token_file");
ABSL_FLAG(std::string, token_file, "", "file whose first line is the bearer token");
ABSL_FLAG(bool, insecure, false, "plaintext to a non-loopback controller");
ABSL_FLAG(std::string, rack, "",
          "nodes: only nodes of this rack; pingmesh matrix: node to node from this rack");
ABSL_FLAG(std::string, reason, "", "drain: why the node is drained (shown to operators)");
ABSL_FLAG(std::string, node, "", "events: only this node's events; fabric inject: the node");
ABSL_FLAG(std::string, since, "",
          "events, audit: only entries since a duration ago (10m, 1h30m) or an RFC 3339 "
          "time");
ABSL_FLAG(int, limit, 0, "events, audit: at most this many (the newest); 0 for all");
ABSL_FLAG(std::string, who, "", "audit: only calls by this caller");
ABSL_FLAG(std::string, method, "", "audit: only this RPC (DrainNode or its full name)");
ABSL_FLAG(std::string, pod, "", "racks: only racks of this pod");
ABSL_FLAG(std::string, out, "",
          "prometheus targets: file to replace atomically (default: stdout)");
ABSL_FLAG(int, timeout_ms, 5000, "deadline of each call to the controller (or weft-fabric), milliseconds");
ABSL_FLAG(std::string, job, "",
          "place: the job id (keys the reservation); release, renew: the job whose "
          "reservation");
ABSL_FLAG(std::string, nodes, "",
          "place: number of nodes; check: the nodes to check, comma-separated");
ABSL_FLAG(uint32_t, seconds, 10, "check: how long the nodes probe each other");
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
ABSL_FLAG(uint32_t, precheck, 0,
          "place: seconds of pingmesh pre-job check before answering; nodes that fail are "
          "left out; 0: none");
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
ABSL_FLAG(std::string, fabric, "127.0.0.1:7300",
          "fabric: weft-fabric's gRPC address, HOST:PORT (plaintext: a loopback simulation)");
ABSL_FLAG(std::string, nic, "", "fabric inject: the NIC, e.g. mlx5_0 (pfc_storm)");
ABSL_FLAG(std::string, link, "",
          "fabric inject: the cable, as `weftctl fabric links` names it");
ABSL_FLAG(std::optional<double>, value, std::nullopt,
          "fabric inject: the fault's magnitude (a share, or seconds for flapping_link)");
ABSL_FLAG(std::string, prefix, "", "fabric links: only links with an end named so");
ABSL_FLAG(bool, busy, false, "fabric links: only links carrying traffic or paused");
ABSL_FLAG(std::vector<std::string>, scope, {},
          "tune propose: racks to tune (pod:NAME, node:NAME for pods and nodes), "
          "comma-separated; empty: the whole cluster");
ABSL_FLAG(bool, dry_run, false, "tune propose: evaluate only; the proposal can never be applied");
ABSL_FLAG(std::string, strategy, "", "tune propose: surrogate (default) or annealing");
ABSL_FLAG(uint64_t, seed, 0, "tune propose: the search's seed (same seed, same proposal)");
ABSL_FLAG(uint32_t, max_evaluations, 0,
          "tune propose: candidates to evaluate at most; 0: the controller's limit");
ABSL_FLAG(bool, wait, false, "tune propose: wait for the search to end and show it");

namespace weft {

std::vector<std::string> ParseWeftctlFlags(int argc, char** argv) {
  // Accept --gpus-per-node for Abseil's --gpus_per_node.
  std::vector<std::string> spelled =
      UnderscoreFlagNames(std::vector<std::string>(argv + 1, argv + argc));
  spelled.insert(spelled.begin(), argv[0]);
  std::vector<char*> spelled_argv;
  for (std::string& arg : spelled) spelled_argv.push_back(arg.data());
  std::vector<char*> positional =
      absl::ParseCommandLine(static_cast<int>(spelled_argv.size()), spelled_argv.data());
  return std::vector<std::string>(positional.begin() + 1, positional.end());
}

WeftctlOptions WeftctlOptionsFromFlags() {
  WeftctlOptions options;
  options.transport = {absl::GetFlag(FLAGS_controller), absl::GetFlag(FLAGS_tls_ca),
                       absl::GetFlag(FLAGS_tls_cert),   absl::GetFlag(FLAGS_tls_key),
                       absl::GetFlag(FLAGS_token),      absl::GetFlag(FLAGS_token_file),
                       absl::GetFlag(FLAGS_insecure)};
  options.output = absl::GetFlag(FLAGS_output);
  options.timeout_ms = absl::GetFlag(FLAGS_timeout_ms);
  options.rack = absl::GetFlag(FLAGS_rack);
  options.reason = absl::GetFlag(FLAGS_reason);
  options.node = absl::GetFlag(FLAGS_node);
  options.since = absl::GetFlag(FLAGS_since);
  options.limit = absl::GetFlag(FLAGS_limit);
  options.who = absl::GetFlag(FLAGS_who);
  options.method = absl::GetFlag(FLAGS_method);
  options.pod = absl::GetFlag(FLAGS_pod);
  options.out = absl::GetFlag(FLAGS_out);
  PlaceFlags& place = options.place;
  place.job = absl::GetFlag(FLAGS_job);
  const std::string nodes = absl::GetFlag(FLAGS_nodes);
  options.node_list = absl::StrSplit(nodes, ',', absl::SkipEmpty());
  options.seconds = absl::GetFlag(FLAGS_seconds);
  place.nodes_text = nodes;
  if (!absl::SimpleAtoi(nodes, &place.nodes)) place.nodes = 0;
  place.ranks = absl::GetFlag(FLAGS_ranks);
  place.gpus_per_node = absl::GetFlag(FLAGS_gpus_per_node);
  place.pattern = absl::GetFlag(FLAGS_pattern);
  place.tp = absl::GetFlag(FLAGS_tp);
  place.pp = absl::GetFlag(FLAGS_pp);
  place.dp = absl::GetFlag(FLAGS_dp);
  place.ep = absl::GetFlag(FLAGS_ep);
  place.qos = absl::GetFlag(FLAGS_qos);
  place.exclude = absl::GetFlag(FLAGS_exclude);
  place.max_racks = absl::GetFlag(FLAGS_max_racks);
  place.one_pod = absl::GetFlag(FLAGS_one_pod);
  place.precheck_seconds = absl::GetFlag(FLAGS_precheck);
  place.max_congestion = absl::GetFlag(FLAGS_max_congestion);
  place.ttl_s = absl::GetFlag(FLAGS_ttl);
  place.gradient_bytes = absl::GetFlag(FLAGS_gradient_bytes);
  place.alltoall_bytes = absl::GetFlag(FLAGS_alltoall_bytes);
  place.activation_bytes = absl::GetFlag(FLAGS_activation_bytes);
  options.within = absl::GetFlag(FLAGS_within);
  options.format = absl::GetFlag(FLAGS_format);
  options.offline = absl::GetFlag(FLAGS_offline);
  options.topology = absl::GetFlag(FLAGS_topology);
  options.observed = absl::GetFlag(FLAGS_observed);
  options.occupancy = absl::GetFlag(FLAGS_occupancy);
  FabricFlags& fabric = options.fabric;
  fabric.address = absl::GetFlag(FLAGS_fabric);
  fabric.nic = absl::GetFlag(FLAGS_nic);
  fabric.link = absl::GetFlag(FLAGS_link);
  fabric.value = absl::GetFlag(FLAGS_value);
  fabric.prefix = absl::GetFlag(FLAGS_prefix);
  fabric.busy = absl::GetFlag(FLAGS_busy);
  TuneFlags& tune = options.tune;
  tune.scope = absl::GetFlag(FLAGS_scope);
  tune.dry_run = absl::GetFlag(FLAGS_dry_run);
  tune.strategy = absl::GetFlag(FLAGS_strategy);
  tune.seed = absl::GetFlag(FLAGS_seed);
  tune.max_evaluations = absl::GetFlag(FLAGS_max_evaluations);
  tune.wait = absl::GetFlag(FLAGS_wait);
  return options;
}

}  // namespace weft
