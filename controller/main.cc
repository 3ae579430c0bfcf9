// weft-controller: parses flags, loads and validates the config, builds the controller
// (controller/server/controller_server.h, the composition root) and serves until SIGTERM
// or SIGINT. Exit status: 0 after a clean stop, 2 on a bad config or flag (nothing
// started), 1 when something could not start.
#include <string.h>

#include <iostream>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/clock.h"
#include "common/log_level.h"
#include "common/logging.h"
#include "common/sd_notify.h"
#include "common/stop_signals.h"
#include "controller/command_line.h"
#include "controller/server/controller_server.h"
#include "prometheus/registry.h"
#include "store/controller_store.h"

namespace weft::controller {
namespace {

int Main(int argc, char** argv) {
  // Debian builds Abseil without NDEBUG, which leaves Mutex deadlock detection on: every
  // lock then updates a process-wide lock graph under a global lock. That costs more
  // than the telemetry ingest itself at thousands of agent streams (see
  // docs/benchmarks.md, controller ingest). Tests keep it on.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  const StopSignals stop_signals;
  ParseControllerCommandLine(argc, argv);
  absl::StatusOr<LogLevel> level = ParseLogLevel(LogLevelFlag());
  if (!level.ok()) {
    std::cerr << "weft-controller: " << level.status().message() << "\n";
    return 2;
  }
  SetMinLogLevel(*level);
  absl::StatusOr<weft::v1::ControllerConfig> config = ConfigFromCommandLine();
  if (!config.ok()) {
    std::cerr << "weft-controller: bad configuration: " << config.status().message() << "\n";
    return 2;
  }
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
  absl::Status started = server.ok() ? (*server)->Start() : server.status();
  if (!started.ok()) {
    WEFT_LOG(ERROR) << "cannot start: " << started.message();
    return 1;
  }
  notifier.Ready(absl::StrCat("serving grpc=", (*server)->listen_address(),
                              " metrics=", (*server)->metrics_address()));

  const int signal_number = stop_signals.Wait();
  WEFT_LOG(INFO) << "stopping signal=" << strsignal(signal_number);
  notifier.Stopping();
  (*server)->Stop();
  return 0;
}

}  // namespace
}  // namespace weft::controller

int main(int argc, char** argv) { return weft::controller::Main(argc, argv); }
