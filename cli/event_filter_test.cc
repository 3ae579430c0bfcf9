#include "cli/event_filter.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace weft {
namespace {

using ::testing::HasSubstr;

TEST(EventFilterTest, NoFilters) {
  auto request = MakeEventsRequest("", "", 0);
  ASSERT_TRUE(request.ok()) << request.status();
  EXPECT_EQ(request->node(), "");
  EXPECT_EQ(request->since_us(), 0);
  EXPECT_EQ(request->within_ms(), 0u);
  EXPECT_EQ(request->limit(), 0u);
}

TEST(EventFilterTest, DurationBecomesWithinMs) {
  auto request = MakeEventsRequest("gpu-a01", "10m", 50);
  ASSERT_TRUE(request.ok()) << request.status();
  EXPECT_EQ(request->node(), "gpu-a01");
  EXPECT_EQ(request->within_ms(), 600000u);
  EXPECT_EQ(request->since_us(), 0);
  EXPECT_EQ(request->limit(), 50u);
  EXPECT_EQ(MakeEventsRequest("", "1h30m", 0)->within_ms(), 5400000u);
  EXPECT_EQ(MakeEventsRequest("", "1.5s", 0)->within_ms(), 1500u);
}

TEST(EventFilterTest, TimeBecomesSinceUs) {
  auto request = MakeEventsRequest("", "2026-11-30T06:00:00Z", 0);
  ASSERT_TRUE(request.ok()) << request.status();
  EXPECT_EQ(request->since_us(), int64_t{1796018400} * 1000000);
  EXPECT_EQ(request->within_ms(), 0u);
}

TEST(EventFilterTest, BadValuesSayWhatIsAccepted) {
  auto garbage = MakeEventsRequest("", "yesterday", 0);
  EXPECT_EQ(garbage.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(garbage.status().message(), HasSubstr("--since 'yesterday'"));
  EXPECT_THAT(garbage.status().message(), HasSubstr("10m"));
  EXPECT_THAT(garbage.status().message(), HasSubstr("RFC 3339"));
  EXPECT_THAT(MakeEventsRequest("", "-5m", 0).status().message(),
              HasSubstr("not a positive duration"));
  EXPECT_THAT(MakeEventsRequest("", "0s", 0).status().message(),
              HasSubstr("not a positive duration"));
  EXPECT_THAT(MakeEventsRequest("", "", -1).status().message(), HasSubstr("--limit -1"));
}

}  // namespace
}  // namespace weft
