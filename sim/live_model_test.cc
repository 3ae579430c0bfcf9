// The live model: max-min rates, DCQCN fixed points at congested ports, counters, and
// the cross-check against the transient (fluid) model the issue asks for.
//
// Cross-check (docs/benchmarks.md, "Fabric twin: live model against the fluid model"):
// each scenario runs the DCQCN fluid model (sim/dcqcn_fluid.h, 1 µs Euler steps, flows
// from line rate, 200 ms) for the flows that share the bottleneck and compares its time
// averages over 100-200 ms with the live model's answer for the same flows routed over a
// fabric. Parameters: the CoNEXT'16 set the fluid model is validated with (40 Gb/s NICs,
// 1 KB packets, Kmin 5 KB, Kmax 200 KB, Pmax 1 %, τ* = 4 µs), a switch marking every packet
// above Kmax. Tolerances: per-flow rate 1 %, queue and marking probability 5 %, marks and
// CNPs per second 5 % (the fluid model settles to its fixed point at τ* = 4 µs, so the
// differences come from the window still carrying the last of the transient).
#include "sim/live_model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "absl/strings/str_cat.h"

namespace weft::sim {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr double kRateTolerance = 0.01;
constexpr double kQueueTolerance = 0.05;
constexpr double kMarkTolerance = 0.05;

DcqcnParams Conext16() {
  DcqcnParams params;  // the paper's parameters, 1 KB packets, τ* = 4 µs, mark all > Kmax
  params.capacity_bps = 40e9;
  return params;
}

LeafSpineOptions Racks(int racks, int nodes_per_rack, double nic_bps) {
  LeafSpineOptions o;
  o.racks = racks;
  o.nodes_per_rack = nodes_per_rack;
  o.nics_per_node = 1;
  o.nic_bps = nic_bps;
  o.uplinks_per_tor = 1;
  o.spines = 1;
  // One uplink of one NIC's speed (up to the 64:1 the builder accepts).
  o.oversubscription = std::min(nodes_per_rack, 64);
  return o;
}

LiveModel MakeModel(const LeafSpineOptions& options, const DcqcnParams& params,
                    std::vector<FlowSpec> flows) {
  LiveModel model = LiveModel::Create(BuildLeafSpine(options).value(), params).value();
  EXPECT_TRUE(model.SetFlows(std::move(flows)).ok());
  return model;
}

// The fluid model's time averages over [from, to] for n flows on one bottleneck.
struct FluidAverages {
  double rate_bps = 0;  // per flow (mean over flows)
  double queue_bytes = 0;
  double mark_probability = 0;
  double marks_per_s = 0;  // per flow
  double cnps_per_s = 0;   // per flow
};

FluidAverages RunFluid(const DcqcnParams& params, int n) {
  DcqcnFluidModel model =
      DcqcnFluidModel::Create(params, UniformFlows(n, params.capacity_bps)).value();
  RunOptions options;
  options.duration_us = 200e3;
  options.sample_interval_us = 10;
  const Trace trace = model.Run(options).value();
  FluidAverages avg;
  int samples = 0;
  const double bits = params.packet_bytes * 8;
  for (const TraceSample& s : trace.samples) {
    if (s.time_us < 100e3) continue;
    ++samples;
    avg.queue_bytes += s.queue_bytes;
    avg.mark_probability += s.marking_probability;
    for (double r : s.rate_current_bps) {
      avg.rate_bps += r / n;
      avg.marks_per_s += s.marking_probability * r / bits / n;
      avg.cnps_per_s += CnpsPerSecond(s.marking_probability * r / bits, params.tau_us * 1e-6) / n;
    }
  }
  for (double* v : {&avg.rate_bps, &avg.queue_bytes, &avg.mark_probability, &avg.marks_per_s,
                    &avg.cnps_per_s}) {
    *v /= samples;
  }
  return avg;
}

// Compares and prints a Markdown row per quantity for docs/benchmarks.md.
void CrossCheck(const std::string& scenario, const FluidAverages& fluid, const FlowState& flow,
                const PortState& port) {
  struct Row {
    const char* what;
    double fluid, live, tolerance;
    const char* unit;
    double scale;
  };
  const Row rows[] = {
      {"rate per flow", fluid.rate_bps, flow.rate_bps, kRateTolerance, "Gb/s", 1e-9},
      {"queue", fluid.queue_bytes, port.queue_bytes, kQueueTolerance, "KB", 1e-3},
      {"marking probability", fluid.mark_probability, port.mark_probability, kQueueTolerance,
       "1e-3", 1e3},
      {"marks per flow", fluid.marks_per_s, flow.marked_packets_per_s, kMarkTolerance, "k/s",
       1e-3},
      {"CNPs per flow", fluid.cnps_per_s, flow.cnps_per_s, kMarkTolerance, "k/s", 1e-3},
  };
  for (const Row& r : rows) {
    const double error = std::abs(r.live - r.fluid) / r.fluid;
    EXPECT_LE(error, r.tolerance) << scenario << ": " << r.what << " fluid " << r.fluid << " live "
                                  << r.live;
    std::printf("| %s | %s (%s) | %.4g | %.4g | %.2f %% | %.0f %% | %s |\n", scenario.c_str(),
                r.what, r.unit, r.fluid * r.scale, r.live * r.scale, error * 100,
                r.tolerance * 100, error <= r.tolerance ? "yes" : "no");
  }
}

TEST(LiveModelCrossCheckTest, IncastThroughAToRPortAgreesWithTheFluidModel) {
  for (int n : {2, 10}) {
    SCOPED_TRACE(testing::Message() << n << " flows");
    // One rack of n + 1 nodes; nodes 1..n send to node 0 through the ToR's port to it.
    std::vector<FlowSpec> flows;
    for (int i = 1; i <= n; ++i) flows.push_back({i, 0, static_cast<uint16_t>(49152 + i)});
    const LiveModel model = MakeModel(Racks(1, n + 1, 40e9), Conext16(), flows);
    const int port = model.fabric().nics()[0].downlink;
    ASSERT_TRUE(model.ports()[port].congested);
    EXPECT_EQ(model.ports()[port].bottlenecked_flows, n);
    for (const FlowState& flow : model.flows()) EXPECT_EQ(flow.bottleneck_link, port);
    // Nothing else queues: the senders' own links run at 40/n Gb/s.
    for (size_t k = 0; k < model.ports().size(); ++k) {
      if (static_cast<int>(k) == port) continue;
      EXPECT_FALSE(model.ports()[k].congested) << "link " << k;
    }
    CrossCheck("incast " + std::to_string(n) + " → 1, ToR port", RunFluid(Conext16(), n),
               model.flows()[0], model.ports()[port]);
  }
}

TEST(LiveModelCrossCheckTest, OversubscribedUplinkSharedByTwoRacksAgreesWithTheFluidModel) {
  // Three racks of 8 × 40 Gb/s under one 40 Gb/s uplink each (8:1). Three nodes of rack 0
  // and three of rack 1 send to six nodes of rack 2: the spine's port down rack 2's uplink
  // carries all six flows; rack 0's and rack 1's uplinks carry three each (20 Gb/s).
  std::vector<FlowSpec> flows;
  for (int i = 0; i < 3; ++i) {
    flows.push_back({i, 16 + i, 49152});
    flows.push_back({8 + i, 19 + i, 49152});
  }
  const LiveModel model = MakeModel(Racks(3, 8, 40e9), Conext16(), flows);
  const int port = model.flows()[0].bottleneck_link;
  const Link& link = model.fabric().links()[port];
  ASSERT_EQ(link.from.kind, Vertex::Kind::kSwitch);
  EXPECT_EQ(model.fabric().switches()[link.from.id].name, "spine0");
  EXPECT_EQ(model.fabric().switches()[link.to.id].name, "tor2");
  EXPECT_EQ(model.ports()[port].bottlenecked_flows, 6);
  EXPECT_NEAR(model.ports()[port].utilization, 1, 1e-9);
  const int rack0_uplink = model.flows()[0].path[1];
  EXPECT_NEAR(model.ports()[rack0_uplink].utilization, 0.5, 1e-9);
  EXPECT_FALSE(model.ports()[rack0_uplink].congested);
  DcqcnParams fluid_params = Conext16();
  fluid_params.capacity_bps = link.capacity_bps;
  CrossCheck("2 racks × 3 → rack 2, 8:1 uplink", RunFluid(fluid_params, 6), model.flows()[0],
             model.ports()[port]);
}

TEST(LiveModelTest, FlowsThatFitBuildNoQueue) {
  // Two 100 Gb/s flows across a non-blocking fabric, and one at line rate to a NIC of
  // the same speed: every port is full or below, none congested, nothing marked.
  LeafSpineOptions o = Racks(2, 2, 100e9);
  o.oversubscription = 1;
  const LiveModel model = MakeModel(o, Conext16(), {{0, 2, 1}, {1, 3, 2}});
  for (const FlowState& flow : model.flows()) {
    EXPECT_DOUBLE_EQ(flow.rate_bps, 100e9);
    EXPECT_EQ(flow.marked_packets_per_s, 0);
    EXPECT_EQ(flow.cnps_per_s, 0);
  }
  for (const PortState& port : model.ports()) {
    EXPECT_FALSE(port.congested);
    EXPECT_EQ(port.queue_bytes, 0);
  }
}

TEST(LiveModelTest, MaxMinWithDemandsGivesTheRestToDcqcnFlows) {
  // Three senders into node 0 (40 Gb/s): one wants 4 Gb/s, two as much as they can.
  const LiveModel model =
      MakeModel(Racks(1, 4, 40e9), Conext16(), {{1, 0, 1, 4e9}, {2, 0, 2}, {3, 0, 3}});
  EXPECT_DOUBLE_EQ(model.flows()[0].rate_bps, 4e9);
  EXPECT_EQ(model.flows()[0].bottleneck_link, -1);
  EXPECT_DOUBLE_EQ(model.flows()[1].rate_bps, 18e9);
  EXPECT_DOUBLE_EQ(model.flows()[2].rate_bps, 18e9);
  const PortState& port = model.ports()[model.fabric().nics()[0].downlink];
  EXPECT_EQ(port.bottlenecked_flows, 2);
  // The fixed point is that of 2 flows on the 36 Gb/s the demand leaves.
  DcqcnParams residual = Conext16();
  residual.capacity_bps = 36e9;
  const FixedPoint fp = ClosedFormFixedPoint(residual, 2).value();
  EXPECT_DOUBLE_EQ(port.queue_bytes, fp.queue_bytes);
  // The capped flow is marked at the same port like the others.
  EXPECT_NEAR(model.flows()[0].mark_probability, port.mark_probability, 1e-15);
  EXPECT_GT(model.flows()[0].marked_packets_per_s, 0);
}

TEST(LiveModelTest, CountersAccumulateRatesAndCnpsStayUnderOnePerTau) {
  std::vector<FlowSpec> flows;
  for (int i = 1; i <= 10; ++i) flows.push_back({i, 0, static_cast<uint16_t>(i)});
  LiveModel model = MakeModel(Racks(1, 11, 40e9), Conext16(), flows);
  ASSERT_TRUE(model.Advance(0.5).ok());
  ASSERT_TRUE(model.Advance(0.5).ok());
  EXPECT_DOUBLE_EQ(model.time_s(), 1);
  const FlowCounters& c = model.flow_counters()[3];
  EXPECT_NEAR(c.bytes, 4e9 / 8, 1);
  EXPECT_NEAR(c.packets, 4e9 / 8000, 1e-3);
  EXPECT_NEAR(c.marked_packets, model.flows()[3].marked_packets_per_s, 1e-6);
  EXPECT_GT(c.cnps, 0);
  EXPECT_LT(c.cnps, c.marked_packets);
  EXPECT_LT(c.cnps, 1 / 50e-6);
  const int port = model.fabric().nics()[0].downlink;
  EXPECT_NEAR(model.link_counters()[port].bytes, 40e9 / 8, 1);
  double flow_marks = 0;
  for (const FlowCounters& fc : model.flow_counters()) flow_marks += fc.marked_packets;
  EXPECT_NEAR(model.link_counters()[port].marked_packets, flow_marks, 1e-6 * flow_marks);
  // New flows start the counters again.
  ASSERT_TRUE(model.SetFlows({{1, 0, 1}}).ok());
  EXPECT_EQ(model.flow_counters()[0].bytes, 0);
}

TEST(LiveModelTest, CnpRateSaturatesAtOnePerTau) {
  EXPECT_EQ(CnpsPerSecond(0, 50e-6), 0);
  EXPECT_NEAR(CnpsPerSecond(100, 50e-6), 100 / 1.005, 1e-9);
  EXPECT_NEAR(CnpsPerSecond(1e9, 50e-6), 2e4, 1);
}

TEST(LiveModelTest, MarkAllSwitchBeyondTheRampIsNotSettled) {
  // 64 flows at 1 KB packets need p* ≈ 0.059 > Pmax (sim/dcqcn_fluid_test.cc): a mark-all
  // switch has no fixed point; the queue is reported at Kmax.
  std::vector<FlowSpec> flows;
  for (int i = 1; i <= 64; ++i) flows.push_back({i, 0, static_cast<uint16_t>(i)});
  const LiveModel model = MakeModel(Racks(1, 65, 40e9), Conext16(), flows);
  const PortState& port = model.ports()[model.fabric().nics()[0].downlink];
  EXPECT_FALSE(port.settled);
  EXPECT_DOUBLE_EQ(port.queue_bytes, 200e3);
  DcqcnParams ramp = Conext16();
  ramp.above_kmax = AboveKmax::kExtendRamp;
  const LiveModel extended = MakeModel(Racks(1, 65, 40e9), ramp, flows);
  const PortState& ext_port = extended.ports()[extended.fabric().nics()[0].downlink];
  EXPECT_TRUE(ext_port.settled);
  EXPECT_GT(ext_port.queue_bytes, 1e6);
}

TEST(LiveModelTest, PortTakesTheParamsMostOfItsSendersRun) {
  // Three senders into node 0; two of them run a larger R_AI, which raises p* and q*.
  std::vector<FlowSpec> flows = {{1, 0, 1}, {2, 0, 2}, {3, 0, 3}};
  LiveModel model = MakeModel(Racks(1, 4, 40e9), Conext16(), flows);
  const int port = model.fabric().nics()[0].downlink;
  const double default_queue = model.ports()[port].queue_bytes;
  DcqcnParams faster = Conext16();
  faster.rate_ai_bps = 160e6;
  ASSERT_TRUE(model.SetNicParams({Conext16(), faster}, {0, 1, 1, 0}).ok());
  DcqcnParams expected = faster;
  expected.capacity_bps = 40e9;
  EXPECT_DOUBLE_EQ(model.ports()[port].queue_bytes,
                   ClosedFormFixedPoint(expected, 3).value().queue_bytes);
  EXPECT_GT(model.ports()[port].queue_bytes, default_queue);
  // One sender of three is not the majority: back to the defaults.
  ASSERT_TRUE(model.SetNicParams({Conext16(), faster}, {0, 1, 0, 0}).ok());
  EXPECT_DOUBLE_EQ(model.ports()[port].queue_bytes, default_queue);
  EXPECT_THAT(model.SetNicParams({Conext16()}, {0, 1, 0, 0}).message(),
              HasSubstr("set_of_nic[1] = 1 is out of range"));
  EXPECT_THAT(model.SetNicParams({Conext16()}, {0}).message(), HasSubstr("one per NIC (4)"));
}

TEST(LiveModelTest, AFlowDcqcnDoesNotHoldBackLeavesThePortUnsettledAndMarkingAll) {
  std::vector<FlowSpec> flows = {{1, 0, 1}, {2, 0, 2}};
  const LiveModel controlled = MakeModel(Racks(1, 3, 40e9), Conext16(), flows);
  flows[1].congestion_controlled = false;
  const LiveModel model = MakeModel(Racks(1, 3, 40e9), Conext16(), flows);
  const PortState& port = model.ports()[model.fabric().nics()[0].downlink];
  EXPECT_TRUE(controlled.ports()[controlled.fabric().nics()[0].downlink].settled);
  EXPECT_FALSE(port.settled);
  EXPECT_EQ(port.mark_probability, 1);
  EXPECT_DOUBLE_EQ(port.queue_bytes, 200e3);
  EXPECT_DOUBLE_EQ(port.offered_bps, 80e9);
  EXPECT_DOUBLE_EQ(port.capacity_bps, 40e9);
  EXPECT_DOUBLE_EQ(model.flows()[0].rate_bps, 20e9);  // max-min rates stay
  // PFC, not DCQCN, holds the uncontrolled flow to its 20 of 40 Gb/s: its NIC is paused
  // half the time (sim/pfc_fluid_test.cc checks this against the transient model).
  EXPECT_DOUBLE_EQ(model.nic_port(2).pause_rx_share, 0.5);
  EXPECT_DOUBLE_EQ(model.nic_port(1).pause_rx_share, 0);
  EXPECT_DOUBLE_EQ(controlled.nic_port(2).pause_rx_share, 0);
}

// Max-min by the book, for checking the solve: raise every unfrozen flow's rate together,
// freeze the flows of whatever fills first (a link or a demand), again until none is left.
std::vector<double> ReferenceMaxMin(const Fabric& fabric, const std::vector<FlowSpec>& specs,
                                    const std::vector<FlowState>& flows) {
  const int n = static_cast<int>(flows.size());
  std::vector<double> rate(n, 0);
  std::vector<bool> frozen(n, false);
  for (int left = n; left > 0;) {
    std::vector<double> used(fabric.links().size(), 0);
    std::vector<int> unfrozen(fabric.links().size(), 0);
    for (int f = 0; f < n; ++f) {
      for (int k : flows[f].path) (frozen[f] ? used[k] += rate[f] : ++unfrozen[k]);
    }
    double level = std::numeric_limits<double>::infinity();
    for (size_t k = 0; k < used.size(); ++k) {
      if (unfrozen[k] > 0) {
        level = std::min(level, (fabric.links()[k].capacity_bps - used[k]) / unfrozen[k]);
      }
    }
    for (int f = 0; f < n; ++f) {
      if (!frozen[f]) level = std::min(level, specs[f].demand_bps);
    }
    for (int f = 0; f < n; ++f) {
      if (frozen[f]) continue;
      bool full = specs[f].demand_bps <= level * (1 + 1e-12);
      for (int k : flows[f].path) {
        full |= (fabric.links()[k].capacity_bps - used[k]) / unfrozen[k] <= level * (1 + 1e-12);
      }
      if (full) {
        rate[f] = level;
        frozen[f] = true;
        --left;
      }
    }
  }
  return rate;
}

TEST(LiveModelTest, RatesAreMaxMinAndEachFlowIsFrozenWhereItIsALargestFlowOfAFullPort) {
  const LeafSpineOptions o{.racks = 4, .nodes_per_rack = 4, .nics_per_node = 2,
                           .uplinks_per_tor = 2, .spines = 2, .oversubscription = 2};
  const Fabric fabric = BuildLeafSpine(o).value();
  const int nics = static_cast<int>(fabric.nics().size());
  std::mt19937 rng(7);
  for (int trial = 0; trial < 20; ++trial) {
    std::vector<FlowSpec> specs;
    for (int i = 0; i < 40; ++i) {
      FlowSpec f;
      f.src_nic = static_cast<int>(rng() % nics);
      f.dst_nic = static_cast<int>((f.src_nic + 1 + rng() % (nics - 1)) % nics);
      f.udp_src_port = static_cast<uint16_t>(49152 + rng() % 1000);
      if (rng() % 4 == 0) f.demand_bps = 1e9 * (1 + rng() % 60);
      specs.push_back(f);
    }
    LiveModel model = MakeModel(o, Conext16(), specs);
    const std::vector<double> want = ReferenceMaxMin(fabric, specs, model.flows());
    std::vector<double> sum(fabric.links().size(), 0), largest(fabric.links().size(), 0);
    for (const FlowState& flow : model.flows()) {
      for (int k : flow.path) {
        sum[k] += flow.rate_bps;
        largest[k] = std::max(largest[k], flow.rate_bps);
      }
    }
    for (size_t f = 0; f < specs.size(); ++f) {
      const FlowState& flow = model.flows()[f];
      SCOPED_TRACE(absl::StrCat("trial ", trial, ", flow ", f));
      EXPECT_NEAR(flow.rate_bps, want[f], 1e-6 * want[f]);
      if (flow.bottleneck_link < 0) {
        EXPECT_NEAR(flow.rate_bps, specs[f].demand_bps, 1e-6 * flow.rate_bps);
        continue;
      }
      const int k = flow.bottleneck_link;
      EXPECT_GE(sum[k], fabric.links()[k].capacity_bps * (1 - 1e-6));
      EXPECT_GE(flow.rate_bps, largest[k] * (1 - 1e-6));
    }
  }
}

TEST(LiveModelTest, PortsFullAtTheSameLevelGiveTheFlowsToTheLowerLinkIdWhateverElseRuns) {
  // Two flows rack 0 -> rack 1 fill rack 0's uplink and the spine's port toward rack 1
  // (100 Gb/s each) at the same 50 Gb/s: the ToR's uplink, the lower link id, holds them.
  LeafSpineOptions o = Racks(2, 2, 100e9);
  o.oversubscription = 2;
  const std::vector<FlowSpec> pair = {{.src_nic = 0, .dst_nic = 2}, {.src_nic = 1, .dst_nic = 3}};
  const LiveModel alone = MakeModel(o, Conext16(), pair);
  const std::vector<int>& path = alone.flows()[0].path;
  ASSERT_EQ(path.size(), 4u);
  ASSERT_LT(path[1], path[2]);
  for (const FlowState& flow : alone.flows()) {
    EXPECT_NEAR(flow.rate_bps, 50e9, 1);
    EXPECT_EQ(flow.bottleneck_link, path[1]);
  }
  EXPECT_TRUE(alone.ports()[path[1]].congested);
  EXPECT_FALSE(alone.ports()[path[2]].congested);
  // Other flows (inside rack 1, and rack 1 to rack 0) change nothing of that.
  std::vector<FlowSpec> more = pair;
  more.push_back({.src_nic = 3, .dst_nic = 2});
  more.push_back({.src_nic = 2, .dst_nic = 1});
  const LiveModel busy = MakeModel(o, Conext16(), more);
  for (int f = 0; f < 2; ++f) {
    EXPECT_EQ(busy.flows()[f].bottleneck_link, path[1]);
    EXPECT_EQ(busy.flows()[f].rate_bps, alone.flows()[f].rate_bps);
  }
  EXPECT_EQ(busy.ports()[path[1]].queue_bytes, alone.ports()[path[1]].queue_bytes);
}

TEST(LiveModelTest, RefusesBadInput) {
  DcqcnParams bad = Conext16();
  bad.pmax = 0;
  EXPECT_THAT(LiveModel::Create(BuildLeafSpine(Racks(1, 2, 40e9)).value(), bad).status().message(),
              HasSubstr("pmax = 0"));
  LiveModel model = LiveModel::Create(BuildLeafSpine(Racks(1, 4, 40e9)).value(), Conext16()).value();
  EXPECT_THAT(model.SetFlows({{1, 0, 1}, {1, 9, 1}}).message(),
              AllOf(HasSubstr("flows[1]"), HasSubstr("dst_nic = 9"), HasSubstr("[0, 3]")));
  EXPECT_THAT(model.SetFlows({{1, 0, 1, 0}}).message(),
              AllOf(HasSubstr("flows[0].demand_bps = 0"), HasSubstr("(0, inf]")));
  EXPECT_THAT(model.SetFlows({{1, 0, 1, std::nan("")}}).message(), HasSubstr("demand_bps = nan"));
  EXPECT_THAT(model.Advance(-1).message(), HasSubstr("duration_s = -1"));
}

// Faults and PFC. Racks of 2 single-NIC nodes at 100 Gb/s (NICs 2r and 2r + 1 in rack r),
// one ToR uplink per rack of 200 Gb/s to one spine unless `uplinks` says otherwise.
LeafSpineOptions FaultRacks(int racks, int uplinks) {
  LeafSpineOptions o;
  o.racks = racks;
  o.nodes_per_rack = 2;
  o.nic_bps = 100e9;
  o.uplinks_per_tor = uplinks;
  o.spines = uplinks;
  return o;
}

LiveModel MakeFaultModel(const LeafSpineOptions& options, std::vector<FlowSpec> flows) {
  return MakeModel(options, DcqcnParams(), std::move(flows));
}

std::vector<double> Rates(const LiveModel& model) {
  std::vector<double> rates;
  for (const FlowState& f : model.flows()) rates.push_back(f.rate_bps);
  return rates;
}

TEST(LiveModelPfcTest, PauseStormSpreadsUpstreamToVictimsSharingAPortAndClearsExactly) {
  // A: rack 1 → NIC 0 (storming); B, the victim: rack 1 → NIC 1 (healthy), sharing rack 1's
  // ToR uplink and the spine's port toward rack 0 with A; C: rack 2 → rack 3.
  LiveModel model = MakeFaultModel(FaultRacks(4, 1), {{2, 0, 1}, {3, 1, 2}, {4, 6, 3}});
  const std::vector<double> before = Rates(model);
  ASSERT_THAT(before, ::testing::Each(::testing::DoubleNear(100e9, 1)));

  ASSERT_TRUE(model.SetPauseStorm(0, 0.9).ok());
  const Fabric& fabric = model.fabric();
  EXPECT_NEAR(model.nic_port(0).pause_tx_share, 0.9, 1e-12);
  EXPECT_NEAR(model.ports()[fabric.nics()[0].downlink].pause_rx_share, 0.9, 1e-12);
  EXPECT_LE(model.flows()[0].rate_bps, 0.1 * 100e9 * (1 + 1e-12));
  EXPECT_EQ(model.flows()[0].offered_bps, before[0]);
  // The victim is held back by the same pauses (head-of-line blocking), 10 of its 100 Gb/s.
  EXPECT_NEAR(model.flows()[1].rate_bps, 10e9, 1e3);
  EXPECT_NEAR(model.nic_port(3).pause_rx_share, 0.9, 1e-9);
  EXPECT_GT(model.nic_port(2).pause_rx_share, 0);
  const int victims_spine_port = model.flows()[1].path[1];  // rack 1's ToR → spine
  EXPECT_GT(model.ports()[victims_spine_port].pause_rx_share, 0);
  EXPECT_EQ(model.nic_port(1).pause_tx_share, 0);  // the healthy NIC pauses nobody
  // Another rack's flow is untouched.
  EXPECT_EQ(model.flows()[2].rate_bps, before[2]);
  EXPECT_EQ(model.nic_port(4).pause_rx_share, 0);
  EXPECT_EQ(model.nic_port(4).pause_tx_share, 0);

  ASSERT_TRUE(model.Advance(2.0).ok());
  // 0.9 of 2 s = 1.8e6 µs; one frame per half of 65535 × 512 bit times at 100 Gb/s.
  const double refresh_s = 0xFFFF * 512.0 / 100e9 / 2;
  EXPECT_NEAR(model.nic_counters(0).tx_pause_duration_us, 1.8e6, 1e-3);
  EXPECT_NEAR(model.nic_counters(0).tx_pause_frames, 1.8 / refresh_s, 1e-6);
  EXPECT_EQ(model.nic_counters(0).rx_pause_duration_us, 0);
  EXPECT_NEAR(model.nic_counters(3).rx_pause_duration_us, 1.8e6, 1);
  EXPECT_EQ(model.nic_counters(4).rx_pause_duration_us, 0);
  EXPECT_NEAR(model.flow_counters()[1].bytes, 10e9 / 8 * 2, 1e3);

  ASSERT_TRUE(model.SetPauseStorm(0, 0).ok());
  EXPECT_EQ(Rates(model), before);
  for (const PortState& port : model.ports()) {
    EXPECT_EQ(port.pause_rx_share, 0);
    EXPECT_EQ(port.pause_tx_share, 0);
  }
  ASSERT_TRUE(model.SetPauseStorm(0, 0.9).ok());
  model.ClearFaults();
  EXPECT_EQ(Rates(model), before);
}

TEST(LiveModelPfcTest, PausesHoldThePfcPriorityOnlyNotAVictimOnAnotherClass) {
  // As above, but the victim sends on priority 0: PFC pauses are per priority, so the
  // pauses its port passes upstream do not hold it; a priority-0 flow into the storming
  // NIC is not paused either.
  LiveModel model = MakeFaultModel(FaultRacks(4, 1), {{2, 0, 1}, {.src_nic = 3, .dst_nic = 1,
                                                                  .udp_src_port = 2,
                                                                  .priority = 0}});
  ASSERT_TRUE(model.SetPauseStorm(0, 0.9).ok());
  EXPECT_NEAR(model.flows()[0].rate_bps, 10e9, 1e3);
  EXPECT_NEAR(model.flows()[1].rate_bps, 100e9, 1);
  ASSERT_TRUE(model.SetFlows({{.src_nic = 2, .dst_nic = 0, .udp_src_port = 1, .priority = 0}})
                  .ok());
  EXPECT_NEAR(model.flows()[0].rate_bps, 100e9, 1);
}

TEST(LiveModelPfcTest, AStormThatTheArrivalFitsPausesNobodyUpstream) {
  // 5 Gb/s toward a NIC that pauses 90 % of the time fits in its 10 Gb/s: no backlog, no Xoff.
  LiveModel model = MakeFaultModel(FaultRacks(2, 1), {{2, 0, 1, 5e9}, {3, 1, 2}});
  ASSERT_TRUE(model.SetPauseStorm(0, 0.9).ok());
  EXPECT_EQ(model.flows()[0].rate_bps, 5e9);
  EXPECT_EQ(model.flows()[1].rate_bps, 100e9);
  EXPECT_NEAR(model.nic_port(0).pause_tx_share, 0.9, 1e-12);
  EXPECT_EQ(model.nic_port(2).pause_rx_share, 0);
  EXPECT_EQ(model.nic_port(3).pause_rx_share, 0);
}

TEST(LiveModelFaultTest, LinkDownReroutesOverTheOtherEcmpNextHopAndClears) {
  LiveModel model = MakeFaultModel(FaultRacks(2, 2), {{0, 2, 1}});  // 2 uplinks of 100 Gb/s
  const std::vector<int> before = model.flows()[0].path;
  ASSERT_EQ(before.size(), 4u);
  ASSERT_TRUE(model.SetLinkDown(before[1], true).ok());
  const std::vector<int>& after = model.flows()[0].path;
  ASSERT_EQ(after.size(), 4u);
  EXPECT_NE(after[1], before[1]);
  const Link& moved = model.fabric().links()[after[1]];
  EXPECT_EQ(moved.from, model.fabric().links()[before[1]].from);  // tor0's other uplink
  EXPECT_EQ(model.flows()[0].rate_bps, 100e9);
  EXPECT_EQ(model.ports()[before[1]].flows, 0);
  ASSERT_TRUE(model.SetLinkDown(after[1], true).ok());  // both uplinks down: no path
  EXPECT_TRUE(model.flows()[0].path.empty());
  EXPECT_EQ(model.flows()[0].rate_bps, 0);
  model.ClearFaults();
  EXPECT_EQ(model.flows()[0].path, before);
  EXPECT_EQ(model.flows()[0].rate_bps, 100e9);
  // A NIC's own link down: nothing to re-route over.
  ASSERT_TRUE(model.SetLinkDown(model.fabric().nics()[0].uplink, true).ok());
  EXPECT_EQ(model.flows()[0].rate_bps, 0);
}

TEST(LiveModelFaultTest, DegradedLinkAndDeadNode) {
  LiveModel model = MakeFaultModel(FaultRacks(2, 2), {{0, 2, 1}, {1, 3, 2}, {3, 2, 3}});
  const std::vector<double> before = Rates(model);
  const int uplink = model.flows()[0].path[1];
  ASSERT_TRUE(model.SetLinkCapacityScale(uplink, 0.25).ok());
  double on_uplink = 0;
  for (int f : {0, 1}) {
    if (model.flows()[f].path[1] == uplink) on_uplink += model.flows()[f].rate_bps;
  }
  EXPECT_NEAR(on_uplink, 25e9, 1);
  ASSERT_TRUE(model.SetLinkCapacityScale(uplink, 1).ok());
  EXPECT_EQ(Rates(model), before);
  // Node 3 (NIC 3) dies: flows from or to it stop; NIC 2's port then serves flow 2 alone.
  ASSERT_TRUE(model.SetNodeDead(model.fabric().nics()[3].node, true).ok());
  EXPECT_EQ(model.flows()[1].rate_bps, 0);
  EXPECT_EQ(model.flows()[2].rate_bps, 0);
  EXPECT_EQ(model.flows()[0].rate_bps, 100e9);
  ASSERT_TRUE(model.SetNodeDead(model.fabric().nics()[3].node, false).ok());
  EXPECT_EQ(Rates(model), before);
}

TEST(LiveModelFaultTest, RefusesUnknownIdsAndValuesNamingTheRange) {
  LiveModel model = MakeFaultModel(FaultRacks(2, 1), {{0, 2, 1}});
  const int links = static_cast<int>(model.fabric().links().size());
  const std::vector<double> before = Rates(model);
  EXPECT_THAT(model.SetLinkDown(links, true).message(),
              AllOf(HasSubstr(absl::StrCat("link = ", links)),
                    HasSubstr(absl::StrCat("[0, ", links - 1, "]"))));
  EXPECT_THAT(model.SetLinkCapacityScale(-1, 0.5).message(), HasSubstr("link = -1"));
  EXPECT_THAT(model.SetLinkCapacityScale(0, 0).message(),
              AllOf(HasSubstr("link 0"), HasSubstr("scale = 0"), HasSubstr("(0, 1]")));
  EXPECT_THAT(model.SetPauseStorm(4, 0.5).message(),
              AllOf(HasSubstr("nic = 4"), HasSubstr("[0, 3]")));
  EXPECT_THAT(model.SetPauseStorm(0, 1.5).message(),
              AllOf(HasSubstr("NIC 0"), HasSubstr("share = 1.5"), HasSubstr("[0, 1]")));
  EXPECT_THAT(model.SetNodeDead(7, true).message(),
              AllOf(HasSubstr("node = 7"), HasSubstr("[0, 3]")));
  EXPECT_EQ(Rates(model), before);
}


// Scheduling between traffic classes. Two racks of 4 single-NIC nodes at 100 Gb/s, one
// 100 Gb/s ToR uplink each: NIC 0 sends on one priority, NICs 1..3 on another, each to
// its own NIC in the other rack, so the four flows meet only at rack 0's uplink. Without
// classes max-min gives 25 Gb/s each; the schedulers make the split a matter of classes.
constexpr int kStorage = 0;  // priority 0 -> TC 0
constexpr int kCnp = 6;      // priority 6 -> TC 6

// The recipe's switch DCB: priority 3 -> TC 3 and 6 -> TC 6, the rest TC 0; TC 0 and 3 ETS
// by `weight0`/`weight3`, TC 6 strict.
PortScheduler RecipeScheduler(double weight0, double weight3) {
  PortScheduler s;
  s.priority_to_tc = {0, 0, 0, 3, 0, 0, 6, 0};
  s.tsa[6] = Tsa::kStrict;
  s.weight = {weight0, 0, 0, weight3, 0, 0, 0, 0};
  return s;
}

struct ClassScenario {
  LiveModel model;
  int uplink;  // rack 0's ToR uplink
};

// NIC 0 on `priority0` (demand `demand0`), NICs 1..3 on priority 0, every port running
// `scheduler`.
ClassScenario MakeClassScenario(const PortScheduler& scheduler, int priority0,
                                double demand0 = kAsFastAsAllowed) {
  LiveModel model =
      LiveModel::Create(BuildLeafSpine(Racks(2, 4, 100e9)).value(), Conext16()).value();
  EXPECT_TRUE(model
                  .SetPortSchedulers(std::vector<PortScheduler>(model.fabric().links().size(),
                                                                scheduler))
                  .ok());
  std::vector<FlowSpec> flows = {{.src_nic = 0, .dst_nic = 4, .udp_src_port = 1,
                                  .demand_bps = demand0, .priority = priority0}};
  for (int i = 1; i < 4; ++i) {
    flows.push_back({.src_nic = i, .dst_nic = 4 + i, .udp_src_port = 1, .priority = kStorage});
  }
  EXPECT_TRUE(model.SetFlows(std::move(flows)).ok());
  const int uplink = model.flows()[0].path[1];
  return {std::move(model), uplink};
}

TEST(LiveModelSchedulerTest, WithoutClassesTheFlowsShareMaxMin) {
  // The default scheduler (and the recipe's when every flow is on one class) is max-min.
  for (const PortScheduler& s : {PortScheduler(), RecipeScheduler(50, 50)}) {
    const ClassScenario c = MakeClassScenario(s, kStorage);
    for (const FlowState& flow : c.model.flows()) EXPECT_NEAR(flow.rate_bps, 25e9, 1);
    EXPECT_EQ(c.model.scheduler_passes(), 1);
  }
}

TEST(LiveModelSchedulerTest, EtsFiftyFiftyGivesEachBackloggedClassHalf) {
  const ClassScenario c = MakeClassScenario(RecipeScheduler(50, 50), kLosslessPriority);
  EXPECT_NEAR(c.model.flows()[0].rate_bps, 50e9, 1);
  for (int f = 1; f < 4; ++f) EXPECT_NEAR(c.model.flows()[f].rate_bps, 50e9 / 3, 1);
  const PortState& port = c.model.ports()[c.uplink];
  EXPECT_NEAR(port.class_rate_bps[3], 50e9, 1);
  EXPECT_NEAR(port.class_rate_bps[0], 50e9, 1);
  EXPECT_TRUE(c.model.scheduler_settled());
  // DCQCN holds the RoCE flow back in its class: the fixed point of 1 flow on 50 Gb/s, at
  // the port that froze it (the uplink or, at the same level, the spine's port toward
  // rack 1: ties between equal switch ports fall as the heap has them, as without classes).
  const PortState& held = c.model.ports()[c.model.flows()[0].bottleneck_link];
  EXPECT_TRUE(held.congested);
  DcqcnParams half = Conext16();
  half.capacity_bps = 50e9;
  EXPECT_NEAR(held.queue_bytes, ClosedFormFixedPoint(half, 1).value().queue_bytes, 1e-6);
  EXPECT_GT(c.model.flows()[0].mark_probability, 0);
  EXPECT_EQ(c.model.flows()[1].mark_probability, 0);
}

TEST(LiveModelSchedulerTest, WeightsSeventyThirtySplitSeventyThirty) {
  const ClassScenario c = MakeClassScenario(RecipeScheduler(30, 70), kLosslessPriority);
  EXPECT_NEAR(c.model.ports()[c.uplink].class_rate_bps[3], 70e9, 1);
  EXPECT_NEAR(c.model.ports()[c.uplink].class_rate_bps[0], 30e9, 1);
  // And the other way round.
  const ClassScenario d = MakeClassScenario(RecipeScheduler(70, 30), kLosslessPriority);
  EXPECT_NEAR(d.model.ports()[d.uplink].class_rate_bps[3], 30e9, 1);
  EXPECT_NEAR(d.model.ports()[d.uplink].class_rate_bps[0], 70e9, 1);
}

TEST(LiveModelSchedulerTest, AClassNeedingLessLeavesTheRestToTheOthers) {
  // RoCE wants 10 Gb/s of its 50: storage gets the other 90 (work-conserving).
  const ClassScenario c = MakeClassScenario(RecipeScheduler(50, 50), kLosslessPriority, 10e9);
  EXPECT_NEAR(c.model.flows()[0].rate_bps, 10e9, 1);
  for (int f = 1; f < 4; ++f) EXPECT_NEAR(c.model.flows()[f].rate_bps, 30e9, 1);
  EXPECT_TRUE(c.model.scheduler_settled());
}

TEST(LiveModelSchedulerTest, AClassLimitedElsewhereLeavesTheRestToo) {
  // NIC 0's flow shares its destination's downlink with an intra-rack flow (NIC 5 -> 4,
  // also RoCE): it can use 50 Gb/s there, under its 70 % share of the uplink; storage
  // takes the other 50 at the uplink. Takes more than one pass.
  LiveModel model =
      LiveModel::Create(BuildLeafSpine(Racks(2, 4, 100e9)).value(), Conext16()).value();
  ASSERT_TRUE(model
                  .SetPortSchedulers(std::vector<PortScheduler>(model.fabric().links().size(),
                                                                RecipeScheduler(30, 70)))
                  .ok());
  ASSERT_TRUE(model
                  .SetFlows({{.src_nic = 0, .dst_nic = 4, .udp_src_port = 1},
                             {.src_nic = 1, .dst_nic = 6, .udp_src_port = 1, .priority = 0},
                             {.src_nic = 5, .dst_nic = 4, .udp_src_port = 1}})
                  .ok());
  EXPECT_NEAR(model.flows()[0].rate_bps, 50e9, 1);
  EXPECT_NEAR(model.flows()[1].rate_bps, 50e9, 1);
  EXPECT_NEAR(model.flows()[2].rate_bps, 50e9, 1);
  EXPECT_GT(model.scheduler_passes(), 1);
  EXPECT_TRUE(model.scheduler_settled());
}

TEST(LiveModelSchedulerTest, AStrictClassTakesWhatItNeedsFirst) {
  // CNP-like traffic on strict TC 6 wanting 30 Gb/s: it gets them, the three storage flows
  // the 70 left (ETS has only them).
  const ClassScenario c = MakeClassScenario(RecipeScheduler(50, 50), kCnp, 30e9);
  EXPECT_NEAR(c.model.flows()[0].rate_bps, 30e9, 1);
  for (int f = 1; f < 4; ++f) EXPECT_NEAR(c.model.flows()[f].rate_bps, 70e9 / 3, 1);
  // Backlogged, a strict class takes the whole port: ETS classes starve.
  const ClassScenario d = MakeClassScenario(RecipeScheduler(50, 50), kCnp);
  EXPECT_NEAR(d.model.flows()[0].rate_bps, 100e9, 1);
  for (int f = 1; f < 4; ++f) EXPECT_NEAR(d.model.flows()[f].rate_bps, 0, 1);
}

TEST(LiveModelSchedulerTest, ANicUplinkSchedulesItsOwnClasses) {
  // One NIC sends a RoCE and a storage flow into the other rack: its own uplink (not the
  // ToR's) is the 100 Gb/s they share, 70/30 by its scheduler.
  LeafSpineOptions o = Racks(2, 2, 100e9);
  o.oversubscription = 1;
  LiveModel model = LiveModel::Create(BuildLeafSpine(o).value(), Conext16()).value();
  std::vector<PortScheduler> schedulers(model.fabric().links().size());
  schedulers[model.fabric().nics()[0].uplink] = RecipeScheduler(30, 70);
  ASSERT_TRUE(model.SetPortSchedulers(schedulers).ok());
  ASSERT_TRUE(model
                  .SetFlows({{.src_nic = 0, .dst_nic = 2, .udp_src_port = 1},
                             {.src_nic = 0, .dst_nic = 3, .udp_src_port = 1, .priority = 0}})
                  .ok());
  EXPECT_NEAR(model.flows()[0].rate_bps, 70e9, 1);
  EXPECT_NEAR(model.flows()[1].rate_bps, 30e9, 1);
  // The NIC's port is not a switch queue: nothing is marked.
  EXPECT_FALSE(model.nic_port(0).congested);
  // To one destination the two fill its ToR port exactly: the NIC holds them, no queue.
  ASSERT_TRUE(model
                  .SetFlows({{.src_nic = 0, .dst_nic = 2, .udp_src_port = 1},
                             {.src_nic = 0, .dst_nic = 2, .udp_src_port = 2, .priority = 0}})
                  .ok());
  EXPECT_NEAR(model.flows()[0].rate_bps, 70e9, 1);
  EXPECT_NEAR(model.flows()[1].rate_bps, 30e9, 1);
  const PortState& downlink = model.ports()[model.fabric().nics()[2].downlink];
  EXPECT_FALSE(downlink.congested);
  EXPECT_EQ(downlink.queue_bytes, 0);
}

TEST(LiveModelSchedulerTest, ScheduleClassesWaterFillsByWeight) {
  const double inf = kAsFastAsAllowed;
  PortScheduler s = RecipeScheduler(50, 50);
  s.tsa[1] = Tsa::kEts;  // a zero-weight ETS class gets only what the others leave
  EXPECT_THAT(ScheduleClasses(s, 100, {0, 3}, {inf, inf}), testing::ElementsAre(50, 50));
  EXPECT_THAT(ScheduleClasses(s, 100, {0, 3, 1}, {inf, 20, inf}),
              testing::ElementsAre(80, 20, 0));
  EXPECT_THAT(ScheduleClasses(s, 100, {0, 3, 1}, {30, 20, inf}),
              testing::ElementsAre(30, 20, 50));
  EXPECT_THAT(ScheduleClasses(s, 100, {6, 0, 3}, {10, inf, inf}),
              testing::ElementsAre(10, 45, 45));
  // Nobody held back: each may use what the others leave.
  EXPECT_THAT(ScheduleClasses(s, 100, {0, 3}, {10, 20}), testing::ElementsAre(80, 90));
}

TEST(LiveModelSchedulerTest, RefusesBadSchedulersAndPriorities) {
  LiveModel model = LiveModel::Create(BuildLeafSpine(Racks(1, 2, 40e9)).value(), Conext16()).value();
  EXPECT_THAT(model.SetPortSchedulers(std::vector<PortScheduler>(1)).message(),
              HasSubstr("accepted 0 or one per link"));
  std::vector<PortScheduler> bad(model.fabric().links().size());
  bad[1].priority_to_tc[2] = 8;
  EXPECT_THAT(model.SetPortSchedulers(bad).message(),
              AllOf(HasSubstr("per_link[1].priority_to_tc[2] = 8"), HasSubstr("[0, 7]")));
  bad[1].priority_to_tc[2] = 0;
  bad[0].weight[3] = -1;
  EXPECT_THAT(model.SetPortSchedulers(bad).message(), HasSubstr("per_link[0].weight[3] = -1"));
  EXPECT_THAT(model.SetFlows({{.src_nic = 1, .dst_nic = 0, .priority = 8}}).message(),
              AllOf(HasSubstr("flows[0].priority = 8"), HasSubstr("[0, 7]")));
}

}  // namespace

}  // namespace weft::sim
