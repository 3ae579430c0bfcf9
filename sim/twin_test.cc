// The fabric twin: names, continuous job progress (chunked Advance, agreement with
// TrainingRun, interference only through shared links), counters by their real names and
// units, tunables and what they do, faults and their exact clearing, the Q-counter wrap,
// and the demo cluster's cost per 0.1 s.
//
// Most tests use two racks of four nodes with one 100 Gb/s NIC each and one 50 Gb/s
// uplink per ToR to one spine (8:1 oversubscribed, no ECMP choice): rack-a holds nodes
// 0-3 (gpu-a01..gpu-a04), rack-b nodes 4-7.
#include "sim/twin.h"

#include <chrono>
#include <cmath>
#include <iostream>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/tunable_ranges.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"

namespace weft::sim {
namespace {

using ::google::protobuf::util::MessageDifferencer;
using ::testing::AllOf;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Key;

constexpr double kNicBps = 100e9;

TwinFabricOptions SmallOptions() {
  TwinFabricOptions o;
  o.nics_per_node = 1;
  o.nic_bps = kNicBps;
  o.uplinks_per_tor = 1;
  o.spines = 1;
  o.oversubscription = 8;  // 4 · 100 / 8 = 50 Gb/s uplinks
  return o;
}

Twin SmallTwin() {
  return Twin::Create(BuildTwinTopology(DemoRacks(2, 4, 2), SmallOptions()).value(),
                      DcqcnParams())
      .value();
}

TrainingJobSpec RingJob(std::string name, std::vector<int> nodes, double compute_s = 1.0) {
  TrainingJobSpec job;
  job.name = std::move(name);
  job.model.parameters = 1e9;
  job.model.bytes_per_gradient_element = 2;  // S = 2 GB per node
  job.model.tokens_per_iteration = 1e6;
  job.model.compute_s_per_iteration = compute_s;
  job.nodes = std::move(nodes);
  return job;
}

// A ring 0 → 4 → 1 → 5 → 0 across the racks: two flows each way over the 50 Gb/s
// uplinks, which their 100 Gb/s NICs overfill: the ToR uplink ports are congested (marks,
// CNPs) and hold the flows back at 25 Gb/s.
TrainingJobSpec CongestingJob() { return RingJob("ring", {0, 4, 1, 5}, 0.1); }

// rack-a's ToR port toward the spine (cable 0, tor-a--spine-0).
const PortState& UplinkPort(const Twin& twin) { return twin.model().ports()[0]; }

TwinJobStatus Job(const Twin& twin, const std::string& name) {
  for (const TwinJobStatus& job : twin.jobs()) {
    if (job.name == name) return job;
  }
  ADD_FAILURE() << "no job " << name;
  return {};
}

uint64_t Hw(const Twin& twin, int nic, const std::string& name) {
  return twin.ReadNic(nic).value().hw_counters.at(name);
}
uint64_t Port(const Twin& twin, int nic, const std::string& name) {
  return twin.ReadNic(nic).value().port_counters.at(name);
}

std::vector<double> FlowRates(const Twin& twin) {
  std::vector<double> rates;
  for (const FlowState& flow : twin.model().flows()) rates.push_back(flow.rate_bps);
  return rates;
}

// --- Topology and names -----------------------------------------------------------------

TEST(TwinTopologyTest, DemoRacksNamesRacksPodsAndNodes) {
  const std::vector<RackSpec> racks = DemoRacks(4, 8, 2);
  ASSERT_EQ(racks.size(), 4u);
  EXPECT_EQ(racks[0].name, "rack-a");
  EXPECT_EQ(racks[3].name, "rack-d");
  EXPECT_EQ(racks[0].pod, "pod-1");
  EXPECT_EQ(racks[1].pod, "pod-1");
  EXPECT_EQ(racks[2].pod, "pod-2");
  EXPECT_EQ(racks[3].pod, "pod-2");
  EXPECT_EQ(racks[0].nodes.front(), "gpu-a01");
  EXPECT_EQ(racks[3].nodes.back(), "gpu-d08");
  EXPECT_EQ(DemoRacks(28, 1, 1)[26].name, "rack-aa");
  EXPECT_EQ(DemoRacks(28, 1, 1)[27].nodes[0], "gpu-ab01");

  const TwinTopology t = BuildTwinTopology(racks, TwinFabricOptions()).value();
  EXPECT_EQ(t.nodes.size(), 32u);
  EXPECT_EQ(t.fabric.nics().size(), 256u);
  EXPECT_EQ(t.nodes[8].name, "gpu-b01");
  EXPECT_EQ(t.nodes[8].rack, "rack-b");
  EXPECT_EQ(t.nodes[17].pod, "pod-2");
  EXPECT_EQ(t.switch_names.front(), "spine-0");
  EXPECT_EQ(t.switch_names[7], "spine-7");
  EXPECT_EQ(t.switch_names[8], "tor-a");
  EXPECT_EQ(t.switch_names.back(), "tor-d");
}

TEST(TwinTopologyTest, UnequalRacksSizeEachToRsUplinks) {
  const std::vector<RackSpec> racks = {{"rack-x", "pod-1", {"n1", "n2"}},
                                       {"rack-y", "pod-1", {"n3", "n4", "n5", "n6"}}};
  const TwinTopology t = BuildTwinTopology(racks, SmallOptions()).value();
  EXPECT_EQ(t.fabric.num_nodes(), 6);
  // The first cable of each rack is its ToR's uplink: 2 · 100 / 8 and 4 · 100 / 8.
  EXPECT_DOUBLE_EQ(t.fabric.links()[0].capacity_bps, 25e9);
  EXPECT_DOUBLE_EQ(t.fabric.links()[2 * (1 + 2)].capacity_bps, 50e9);
  EXPECT_EQ(t.switch_names[2], "tor-y");
}

TEST(TwinTopologyTest, RefusesDuplicateAndEmptyNames) {
  const TwinFabricOptions o = SmallOptions();
  EXPECT_THAT(BuildTwinTopology({}, o).status().message(), HasSubstr("racks is empty"));
  EXPECT_THAT(BuildTwinTopology({{"r", "p", {"a"}}, {"r", "p", {"b"}}}, o).status().message(),
              HasSubstr("rack 'r' is named twice"));
  EXPECT_THAT(BuildTwinTopology({{"r", "p", {"a"}}, {"s", "p", {"a"}}}, o).status().message(),
              HasSubstr("node 'a' is in rack 'r' and again in rack 's'"));
  EXPECT_THAT(BuildTwinTopology({{"r", "p", {}}}, o).status().message(),
              HasSubstr("rack 'r' has no nodes"));
  EXPECT_THAT(BuildTwinTopology({{"", "p", {"a"}}}, o).status().message(),
              HasSubstr("racks[0] has no name"));
  TwinFabricOptions bad = o;
  bad.oversubscription = 0;
  EXPECT_THAT(BuildTwinTopology({{"r", "p", {"a"}}}, bad).status().message(),
              HasSubstr("oversubscription"));
}

TEST(TwinNamesTest, NodesNicsAndCablesByName) {
  TwinFabricOptions o = SmallOptions();
  o.nics_per_node = 2;
  o.uplinks_per_tor = 2;  // two parallel cables to the one spine
  o.oversubscription = 16;
  const Twin twin =
      Twin::Create(BuildTwinTopology(DemoRacks(2, 4, 2), o).value(), DcqcnParams()).value();
  EXPECT_EQ(twin.NodeByName("gpu-b02").value(), 5);
  EXPECT_THAT(twin.NodeByName("gpu-z01").status().message(),
              HasSubstr("no node 'gpu-z01' among the twin's 8 nodes"));
  const int nic = twin.NicByDevice(5, "mlx5_1").value();
  EXPECT_EQ(twin.topology().fabric.nics()[nic].node, 5);
  EXPECT_EQ(twin.topology().fabric.nics()[nic].index, 1);
  EXPECT_TRUE(absl::IsNotFound(twin.NicByDevice(5, "mlx5_2").status()));
  const int uplink = twin.topology().fabric.nics()[nic].uplink;
  EXPECT_EQ(twin.CableName(uplink), "gpu-b02/mlx5_1--tor-b");
  EXPECT_EQ(twin.CableName(uplink + 1), "gpu-b02/mlx5_1--tor-b");
  EXPECT_EQ(twin.CableByName("gpu-b02/mlx5_1--tor-b").value(), uplink);
  EXPECT_EQ(twin.CableByName("tor-a--spine-0").value(), 0);
  EXPECT_EQ(twin.CableByName("tor-a--spine-0#2").value(), 2);
  EXPECT_TRUE(absl::IsNotFound(twin.CableByName("tor-a--spine-9").status()));
  EXPECT_EQ(twin.VertexName({Vertex::Kind::kSwitch, 0}), "spine-0");
}

// --- Jobs -------------------------------------------------------------------------------

TEST(TwinJobTest, AJobAloneTakesTrainingRunsIterationTime) {
  const TwinTopology topology = BuildTwinTopology(DemoRacks(2, 4, 2), SmallOptions()).value();
  const TrainingJobSpec job = RingJob("cross", {0, 4, 1, 5});
  TrainingRun run = TrainingRun::Create(topology.fabric, DcqcnParams(), {job}).value();
  const std::vector<JobReport> reports = run.Run(3).value();
  Twin twin = Twin::Create(topology, DcqcnParams()).value();
  ASSERT_TRUE(twin.StartJob(job).ok());
  const double iteration_s = reports[0].iterations[0].iteration_s;
  EXPECT_GT(iteration_s, 1.0 + 0.1);  // the uplinks slow the ring
  ASSERT_TRUE(twin.Advance(2.5 * iteration_s).ok());
  const TwinJobStatus status = Job(twin, "cross");
  EXPECT_EQ(status.iterations_done, 2);
  EXPECT_NEAR(status.first_iteration_s, iteration_s, 1e-9 * iteration_s);
  ASSERT_TRUE(status.last.has_value());
  EXPECT_NEAR(status.last->iteration_s, reports[0].iterations[1].iteration_s, 1e-9 * iteration_s);
  EXPECT_NEAR(status.last->communication_s, reports[0].iterations[1].communication_s, 1e-9);
  EXPECT_FALSE(status.stalled);
}

// Runs two jobs that share the uplinks with different compute times, so their phases
// overlap in changing ways, advancing `seconds` in steps of `chunk_s`.
Twin RunInChunks(double seconds, double chunk_s) {
  Twin twin = SmallTwin();
  EXPECT_TRUE(twin.StartJob(RingJob("a", {0, 4}, 0.3)).ok());
  EXPECT_TRUE(twin.Advance(0.05).ok());
  EXPECT_TRUE(twin.StartJob(RingJob("b", {1, 5}, 0.45)).ok());
  for (double t = 0.05; t < seconds - 1e-9; t += chunk_s) {
    EXPECT_TRUE(twin.Advance(std::min(chunk_s, seconds - t)).ok());
  }
  return twin;
}

TEST(TwinJobTest, AdvanceInChunksGivesTheSameIterations) {
  const Twin whole = RunInChunks(10, 10);
  for (double chunk_s : {0.1, 1.0, 0.37}) {
    SCOPED_TRACE(chunk_s);
    const Twin chunked = RunInChunks(10, chunk_s);
    EXPECT_NEAR(chunked.time_s(), whole.time_s(), 1e-9);
    for (const std::string name : {"a", "b"}) {
      const TwinJobStatus w = Job(whole, name), c = Job(chunked, name);
      EXPECT_GE(w.iterations_done, 10);
      EXPECT_EQ(c.iterations_done, w.iterations_done);
      EXPECT_NEAR(c.first_iteration_s, w.first_iteration_s, 1e-9);
      ASSERT_TRUE(c.last.has_value() && w.last.has_value());
      EXPECT_NEAR(c.last->iteration_s, w.last->iteration_s, 1e-9);
      ASSERT_EQ(c.last->phases.size(), w.last->phases.size());
      EXPECT_NEAR(c.last->phases[0].busbw_bytes_per_s, w.last->phases[0].busbw_bytes_per_s, 1);
    }
    for (int nic : {0, 4, 5}) {
      const double w = Port(whole, nic, "port_xmit_data"), c = Port(chunked, nic, "port_xmit_data");
      EXPECT_NEAR(c, w, 1e-9 * w + 1);
    }
  }
}

TEST(TwinJobTest, JobsInDifferentRacksDoNotSlowEachOtherButSharedUplinksDo) {
  auto iteration_s = [](std::vector<TrainingJobSpec> jobs) {
    Twin twin = SmallTwin();
    for (TrainingJobSpec& job : jobs) EXPECT_TRUE(twin.StartJob(std::move(job)).ok());
    EXPECT_TRUE(twin.Advance(10).ok());
    return Job(twin, "a").last->iteration_s;
  };
  const double rack_alone = iteration_s({RingJob("a", {0, 1})});
  EXPECT_DOUBLE_EQ(iteration_s({RingJob("a", {0, 1}), RingJob("b", {4, 5})}), rack_alone);
  const double cross_alone = iteration_s({RingJob("a", {0, 4})});
  const double cross_shared = iteration_s({RingJob("a", {0, 4}), RingJob("b", {1, 5})});
  EXPECT_GT(cross_shared, cross_alone * 1.05);
}

TEST(TwinJobTest, AJobSeesTheCongestionOnItsPaths) {
  Twin twin = SmallTwin();
  ASSERT_TRUE(twin.StartJob(RingJob("quiet", {2, 3}, 0.1)).ok());  // inside rack-a
  ASSERT_TRUE(twin.StartJob(CongestingJob()).ok());
  EXPECT_EQ(Job(twin, "ring").paths.hottest_link, -1);  // computing, never communicated
  ASSERT_TRUE(twin.Advance(0.15).ok());  // both inside their all-reduce
  const PathCongestion ring = Job(twin, "ring").paths;
  EXPECT_EQ(ring.max_utilization, 1);
  EXPECT_GT(ring.max_queue_bytes, 0);
  EXPECT_GT(ring.max_mark_probability, 0);
  EXPECT_EQ(twin.model().ports()[ring.hottest_link].queue_bytes, ring.max_queue_bytes);
  const PathCongestion quiet = Job(twin, "quiet").paths;
  EXPECT_EQ(quiet.max_queue_bytes, 0);  // its NICs at line rate, no shared port
  EXPECT_EQ(quiet.max_mark_probability, 0);
  ASSERT_TRUE(twin.InjectFault({.kind = TwinFaultKind::kPfcStorm, .nic = 5, .value = 0.9}).ok());
  EXPECT_NEAR(Job(twin, "ring").paths.max_pause_share, 0.9, 1e-9);
}

TEST(TwinJobTest, RefusesDuplicatesAndStopsJobs) {
  Twin twin = SmallTwin();
  ASSERT_TRUE(twin.StartJob(RingJob("a", {0, 1})).ok());
  EXPECT_TRUE(absl::IsAlreadyExists(twin.StartJob(RingJob("a", {2, 3}))));
  EXPECT_THAT(twin.StartJob(RingJob("b", {1, 2})).message(), HasSubstr("node 1 is in job 'a'"));
  EXPECT_THAT(twin.StartJob(RingJob("c", {2, 99})).message(), HasSubstr("nodes[1]"));
  ASSERT_TRUE(twin.StartJob(RingJob("b", {2, 3})).ok());
  ASSERT_TRUE(twin.Advance(1.05).ok());  // both in their all-reduce
  EXPECT_EQ(twin.model().flows().size(), 4u);
  ASSERT_TRUE(twin.StopJob("a").ok());
  EXPECT_EQ(twin.model().flows().size(), 2u);
  EXPECT_TRUE(absl::IsNotFound(twin.StopJob("a")));
  const uint64_t sent = Port(twin, 0, "port_xmit_data");
  ASSERT_TRUE(twin.Advance(1).ok());
  EXPECT_EQ(Port(twin, 0, "port_xmit_data"), sent);  // counters stay, nothing more is sent
  ASSERT_EQ(twin.jobs().size(), 1u);
  EXPECT_EQ(twin.jobs()[0].name, "b");
}

// --- Counters ---------------------------------------------------------------------------

TEST(TwinCounterTest, DataCountersAreFourOctetWordsAndPacketsOfThePacketSize) {
  Twin twin = SmallTwin();
  ASSERT_TRUE(twin.StartJob(RingJob("pair", {0, 1})).ok());
  // Ring of 2: each node sends S = 2 GB per iteration at 100 Gb/s (0.16 s), after 1 s of
  // compute; stop mid-compute of the fourth iteration.
  ASSERT_TRUE(twin.Advance(3 * 1.16 + 0.5).ok());
  EXPECT_EQ(Job(twin, "pair").iterations_done, 3);
  const double bytes = 3 * 2e9;
  EXPECT_NEAR(Port(twin, 0, "port_xmit_data"), bytes / 4, 2);
  EXPECT_NEAR(Port(twin, 1, "port_rcv_data"), bytes / 4, 2);
  EXPECT_NEAR(Port(twin, 0, "port_xmit_packets"), bytes / DcqcnParams().packet_bytes, 2);
  EXPECT_EQ(Port(twin, 0, "unicast_xmit_packets"), Port(twin, 0, "port_xmit_packets"));
  EXPECT_EQ(Port(twin, 2, "port_xmit_data"), 0u);  // not in the job
  // A lossless, uncongested ring: no marks, no retransmissions.
  EXPECT_EQ(Hw(twin, 1, "np_ecn_marked_roce_packets"), 0u);
  EXPECT_EQ(Hw(twin, 1, "out_of_sequence"), 0u);
  const TwinNicReading r = twin.ReadNic(0).value();
  EXPECT_EQ(r.device, "mlx5_0");
  EXPECT_TRUE(r.link_up);
  EXPECT_DOUBLE_EQ(r.speed_bps, kNicBps);
  EXPECT_THAT(r.ethtool, ElementsAre(Key("rx_prio3_pause"), Key("rx_prio3_pause_duration"),
                                     Key("tx_prio3_pause"), Key("tx_prio3_pause_duration")));
  EXPECT_TRUE(absl::IsInvalidArgument(twin.ReadNic(8).status()));
}

TEST(TwinCounterTest, IncastMarksAndCnpsCountAtTheRightEnds) {
  Twin twin = SmallTwin();
  ASSERT_TRUE(twin.StartJob(CongestingJob()).ok());
  ASSERT_TRUE(twin.Advance(0.15).ok());  // inside the all-reduce
  ASSERT_TRUE(UplinkPort(twin).congested);
  ASSERT_TRUE(twin.Advance(5).ok());
  double cnps_sent = 0, cnps_handled = 0;
  for (int nic : {0, 1, 4, 5}) {
    EXPECT_GT(Hw(twin, nic, "np_ecn_marked_roce_packets"), 0u);
    EXPECT_GT(Hw(twin, nic, "np_cnp_sent"), 0u);
    EXPECT_LT(Hw(twin, nic, "np_cnp_sent"), Hw(twin, nic, "np_ecn_marked_roce_packets"));
    EXPECT_EQ(Hw(twin, nic, "rp_cnp_ignored"), 0u);
    cnps_sent += Hw(twin, nic, "np_cnp_sent");
    cnps_handled += Hw(twin, nic, "rp_cnp_handled");
  }
  EXPECT_NEAR(cnps_handled, cnps_sent, 8);  // every CNP sent is handled by a sender
  EXPECT_EQ(Hw(twin, 2, "np_cnp_sent"), 0u);
}

TEST(TwinCounterTest, CountersNeverGoBackAcrossSolvesFaultsTunablesAndJobs) {
  Twin twin = SmallTwin();
  std::vector<TwinNicReading> last;
  for (int nic = 0; nic < 8; ++nic) last.push_back(twin.ReadNic(nic).value());
  auto check = [&](const std::string& step) {
    SCOPED_TRACE(step);
    for (int nic = 0; nic < 8; ++nic) {
      const TwinNicReading now = twin.ReadNic(nic).value();
      using Group = std::map<std::string, uint64_t> TwinNicReading::*;
      for (Group group : {&TwinNicReading::port_counters, &TwinNicReading::hw_counters,
                          &TwinNicReading::ethtool}) {
        for (const auto& [name, value] : now.*group) {
          auto before = (last[nic].*group).find(name);
          if (before == (last[nic].*group).end()) continue;
          EXPECT_GE(value, before->second) << name;
        }
      }
      last[nic] = now;
    }
  };
  ASSERT_TRUE(twin.StartJob(CongestingJob()).ok());
  ASSERT_TRUE(twin.Advance(0.5).ok());
  check("job");
  const int storm =
      twin.InjectFault({.kind = TwinFaultKind::kPfcStorm, .nic = 0, .value = 0.9}).value().id;
  ASSERT_TRUE(twin.Advance(0.5).ok());
  check("storm");
  ASSERT_TRUE(twin.StartJob(RingJob("b", {2, 6})).ok());
  ASSERT_TRUE(twin.ClearFault(storm).ok());
  ASSERT_TRUE(twin.Advance(0.7).ok());
  check("second job, storm cleared");
  weft::v1::DcqcnParams cc;
  cc.set_rp_ai_rate(20);
  ASSERT_TRUE(twin.SetNicTunables(1, {}, cc).ok());
  ASSERT_TRUE(twin.StopJob("ring").ok());
  ASSERT_TRUE(twin.Advance(0.3).ok());
  check("tunables, job stopped");
  EXPECT_GT(last[4].port_counters.at("port_rcv_data"), 0u);
  EXPECT_GT(last[0].ethtool.at("tx_prio3_pause_duration"), 0u);
}

TEST(TwinCounterTest, QCountersWrapAt32Bits) {
  EXPECT_EQ(WrapQCounter(4294967295.0), 4294967295u);
  EXPECT_EQ(WrapQCounter(4294967296.0), 0u);
  EXPECT_EQ(WrapQCounter(4294967296.0 + 7.9), 7u);
  EXPECT_EQ(WrapQCounter(-1), 0u);
  // A lossy cable under a long all-reduce: out_of_sequence passes 2^32 and reads low again,
  // while the 64-bit packet counter only grows.
  Twin twin = SmallTwin();
  TrainingJobSpec job = RingJob("long", {0, 1}, 0);
  job.model.parameters = 1e15;
  ASSERT_TRUE(twin.StartJob(job).ok());
  ASSERT_TRUE(twin.InjectFault({.kind = TwinFaultKind::kGrayLoss,
                                .cable = twin.topology().fabric.nics()[1].uplink,
                                .value = 0.5})
                  .ok());
  bool wrapped = false;
  uint64_t last_oos = 0, last_packets = 0;
  for (int i = 0; i < 60; ++i) {
    ASSERT_TRUE(twin.Advance(30).ok());
    const uint64_t oos = Hw(twin, 0, "out_of_sequence");
    const uint64_t packets = Port(twin, 0, "port_rcv_packets");
    EXPECT_GT(packets, last_packets);
    wrapped |= oos < last_oos;
    EXPECT_LT(oos, uint64_t{1} << 32);
    last_oos = oos;
    last_packets = packets;
  }
  EXPECT_TRUE(wrapped);
}

// --- Tunables ---------------------------------------------------------------------------

TEST(TwinTunablesTest, NicsStartWithTheProductionRecipe) {
  const Twin twin = SmallTwin();
  const weft::v1::NicTunablesReading r = twin.NicTunables(3).value();
  EXPECT_EQ(r.device(), "mlx5_0");
  EXPECT_EQ(r.qos().trust(), weft::v1::TRUST_MODE_DSCP);
  EXPECT_EQ(r.qos().dscp_to_priority().at(26), 3u);
  EXPECT_EQ(r.qos().dscp_to_priority().at(48), 6u);
  EXPECT_THAT(r.qos().pfc_priorities(), ElementsAre(3u));
  EXPECT_EQ(r.qos().default_roce_tos(), 106u);
  EXPECT_EQ(r.dcqcn().np_cnp_dscp(), 48u);
  EXPECT_EQ(r.dcqcn().np_cnp_prio(), 6u);
  EXPECT_EQ(r.dcqcn().np_cnp_prio_mode(), 0u);
  EXPECT_EQ(r.dcqcn().rp_dce_tcp_g(), 1019u);
  EXPECT_EQ(r.dcqcn().rp_time_reset(), 300u);
  EXPECT_EQ(r.dcqcn().rp_ai_rate(), 5u);
  EXPECT_EQ(r.dcqcn().rp_enabled_priorities_size(), 8);
  EXPECT_EQ(r.dcqcn().np_enabled_priorities_size(), 8);
  EXPECT_TRUE(absl::IsInvalidArgument(twin.NicTunables(-1).status()));
}

TEST(TwinTunablesTest, RefusesOutOfRangeAndKeepsTheOldState) {
  Twin twin = SmallTwin();
  const weft::v1::NicTunablesReading before = twin.NicTunables(2).value();
  weft::v1::DcqcnParams cc;
  cc.set_rp_gd(16);
  absl::Status s = twin.SetNicTunables(2, {}, cc);
  EXPECT_TRUE(absl::IsInvalidArgument(s));
  EXPECT_THAT(s.message(), HasSubstr("gpu-a03/mlx5_0: rp_gd = 16: out of range 0..15"));
  cc.set_rp_gd(12);  // a NIC takes it, the model cannot cut by other than α/2
  EXPECT_THAT(twin.SetNicTunables(2, {}, cc).message(), HasSubstr("rp_gd = 12"));
  weft::v1::NodeQos qos = RecipeQos();
  (*qos.mutable_dscp_to_priority())[26] = 9;
  EXPECT_THAT(twin.SetNicTunables(2, qos, {}).message(), HasSubstr("dscp_to_priority[26]"));
  EXPECT_TRUE(MessageDifferencer::Equals(twin.NicTunables(2).value(), before));
}

TEST(TwinTunablesTest, PfcOffDropsAndRetransmitsAndHasNoPauseCounters) {
  auto run = [](bool pfc) {
    Twin twin = SmallTwin();
    if (!pfc) {
      weft::v1::NodeQos qos = RecipeQos();
      qos.clear_pfc_priorities();
      for (int nic : {0, 1}) EXPECT_TRUE(twin.SetNicTunables(nic, qos, {}).ok());
    }
    EXPECT_TRUE(twin.StartJob(CongestingJob()).ok());
    EXPECT_TRUE(twin.Advance(30).ok());
    return twin;
  };
  const Twin lossless = run(true), lossy = run(false);
  EXPECT_EQ(Hw(lossless, 0, "out_of_sequence"), 0u);
  EXPECT_EQ(Hw(lossless, 0, "packet_seq_err"), 0u);
  EXPECT_GT(Hw(lossy, 0, "out_of_sequence"), 0u);
  EXPECT_GT(Hw(lossy, 0, "packet_seq_err"), 0u);
  EXPECT_THAT(lossless.ReadNic(0).value().ethtool, Contains(Key("rx_prio3_pause")));
  EXPECT_TRUE(lossy.ReadNic(0).value().ethtool.empty());  // PFC off on that NIC only
  EXPECT_THAT(lossy.ReadNic(4).value().ethtool, Contains(Key("tx_prio3_pause_duration")));
  // Goodput falls: the all-to-all takes longer.
  EXPECT_GT(Job(lossy, "ring").last->communication_s,
            1.5 * Job(lossless, "ring").last->communication_s);
}

// The classic misconfiguration: PFC off on the RoCE priority and CNPs sent on that same
// priority. The CNPs queue behind the lossy data at the congested uplinks and some are lost:
// the senders handle fewer than the receivers sent. With CNPs on their own priority (the
// recipe's 6) none are lost although the data is lossy.
TEST(TwinTunablesTest, CnpsOnALossyPriorityAreLost) {
  auto cnps = [](uint32_t cnp_priority) {
    Twin twin = SmallTwin();
    weft::v1::NodeQos qos = RecipeQos();
    qos.clear_pfc_priorities();
    weft::v1::DcqcnParams cc;
    cc.set_np_cnp_prio(cnp_priority);
    for (int nic : {0, 1, 4, 5}) EXPECT_TRUE(twin.SetNicTunables(nic, qos, cc).ok());
    EXPECT_TRUE(twin.StartJob(CongestingJob()).ok());
    EXPECT_TRUE(twin.Advance(5).ok());
    double sent = 0, handled = 0;
    for (int nic : {0, 1, 4, 5}) {
      sent += Hw(twin, nic, "np_cnp_sent");
      handled += Hw(twin, nic, "rp_cnp_handled");
    }
    return std::make_pair(sent, handled);
  };
  const auto [sent_on_3, handled_on_3] = cnps(3);
  ASSERT_GT(sent_on_3, 0);
  EXPECT_LT(handled_on_3, 0.9 * sent_on_3);
  const auto [sent_on_6, handled_on_6] = cnps(6);
  ASSERT_GT(sent_on_6, 0);
  EXPECT_NEAR(handled_on_6, sent_on_6, 8);
}

TEST(TwinTunablesTest, ReactionPointOffIgnoresCnpsAndTheQueueRises) {
  Twin twin = SmallTwin();
  ASSERT_TRUE(twin.StartJob(CongestingJob()).ok());
  ASSERT_TRUE(twin.Advance(0.15).ok());
  const double controlled_queue = UplinkPort(twin).queue_bytes;
  ASSERT_TRUE(UplinkPort(twin).settled);
  weft::v1::DcqcnParams cc;
  cc.add_rp_enabled_priorities(0);  // the reaction point off on priority 3
  ASSERT_TRUE(twin.SetNicTunables(1, {}, cc).ok());  // one of the two senders over the uplink
  EXPECT_GT(UplinkPort(twin).queue_bytes, controlled_queue);
  EXPECT_FALSE(UplinkPort(twin).settled);
  EXPECT_EQ(UplinkPort(twin).mark_probability, 1);
  const uint64_t handled = Hw(twin, 1, "rp_cnp_handled");
  ASSERT_TRUE(twin.Advance(0.05).ok());
  EXPECT_EQ(Hw(twin, 1, "rp_cnp_handled"), handled);
  EXPECT_GT(Hw(twin, 1, "rp_cnp_ignored"), 0u);
  EXPECT_GT(Hw(twin, 0, "rp_cnp_handled"), 0u);
  EXPECT_EQ(Hw(twin, 0, "rp_cnp_ignored"), 0u);
}

TEST(TwinTunablesTest, NotificationPointOffSendsNoCnps) {
  Twin twin = SmallTwin();
  weft::v1::DcqcnParams cc;
  cc.add_np_enabled_priorities(0);
  ASSERT_TRUE(twin.SetNicTunables(0, {}, cc).ok());
  ASSERT_TRUE(twin.StartJob(CongestingJob()).ok());
  ASSERT_TRUE(twin.Advance(5).ok());
  EXPECT_GT(Hw(twin, 0, "np_ecn_marked_roce_packets"), 0u);
  EXPECT_EQ(Hw(twin, 0, "np_cnp_sent"), 0u);
  EXPECT_EQ(Hw(twin, 5, "rp_cnp_handled"), 0u);  // 5 → 0: NIC 0 sends it no CNPs
  EXPECT_GT(Hw(twin, 1, "np_cnp_sent"), 0u);
}

TEST(TwinTunablesTest, DcqcnParametersMoveThePortsFixedPoint) {
  Twin twin = SmallTwin();
  ASSERT_TRUE(twin.StartJob(CongestingJob()).ok());
  ASSERT_TRUE(twin.Advance(0.15).ok());
  const double before = UplinkPort(twin).mark_probability;
  ASSERT_GT(before, 0);
  weft::v1::DcqcnParams cc;
  cc.set_rp_ai_rate(40);
  // NICs 0 and 1 send over rack-a's uplink; with one of them changed the tie goes to the
  // lower set (the Create params); with both, the port runs theirs.
  ASSERT_TRUE(twin.SetNicTunables(1, {}, cc).ok());
  EXPECT_DOUBLE_EQ(UplinkPort(twin).mark_probability, before);
  ASSERT_TRUE(twin.SetNicTunables(0, {}, cc).ok());
  EXPECT_NE(UplinkPort(twin).mark_probability, before);
  EXPECT_EQ(twin.NicTunables(0).value().dcqcn().rp_ai_rate(), 40u);
}

// --- Faults -----------------------------------------------------------------------------

TEST(TwinFaultTest, LinkDownStallsTheJobAndClearingRestoresRatesExactly) {
  Twin twin = SmallTwin();
  ASSERT_TRUE(twin.StartJob(RingJob("pair", {0, 4})).ok());
  ASSERT_TRUE(twin.Advance(1.01).ok());
  const std::vector<double> rates = FlowRates(twin);
  const int cable = twin.topology().fabric.nics()[4].uplink;
  const TwinFault fault =
      twin.InjectFault({.kind = TwinFaultKind::kLinkDown, .cable = cable + 1}).value();
  EXPECT_EQ(fault.id, 1);
  EXPECT_EQ(fault.cable, cable);
  EXPECT_DOUBLE_EQ(fault.injected_at_s, twin.time_s());
  TwinNicReading r = twin.ReadNic(4).value();
  EXPECT_FALSE(r.link_up);
  EXPECT_EQ(r.speed_bps, 0);
  EXPECT_EQ(r.port_counters.at("link_downed"), 1u);
  EXPECT_TRUE(Job(twin, "pair").stalled);
  const int done = Job(twin, "pair").iterations_done;
  ASSERT_TRUE(twin.Advance(10).ok());
  EXPECT_EQ(Job(twin, "pair").iterations_done, done);
  EXPECT_GT(Hw(twin, 0, "local_ack_timeout_err"), 0u);
  ASSERT_TRUE(twin.ClearFault(fault.id).ok());
  EXPECT_EQ(FlowRates(twin), rates);
  EXPECT_FALSE(Job(twin, "pair").stalled);
  ASSERT_TRUE(twin.Advance(5).ok());
  EXPECT_GT(Job(twin, "pair").iterations_done, done);
  EXPECT_TRUE(absl::IsNotFound(twin.ClearFault(fault.id)));
}

TEST(TwinFaultTest, GrayLossSlowsTheJobAndRaisesRetransmissionsThenClearsExactly) {
  Twin twin = SmallTwin();
  ASSERT_TRUE(twin.StartJob(RingJob("pair", {0, 1})).ok());
  ASSERT_TRUE(twin.Advance(5).ok());
  const double clean_s = Job(twin, "pair").last->iteration_s;
  const int cable = twin.topology().fabric.nics()[1].uplink;  // gpu-a02's cable
  const int id =
      twin.InjectFault({.kind = TwinFaultKind::kGrayLoss, .cable = cable, .value = 1e-2})
          .value()
          .id;
  ASSERT_TRUE(twin.Advance(10).ok());
  const double lossy_s = Job(twin, "pair").last->iteration_s;
  EXPECT_GT(lossy_s, clean_s + 0.005);  // goodput 0.99 / (1 + 0.01 · 4) of 100 Gb/s
  EXPECT_GT(Hw(twin, 1, "out_of_sequence"), 0u);  // 0 → 1 arrives over the lossy cable
  EXPECT_GT(Hw(twin, 0, "packet_seq_err"), 0u);   // ... and 0 gets the NAKs
  EXPECT_GT(Port(twin, 1, "port_rcv_errors"), 0u);
  EXPECT_GT(Hw(twin, 0, "out_of_sequence"), 0u);  // 1 → 0 leaves over it too
  ASSERT_TRUE(twin.ClearFault(id).ok());
  ASSERT_TRUE(twin.Advance(5).ok());
  EXPECT_NEAR(Job(twin, "pair").last->iteration_s, clean_s, 1e-9);
}

TEST(TwinFaultTest, FlappingLinkGoesDownEveryPeriodAndAdvanceSplitsAtTheEdges) {
  auto flap = [](double chunk_s) {
    Twin twin = SmallTwin();
    EXPECT_TRUE(twin.StartJob(RingJob("pair", {0, 1}, 0.05)).ok());
    const int cable = twin.topology().fabric.nics()[1].uplink;
    EXPECT_TRUE(
        twin.InjectFault({.kind = TwinFaultKind::kFlappingLink, .cable = cable, .value = 1}).ok());
    for (double t = 0; t < 3.2 - 1e-9; t += chunk_s) EXPECT_TRUE(twin.Advance(chunk_s).ok());
    return twin;
  };
  const Twin whole = flap(3.2), chunked = flap(0.1);
  for (const Twin* twin : {&whole, &chunked}) {
    const TwinNicReading r = twin->ReadNic(1).value();
    EXPECT_EQ(r.port_counters.at("link_downed"), 4u);  // at 0, 1, 2 and 3 s
    EXPECT_FALSE(r.link_up);                            // 0.2 s into a period
  }
  // Up for the second half of each period only: 1.5 s of the job's 3.2 s.
  EXPECT_EQ(Job(whole, "pair").iterations_done, Job(chunked, "pair").iterations_done);
  EXPECT_NEAR(Port(whole, 0, "port_xmit_data"), Port(chunked, 0, "port_xmit_data"), 1e3);
  EXPECT_GT(Job(whole, "pair").iterations_done, 0);
  Twin after = flap(3.2);
  ASSERT_TRUE(after.Advance(0.4).ok());  // 3.6 s: the up half
  EXPECT_TRUE(after.ReadNic(1).value().link_up);
}

TEST(TwinFaultTest, StormDegradedLinkAndDeadNode) {
  Twin twin = SmallTwin();
  ASSERT_TRUE(twin.StartJob(CongestingJob()).ok());
  ASSERT_TRUE(twin.Advance(0.15).ok());
  const std::vector<double> rates = FlowRates(twin);
  // NIC 0 gets 25 Gb/s from NIC 5 and pauses its ToR 90 % of the time: the backlog
  // pauses back over the spine to NIC 5.
  const TwinFault storm =
      twin.InjectFault({.kind = TwinFaultKind::kPfcStorm, .nic = 0, .value = 0.9}).value();
  EXPECT_EQ(storm.id, 1);
  EXPECT_EQ(storm.node, 0);
  const TwinFault degraded = twin.InjectFault({.kind = TwinFaultKind::kDegradedLink,
                                               .cable = twin.topology().fabric.nics()[3].uplink,
                                               .value = 0.5})
                                 .value();
  EXPECT_EQ(degraded.id, 2);
  EXPECT_DOUBLE_EQ(twin.ReadNic(3).value().speed_bps, kNicBps / 2);
  ASSERT_TRUE(twin.Advance(0.01).ok());
  EXPECT_GT(twin.ReadNic(0).value().ethtool.at("tx_prio3_pause_duration"), 0u);
  EXPECT_GT(twin.ReadNic(5).value().ethtool.at("rx_prio3_pause_duration"), 0u);
  EXPECT_GT(Port(twin, 5, "port_xmit_wait"), 0u);
  EXPECT_NE(FlowRates(twin), rates);
  const TwinFault dead = twin.InjectFault({.kind = TwinFaultKind::kDeadNode, .node = 5}).value();
  EXPECT_TRUE(Job(twin, "ring").stalled);
  EXPECT_TRUE(twin.ReadNic(5).ok());
  const int dead_uplink = twin.topology().fabric.nics()[5].uplink;
  int dead_flows = 0;
  for (const FlowState& flow : twin.model().flows()) {
    if (flow.path.empty() || flow.path[0] != dead_uplink) continue;
    ++dead_flows;
    EXPECT_EQ(flow.rate_bps, 0);
  }
  EXPECT_EQ(dead_flows, 1);  // the ring's 5 → 0
  EXPECT_EQ(twin.faults().size(), 3u);
  EXPECT_EQ(twin.faults()[2].id, dead.id);
  twin.ClearAllFaults();
  EXPECT_TRUE(twin.faults().empty());
  EXPECT_EQ(FlowRates(twin), rates);
  EXPECT_FALSE(Job(twin, "ring").stalled);
  EXPECT_EQ(twin.InjectFault({.kind = TwinFaultKind::kDeadNode, .node = 5}).value().id, 4);
}

TEST(TwinFaultTest, RefusesUnknownIdsAndValuesNamingTheRange) {
  Twin twin = SmallTwin();
  EXPECT_THAT(twin.InjectFault({.kind = TwinFaultKind::kGrayLoss, .cable = 0, .value = 1})
                  .status()
                  .message(),
              HasSubstr("gray_loss: value = 1 is out of range: accepted (0, 1)"));
  EXPECT_THAT(twin.InjectFault({.kind = TwinFaultKind::kLinkDown, .cable = 999}).status().message(),
              HasSubstr("cable = 999 is out of range"));
  EXPECT_THAT(twin.InjectFault({.kind = TwinFaultKind::kDeadNode, .node = 8}).status().message(),
              HasSubstr("node = 8 is out of range: accepted [0, 7]"));
  EXPECT_TRUE(absl::IsInvalidArgument(
      twin.InjectFault({.kind = TwinFaultKind::kPfcStorm, .nic = 0, .value = 0}).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(
      twin.InjectFault({.kind = TwinFaultKind::kFlappingLink, .cable = 0, .value = -1}).status()));
  EXPECT_TRUE(twin.faults().empty());
  EXPECT_TRUE(absl::IsInvalidArgument(twin.Advance(-1)));
  EXPECT_TRUE(absl::IsInvalidArgument(twin.Advance(std::nan(""))));
}

// --- Cost -------------------------------------------------------------------------------

TEST(TwinCostTest, TheDemoClusterAdvancesATenthOfASecondInWellUnderTenMs) {
  // Once with every job on RoCE, once with one of the two cross-rack jobs on a storage
  // DSCP (TC 0 against the other's TC 3 on the spine ports: the schedulers' passes).
  for (const bool storage : {false, true}) {
    Twin twin = Twin::Create(BuildTwinTopology(DemoRacks(4, 8, 2), TwinFabricOptions()).value(),
                             DcqcnParams())
                    .value();
    // Five jobs over the 32 nodes, some spanning racks.
    const std::vector<std::vector<int>> placements = {
        {0, 1, 2, 3, 4, 5, 6, 7}, {8, 9, 10, 11}, {12, 13, 16, 17}, {18, 19, 20, 21, 24, 25},
        {26, 27, 28, 29, 30, 31}};
    for (size_t j = 0; j < placements.size(); ++j) {
      TrainingJobSpec job = RingJob(absl::StrCat("job", j), placements[j], 0.2 + 0.05 * j);
      job.model.parameters = 7e9;
      if (storage && j == 3) job.dscp = 10;
      ASSERT_TRUE(twin.StartJob(job).ok());
    }
    const auto start = std::chrono::steady_clock::now();
    constexpr int kCalls = 100;
    int most_passes = 0;
    bool classes_met = false;  // at some port, while solved
    for (int i = 0; i < kCalls; ++i) {
      ASSERT_TRUE(twin.Advance(0.1).ok());
      most_passes = std::max(most_passes, twin.model().scheduler_passes());
      for (const PortState& port : twin.model().ports()) {
        classes_met |= port.class_rate_bps[0] > 0 && port.class_rate_bps[3] > 0;
      }
    }
    const double ms_per_call = std::chrono::duration<double, std::milli>(
                                   std::chrono::steady_clock::now() - start)
                                   .count() /
                               kCalls;
    std::cout << "demo (32 nodes x 8 NICs, 5 jobs" << (storage ? ", 1 on a storage class" : "")
              << "): " << ms_per_call << " ms per Advance(0.1), scheduler passes at most "
              << most_passes << "\n";
    for (const TwinJobStatus& job : twin.jobs()) EXPECT_GT(job.iterations_done, 0) << job.name;
    EXPECT_LT(ms_per_call, 10);
    EXPECT_EQ(classes_met, storage);
  }
}

// --- Traffic classes ----------------------------------------------------------------------

// A training job (RoCE, TC 3) with one flow up rack-a's 50 Gb/s uplink and a storage job on
// DSCP 10 (-> priority 1 -> TC 0 by the recipe's tables) with two: max-min would give each
// flow a third; the switch's ETS gives each class its weight.
void StartTrainingAndStorage(Twin* twin) {
  ASSERT_TRUE(twin->StartJob(RingJob("train", {0, 4})).ok());
  TrainingJobSpec storage = RingJob("storage", {1, 5, 2, 6});
  storage.dscp = 10;
  ASSERT_TRUE(twin->StartJob(storage).ok());
  ASSERT_TRUE(twin->Advance(1.01).ok());  // both in their all-reduce
}

TEST(TwinClassTest, AStorageJobOnItsOwnClassGetsTheSwitchsEtsShare) {
  Twin twin = SmallTwin();
  StartTrainingAndStorage(&twin);
  const PortState& uplink = UplinkPort(twin);
  EXPECT_NEAR(uplink.class_rate_bps[3], 25e9, 1e3);  // recipe: TC 3 50 %, TC 0 50 %
  EXPECT_NEAR(uplink.class_rate_bps[0], 25e9, 1e3);
  EXPECT_EQ(uplink.class_rate_bps[1], 0);  // priority 1 rides TC 0
  // The switch's weights move the split: TC 0 70 %, TC 3 30 %.
  weft::v1::NodeQos qos = RecipeQos();
  qos.set_tc_bandwidth_percent(0, 70);
  qos.set_tc_bandwidth_percent(3, 30);
  ASSERT_TRUE(twin.SetSwitchQos(qos).ok());
  EXPECT_NEAR(UplinkPort(twin).class_rate_bps[3], 15e9, 1e3);
  EXPECT_NEAR(UplinkPort(twin).class_rate_bps[0], 35e9, 1e3);
  EXPECT_EQ(twin.switch_qos().tc_bandwidth_percent(0), 70u);
  // The storage senders' own DSCP table moves it: DSCP 10 -> priority 3 puts storage in
  // TC 3 with the training flow, and the three share max-min.
  weft::v1::NodeQos nic_qos = RecipeQos();
  (*nic_qos.mutable_dscp_to_priority())[10] = 3;
  for (int nic : {1, 2, 5, 6}) ASSERT_TRUE(twin.SetNicTunables(nic, nic_qos, {}).ok());
  EXPECT_NEAR(UplinkPort(twin).class_rate_bps[3], 50e9, 1e3);
  for (double rate : FlowRates(twin)) EXPECT_LE(rate, 50e9 / 3 + 1e3);
}

TEST(TwinClassTest, JobsOnTheRoceDscpShareAsBefore) {
  // Without a dscp both jobs ride TC 3: one class, max-min (a third each up the uplink).
  Twin twin = SmallTwin();
  ASSERT_TRUE(twin.StartJob(RingJob("train", {0, 4})).ok());
  ASSERT_TRUE(twin.StartJob(RingJob("storage", {1, 5, 2, 6})).ok());
  ASSERT_TRUE(twin.Advance(1.01).ok());
  EXPECT_NEAR(UplinkPort(twin).class_rate_bps[3], 50e9, 1e3);
  EXPECT_EQ(UplinkPort(twin).class_rate_bps[0], 0);
  EXPECT_EQ(twin.model().scheduler_passes(), 1);
}

TEST(TwinClassTest, RefusesABadDscpAndSwitchQos) {
  Twin twin = SmallTwin();
  TrainingJobSpec job = RingJob("a", {0, 1});
  job.dscp = 64;
  EXPECT_THAT(twin.StartJob(job).message(), AllOf(HasSubstr("dscp = 64"), HasSubstr("[0, 63]")));
  weft::v1::NodeQos qos = RecipeQos();
  qos.clear_tc_tsa();
  EXPECT_THAT(twin.SetSwitchQos(qos).message(), HasSubstr("accepted 8 each"));
  qos = RecipeQos();
  qos.set_priority_to_tc(2, 9);
  EXPECT_THAT(twin.SetSwitchQos(qos).message(), HasSubstr("switch QoS"));
  EXPECT_EQ(twin.switch_qos().priority_to_tc(2), 0u);  // unchanged
}

}  // namespace
}  // namespace weft::sim
