// weftctl's command table: every command with its usage lines, the flags it reads and
// the handler that runs it. Dispatch (RunWeftctl), the usage text (`weftctl --help`)
// and each command's help (`weftctl COMMAND --help`: its lines and its own flags only,
// with their help and defaults) all come from it, so a command added here is run,
// documented and helped in one place. Flags are looked up in Abseil's registry by
// name: a flag named here that weftctl does not define is an error the test catches.
// The table is immutable and thread-safe; RunWeftctl runs one command on the streams
// it is given.
#ifndef WEFT_CLI_COMMAND_TABLE_H_
#define WEFT_CLI_COMMAND_TABLE_H_

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "cli/command_context.h"

namespace weft {

// Runs a command: `args` starts with its name; returns the exit status
// (cli/command_context.h).
using CommandHandler = int (*)(const std::vector<std::string>& args,
                               const CommandContext& context);

struct Command {
  std::string name;                // the first word: "nodes", "topology", ...
  std::string usage;               // its lines of the usage text, newline-terminated
  std::vector<std::string> flags;  // the flags it reads, without "--"
  CommandHandler run;              // the same for every entry of one name
};

// Every command, in the order the usage text lists them. A command with subcommands
// documented apart (topology, policy) has one entry per group of lines.
const std::vector<Command>& Commands();

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

// Answers a help request on `out`: the usage text when `command` is "", else the
// command's help. Returns the exit status, 0.
int PrintHelp(absl::string_view command, std::ostream& out);

// Runs the command line `args` (without argv[0] and the flags, which `options`
// holds): checks the global options, reaches the controller as they say, finds args[0]
// in the table and runs its handler on `out` and `err`. A missing or unknown command,
// a bad --output or unusable TLS flags are usage errors (exit 2, usage on `err`).
int RunWeftctl(const std::vector<std::string>& args, const WeftctlOptions& options,
               std::ostream& out, std::ostream& err);

// Runs args[0]'s handler from the table on `context`; a usage error when no command
// has that name.
int Dispatch(const std::vector<std::string>& args, const CommandContext& context);

}  // namespace weft

#endif  // WEFT_CLI_COMMAND_TABLE_H_
