#include "cli/job_format.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace weft {
namespace {

using ::testing::HasSubstr;

weft::v1::JobStatus Job(const std::string& job_id, int nodes) {
  weft::v1::JobStatus job;
  weft::v1::PlacementResponse* reservation = job.mutable_reservation();
  reservation->set_job_id(job_id);
  for (int i = 1; i <= nodes; ++i) reservation->add_ring_order("gpu-a0" + std::to_string(i));
  reservation->add_racks("rack-a");
  return job;
}

weft::v1::JobProgress Progress() {
  weft::v1::JobProgress progress;
  progress.set_iterations_done(120);
  progress.set_iteration_s(1.25);
  progress.set_first_iteration_s(1.0);
  progress.set_tokens_per_s(52'000);
  weft::v1::PhaseProgress* send_recv = progress.add_phases();
  send_recv->set_phase("send/recv");
  send_recv->set_time_s(0.9);
  send_recv->set_busbw_bytes_per_s(10e9);
  weft::v1::PhaseProgress* all_reduce = progress.add_phases();
  all_reduce->set_phase("all-reduce");
  all_reduce->set_time_s(0.3);
  all_reduce->set_busbw_bytes_per_s(42.5e9);
  return progress;
}

TEST(JobFormatTest, AReportingJobShowsItsProgressAndCongestionWithUnitsInTheHeader) {
  weft::v1::ListJobsResponse jobs;
  weft::v1::JobStatus* job = jobs.add_jobs();
  *job = Job("train-7", 2);
  *job->mutable_progress() = Progress();
  job->mutable_congestion()->set_ecn_marked_per_s(1234.4);
  job->mutable_congestion()->set_cnp_sent_per_s(12.25);
  job->mutable_congestion()->set_pfc_pause_share(0.125);
  job->mutable_congestion()->add_findings("gpu-a02: DEGRADED (pfc_pause_storm)");

  EXPECT_EQ(FormatJobsTable(jobs),
            "JOB      NODES              RACKS   ITERS  ITER_MS  VS_FIRST  BUSBW_GB/S  TOKENS/S  "
            "ECN/S  CNP/S  PAUSE%  FINDINGS\n"
            "train-7  2 gpu-a01,gpu-a02  rack-a  120    1250.0   1.25x     42.5        52000     "
            "1234   12.2   12.5%   gpu-a02: DEGRADED (pfc_pause_storm)\n");
}

TEST(JobFormatTest, AJobWithoutProgressShowsDashes) {
  weft::v1::ListJobsResponse jobs;
  *jobs.add_jobs() = Job("idle", 1);
  EXPECT_THAT(FormatJobsTable(jobs),
              HasSubstr("idle  1 gpu-a01  rack-a  -      -        -         -           -"));
  EXPECT_EQ(FormatJobsTable(weft::v1::ListJobsResponse()), "no jobs: no live reservations\n");
}

TEST(JobFormatTest, LongNodeListsShowFirstAndLast) {
  weft::v1::JobStatus job = Job("big", 5);
  EXPECT_EQ(CompactNodeList(job.reservation().ring_order()), "5 gpu-a01..gpu-a05");
  job = Job("small", 3);
  EXPECT_EQ(CompactNodeList(job.reservation().ring_order()), "3 gpu-a01,gpu-a02,gpu-a03");
}

TEST(JobFormatTest, HeadlinePhaseIsAllReduceElseTheLongest) {
  weft::v1::JobProgress progress = Progress();
  EXPECT_EQ(HeadlinePhase(progress)->phase(), "all-reduce");
  progress.mutable_phases(1)->set_phase("all-to-all");
  EXPECT_EQ(HeadlinePhase(progress)->phase(), "send/recv");
  EXPECT_EQ(HeadlinePhase(weft::v1::JobProgress()), nullptr);
}

}  // namespace
}  // namespace weft
