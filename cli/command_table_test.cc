// weftctl's help as a user asks for it: the real binary's --help, `help`, and each
// command's --help, all from the command table.
#include "cli/command_table.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/subprocess.h"

namespace weft {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using weft::testing::RunCommand;

TEST(CommandTableTest, HelpPrintsTheWholeUsageOnStdoutAndExitsZero) {
  for (const char* ask : {"--help", "-h", "help"}) {
    SCOPED_TRACE(ask);
    auto result = RunCommand({"cli/weftctl", ask}, absl::Seconds(10));
    EXPECT_EQ(result.exit_status, 0) << result.err;
    EXPECT_EQ(result.out, "usage: " + UsageText() + "\n");
    for (const Command& command : Commands()) {
      EXPECT_THAT(result.out, HasSubstr(command.usage));
    }
  }
}

TEST(CommandTableTest, ACommandsHelpShowsItsOwnFlagsOnly) {
  auto place = RunCommand({"cli/weftctl", "place", "--help"}, absl::Seconds(10));
  EXPECT_EQ(place.exit_status, 0) << place.err;
  EXPECT_THAT(place.out, HasSubstr("  place --job J (--nodes N"));
  EXPECT_THAT(place.out, HasSubstr("\n  --gpus_per_node  "));
  EXPECT_THAT(place.out, HasSubstr("\n  --max_congestion  "));
  EXPECT_THAT(place.out, HasSubstr("global flags:\n  --controller  "));
  EXPECT_THAT(place.out, Not(HasSubstr("--who")));    // audit's
  EXPECT_THAT(place.out, Not(HasSubstr("  nodes [--rack R]")));

  // A flag's value before the command does not hide it; `help COMMAND` works too.
  auto nodes = RunCommand({"cli/weftctl", "--controller", "127.0.0.1:1", "help", "nodes"},
                          absl::Seconds(10));
  EXPECT_EQ(nodes.exit_status, 0) << nodes.err;
  EXPECT_THAT(nodes.out, HasSubstr("flags:\n  --rack  "));
  EXPECT_THAT(nodes.out, Not(HasSubstr("--gpus_per_node")));

  // Commands with subcommands show all of theirs.
  auto topology = RunCommand({"cli/weftctl", "topology", "--help"}, absl::Seconds(10));
  EXPECT_THAT(topology.out, HasSubstr("topology export"));
  EXPECT_THAT(topology.out, HasSubstr("topology check"));
  EXPECT_THAT(topology.out, HasSubstr("  --observed  "));
}

TEST(CommandTableTest, EveryFlagTheTableNamesIsAFlagOfWeftctl) {
  for (const Command& command : Commands()) {
    SCOPED_TRACE(command.name);
    auto help = RunCommand({"cli/weftctl", command.name, "--help"}, absl::Seconds(10));
    EXPECT_EQ(help.exit_status, 0) << help.err;
    EXPECT_THAT(help.out, Not(HasSubstr("not defined")));
    for (const std::string& flag : command.flags) {
      EXPECT_THAT(help.out, HasSubstr("\n  --" + flag + "  "));
    }
  }
}

TEST(CommandTableTest, HelpRequestsAreRecognisedAndNameTheirCommand) {
  std::string command;
  EXPECT_TRUE(IsHelpRequest({"renew", "--help"}, &command));
  EXPECT_EQ(command, "renew");
  EXPECT_TRUE(IsHelpRequest({"-h"}, &command));
  EXPECT_EQ(command, "");
  EXPECT_FALSE(IsHelpRequest({"node", "gpu-a01"}, &command));
  EXPECT_FALSE(CommandHelpText("frobnicate").has_value());
}

}  // namespace
}  // namespace weft
