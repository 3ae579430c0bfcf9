// weft-agent's command line: its flags (defined in command_line.cc), parsed once into
// plain values, and the config they give through the daemons' one config path
// (common/daemon_config.h: file over defaults, flags over the file, validated). Used by
// agent/main.cc and `weft-agent inspect` (agent/inspect_command.h).
//
// Not thread-safe: parse once, from main, before any thread starts.
#ifndef WEFT_AGENT_COMMAND_LINE_H_
#define WEFT_AGENT_COMMAND_LINE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/agent_flags.h"
#include "common/daemon_config.h"
#include "proto/weft/v1/config.pb.h"

namespace weft::agent {

struct AgentCommandLine {
  DaemonFlags daemon;              // --config, --insecure, --tls_*
  AgentFlagOverrides overrides;    // the agent's own flags that were given
  std::string log_level;           // --log_level
  std::string output;              // --output (inspect)
  std::vector<std::string> args;   // positional arguments, the program name excluded
};

// Sets the usage message, merges repeated --fault flags (agent/agent_flags.h) and
// parses `argv` (absl exits on an unknown flag or --help, as before).
AgentCommandLine ParseAgentCommandLine(int argc, char** argv);

// The validated config: AgentConfigFromFlags with the agent's overrides.
absl::StatusOr<weft::v1::AgentConfig> ConfigFromCommandLine(const AgentCommandLine& command_line);

}  // namespace weft::agent

#endif  // WEFT_AGENT_COMMAND_LINE_H_
