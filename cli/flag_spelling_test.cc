#include "cli/flag_spelling.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace weft {
namespace {

using ::testing::ElementsAre;

TEST(UnderscoreFlagNamesTest, DashedNamesBecomeAbseilNames) {
  EXPECT_THAT(UnderscoreFlagNames({"place", "--gpus-per-node=8", "--max-racks", "2",
                                   "-one-pod", "--exclude", "gpu-a01,gpu-b02"}),
              ElementsAre("place", "--gpus_per_node=8", "--max_racks", "2", "-one_pod",
                          "--exclude", "gpu-a01,gpu-b02"));
}

TEST(UnderscoreFlagNamesTest, ValuesNegativeNumbersAndArgumentsAfterEndOfFlagsStay) {
  EXPECT_THAT(UnderscoreFlagNames({"--reason=swap-nic mlx5-0", "-0.5", "--", "--not-a-flag"}),
              ElementsAre("--reason=swap-nic mlx5-0", "-0.5", "--", "--not-a-flag"));
  EXPECT_THAT(UnderscoreFlagNames({"-", "--", "-x"}), ElementsAre("-", "--", "-x"));
}

}  // namespace
}  // namespace weft
