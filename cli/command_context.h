// What every weftctl command runs with: the streams it writes to, the parsed options
// (global and per-command flags as plain values) and the controller. main() builds one
// on std::cout and std::cerr from the command line; tests build one on string streams
// and a controller of their own. Commands never read flags or write to std::cout or
// std::cerr themselves.
//
// Exit status, for every command: 0 on success, 1 when the controller (or the offline
// engine, or a file) refuses or cannot be reached, 2 on a usage error.
//
// Not thread-safe: one command runs on one context.
#ifndef WEFT_CLI_COMMAND_CONTEXT_H_
#define WEFT_CLI_COMMAND_CONTEXT_H_

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "cli/controller_client.h"
#include "cli/fabric_format.h"
#include "cli/place_command.h"
#include "cli/transport.h"

namespace weft {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;
inline constexpr int kExitUsage = 2;

// weftctl tune's flags.
struct TuneFlags {
  std::vector<std::string> scope;  // --scope: racks, pod:NAME, node:NAME
  bool dry_run = false;
  std::string strategy;            // surrogate (default) or annealing
  uint64_t seed = 0;
  uint32_t max_evaluations = 0;    // 0: the controller's limit
  bool wait = false;               // propose: follow the search to its end
};

// weftctl's flags, parsed (cli/weftctl_flags.h); defaults are the flags' defaults.
struct WeftctlOptions {
  TransportFlags transport{"127.0.0.1:7400"};  // --controller, TLS and tokens
  std::string output = "table";                // table or json
  int timeout_ms = 5000;
  std::string rack;    // nodes
  std::vector<std::string> node_list;  // check --nodes a,b,...
  uint32_t seconds = 10;               // check --seconds
  std::string reason;  // drain, rollout abort
  std::string node;    // events, fabric inject
  std::string since;   // events, audit
  int limit = 0;       // events, audit
  std::string who;     // audit
  std::string method;  // audit
  std::string pod;     // racks
  std::string out;     // prometheus targets
  PlaceFlags place;    // place (--job and --ttl also for release and renew)
  std::vector<std::string> within;  // place
  std::string format;               // place, topology export
  bool offline = false;             // place, topology export and check
  std::string topology;             // place/topology export --offline, topology check
  std::string observed;             // topology check --offline
  std::string occupancy;            // place --offline
  FabricFlags fabric;               // fabric (--fabric, --nic, --link, --value, ...)
  TuneFlags tune;                   // tune (--scope, --dry-run, --wait, ...)
};

// "weftctl: PROBLEM", a blank line, then "usage: " and `usage`, on `err`; returns
// kExitUsage.
int PrintUsageError(std::ostream& err, absl::string_view usage, absl::string_view problem);

struct CommandContext {
  std::ostream& out;
  std::ostream& err;
  const WeftctlOptions& options;
  ControllerClient& controller;
  std::string usage;  // the whole usage text, for usage errors

  bool json() const { return options.output == "json"; }

  // PrintUsageError on `err` with the whole usage text.
  int Usage(absl::string_view problem) const;

  // "weftctl: WHAT: MESSAGE" on `err` for a refused or failed call, offline or to the
  // controller (ControllerClient::Call words the unreachable case); returns kExitFailed.
  int Failed(absl::string_view what, const absl::Status& status) const;
};

}  // namespace weft

#endif  // WEFT_CLI_COMMAND_CONTEXT_H_
