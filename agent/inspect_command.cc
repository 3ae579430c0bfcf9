#include "agent/inspect_command.h"

#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/backend_factory.h"
#include "agent/inspect.h"
#include "agent/nic_backend.h"
#include "common/clock.h"
#include "common/text_output.h"
#include "proto/weft/v1/agent.pb.h"

namespace weft::agent {

int RunInspect(AgentCommandLine command_line) {
  AgentFlagOverrides& flags = command_line.overrides;
  if (command_line.daemon.config_path.empty() && !flags.backend.has_value()) {
    flags.backend = "linux";
  }
  if (!flags.node.has_value()) flags.node = "inspect";
  const std::string& output = command_line.output;
  if (output != "table" && output != "json") {
    std::cerr << "weft-agent inspect: flag --output: value '" << output
              << "' is not a format; accepted: table, json\n";
    return 2;
  }
  absl::StatusOr<weft::v1::AgentConfig> config = ConfigFromCommandLine(command_line);
  if (!config.ok()) {
    std::cerr << "weft-agent inspect: " << config.status().message() << "\n";
    return 2;
  }
  RealClock clock;
  absl::StatusOr<std::unique_ptr<NicBackend>> backend = MakeNicBackend(*config, &clock);
  if (!backend.ok()) {
    std::cerr << "weft-agent inspect: " << backend.status().message() << "\n";
    return 2;
  }
  absl::StatusOr<NodeInventory> inventory = (*backend)->Discover();
  if (!inventory.ok()) {
    std::cerr << "weft-agent inspect: " << inventory.status().message() << "\n";
    return 1;
  }
  absl::StatusOr<std::vector<RawNicReading>> readings = (*backend)->ReadCounters();
  if (!readings.ok()) {
    std::cerr << "weft-agent inspect: " << readings.status().message() << "\n";
    return 1;
  }
  weft::v1::NodeSnapshot snapshot = MakeSnapshot(*inventory, *readings);
  AddTunables((*backend)->Tunables(), &snapshot);
  std::cout << (output == "json" ? FormatJson(snapshot) : FormatSnapshotTable(snapshot));
  return 0;
}

}  // namespace weft::agent
