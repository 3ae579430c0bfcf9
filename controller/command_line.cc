#include "controller/command_line.h"

#include <cstdint>
#include <optional>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/status/status.h"
#include "common/daemon_config.h"

ABSL_FLAG(std::string, config, "", "YAML file with a weft.v1.ControllerConfig");
ABSL_FLAG(std::optional<std::string>, listen, std::nullopt,
          "host:port of the gRPC server (overrides listen_address)");
ABSL_FLAG(std::optional<std::string>, metrics, std::nullopt,
          "host:port of /metrics (overrides metrics_address)");
ABSL_FLAG(std::optional<uint32_t>, telemetry_interval_ms, std::nullopt,
          "telemetry interval told to agents (overrides telemetry_interval_ms)");
ABSL_FLAG(std::optional<uint32_t>, down_after, std::nullopt,
          "missed intervals before a node is DOWN (overrides down_after_intervals)");
ABSL_FLAG(std::optional<std::string>, state_dir, std::nullopt,
          "directory of the controller's durable state (overrides state_dir)");
ABSL_FLAG(bool, insecure, false,
          "plaintext gRPC on any address, no authentication (overrides insecure)");
ABSL_FLAG(std::optional<std::string>, tls_cert, std::nullopt,
          "server certificate PEM (overrides tls.cert_file)");
ABSL_FLAG(std::optional<std::string>, tls_key, std::nullopt,
          "server private key PEM (overrides tls.key_file)");
ABSL_FLAG(std::optional<std::string>, tls_ca, std::nullopt,
          "CA of client certificates, PEM (overrides tls.ca_file)");
ABSL_FLAG(std::optional<std::string>, tokens_file, std::nullopt,
          "bearer tokens file (overrides tokens_file)");
ABSL_FLAG(std::string, log_level, "info", "debug, info, warning or error");

namespace weft::controller {

void ParseControllerCommandLine(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "weft-controller --config FILE [--listen HOST:PORT] [--metrics HOST:PORT] "
      "[--telemetry_interval_ms N] [--down_after N] [--state_dir DIR] [--log_level LEVEL] "
      "[--tls_cert F --tls_key F --tls_ca F] [--tokens_file F] [--insecure]");
  absl::ParseCommandLine(argc, argv);
}

std::string LogLevelFlag() { return absl::GetFlag(FLAGS_log_level); }

// The controller's own flags over the loaded file; the rest of the path (file,
// --config, --insecure, --tls_*, validation) is shared: common/daemon_config.h.
absl::StatusOr<weft::v1::ControllerConfig> ConfigFromCommandLine() {
  const DaemonFlags flags{absl::GetFlag(FLAGS_config), absl::GetFlag(FLAGS_insecure),
                          absl::GetFlag(FLAGS_tls_cert), absl::GetFlag(FLAGS_tls_key),
                          absl::GetFlag(FLAGS_tls_ca)};
  return ControllerConfigFromFlags(flags, [](weft::v1::ControllerConfig* config) {
    if (auto v = absl::GetFlag(FLAGS_listen)) config->set_listen_address(*v);
    if (auto v = absl::GetFlag(FLAGS_metrics)) config->set_metrics_address(*v);
    if (auto v = absl::GetFlag(FLAGS_telemetry_interval_ms)) config->set_telemetry_interval_ms(*v);
    if (auto v = absl::GetFlag(FLAGS_down_after)) config->set_down_after_intervals(*v);
    if (auto v = absl::GetFlag(FLAGS_state_dir)) config->set_state_dir(*v);
    if (auto v = absl::GetFlag(FLAGS_tokens_file)) config->set_tokens_file(*v);
    return absl::OkStatus();
  });
}

}  // namespace weft::controller
