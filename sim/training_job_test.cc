// Training jobs on the fabric twin: the collective formulas on an idle fabric, the
// slowdown an oversubscribed uplink gives a job that spans racks, two jobs sharing an
// uplink, and refused job descriptions.
//
// The fabric: 2 racks of 4 nodes, NICs of 100 Gb/s, one uplink per ToR to one spine
// (no ECMP choice, so every rate below is exact), 8:1 oversubscribed: the uplink carries
// 4 · 100 / 8 = 50 Gb/s. Node ids: rack 0 holds 0-3, rack 1 holds 4-7.
#include "sim/training_job.h"

#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace weft::sim {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr double kNicBps = 100e9;
constexpr double kNicBytesPerS = kNicBps / 8;
constexpr double kUplinkBps = 50e9;

Fabric TwoRacks(int nics_per_node = 1) {
  LeafSpineOptions o;
  o.racks = 2;
  o.nodes_per_rack = 4;
  o.nics_per_node = nics_per_node;
  o.nic_bps = kNicBps;
  o.uplinks_per_tor = 1;
  o.spines = 1;
  o.oversubscription = 8.0 * nics_per_node;  // 50 Gb/s uplinks whatever the NIC count
  return BuildLeafSpine(o).value();
}

TrainingJobSpec RingJob(std::string name, std::vector<int> nodes) {
  TrainingJobSpec job;
  job.name = std::move(name);
  job.model.parameters = 1e9;
  job.model.bytes_per_gradient_element = 2;  // S = 2 GB per node
  job.model.tokens_per_iteration = 1e6;
  job.model.compute_s_per_iteration = 1.0;
  job.nodes = std::move(nodes);
  return job;
}

std::vector<JobReport> RunJobs(std::vector<TrainingJobSpec> jobs, int nics_per_node = 1,
                               int iterations = 2) {
  absl::StatusOr<TrainingRun> run =
      TrainingRun::Create(TwoRacks(nics_per_node), DcqcnParams(), std::move(jobs));
  EXPECT_TRUE(run.ok()) << run.status();
  absl::StatusOr<std::vector<JobReport>> reports = run->Run(iterations);
  EXPECT_TRUE(reports.ok()) << reports.status();
  return *reports;
}

const PhaseReport& Phase(const IterationReport& iteration, PhaseKind kind) {
  for (const PhaseReport& p : iteration.phases) {
    if (p.kind == kind) return p;
  }
  ADD_FAILURE() << "no " << PhaseName(kind) << " phase";
  static PhaseReport none;
  return none;
}

TEST(TrainingJobTest, TwoNodeRingRunsAtLineRate) {
  const JobReport r = RunJobs({RingJob("pair", {0, 1})})[0];
  ASSERT_EQ(r.iterations.size(), 2u);
  const double s = 2e9, n = 2;
  const double expected_s = 2 * (n - 1) / n * s / kNicBytesPerS;  // 0.16 s
  for (const IterationReport& it : r.iterations) {
    const PhaseReport& ar = Phase(it, PhaseKind::kAllReduce);
    EXPECT_DOUBLE_EQ(ar.time_s, expected_s);
    EXPECT_DOUBLE_EQ(ar.busbw_bytes_per_s, kNicBytesPerS);  // busbw = line rate
    EXPECT_DOUBLE_EQ(ar.algbw_bytes_per_s, s / expected_s);
    EXPECT_DOUBLE_EQ(it.compute_s, 1.0);
    EXPECT_DOUBLE_EQ(it.iteration_s, 1.0 + expected_s);
    EXPECT_DOUBLE_EQ(it.tokens_per_s, 1e6 / (1.0 + expected_s));
  }
  EXPECT_EQ(r.uplink_byte_share, 0);
  EXPECT_DOUBLE_EQ(r.bytes_per_iteration, 2 * s);  // two flows of 2(n-1)/n · S
}

TEST(TrainingJobTest, RingSplitsOverRails) {
  // 4 nodes, 2 NICs each: every rail carries 2(n-1)/n · S/2 at line rate.
  const JobReport r = RunJobs({RingJob("rails", {0, 1, 2, 3})}, /*nics_per_node=*/2)[0];
  const double s = 2e9, n = 4;
  EXPECT_DOUBLE_EQ(Phase(r.iterations[0], PhaseKind::kAllReduce).time_s,
                   2 * (n - 1) / n * (s / 2) / kNicBytesPerS);
  EXPECT_DOUBLE_EQ(Phase(r.iterations[0], PhaseKind::kAllReduce).busbw_bytes_per_s,
                   2 * kNicBytesPerS);
}

TEST(TrainingJobTest, CrossRackRingSlowedByTheUplinkFactor) {
  const JobReport in_rack = RunJobs({RingJob("rack", {0, 1, 2, 3})})[0];
  const JobReport split = RunJobs({RingJob("split", {0, 1, 4, 5})})[0];
  const double t_rack = Phase(in_rack.iterations[0], PhaseKind::kAllReduce).time_s;
  const double t_split = Phase(split.iterations[0], PhaseKind::kAllReduce).time_s;
  // The ring crosses the uplink once each way (1 → 4, 5 → 0), alone on each: the
  // slowest flow runs at the uplink's 50 Gb/s instead of the NIC's 100.
  EXPECT_DOUBLE_EQ(t_split / t_rack, kNicBps / kUplinkBps);
  EXPECT_DOUBLE_EQ(t_rack, 2 * 3.0 / 4 * 2e9 / kNicBytesPerS);
  EXPECT_EQ(in_rack.uplink_byte_share, 0);
  EXPECT_DOUBLE_EQ(split.uplink_byte_share, 0.5);  // 2 of the 4 equal flows
  EXPECT_GT(split.iterations[0].iteration_s, in_rack.iterations[0].iteration_s);
  EXPECT_LT(split.iterations[0].tokens_per_s, in_rack.iterations[0].tokens_per_s);
}

TEST(TrainingJobTest, TwoJobsSharingAnUplinkEachSlowDown) {
  const TrainingJobSpec a = RingJob("a", {0, 1, 4, 5});
  const TrainingJobSpec b = RingJob("b", {2, 3, 6, 7});
  const double alone_a = Phase(RunJobs({a})[0].iterations[0], PhaseKind::kAllReduce).time_s;
  const double alone_b = Phase(RunJobs({b})[0].iterations[0], PhaseKind::kAllReduce).time_s;
  const std::vector<JobReport> both = RunJobs({a, b});
  // Same compute, so both reach the all-reduce together and 1 → 4 and 3 → 6 (5 → 0 and
  // 7 → 2) halve each uplink: 25 Gb/s each, twice the time.
  for (int i = 0; i < 2; ++i) {
    EXPECT_DOUBLE_EQ(Phase(both[0].iterations[i], PhaseKind::kAllReduce).time_s, 2 * alone_a);
    EXPECT_DOUBLE_EQ(Phase(both[1].iterations[i], PhaseKind::kAllReduce).time_s, 2 * alone_b);
  }
}

TEST(TrainingJobTest, SharedUplinkOnlyWhileBothCommunicate) {
  // Job b computes 10 s per iteration; a's all-reduce (1 s compute) runs alone first.
  TrainingJobSpec a = RingJob("a", {0, 1, 4, 5});
  TrainingJobSpec b = RingJob("b", {2, 3, 6, 7});
  b.model.compute_s_per_iteration = 10;
  const std::vector<JobReport> both = RunJobs({a, b}, 1, 1);
  const double alone = 2 * 3.0 / 4 * 2e9 / (kUplinkBps / 8);
  EXPECT_DOUBLE_EQ(Phase(both[0].iterations[0], PhaseKind::kAllReduce).time_s, alone);
  EXPECT_DOUBLE_EQ(Phase(both[1].iterations[0], PhaseKind::kAllReduce).time_s, alone);
}

TEST(TrainingJobTest, AllToAllAndPipelineAtLineRate) {
  TrainingJobSpec moe = RingJob("moe", {0, 1, 2, 3});
  moe.model.alltoall_bytes_per_node = 3e9;
  moe.layout.expert_group_nodes = 4;
  TrainingJobSpec pipe = RingJob("pipe", {4, 5});
  pipe.model.activation_bytes_per_node = 1e9;
  pipe.layout.pipeline_stages = 2;
  const std::vector<JobReport> r = RunJobs({moe, pipe});
  // Each node sends A/4 to each of 3 peers over one NIC: 3 flows share it.
  const PhaseReport& a2a = Phase(r[0].iterations[0], PhaseKind::kAllToAll);
  EXPECT_DOUBLE_EQ(a2a.time_s, 3e9 / 4 / (kNicBytesPerS / 3));
  EXPECT_DOUBLE_EQ(a2a.busbw_bytes_per_s, kNicBytesPerS);
  EXPECT_EQ(r[0].iterations[0].phases.size(), 2u);  // all-to-all, then all-reduce
  const PhaseReport& p2p = Phase(r[1].iterations[0], PhaseKind::kPipelineSendRecv);
  EXPECT_DOUBLE_EQ(p2p.time_s, 1e9 / kNicBytesPerS);
  EXPECT_EQ(r[1].iterations[0].phases.size(), 1u);  // one node per stage: no all-reduce
  // Pipeline stages all-reduce their share of the parameters among themselves.
  TrainingJobSpec wide = RingJob("wide", {0, 1, 2, 3});
  wide.layout.pipeline_stages = 2;
  EXPECT_DOUBLE_EQ(Phase(RunJobs({wide})[0].iterations[0], PhaseKind::kAllReduce).time_s,
                   2 * 1.0 / 2 * (2e9 / 2) / kNicBytesPerS);
}

TEST(TrainingJobTest, TreeOfTwoEqualsRing) {
  TrainingJobSpec tree = RingJob("tree", {0, 1});
  tree.layout.all_reduce = AllReduceAlgorithm::kDoubleBinaryTree;
  EXPECT_DOUBLE_EQ(Phase(RunJobs({tree})[0].iterations[0], PhaseKind::kAllReduce).time_s,
                   2e9 / kNicBytesPerS);
}

TEST(TrainingJobTest, HostCapSplitsOverTheNodesFlowsOfEachPhase) {
  // A TCP-like host pushing 40 Gb/s per node: a ring over 2 NICs has 2 flows per node
  // (20 Gb/s each), an all-to-all among 4 nodes over 1 NIC has 3 (13.3 Gb/s each).
  TrainingJobSpec ring = RingJob("ring", {0, 1, 2, 3});
  ring.host_bps_per_node = 40e9;
  const double s = 2e9, n = 4;
  EXPECT_DOUBLE_EQ(
      Phase(RunJobs({ring}, /*nics_per_node=*/2)[0].iterations[0], PhaseKind::kAllReduce).time_s,
      2 * (n - 1) / n * (s / 2) / (20e9 / 8));
  TrainingJobSpec moe = RingJob("moe", {0, 1, 2, 3});
  moe.model.alltoall_bytes_per_node = 3e9;
  moe.layout.expert_group_nodes = 4;
  moe.host_bps_per_node = 40e9;
  const IterationReport it = RunJobs({moe})[0].iterations[0];
  EXPECT_DOUBLE_EQ(Phase(it, PhaseKind::kAllToAll).time_s, 3e9 / 4 / (40e9 / 3 / 8));
  EXPECT_DOUBLE_EQ(Phase(it, PhaseKind::kAllReduce).time_s, 2 * (n - 1) / n * s / (40e9 / 8));
  // A cap above what the NICs carry changes nothing.
  ring.host_bps_per_node = 1e15;
  EXPECT_DOUBLE_EQ(
      Phase(RunJobs({ring}, 2)[0].iterations[0], PhaseKind::kAllReduce).time_s,
      2 * (n - 1) / n * (s / 2) / kNicBytesPerS);
}

absl::Status CreateError(std::vector<TrainingJobSpec> jobs) {
  return TrainingRun::Create(TwoRacks(), DcqcnParams(), std::move(jobs)).status();
}

TEST(TrainingJobTest, RefusesBadDescriptionsNamingFieldValueAndRange) {
  TrainingJobSpec job = RingJob("bad", {0, 1});
  job.model.parameters = 0;
  EXPECT_THAT(CreateError({job}).message(),
              AllOf(HasSubstr("jobs[0] job 'bad'"), HasSubstr("model.parameters = 0"),
                    HasSubstr("accepted (0, inf)")));
  job = RingJob("bad", {0, 1});
  job.host_bps_per_node = 0;
  EXPECT_THAT(CreateError({job}).message(),
              AllOf(HasSubstr("jobs[0] job 'bad'"), HasSubstr("host_bps_per_node = 0"),
                    HasSubstr("accepted (0, inf]")));
  job = RingJob("bad", {0, 1});
  job.model.bytes_per_gradient_element = 32;
  EXPECT_THAT(CreateError({job}).message(),
              AllOf(HasSubstr("model.bytes_per_gradient_element = 32"), HasSubstr("(0, 16]")));
  job = RingJob("bad", {0, 1, 2, 3});
  job.layout.pipeline_stages = 3;
  EXPECT_THAT(CreateError({job}).message(),
              AllOf(HasSubstr("layout.pipeline_stages = 3"),
                    HasSubstr("a divisor of the job's 4 nodes")));
  job = RingJob("bad", {0, 9});
  EXPECT_THAT(CreateError({job}).message(),
              AllOf(HasSubstr("nodes[1] = 9"), HasSubstr("[0, 8)")));
  job = RingJob("bad", {0, 1, 0});
  EXPECT_THAT(CreateError({job}).message(),
              AllOf(HasSubstr("nodes[2] = 0"), HasSubstr("not already at nodes[0]")));
  job = RingJob("bad", {0, 1});
  job.model.alltoall_bytes_per_node = 1e9;
  EXPECT_THAT(CreateError({job}).message(),
              AllOf(HasSubstr("layout.expert_group_nodes = 0"),
                    HasSubstr("alltoall_bytes_per_node > 0")));
  EXPECT_THAT(CreateError({RingJob("a", {0, 1}), RingJob("b", {1, 2})}).message(),
              AllOf(HasSubstr("jobs[1] job 'b': node 1 is also in jobs[0] 'a'")));
  for (const absl::Status& s : {CreateError({job})}) {
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  }
  absl::StatusOr<TrainingRun> run =
      TrainingRun::Create(TwoRacks(), DcqcnParams(), {RingJob("a", {0, 1})});
  ASSERT_TRUE(run.ok());
  EXPECT_THAT(run->Run(0).status().message(), HasSubstr("iterations = 0"));
}

}  // namespace
}  // namespace weft::sim
