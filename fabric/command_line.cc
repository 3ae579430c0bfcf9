#include "fabric/command_line.h"

#include <cstdint>
#include <optional>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/status/status.h"
#include "common/daemon_config.h"

ABSL_FLAG(std::string, config, "", "YAML file with a weft.v1.FabricConfig");
ABSL_FLAG(std::optional<std::string>, listen, std::nullopt,
          "host:port of the gRPC server (overrides listen_address)");
ABSL_FLAG(std::optional<std::string>, controller, std::nullopt,
          "host:port of the controller that places the jobs (overrides controller_address)");
ABSL_FLAG(std::optional<uint32_t>, tick_ms, std::nullopt,
          "simulated ms advanced every tick_ms of wall time (overrides tick_ms)");
ABSL_FLAG(bool, insecure, false,
          "plaintext gRPC to a controller on any address (overrides insecure)");
ABSL_FLAG(std::optional<std::string>, tls_cert, std::nullopt,
          "client certificate PEM for the controller (overrides tls.cert_file)");
ABSL_FLAG(std::optional<std::string>, tls_key, std::nullopt,
          "client private key PEM (overrides tls.key_file)");
ABSL_FLAG(std::optional<std::string>, tls_ca, std::nullopt,
          "CA of the controller's certificate, PEM (overrides tls.ca_file)");
ABSL_FLAG(std::string, log_level, "info", "debug, info, warning or error");

namespace weft::fabric {

void ParseFabricCommandLine(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "weft-fabric [--config FILE] [--listen HOST:PORT] [--controller HOST:PORT] "
      "[--tick_ms N] [--log_level LEVEL] [--tls_cert F --tls_key F --tls_ca F] [--insecure]");
  absl::ParseCommandLine(argc, argv);
}

std::string LogLevelFlag() { return absl::GetFlag(FLAGS_log_level); }

absl::StatusOr<weft::v1::FabricConfig> ConfigFromCommandLine() {
  const DaemonFlags flags{absl::GetFlag(FLAGS_config), absl::GetFlag(FLAGS_insecure),
                          absl::GetFlag(FLAGS_tls_cert), absl::GetFlag(FLAGS_tls_key),
                          absl::GetFlag(FLAGS_tls_ca)};
  return FabricConfigFromFlags(flags, [](weft::v1::FabricConfig* config) {
    if (auto v = absl::GetFlag(FLAGS_listen)) config->set_listen_address(*v);
    if (auto v = absl::GetFlag(FLAGS_controller)) config->set_controller_address(*v);
    if (auto v = absl::GetFlag(FLAGS_tick_ms)) config->set_tick_ms(*v);
    return absl::OkStatus();
  });
}

}  // namespace weft::fabric
