#include "cli/place_command.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "common/status_macros.h"
#include "common/text_output.h"
#include "common/yaml_proto.h"
#include "placement/engine.h"
#include "placement/topology.h"

namespace weft {
namespace {

using weft::v1::PlacementRequest;
using weft::v1::PlacementResponse;

absl::StatusOr<weft::v1::TrafficPattern> ParsePattern(absl::string_view name) {
  const std::string lower = absl::AsciiStrToLower(name);
  if (lower == "ring" || lower == "allreduce" || lower == "ring_allreduce") {
    return weft::v1::TRAFFIC_PATTERN_RING_ALLREDUCE;
  }
  if (lower == "alltoall" || lower == "all_to_all") return weft::v1::TRAFFIC_PATTERN_ALL_TO_ALL;
  if (lower == "pipeline") return weft::v1::TRAFFIC_PATTERN_PIPELINE;
  return absl::InvalidArgumentError(absl::StrCat(
      "--pattern '", name, "' is not a traffic pattern; accepted: ring, alltoall, pipeline"));
}

bool SafeInShell(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) ||
         absl::string_view("_.,:=/+@%-").find(c) != absl::string_view::npos;
}

// "0-7" for consecutive ranks, "3" for one.
std::string RankRange(uint32_t first, uint32_t last) {
  return first == last ? absl::StrCat(first) : absl::StrCat(first, "-", last);
}

}  // namespace

absl::StatusOr<PlacementRequest> MakePlacementRequest(const PlaceFlags& flags) {
  if (flags.job.empty()) {
    return absl::InvalidArgumentError(
        "--job is required: the scheduler's job id (e.g. --job \"$SLURM_JOB_ID\"); placing "
        "the same job again returns its reservation");
  }
  if (flags.nodes == 0 && !flags.nodes_text.empty() && flags.nodes_text != "0") {
    return absl::InvalidArgumentError(absl::StrCat(
        "--nodes takes a number of nodes for place (got '", flags.nodes_text,
        "'); to place on given nodes, use --within a,b,..."));
  }
  if (flags.nodes > 0 && flags.ranks > 0) {
    return absl::InvalidArgumentError(
        "--nodes and --ranks both size the job; give one (--ranks needs --gpus-per-node "
        "unless all nodes have the same GPU count)");
  }
  const bool parallel = flags.tp > 0 || flags.pp > 0 || flags.dp > 0 || flags.ep > 0;
  if (flags.nodes == 0 && flags.ranks == 0 && !parallel) {
    return absl::InvalidArgumentError(
        "say how big the job is: --nodes N, or --ranks R --gpus-per-node G, or the "
        "parallel sizes --tp T --pp P --dp D");
  }
  if (!flags.pattern.empty() && parallel) {
    return absl::InvalidArgumentError(
        "--pattern and --tp/--pp/--dp/--ep both describe the job's traffic; give --pattern "
        "for a flat job or the parallel sizes for a structured one, not both");
  }
  if (flags.max_congestion.has_value() &&
      !(*flags.max_congestion >= 0 && *flags.max_congestion <= 1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--max-congestion ", *flags.max_congestion,
        " is out of range; accepted: 0 (quiet) to 1 (saturated)"));
  }

  PlacementRequest request;
  request.set_job_id(flags.job);
  if (flags.nodes > 0) request.set_node_count(flags.nodes);
  if (flags.ranks > 0) request.set_rank_count(flags.ranks);
  request.set_gpus_per_node(flags.gpus_per_node);
  if (!flags.pattern.empty()) {
    ASSIGN_OR_RETURN(const weft::v1::TrafficPattern pattern, ParsePattern(flags.pattern));
    request.set_pattern(pattern);
  }
  if (parallel) {
    weft::v1::Parallelism* p = request.mutable_parallelism();
    p->set_tensor(flags.tp);
    p->set_pipeline(flags.pp);
    p->set_data(flags.dp);
    p->set_expert(flags.ep);
  }
  request.set_qos_class(flags.qos);
  weft::v1::PlacementConstraints* c = request.mutable_constraints();
  for (const std::string& node : flags.exclude) {
    const absl::string_view name = absl::StripAsciiWhitespace(node);
    if (!name.empty()) c->add_exclude_nodes(std::string(name));
  }
  c->set_max_racks(flags.max_racks);
  c->set_single_pod(flags.one_pod);
  request.set_precheck_seconds(flags.precheck_seconds);
  if (flags.max_congestion.has_value()) c->set_max_congestion(*flags.max_congestion);
  request.set_lease_ttl_s(flags.ttl_s);
  request.set_gradient_bytes(flags.gradient_bytes);
  request.set_alltoall_bytes(flags.alltoall_bytes);
  request.set_activation_bytes(flags.activation_bytes);
  return request;
}

absl::StatusOr<PlaceFormat> ParsePlaceFormat(absl::string_view name) {
  if (name == "table") return PlaceFormat::kTable;
  if (name == "hostfile") return PlaceFormat::kHostfile;
  if (name == "env") return PlaceFormat::kEnv;
  if (name == "json") return PlaceFormat::kJson;
  return absl::InvalidArgumentError(absl::StrCat(
      "--format '", name, "' is not a placement format; accepted: table, hostfile, env, json"));
}

absl::Status RestrictToNodes(const weft::v1::ClusterSnapshot& snapshot,
                             const std::vector<std::string>& within,
                             PlacementRequest* request) {
  std::set<std::string> allowed;
  for (const std::string& node : within) {
    const absl::string_view name = absl::StripAsciiWhitespace(node);
    if (!name.empty()) allowed.insert(std::string(name));
  }
  if (allowed.empty()) return absl::OkStatus();
  std::set<std::string> unknown = allowed;
  std::vector<std::string> excluded;
  for (const weft::v1::SnapshotNode& node : snapshot.nodes()) {
    if (unknown.erase(node.name()) == 0) excluded.push_back(node.name());
  }
  if (!unknown.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--within names ", unknown.size() == 1 ? "a node" : "nodes",
        " the topology does not have: ", absl::StrJoin(unknown, ", "),
        " (weftctl nodes lists the registered ones; a node without a rack is not in the "
        "topology)"));
  }
  weft::v1::PlacementConstraints* c = request->mutable_constraints();
  std::set<std::string> already(c->exclude_nodes().begin(), c->exclude_nodes().end());
  for (std::string& node : excluded) {
    if (already.count(node) == 0) c->add_exclude_nodes(std::move(node));
  }
  return absl::OkStatus();
}

absl::StatusOr<PlacementResponse> PlaceOffline(absl::string_view topology_path,
                                               absl::string_view occupancy_path,
                                               const std::vector<std::string>& within,
                                               PlacementRequest request) {
  ASSIGN_OR_RETURN(const weft::v1::ClusterSnapshot snapshot,
                   placement::LoadStaticTopology(topology_path));
  RETURN_IF_ERROR(RestrictToNodes(snapshot, within, &request));
  weft::v1::Occupancy occupancy;
  if (!occupancy_path.empty()) RETURN_IF_ERROR(MergeYamlFile(occupancy_path, &occupancy));
  return placement::Place(snapshot, occupancy, request);
}

std::string FormatHostfile(const PlacementResponse& placed) {
  std::vector<const weft::v1::RankAssignment*> ranks;
  for (const auto& r : placed.ranks()) ranks.push_back(&r);
  std::stable_sort(ranks.begin(), ranks.end(),
                   [](const auto* a, const auto* b) { return a->rank() < b->rank(); });
  std::string out;
  for (const auto* r : ranks) absl::StrAppend(&out, r->node(), "\n");
  return out;
}

std::string ShellQuoteIfNeeded(absl::string_view value) {
  if (!value.empty() && std::all_of(value.begin(), value.end(), SafeInShell)) {
    return std::string(value);
  }
  std::string out = "'";
  for (char c : value) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  out += "'";
  return out;
}

std::string FormatNodeEnvLines(const PlacementResponse& placed) {
  std::string out;
  for (const weft::v1::NodeEnv& node : placed.node_env()) {
    std::vector<std::string> vars;
    for (const weft::v1::EnvVar& var : node.env()) {
      vars.push_back(absl::StrCat(var.name(), "=", ShellQuoteIfNeeded(var.value())));
    }
    absl::StrAppend(&out, node.node(), ": ", absl::StrJoin(vars, " "), "\n");
  }
  return out;
}

std::string FormatUnixSeconds(int64_t unix_s) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::FromUnixSeconds(unix_s),
                          absl::UTCTimeZone());
}

std::string FormatPrecheck(const PlacementResponse& placed) {
  if (!placed.has_precheck()) return "";
  std::string out;
  // The pre-job check of the first placement: what it left out, or that it passed.
  std::vector<std::string> failed;
  for (const auto& node : placed.precheck().nodes()) {
    if (!node.passed()) failed.push_back(absl::StrCat(node.node(), " (", node.reason(), ")"));
  }
  absl::StrAppend(&out, "pre-job check: ",
                  failed.empty() ? (placed.precheck().passed() ? "passed"
                                                               : "nodes passed; the fabric "
                                                                 "between them is blamed")
                                 : absl::StrCat("left out ", absl::StrJoin(failed, "; ")),
                  "\n");
  for (const auto& verdict : placed.precheck().verdicts()) {
    absl::StrAppend(&out, "  blamed: ", verdict.kind(), " ", verdict.component(), " (",
                    verdict.problem(), ")\n");
  }
  return out;
}

std::string FormatPlacementSummary(const PlacementResponse& placed) {
  const int nodes = placed.ring_order_size();
  std::string out = absl::StrCat(
      "job ", placed.job_id(), ": ", nodes, nodes == 1 ? " node, " : " nodes, ",
      placed.ranks_size(), placed.ranks_size() == 1 ? " rank" : " ranks", " in ",
      placed.racks_used(), placed.racks_used() == 1 ? " rack (" : " racks (",
      absl::StrJoin(placed.racks(), ", "), "), ", placed.pods_used(),
      placed.pods_used() == 1 ? " pod" : " pods", "; NCCL_IB_TC ", placed.traffic_class(),
      "\n");
  if (placed.reservation_id().empty()) {
    absl::StrAppend(&out, "offline placement: nothing reserved\n");
  } else {
    absl::StrAppend(&out, "reservation ", placed.reservation_id(), ", expires ",
                    FormatUnixSeconds(placed.expires_at_unix_s()), "\n");
  }
  absl::StrAppend(&out, FormatPrecheck(placed));
  // Several nodes and no inter-node bytes: the request gave no sizes to predict from.
  if (nodes > 1 && placed.predicted_inter_node_bytes() == 0) {
    absl::StrAppend(&out,
                    "predicted traffic: none without sizes (--gradient-bytes, "
                    "--alltoall-bytes, --activation-bytes)\n");
  } else {
    absl::StrAppend(&out, "predicted bytes per iteration: cross-rack ",
                    placed.predicted_cross_rack_bytes(), ", cross-pod ",
                    placed.predicted_cross_pod_bytes(), ", inter-node ",
                    placed.predicted_inter_node_bytes(), "\n");
  }

  // Per node in ring order: rack, pod, its rank range(s), its NICs.
  struct NodeRow {
    std::string rack, pod;
    std::vector<std::pair<uint32_t, uint32_t>> ranges;
    std::vector<std::string> nics;
  };
  std::map<std::string, NodeRow> rows;
  std::vector<const weft::v1::RankAssignment*> ranks;
  for (const auto& r : placed.ranks()) ranks.push_back(&r);
  std::stable_sort(ranks.begin(), ranks.end(),
                   [](const auto* a, const auto* b) { return a->rank() < b->rank(); });
  for (const auto* r : ranks) {
    NodeRow& row = rows[r->node()];
    row.rack = r->rack();
    row.pod = r->pod();
    if (!row.ranges.empty() && row.ranges.back().second + 1 == r->rank()) {
      row.ranges.back().second = r->rank();
    } else {
      row.ranges.emplace_back(r->rank(), r->rank());
    }
    if (!r->nic().empty() &&
        std::find(row.nics.begin(), row.nics.end(), r->nic()) == row.nics.end()) {
      row.nics.push_back(r->nic());
    }
  }
  std::vector<std::vector<std::string>> table = {{"NODE", "RACK", "POD", "RANKS", "NICS"}};
  for (const std::string& node : placed.ring_order()) {
    const NodeRow& row = rows[node];
    std::vector<std::string> ranges;
    for (const auto& [first, last] : row.ranges) ranges.push_back(RankRange(first, last));
    std::vector<std::string> nics = row.nics;
    std::sort(nics.begin(), nics.end());
    table.push_back({node, row.rack, row.pod.empty() ? "-" : row.pod,
                     absl::StrJoin(ranges, ","), nics.empty() ? "-" : absl::StrJoin(nics, ",")});
  }
  absl::StrAppend(&out, FormatTable(table));
  return out;
}

std::string FormatPlacement(const PlacementResponse& placed, PlaceFormat format) {
  switch (format) {
    case PlaceFormat::kHostfile:
      return FormatHostfile(placed);
    case PlaceFormat::kEnv:
      return FormatNodeEnvLines(placed);
    case PlaceFormat::kJson:
      return FormatJson(placed);
    case PlaceFormat::kTable:
      break;
  }
  return FormatPlacementSummary(placed);
}

absl::StatusOr<std::string> ReservationOfJob(const weft::v1::ListReservationsResponse& list,
                                             absl::string_view job) {
  for (const PlacementResponse& r : list.reservations()) {
    if (r.job_id() == job) return r.reservation_id();
  }
  return absl::NotFoundError(absl::StrCat("job '", job,
                                          "' holds no live reservation; it may have expired "
                                          "or been released (weftctl reservations)"));
}

std::string FormatReservationsTable(const weft::v1::ListReservationsResponse& list) {
  if (list.reservations().empty()) return "no live reservations\n";
  std::vector<std::vector<std::string>> rows = {
      {"RESERVATION", "JOB", "NODES", "RANKS", "RACKS", "EXPIRES"}};
  for (const PlacementResponse& r : list.reservations()) {
    rows.push_back({r.reservation_id(), r.job_id(), absl::StrCat(r.ring_order_size()),
                    absl::StrCat(r.ranks_size()), absl::StrJoin(r.racks(), ","),
                    FormatUnixSeconds(r.expires_at_unix_s())});
  }
  return FormatTable(rows);
}

}  // namespace weft
