#include "controller/placement/job_progress_table.h"

#include <limits>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace weft::controller {
namespace {

using ::testing::HasSubstr;

weft::v1::JobProgress Progress(uint64_t iterations, double iteration_s) {
  weft::v1::JobProgress progress;
  progress.set_iterations_done(iterations);
  progress.set_iteration_s(iteration_s);
  progress.set_first_iteration_s(1.0);
  weft::v1::PhaseProgress *phase = progress.add_phases();
  phase->set_phase("all-reduce");
  phase->set_time_s(0.4);
  phase->set_busbw_bytes_per_s(40e9);
  return progress;
}

TEST(ValidateJobProgressTest, AcceptsZerosAndPositives) {
  EXPECT_TRUE(ValidateJobProgress(weft::v1::JobProgress()).ok());
  EXPECT_TRUE(ValidateJobProgress(Progress(3, 1.2)).ok());
}

TEST(ValidateJobProgressTest, NamesTheNegativeField) {
  weft::v1::JobProgress progress = Progress(3, 1.2);
  progress.set_tokens_per_s(-1);
  absl::Status status = ValidateJobProgress(progress);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("progress.tokens_per_s is -1"));
}

TEST(ValidateJobProgressTest, NamesTheNonFinitePhaseField) {
  weft::v1::JobProgress progress = Progress(3, 1.2);
  progress.add_phases()->set_algbw_bytes_per_s(std::numeric_limits<double>::quiet_NaN());
  absl::Status status = ValidateJobProgress(progress);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("progress.phases[1].algbw_bytes_per_s is nan"));

  progress.mutable_phases(1)->set_algbw_bytes_per_s(0);
  progress.set_iteration_s(std::numeric_limits<double>::infinity());
  EXPECT_THAT(ValidateJobProgress(progress).message(), HasSubstr("progress.iteration_s is inf"));
}

TEST(JobProgressTableTest, KeepsTheNewestReportStampedWithTheGivenTime) {
  JobProgressTable table;
  EXPECT_EQ(table.Latest("r-1"), std::nullopt);
  weft::v1::JobProgress first = Progress(1, 2.0);
  first.set_reported_at_unix_ms(42);  // the reporter's own clock is not trusted
  table.Report("r-1", first, absl::FromUnixMillis(1'000));
  table.Report("r-1", Progress(2, 1.5), absl::FromUnixMillis(2'500));

  std::optional<weft::v1::JobProgress> latest = table.Latest("r-1");
  ASSERT_TRUE(latest.has_value());
  EXPECT_EQ(latest->iterations_done(), 2u);
  EXPECT_EQ(latest->iteration_s(), 1.5);
  EXPECT_EQ(latest->reported_at_unix_ms(), 2'500);
  EXPECT_EQ(table.size(), 1u);
}

TEST(JobProgressTableTest, ForgetAndRetainOnlyDropEntries) {
  JobProgressTable table;
  table.Report("r-1", Progress(1, 1), absl::UnixEpoch());
  table.Report("r-2", Progress(1, 1), absl::UnixEpoch());
  table.Report("r-3", Progress(1, 1), absl::UnixEpoch());

  table.Forget("r-2");
  table.Forget("r-unknown");
  EXPECT_EQ(table.Latest("r-2"), std::nullopt);
  EXPECT_EQ(table.size(), 2u);

  table.RetainOnly({"r-3", "r-9"});
  EXPECT_EQ(table.Latest("r-1"), std::nullopt);
  EXPECT_TRUE(table.Latest("r-3").has_value());
  EXPECT_EQ(table.size(), 1u);
}

}  // namespace
}  // namespace weft::controller
