// weft-agent: parses flags, loads and validates the config, builds the agent and runs
// it until SIGTERM or SIGINT. Exit status: 0 after a clean stop, 2 on a bad config or
// flag (nothing started), 1 when something could not start. The object graph is built
// in agent/agent_daemon.h; `weft-agent inspect` is agent/inspect_command.h.
#include <iostream>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "agent/agent_daemon.h"
#include "agent/command_line.h"
#include "agent/inspect_command.h"
#include "common/clock.h"
#include "common/log_level.h"
#include "common/logging.h"
#include "common/sd_notify.h"
#include "common/stop_signals.h"
#include "prometheus/registry.h"

namespace weft::agent {
namespace {

int Main(int argc, char** argv) {
  const StopSignals stop_signals;

  AgentCommandLine command_line = ParseAgentCommandLine(argc, argv);
  if (command_line.args.size() == 1 && command_line.args[0] == "inspect") {
    return RunInspect(std::move(command_line));
  }
  if (!command_line.args.empty()) {
    std::cerr << "weft-agent: unexpected argument '" << command_line.args[0]
              << "'; the only command is 'inspect'\n";
    return 2;
  }
  absl::StatusOr<LogLevel> log_level = ParseLogLevel(command_line.log_level);
  absl::StatusOr<weft::v1::AgentConfig> config = ConfigFromCommandLine(command_line);
  if (!log_level.ok() || !config.ok()) {
    std::cerr << "weft-agent: " << (log_level.ok() ? config.status() : log_level.status()).message()
              << "\n";
    return 2;
  }
  SetMinLogLevel(*log_level);
  // systemd Type=notify: READY once serving, the watchdog fed from now on.
  ServiceNotifier notifier(SdNotifyEnvFromProcess());

  RealClock clock;
  absl::StatusOr<std::unique_ptr<AgentDaemon>> daemon = AgentDaemon::Build(
      *config, {&clock, std::make_shared<prometheus::Registry>(), /*leave_metrics_to_exit=*/true});
  if (absl::IsInvalidArgument(daemon.status())) {
    std::cerr << "weft-agent: " << daemon.status().message() << "\n";
    return 2;
  }
  if (!daemon.ok()) {
    WEFT_LOG(ERROR) << daemon.status().message();
    return 1;
  }
  if (absl::Status started = (*daemon)->Start(); !started.ok()) {
    WEFT_LOG(ERROR) << "cannot start the agent: " << started.ToString();
    return 1;
  }
  // Ready means this node's endpoints serve; the controller session follows on its own
  // (with backoff), so a controller that is down does not fail the unit's start.
  notifier.Ready("serving node=" + config->node_name());
  WEFT_LOG(INFO) << "stopping on signal " << stop_signals.Wait();
  notifier.Stopping();
  (*daemon)->Stop();
  WEFT_LOG(INFO) << "stopped";
  return 0;
}

}  // namespace
}  // namespace weft::agent

int main(int argc, char** argv) { return weft::agent::Main(argc, argv); }
