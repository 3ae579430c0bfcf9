// weft-controller: parse flags, load and validate the config, serve until SIGTERM or
// SIGINT. Everything else lives in controller_server.h.
#include <signal.h>

#include <cstdint>
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/clock.h"
#include "common/daemon_config.h"
#include "common/log_level.h"
#include "common/logging.h"
#include "common/sd_notify.h"
#include "controller/server/controller_server.h"
#include "store/controller_store.h"
#include "prometheus/registry.h"

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
namespace {

// The controller's own flags over the loaded file; the rest of the path (file,
// --config, --insecure, --tls_*, validation) is shared: common/daemon_config.h.
absl::StatusOr<weft::v1::ControllerConfig> ConfigFromFlags() {
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

int Run() {
  // Debian builds Abseil without NDEBUG, which leaves Mutex deadlock detection on: every
  // lock then updates a process-wide lock graph under a global lock. That costs more
  // than the telemetry ingest itself at thousands of agent streams (see
  // docs/benchmarks.md, controller ingest). Tests keep it on.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  absl::StatusOr<LogLevel> level = ParseLogLevel(absl::GetFlag(FLAGS_log_level));
  if (!level.ok()) {
    std::cerr << "weft-controller: " << level.status().message() << "\n";
    return 2;
  }
  SetMinLogLevel(*level);
  absl::StatusOr<weft::v1::ControllerConfig> config = ConfigFromFlags();
  if (!config.ok()) {
    std::cerr << "weft-controller: bad configuration: " << config.status().message()
              << "\n";
    return 2;
  }

  // Block the stop signals in every thread (gRPC's and prometheus' threads inherit
  // this mask) so that only sigwait below receives them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  // systemd Type=notify: READY once serving, the watchdog fed from now on.
  ServiceNotifier notifier(SdNotifyEnvFromProcess());

  absl::StatusOr<std::unique_ptr<store::ControllerStore>> store =
      store::ControllerStore::Open(config->state_dir());
  if (!store.ok()) {
    WEFT_LOG(ERROR) << "cannot open the durable state: " << store.status().message();
    return 1;
  }
  RealClock clock;
  absl::StatusOr<std::unique_ptr<ControllerServer>> server = ControllerServer::Create(
      *config, &clock, std::make_shared<prometheus::Registry>(), store->get());
  if (!server.ok()) {
    WEFT_LOG(ERROR) << "cannot start: " << server.status().message();
    return 1;
  }
  if (absl::Status started = (*server)->Start(); !started.ok()) {
    WEFT_LOG(ERROR) << "cannot start: " << started.message();
    return 1;
  }
  WEFT_LOG(INFO) << "weft-controller " << kControllerVersion
                 << " serving grpc=" << (*server)->listen_address()
                 << " metrics=" << (*server)->metrics_address()
                 << " telemetry_interval_ms=" << config->telemetry_interval_ms()
                 << " down_after_intervals=" << config->down_after_intervals()
                 << " degrade_after_ms=" << config->health().degrade_after_ms()
                 << " recover_after_ms=" << config->health().recover_after_ms()
                 << " auto_drain=" << (config->health().auto_drain().enabled() ? "on" : "off")
                 << " state_dir=" << config->state_dir()
                 << " tls=" << (config->tls().cert_file().empty() ? "off" : "mtls");
  notifier.Ready(absl::StrCat("serving grpc=", (*server)->listen_address(),
                              " metrics=", (*server)->metrics_address()));

  int signal_number = 0;
  sigwait(&stop_signals, &signal_number);
  WEFT_LOG(INFO) << "stopping signal=" << strsignal(signal_number);
  notifier.Stopping();
  (*server)->Stop();
  return 0;
}

}  // namespace
}  // namespace weft::controller

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "weft-controller --config FILE [--listen HOST:PORT] [--metrics HOST:PORT] "
      "[--telemetry_interval_ms N] [--down_after N] [--state_dir DIR] [--log_level LEVEL] "
      "[--tls_cert F --tls_key F --tls_ca F] [--tokens_file F] [--insecure]");
  absl::ParseCommandLine(argc, argv);
  return weft::controller::Run();
}
