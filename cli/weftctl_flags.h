// weftctl's flags, defined once for the binary: each is listed with its help text by
// `weftctl COMMAND --help` (cli/command_table.h) and read into a WeftctlOptions
// (cli/command_context.h) after parsing, so commands see plain values. Flags may be
// written with dashes or underscores (--gpus-per-node, --gpus_per_node).
// Call from main() only (Abseil's flags are process-wide).
#ifndef WEFT_CLI_WEFTCTL_FLAGS_H_
#define WEFT_CLI_WEFTCTL_FLAGS_H_

#include <string>
#include <vector>

#include "cli/command_context.h"

namespace weft {

// Parses argv's flags (exits on a malformed or unknown flag, as Abseil does) and
// returns the words that are not flags, without argv[0]: the command and its
// arguments.
std::vector<std::string> ParseWeftctlFlags(int argc, char** argv);

// The parsed flags' values.
WeftctlOptions WeftctlOptionsFromFlags();

}  // namespace weft

#endif  // WEFT_CLI_WEFTCTL_FLAGS_H_
