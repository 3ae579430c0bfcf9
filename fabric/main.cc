// weft-fabric: the fabric twin's daemon. Parses flags, loads and validates the config,
// builds the daemon (fabric/fabric_daemon.h, the composition root) and serves until
// SIGTERM or SIGINT. Exit status: 0 after a clean stop, 2 on a bad config or flag
// (nothing started), 1 when something could not start.
#include <string.h>

#include <iostream>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/clock.h"
#include "common/log_level.h"
#include "common/logging.h"
#include "common/stop_signals.h"
#include "fabric/command_line.h"
#include "fabric/fabric_daemon.h"

namespace weft::fabric {
namespace {

int Main(int argc, char** argv) {
  const StopSignals stop_signals;
  ParseFabricCommandLine(argc, argv);
  absl::StatusOr<LogLevel> level = ParseLogLevel(LogLevelFlag());
  if (!level.ok()) {
    std::cerr << "weft-fabric: " << level.status().message() << "\n";
    return 2;
  }
  SetMinLogLevel(*level);
  absl::StatusOr<weft::v1::FabricConfig> config = ConfigFromCommandLine();
  if (!config.ok()) {
    std::cerr << "weft-fabric: bad configuration: " << config.status().message() << "\n";
    return 2;
  }
  RealClock clock;
  absl::StatusOr<std::unique_ptr<FabricDaemon>> daemon = FabricDaemon::Create(*config, &clock);
  absl::Status started = daemon.ok() ? (*daemon)->Start() : daemon.status();
  if (!started.ok()) {
    WEFT_LOG(ERROR) << "cannot start: " << started.message();
    return 1;
  }
  const int signal_number = stop_signals.Wait();
  WEFT_LOG(INFO) << "stopping signal=" << strsignal(signal_number);
  (*daemon)->Stop();
  return 0;
}

}  // namespace
}  // namespace weft::fabric

int main(int argc, char** argv) { return weft::fabric::Main(argc, argv); }
