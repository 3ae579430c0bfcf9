#include "cli/topology_export.h"

#include <map>
#include <set>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "common/text_output.h"
#include "placement/topology.h"

namespace weft {
namespace {

constexpr char kPodLabel[] = "topology.weft.io/pod";
constexpr char kRackLabel[] = "topology.weft.io/rack";
constexpr size_t kMaxLabelValue = 63;

// Racks by name (sorted) with their pod and nodes (sorted), pods with their racks.
struct Tiers {
  struct Rack {
    std::string pod;
    std::set<std::string> nodes;
  };
  std::map<std::string, Rack> racks;
  std::map<std::string, std::set<std::string>> pods;  // "" holds racks without a pod
};

absl::StatusOr<Tiers> TiersOf(const weft::v1::ClusterSnapshot& snapshot) {
  if (snapshot.nodes().empty()) {
    return absl::FailedPreconditionError(
        "the topology has no nodes; are agents registered (weftctl nodes), or is the "
        "topology file empty?");
  }
  // Build checks names, racks in one pod each, and the rest.
  RETURN_IF_ERROR(placement::Topology::Build(snapshot).status());
  Tiers tiers;
  for (const weft::v1::SnapshotNode& node : snapshot.nodes()) {
    Tiers::Rack& rack = tiers.racks[node.rack()];
    rack.pod = node.pod();
    rack.nodes.insert(node.name());
    tiers.pods[node.pod()].insert(node.rack());
  }
  return tiers;
}

// Whitespace, '=', ',', '#', brackets (hostlist ranges) and quotes break topology.conf.
absl::Status CheckSlurmName(absl::string_view kind, absl::string_view name) {
  for (char c : name) {
    if (absl::ascii_isspace(static_cast<unsigned char>(c)) ||
        absl::string_view("=,#[]\"'").find(c) != absl::string_view::npos) {
      return absl::InvalidArgumentError(absl::StrCat(
          kind, " '", name, "' holds '", std::string(1, c),
          "', which Slurm's topology.conf would misread; rename it (letters, digits, '-', "
          "'_', '.')"));
    }
  }
  return absl::OkStatus();
}

bool ValidLabelValue(absl::string_view value) {
  if (value.empty() || value.size() > kMaxLabelValue) return false;
  auto alnum = [](char c) { return absl::ascii_isalnum(static_cast<unsigned char>(c)); };
  if (!alnum(value.front()) || !alnum(value.back())) return false;
  for (char c : value) {
    if (!alnum(c) && c != '-' && c != '_' && c != '.') return false;
  }
  return true;
}

}  // namespace

absl::StatusOr<TopologyFormat> ParseTopologyFormat(absl::string_view name) {
  if (name == "slurm") return TopologyFormat::kSlurm;
  if (name == "k8s-labels") return TopologyFormat::kK8sLabels;
  if (name == "json") return TopologyFormat::kJson;
  return absl::InvalidArgumentError(absl::StrCat(
      "--format '", name, "' is not a topology format; accepted: slurm, k8s-labels, json"));
}

absl::StatusOr<std::string> FormatSlurmTopology(const weft::v1::ClusterSnapshot& snapshot) {
  ASSIGN_OR_RETURN(const Tiers tiers, TiersOf(snapshot));
  for (const auto& [name, rack] : tiers.racks) {
    RETURN_IF_ERROR(CheckSlurmName("rack", name));
    for (const std::string& node : rack.nodes) RETURN_IF_ERROR(CheckSlurmName("node", node));
    if (name == kSlurmTopSwitch) {
      return absl::InvalidArgumentError(absl::StrCat(
          "rack '", name, "' has the name of the top switch Weft adds; rename the rack"));
    }
  }
  for (const auto& [pod, racks] : tiers.pods) {
    if (pod.empty()) continue;
    RETURN_IF_ERROR(CheckSlurmName("pod", pod));
    if (tiers.racks.count(pod) > 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "rack '", pod, "' and pod '", pod,
          "' would both be switch '", pod,
          "' in topology.conf, and Slurm switch names are unique; rename one (agent "
          "--rack/--pod, or the topology file)"));
    }
    if (pod == kSlurmTopSwitch) {
      return absl::InvalidArgumentError(absl::StrCat(
          "pod '", pod, "' has the name of the top switch Weft adds; rename the pod"));
    }
  }

  std::vector<std::string> top;  // the switches under the root
  for (const auto& [pod, racks] : tiers.pods) {
    if (pod.empty()) {
      top.insert(top.end(), racks.begin(), racks.end());
    } else {
      top.push_back(pod);
    }
  }
  std::string out = absl::StrCat(
      "# Slurm topology.conf (TopologyPlugin=topology/tree) from weftctl topology export:\n"
      "# ",
      snapshot.nodes_size(), " nodes in ", tiers.racks.size(), " racks (one leaf switch each)",
      tiers.pods.size() - tiers.pods.count("") > 0
          ? absl::StrCat(" and ", tiers.pods.size() - tiers.pods.count(""),
                         " pods (one switch per spine group)")
          : std::string(),
      ".\n");
  for (const auto& [name, rack] : tiers.racks) {
    absl::StrAppend(&out, "SwitchName=", name, " Nodes=", absl::StrJoin(rack.nodes, ","),
                    "\n");
  }
  for (const auto& [pod, racks] : tiers.pods) {
    if (pod.empty()) continue;
    absl::StrAppend(&out, "SwitchName=", pod, " Switches=", absl::StrJoin(racks, ","), "\n");
  }
  if (top.size() > 1) {
    absl::StrAppend(&out, "SwitchName=", kSlurmTopSwitch, " Switches=", absl::StrJoin(top, ","),
                    "\n");
  }
  return out;
}

absl::StatusOr<std::string> FormatK8sNodeLabels(const weft::v1::ClusterSnapshot& snapshot) {
  ASSIGN_OR_RETURN(const Tiers tiers, TiersOf(snapshot));
  std::map<std::string, std::string> labels;  // node -> label arguments
  for (const auto& [name, rack] : tiers.racks) {
    // "pod/rack" (a rack name reused across pods) is labelled with the rack's own name.
    std::string rack_value = name;
    if (!rack.pod.empty() && absl::StartsWith(name, absl::StrCat(rack.pod, "/"))) {
      rack_value = name.substr(rack.pod.size() + 1);
    }
    if (!ValidLabelValue(rack_value)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "rack '", rack_value,
          "' is not a valid Kubernetes label value (at most 63 characters: letters, digits, "
          "'-', '_', '.', starting and ending with a letter or digit); rename it"));
    }
    if (!rack.pod.empty() && !ValidLabelValue(rack.pod)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "pod '", rack.pod,
          "' is not a valid Kubernetes label value (at most 63 characters: letters, digits, "
          "'-', '_', '.', starting and ending with a letter or digit); rename it"));
    }
    for (const std::string& node : rack.nodes) {
      labels[node] = rack.pod.empty()
                         ? absl::StrCat(kRackLabel, "=", rack_value)
                         : absl::StrCat(kPodLabel, "=", rack.pod, " ", kRackLabel, "=",
                                        rack_value);
    }
  }
  std::string out = absl::StrCat(
      "#!/bin/sh\n"
      "# Kubernetes node labels for Weft's topology tiers (weftctl topology export).\n"
      "# Kueue topology-aware scheduling levels: ",
      kPodLabel, ", ", kRackLabel, ", kubernetes.io/hostname.\n"
      "set -e\n");
  for (const auto& [node, args] : labels) {
    absl::StrAppend(&out, "kubectl label node ", node, " ", args, " --overwrite\n");
  }
  return out;
}

std::string FormatTopologyJson(const weft::v1::ClusterSnapshot& snapshot) {
  weft::v1::StaticTopology topology;
  *topology.mutable_nodes() = snapshot.nodes();
  return FormatJson(topology);
}

absl::StatusOr<std::string> ExportTopology(const weft::v1::ClusterSnapshot& snapshot,
                                           TopologyFormat format) {
  switch (format) {
    case TopologyFormat::kSlurm:
      return FormatSlurmTopology(snapshot);
    case TopologyFormat::kK8sLabels:
      return FormatK8sNodeLabels(snapshot);
    case TopologyFormat::kJson:
      return FormatTopologyJson(snapshot);
  }
  return absl::InvalidArgumentError("unknown topology format");
}

}  // namespace weft
