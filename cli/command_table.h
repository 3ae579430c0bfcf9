// weftctl's command table: every command with its usage lines and the flags it reads.
// The usage text (`weftctl --help`) and each command's help (`weftctl COMMAND --help`:
// its lines and its own flags only, with their help and defaults) are generated from
// it, so a command added here is documented in both. Flags are looked up in Abseil's
// registry by name: a flag named here that weftctl does not define is an error the
// test catches. Immutable; thread-safe.
#ifndef WEFT_CLI_COMMAND_TABLE_H_
#define WEFT_CLI_COMMAND_TABLE_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace weft {

struct CommandHelp {
  std::string name;                // the first word: "nodes", "topology", ...
  std::string usage;               // its lines of the usage text, newline-terminated
  std::vector<std::string> flags;  // the flags it reads, without "--"
};

// Every command, in the order the usage text lists them.
const std::vector<CommandHelp>& Commands();

// The flags every command takes (controller address, output, TLS and tokens).
const std::vector<std::string>& GlobalFlags();

// The whole usage text: the global synopsis, then every command's lines.
std::string UsageText();

// `weftctl COMMAND --help`: the command's lines, then its flags and the global ones,
// each with its help text and default. nullopt for a command that does not exist.
std::optional<std::string> CommandHelpText(absl::string_view command);

// Whether a command line (without argv[0]) asks for help: --help, -h or `help`
// anywhere; `*command` is then the command it asks about ("" for none).
bool IsHelpRequest(const std::vector<std::string>& args, std::string* command);

}  // namespace weft

#endif  // WEFT_CLI_COMMAND_TABLE_H_
