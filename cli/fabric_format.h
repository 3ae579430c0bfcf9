// `weftctl fabric`'s pure half: building a fault to inject from the command line (which
// fields each kind needs, checked before anything is sent) and rendering the fabric
// twin's answers (FabricService, proto/weft/v1/fabric.proto) as tables. The command
// itself is cli/fabric_command.h. Pure functions over protos; thread-safe.
#ifndef WEFT_CLI_FABRIC_FORMAT_H_
#define WEFT_CLI_FABRIC_FORMAT_H_

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/weft/v1/fabric.pb.h"

namespace weft {

// The flags of `weftctl fabric`.
struct FabricFlags {
  std::string address = "127.0.0.1:7300";  // --fabric: weft-fabric, plaintext (loopback)
  std::string nic;                         // --nic: inject pfc_storm
  std::string link;                        // --link: inject link faults
  std::optional<double> value;             // --value: the kind's magnitude
  std::string prefix;                      // --prefix: links
  bool busy = false;                       // --busy: links
};

// The fault `weftctl fabric inject KIND` asks for, `node` being --node. KIND is one of
// link_down, gray_loss, flapping_link, pfc_storm, degraded_link, dead_node. Each kind
// takes exactly the fields it needs:
//   link_down      --link
//   gray_loss      --link --value (share of packets dropped, 0 < X < 1)
//   flapping_link  --link --value (flap period, seconds > 0)
//   pfc_storm      --node --nic --value (share of time paused, 0 < X <= 1)
//   degraded_link  --link --value (share of capacity left, 0 < X < 1)
//   dead_node      --node
// INVALID_ARGUMENT (a usage error) naming what is missing, out of range or not taken.
absl::StatusOr<weft::v1::FabricFault> MakeFabricFault(absl::string_view kind,
                                                      const std::string& node,
                                                      const FabricFlags& flags);

// "link_down", "pfc_storm", ...: the name `inject` takes for `kind`.
std::string FaultKindName(weft::v1::FabricFaultKind kind);

// "link_down, gray_loss, ...": every kind `inject` takes, for messages.
std::string FaultKindNames();

// ID KIND TARGET VALUE INJECTED_AT_S, or "no faults".
std::string FormatFaultsTable(const weft::v1::ListFaultsResponse& faults);

// LINK FROM->TO GBPS UTIL% QUEUE_KB MARK% PAUSE% FLOWS DOWN, one row per cable direction.
std::string FormatLinksTable(const weft::v1::ListLinksResponse& links);

// The twin's jobs: JOB RESERVATION NODES RACKS PATTERN PLACEMENTS and the progress
// columns of `weftctl jobs` (cli/job_format.h).
std::string FormatFabricJobsTable(const weft::v1::ListFabricJobsResponse& jobs);

}  // namespace weft

#endif  // WEFT_CLI_FABRIC_FORMAT_H_
