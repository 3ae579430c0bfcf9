// weft-fabric's command line: its flags (defined in command_line.cc) and the config they
// give through the daemons' one config path (common/daemon_config.h: file over defaults,
// flags over the file, validated).
//
// Not thread-safe: parse once, from main, before any thread starts.
#ifndef WEFT_FABRIC_COMMAND_LINE_H_
#define WEFT_FABRIC_COMMAND_LINE_H_

#include <string>

#include "absl/status/statusor.h"
#include "proto/weft/v1/config.pb.h"

namespace weft::fabric {

// Sets the usage message and parses `argv` (absl exits on an unknown flag or --help).
void ParseFabricCommandLine(int argc, char** argv);

// --log_level, as given.
std::string LogLevelFlag();

// The validated config: FabricConfigFromFlags with weft-fabric's own flags.
absl::StatusOr<weft::v1::FabricConfig> ConfigFromCommandLine();

}  // namespace weft::fabric

#endif  // WEFT_FABRIC_COMMAND_LINE_H_
