// The daemons' configuration: embedded defaults, loading from YAML, and validation.
//
// Schemas are the ControllerConfig / AgentConfig messages in proto/weft/v1/config.proto;
// their (weft.v1.rule) options say what each field accepts. Loading starts from the
// defaults below and merges the file over them through common/yaml_proto.h, so an error
// names file:line:column, the field, the value and what is accepted. Both mains take
// the one path from their command line to a validated config at the end of this file.
// Nothing here keeps state; all functions are thread-safe.
#ifndef WEFT_COMMON_DAEMON_CONFIG_H_
#define WEFT_COMMON_DAEMON_CONFIG_H_

#include <functional>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/weft/v1/config.pb.h"

namespace weft {

// listen 127.0.0.1:7400, metrics 127.0.0.1:7401, 1000 ms interval, DOWN after 3
// missed intervals, 60 samples per NIC, 10000 events; health rules needing 2 samples
// in a row, DEGRADED after 2000 ms, HEALTHY after 10000 ms clean; thresholds: PFC
// pause 50% of the time, ECN marks 10% of received packets (from 1000 packets/s),
// rp_cnp_ignored above 0/s, packet_seq_err 10/s, local_ack_timeout_err 1/s,
// out_of_sequence 10/s, any link flap in the window; auto drain off (60 s sick to
// drain, 300 s clean to undrain). No TLS: plaintext, which validation accepts only on
// a loopback listen_address (or with insecure: true).
weft::v1::ControllerConfig DefaultControllerConfig();

// controller 127.0.0.1:7400, metrics 127.0.0.1:7411, health 127.0.0.1:7410, 1000 ms,
// backend "simulated" with 8 NICs at 400 Gb/s, 8 GPUs, traffic 0.6, backoff 200 ms..10 s,
// lldp "auto", fabric twin at 127.0.0.1:7300 (backend "fabric" only); no TLS (plaintext,
// accepted only to a loopback controller_address or with insecure: true).
// node_name has no default (required).
weft::v1::AgentConfig DefaultAgentConfig();

// weft-fabric: listen 127.0.0.1:7300, metrics off, the demo's cluster (4 racks of 8 nodes,
// 2 racks to a pod, 8 NICs at 400 Gb/s and 8 GPUs per node, 8 uplinks per ToR at 2:1
// oversubscription), ticks of 100 ms, no controller and no jobs; jobs checked every 1000 ms.
weft::v1::FabricConfig DefaultFabricConfig();

// Defaults merged with the YAML file at `path`. An empty path means defaults only.
// INVALID_ARGUMENT names file:line:column on any unknown key, wrong type or
// out-of-range value; NOT_FOUND when the file cannot be read. Required fields are not
// checked here (a flag may still supply them): call Validate* before use.
absl::StatusOr<weft::v1::ControllerConfig> LoadControllerConfig(absl::string_view path);
absl::StatusOr<weft::v1::AgentConfig> LoadAgentConfig(absl::string_view path);
absl::StatusOr<weft::v1::FabricConfig> LoadFabricConfig(absl::string_view path);

// Every (weft.v1.rule) of the schema, plus cross-field checks (e.g. agent
// max_backoff_ms >= initial_backoff_ms, controller health.consecutive_samples <=
// window_samples; tls files all or none; plaintext only to/on a loopback address
// unless insecure). INVALID_ARGUMENT names the field, the value
// and what is accepted.
absl::Status ValidateControllerConfig(const weft::v1::ControllerConfig& config);
absl::Status ValidateAgentConfig(const weft::v1::AgentConfig& config);
// Plus: jobs named once each, a job's pipeline stages and expert groups dividing its
// nodes, transport to the controller as for the agent (when one is named).
absl::Status ValidateFabricConfig(const weft::v1::FabricConfig& config);

// Whether a "host:port" is reachable from this host only: 127.0.0.0/8, [::1],
// localhost. Plaintext gRPC is accepted without `insecure` only on such addresses.
bool IsLoopbackAddress(absl::string_view address);

// From a command line: the one path both daemons' mains take. The file (--config) is
// loaded over the defaults, the flags that were given are written over it, and the
// result is validated: a flag wins over the file and the file over the default, and a
// flag is held to the file's rules, so a bad value is refused naming the config field
// it landed in (or, for a value no field can hold, the flag). The mains print the
// error after their name and exit 2 (weft-controller after "bad configuration: ").
//
// Example (controller/main.cc):
//   absl::StatusOr<weft::v1::ControllerConfig> config = ControllerConfigFromFlags(
//       flags, [](weft::v1::ControllerConfig* c) {
//         if (auto v = absl::GetFlag(FLAGS_listen)) c->set_listen_address(*v);
//         return absl::OkStatus();
//       });

// The flags both daemons spell the same way. std::nullopt: the flag was not given.
struct DaemonFlags {
  std::string config_path;              // --config; empty: the embedded defaults only
  bool insecure = false;                // --insecure; only ever turns `insecure` on
  std::optional<std::string> tls_cert;  // --tls_cert -> tls.cert_file
  std::optional<std::string> tls_key;   // --tls_key  -> tls.key_file
  std::optional<std::string> tls_ca;    // --tls_ca   -> tls.ca_file
};

// Writes a daemon's own flags into the loaded config; an error (a value no field can
// hold, e.g. an unknown fault name) is returned as is and must name the flag.
template <typename Config>
using FlagOverrides = std::function<absl::Status(Config*)>;

// LoadControllerConfig / LoadAgentConfig of flags.config_path, then `overrides` (may
// be empty), then the shared flags of DaemonFlags, then ValidateControllerConfig /
// ValidateAgentConfig. The first error, unchanged: NOT_FOUND for an unreadable file,
// INVALID_ARGUMENT naming file:line:column, the field (or flag), the value and what is
// accepted.
absl::StatusOr<weft::v1::ControllerConfig> ControllerConfigFromFlags(
    const DaemonFlags& flags, const FlagOverrides<weft::v1::ControllerConfig>& overrides);
absl::StatusOr<weft::v1::AgentConfig> AgentConfigFromFlags(
    const DaemonFlags& flags, const FlagOverrides<weft::v1::AgentConfig>& overrides);
absl::StatusOr<weft::v1::FabricConfig> FabricConfigFromFlags(
    const DaemonFlags& flags, const FlagOverrides<weft::v1::FabricConfig>& overrides);

}  // namespace weft

#endif  // WEFT_COMMON_DAEMON_CONFIG_H_
