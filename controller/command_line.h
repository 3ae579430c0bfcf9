// weft-controller's command line: its flags (defined in command_line.cc) and the config
// they give through the daemons' one config path (common/daemon_config.h: file over
// defaults, flags over the file, validated).
//
// Not thread-safe: parse once, from main, before any thread starts.
#ifndef WEFT_CONTROLLER_COMMAND_LINE_H_
#define WEFT_CONTROLLER_COMMAND_LINE_H_

#include <string>

#include "absl/status/statusor.h"
#include "proto/weft/v1/config.pb.h"

namespace weft::controller {

// Sets the usage message and parses `argv` (absl exits on an unknown flag or --help).
void ParseControllerCommandLine(int argc, char** argv);

// --log_level, as given.
std::string LogLevelFlag();

// The validated config: ControllerConfigFromFlags with the controller's own flags.
absl::StatusOr<weft::v1::ControllerConfig> ConfigFromCommandLine();

}  // namespace weft::controller

#endif  // WEFT_CONTROLLER_COMMAND_LINE_H_
