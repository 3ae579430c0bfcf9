#include "common/log_level.h"

#include "gtest/gtest.h"

namespace weft {
namespace {

TEST(ParseLogLevelTest, EveryLevelInAnyCase) {
  EXPECT_EQ(*ParseLogLevel("debug"), LogLevel::kDebug);
  EXPECT_EQ(*ParseLogLevel("INFO"), LogLevel::kInfo);
  EXPECT_EQ(*ParseLogLevel("warning"), LogLevel::kWarning);
  EXPECT_EQ(*ParseLogLevel("Warn"), LogLevel::kWarning);
  EXPECT_EQ(*ParseLogLevel("error"), LogLevel::kError);
}

TEST(ParseLogLevelTest, AnythingElseNamesTheFlagTheValueAndWhatIsAccepted) {
  const absl::StatusOr<LogLevel> level = ParseLogLevel("verbose");
  EXPECT_EQ(level.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(level.status().message(),
            "flag --log_level: value 'verbose' is not a level; accepted: debug, info, warning, "
            "error");
  EXPECT_FALSE(ParseLogLevel("").ok());
}

}  // namespace
}  // namespace weft
