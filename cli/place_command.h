// `weftctl place`, `release`, `renew` and `reservations`: turning the command's flags
// into a weft.v1.PlacementRequest, placing offline on a static topology (what-if
// planning without a controller), and rendering answers. weftctl.cc only parses flags,
// calls the controller and prints what these return. Pure functions (PlaceOffline
// reads files); thread-safe.
//
// Output formats of `weftctl place --format F`:
//   table     (default) a summary for people: job, reservation, racks, predicted
//             traffic, then one row per node with its ranks and NICs.
//   hostfile  one node name per rank, in rank order, one per line: what Slurm reads
//             from SLURM_HOSTFILE with `srun --distribution=arbitrary` (and what
//             `mpirun --hostfile` reads as one slot per line).
//   env       one line per node, in ring order:
//               NODE: NAME=VALUE NAME=VALUE ...
//             NODE is the node name, then a colon and one space; the variables are the
//             engine's for that node (placement/nccl_env.h), in its order, separated by
//             single spaces: NCCL_IB_HCA (e.g. "==mlx5_0:1,mlx5_1:1" after the name:
//             the value itself starts with '=', NCCL's exact-match prefix),
//             NCCL_IB_GID_INDEX when known, NCCL_IB_TC, NCCL_SOCKET_IFNAME when known.
//             A value holding anything but letters, digits and _ . , : = / + @ % - is
//             single-quoted the POSIX shell way, so on each node
//               eval "export $(sed -n "s/^$SLURMD_NODENAME: //p" env.txt)"
//             sets them (deploy/slurm/ does this).
//   json      the PlacementResponse in proto3 JSON (field names as in placement.proto).
#ifndef WEFT_CLI_PLACE_COMMAND_H_
#define WEFT_CLI_PLACE_COMMAND_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/weft/v1/placement.pb.h"

namespace weft {

// The flags of `weftctl place`, as given (0 and "" mean "not given").
struct PlaceFlags {
  std::string job;
  uint32_t nodes = 0;
  std::string nodes_text;  // --nodes as given (a number for place)
  uint32_t ranks = 0;
  uint32_t gpus_per_node = 0;
  std::string pattern;  // ring, alltoall, pipeline
  uint32_t tp = 0;
  uint32_t pp = 0;
  uint32_t dp = 0;
  uint32_t ep = 0;
  std::string qos;
  std::vector<std::string> exclude;
  uint32_t max_racks = 0;
  bool one_pod = false;
  uint32_t precheck_seconds = 0;  // --precheck
  std::optional<double> max_congestion;
  uint32_t ttl_s = 0;
  uint64_t gradient_bytes = 0;
  uint64_t alltoall_bytes = 0;
  uint64_t activation_bytes = 0;
};

// The request the flags describe. INVALID_ARGUMENT naming the flag and what is
// accepted when: --job is missing; --nodes and --ranks are both given; neither a size
// (--nodes, --ranks) nor parallel sizes (--tp/--pp/--dp/--ep) are given; --pattern is
// not ring, alltoall or pipeline (allreduce, all_to_all and ring_allreduce are also
// accepted); --pattern is combined with parallel sizes; --max-congestion is outside
// 0..1. Everything else (sizes that do not divide, an unknown QoS class, ...) is the
// engine's to refuse. Empty --exclude entries are ignored.
absl::StatusOr<weft::v1::PlacementRequest> MakePlacementRequest(const PlaceFlags& flags);

enum class PlaceFormat { kTable, kHostfile, kEnv, kJson };

// "table", "hostfile", "env" or "json"; INVALID_ARGUMENT listing them otherwise.
absl::StatusOr<PlaceFormat> ParsePlaceFormat(absl::string_view name);

// `weftctl place --within a,b,c`: confines the placement to those nodes (a Slurm job's
// allocation, say) by adding every other node of `snapshot` to the request's
// exclude_nodes. Nothing changes when `within` is empty (empty entries are ignored).
// INVALID_ARGUMENT naming the nodes of `within` that the topology does not have.
absl::Status RestrictToNodes(const weft::v1::ClusterSnapshot& snapshot,
                             const std::vector<std::string>& within,
                             weft::v1::PlacementRequest* request);

// Places `request` with the engine on the static topology at `topology_path`
// (weft.v1.StaticTopology YAML or JSON, placement/topology.h), confined to `within`
// (RestrictToNodes), minus the nodes in the weft.v1.Occupancy YAML at
// `occupancy_path` (none when empty), e.g.
//   entries: [{node: gpu-a01, job_id: "41"}, {node: gpu-a02, job_id: "41"}]
// Nothing is reserved: the answer has no reservation id or expiry. Errors: the
// loaders' (file, line, column, field), RestrictToNodes' and the engine's refusals.
absl::StatusOr<weft::v1::PlacementResponse> PlaceOffline(
    absl::string_view topology_path, absl::string_view occupancy_path,
    const std::vector<std::string>& within, weft::v1::PlacementRequest request);

// `placed` in `format` (see the top of this file); always ends in a newline.
std::string FormatPlacement(const weft::v1::PlacementResponse& placed, PlaceFormat format);

std::string FormatHostfile(const weft::v1::PlacementResponse& placed);
// "pre-job check: passed" or "pre-job check: left out NODE (REASON); ...", then a line per
// blamed component; "" when the placement had no check. The table shows it; with the
// hostfile and env formats weftctl prints it on stderr, so the output stays clean.
std::string FormatPrecheck(const weft::v1::PlacementResponse& placed);
std::string FormatNodeEnvLines(const weft::v1::PlacementResponse& placed);
std::string FormatPlacementSummary(const weft::v1::PlacementResponse& placed);

// `value` as is when it holds only letters, digits and _ . , : = / + @ % -, else in
// single quotes (an embedded ' written as '\'').
std::string ShellQuoteIfNeeded(absl::string_view value);

// The id of the live reservation `job` holds (`weftctl release --job J`, `renew --job
// J`). NOT_FOUND, saying it may have expired or been released, when it holds none.
absl::StatusOr<std::string> ReservationOfJob(const weft::v1::ListReservationsResponse& list,
                                             absl::string_view job);

// One row per live reservation: RESERVATION JOB NODES RANKS RACKS EXPIRES (UTC);
// "no live reservations" when there are none.
std::string FormatReservationsTable(const weft::v1::ListReservationsResponse& list);

// "2026-11-30T07:00:00Z".
std::string FormatUnixSeconds(int64_t unix_s);

}  // namespace weft

#endif  // WEFT_CLI_PLACE_COMMAND_H_
