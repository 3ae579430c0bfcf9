// `weftctl topology check`: the cabling the nodes' LLDP neighbors show, checked against
// a designed topology (a weft.v1.StaticTopology file whose `racks` declare each rack's
// ToR or rail switches). The observed side is the controller's GetTopology snapshot
// (its NICs carry lldp_switch) or, with --offline, a snapshot file such as
// `weftctl topology export --format json` writes. The check itself is
// controller/cabling.h; these functions load, run and render it. Thread-safe.
//
// Table output, one row per finding (or one line saying the cabling is as designed):
//   PROBLEM       NODE     NIC     EXPECTED   OBSERVED             ACTION
//   miswired      gpu-a01  mlx5_0  leaf-a-r0  leaf-a-r1 port swp1  move the cable of ...
// JSON output: the weft.v1.CablingReport.
#ifndef WEFT_CLI_TOPOLOGY_CHECK_H_
#define WEFT_CLI_TOPOLOGY_CHECK_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/weft/v1/placement.pb.h"

namespace weft {

// A StaticTopology file (YAML or JSON) read as is: no node_defaults expansion and no
// placement validation, so nodes without a rack are kept. Errors name the file, line
// and column (common/yaml_proto.h); NOT_FOUND when unreadable.
absl::StatusOr<weft::v1::StaticTopology> LoadTopologyFile(absl::string_view path);

// The observed nodes of an offline snapshot file (LoadTopologyFile's nodes).
absl::StatusOr<weft::v1::ClusterSnapshot> LoadObservedSnapshot(absl::string_view path);

// The findings as a table (see above).
std::string FormatCablingTable(const weft::v1::CablingReport& report, int nodes_checked);

struct TopologyCheckResult {
  std::string output;  // for stdout
  int exit_code = 0;   // 0: as designed; 1: findings
};

// Loads the design at `design_path`, checks `observed` against it and renders the
// report (JSON when `json`). Errors: those of LoadTopologyFile, and CheckCabling's
// INVALID_ARGUMENT for an inconsistent design, prefixed with the path.
absl::StatusOr<TopologyCheckResult> RunTopologyCheck(absl::string_view design_path,
                                                     const weft::v1::ClusterSnapshot& observed,
                                                     bool json);

}  // namespace weft

#endif  // WEFT_CLI_TOPOLOGY_CHECK_H_
