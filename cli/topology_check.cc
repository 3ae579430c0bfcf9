#include "cli/topology_check.h"

#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/strip.h"
#include "common/status_macros.h"
#include "common/text_output.h"
#include "common/yaml_proto.h"
#include "topology/cabling.h"

namespace weft {
namespace {

// CABLING_PROBLEM_WRONG_RACK -> "wrong-rack".
std::string ProblemName(weft::v1::CablingProblem problem) {
  const std::string full = weft::v1::CablingProblem_Name(problem);
  absl::string_view name = full;
  absl::ConsumePrefix(&name, "CABLING_PROBLEM_");
  return absl::StrReplaceAll(absl::AsciiStrToLower(name), {{"_", "-"}});
}

}  // namespace

absl::StatusOr<weft::v1::StaticTopology> LoadTopologyFile(absl::string_view path) {
  weft::v1::StaticTopology topology;
  RETURN_IF_ERROR(MergeYamlFile(path, &topology));
  return topology;
}

absl::StatusOr<weft::v1::ClusterSnapshot> LoadObservedSnapshot(absl::string_view path) {
  ASSIGN_OR_RETURN(weft::v1::StaticTopology topology, LoadTopologyFile(path));
  weft::v1::ClusterSnapshot snapshot;
  *snapshot.mutable_nodes() = std::move(*topology.mutable_nodes());
  return snapshot;
}

std::string FormatCablingTable(const weft::v1::CablingReport& report, int nodes_checked) {
  if (report.findings().empty()) {
    return absl::StrCat("cabling matches the design (", nodes_checked, " nodes checked)\n");
  }
  std::vector<std::vector<std::string>> rows = {
      {"PROBLEM", "NODE", "NIC", "EXPECTED", "OBSERVED", "ACTION"}};
  for (const weft::v1::CablingFinding& f : report.findings()) {
    std::string nic = f.nic();
    if (nic.empty() && f.nic_index() >= 0) nic = absl::StrCat("#", f.nic_index());
    rows.push_back({ProblemName(f.problem()), f.node(), nic.empty() ? "-" : nic,
                    f.expected().empty() ? "-" : f.expected(),
                    f.observed().empty() ? "-" : f.observed(), f.action()});
  }
  return absl::StrCat(FormatTable(rows), report.findings_size(),
                      report.findings_size() == 1 ? " finding in " : " findings in ",
                      nodes_checked, " nodes\n");
}

absl::StatusOr<TopologyCheckResult> RunTopologyCheck(absl::string_view design_path,
                                                     const weft::v1::ClusterSnapshot& observed,
                                                     bool json) {
  ASSIGN_OR_RETURN(weft::v1::StaticTopology design, LoadTopologyFile(design_path));
  absl::StatusOr<weft::v1::CablingReport> report =
      topology::CheckCabling(design, topology::ObservedFromSnapshot(observed));
  if (!report.ok()) {
    return absl::Status(report.status().code(),
                        absl::StrCat(design_path, ": ", report.status().message()));
  }
  TopologyCheckResult result;
  result.output = json ? FormatJson(*report) : FormatCablingTable(*report, observed.nodes_size());
  result.exit_code = report->findings().empty() ? 0 : 1;
  return result;
}

}  // namespace weft
