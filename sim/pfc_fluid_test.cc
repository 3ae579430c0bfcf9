// The transient PFC model (sim/pfc_fluid.h) on its own rules, and the live model's
// flow-level PFC (sim/live_model.h) checked against its time averages on the same
// scenarios. The cross-check tests print the docs/benchmarks.md table rows
// (`bazel test //sim:pfc_fluid_test --test_output=all`).
#include "sim/pfc_fluid.h"

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "absl/strings/str_cat.h"
#include "sim/dcqcn_fluid.h"
#include "sim/fabric.h"
#include "sim/live_model.h"

namespace weft::sim {
namespace {

using ::testing::HasSubstr;

constexpr double kLinkBps = 40e9;
constexpr double kLinkDelayS = 1e-6;

// Runs `warmup_us`, then averages over `window_us`.
PfcAverages RunChain(const PfcChainConfig& config, double warmup_us, double window_us) {
  absl::StatusOr<PfcFluidChain> chain = PfcFluidChain::Create(config);
  EXPECT_TRUE(chain.ok()) << chain.status();
  chain->RunFor(warmup_us);
  chain->ResetAverages();
  chain->RunFor(window_us);
  return chain->Averages();
}

// The live model's view of the same chain: NICs 0..senders-1 send, NICs senders.. receive,
// all on one ToR with 40 Gb/s cables of 1 µs.
struct LiveFlow {
  int sender = 0;
  int receiver = 0;
  double demand_bps = kAsFastAsAllowed;
  bool congestion_controlled = false;
};
LiveModel MakeLiveChain(int senders, int receivers, const std::vector<LiveFlow>& flows,
                        const std::vector<double>& storm_share) {
  Fabric fabric;
  const int tor = fabric.AddSwitch(SwitchTier::kLeaf, "tor0");
  for (int i = 0; i < senders + receivers; ++i) {
    const int nic = fabric.AddNic(fabric.AddNode(), 0, kLinkBps);
    fabric.AddCable({Vertex::Kind::kNic, nic}, {Vertex::Kind::kSwitch, tor}, kLinkBps,
                    kLinkDelayS);
  }
  absl::StatusOr<LiveModel> model = LiveModel::Create(std::move(fabric), DcqcnParams());
  EXPECT_TRUE(model.ok()) << model.status();
  std::vector<FlowSpec> specs;
  for (size_t i = 0; i < flows.size(); ++i) {
    FlowSpec spec;
    spec.src_nic = flows[i].sender;
    spec.dst_nic = senders + flows[i].receiver;
    spec.udp_src_port = static_cast<uint16_t>(49152 + i);
    spec.demand_bps = flows[i].demand_bps;
    spec.congestion_controlled = flows[i].congestion_controlled;
    specs.push_back(spec);
  }
  EXPECT_TRUE(model->SetFlows(std::move(specs)).ok());
  for (size_t r = 0; r < storm_share.size(); ++r) {
    EXPECT_TRUE(model->SetPauseStorm(senders + static_cast<int>(r), storm_share[r]).ok());
  }
  return *std::move(model);
}

// One row of the benchmarks table: holds when |transient − live| ≤ tolerance, relative to
// the transient value (relative = true) or absolute.
void CheckRow(const std::string& scenario, const std::string& quantity, double transient,
              double live, double tolerance, bool relative) {
  const double difference = std::abs(transient - live);
  const double scaled = relative ? difference / std::max(std::abs(transient), 1e-300) : difference;
  const bool holds = scaled <= tolerance;
  std::printf("| %s | %s | %.4g | %.4g | %s | %s | %s |\n", scenario.c_str(), quantity.c_str(),
              transient, live,
              (relative ? absl::StrCat(std::round(scaled * 1e4) / 100, " %")
                        : absl::StrCat(std::round(difference * 1e4) / 1e4))
                  .c_str(),
              (relative ? absl::StrCat(tolerance * 100, " %") : absl::StrCat("±", tolerance))
                  .c_str(),
              holds ? "yes" : "no");
  EXPECT_TRUE(holds) << scenario << ", " << quantity << ": transient " << transient << ", live "
                     << live;
}

// A row the live model is known to get wrong (docs/benchmarks.md says why): printed, and
// the test asserts the transient side against its own closed form instead.
void PrintDiscrepancy(const std::string& scenario, const std::string& quantity, double transient,
                      double live) {
  std::printf("| %s | %s | %.4g | %.4g | %.4g | — | no (documented) |\n", scenario.c_str(),
              quantity.c_str(), transient, live, transient - live);
}

// The egress queue PFC holds an uncontrolled incast at: each of the N ingress ports rides
// at its reserve plus Xoff = (B′ − U) >> shift of shared use, B′ = buffer − Σ headroom −
// Σ reserve, so the shared use U = N·B′/(2^shift + N).
double PfcIncastQueueBytes(const PfcChainConfig& config) {
  const int n = config.senders;
  const double headroom_bytes =
      config.pfc.headroom_link_delays * config.link_bps / 8 * config.pfc.link_delay_us * 1e-6;
  const double free_bytes =
      config.pfc.buffer_bytes - n * (headroom_bytes + config.pfc.reserve_bytes);
  return n * free_bytes / ((1 << config.pfc.xoff_shift) + n) + n * config.pfc.reserve_bytes;
}

PfcChainConfig StormChain(double share) {
  PfcChainConfig config;
  config.link_bps = kLinkBps;
  config.flows = {{.sender = 0, .receiver = 0, .fixed_rate_bps = kLinkBps}};
  config.storm_share = {share};
  return config;
}

TEST(PfcFluidChainTest, AStormingReceiverPausesTheSenderForItsShareWithoutDrops) {
  for (double share : {0.5, 0.9}) {
    const PfcAverages averages = RunChain(StormChain(share), 2000, 10000);
    EXPECT_NEAR(averages.flow_rate_bps[0], (1 - share) * kLinkBps, 0.01 * kLinkBps) << share;
    EXPECT_NEAR(averages.receiver_pause_share[0], share, 1e-3);
    EXPECT_NEAR(averages.sender_pause_share[0], share, 0.02) << share;
    EXPECT_EQ(averages.dropped_bytes, 0);
    // The headroom takes what is in flight when a pause is sent: 2 link delays at 40 Gb/s,
    // under the 3-link-delay headroom.
    EXPECT_GT(averages.max_headroom_bytes, 0);
    EXPECT_LE(averages.max_headroom_bytes, 2 * kLinkBps / 8 * kLinkDelayS * 1.01);
  }
}

TEST(PfcFluidChainTest, WithoutAStormALineRateFlowIsNeverPaused) {
  const PfcAverages averages = RunChain(StormChain(0), 100, 1000);
  EXPECT_NEAR(averages.flow_rate_bps[0], kLinkBps, 1e-6 * kLinkBps);
  EXPECT_EQ(averages.sender_pause_share[0], 0);
  // The queue is read as a step's arrival lands, before the port serves it.
  EXPECT_LE(averages.max_egress_queue_bytes, kLinkBps / 8 * 0.1e-6 * (1 + 1e-9));
}

TEST(PfcFluidChainTest, RefusesOutOfRangeConfigNamingTheField) {
  PfcChainConfig config = StormChain(0.5);
  config.flows[0].receiver = 3;
  EXPECT_THAT(PfcFluidChain::Create(config).status().message(),
              HasSubstr("flows[0].receiver = 3 is out of range: accepted [0, 0]"));
  config = StormChain(1.5);
  EXPECT_THAT(PfcFluidChain::Create(config).status().message(), HasSubstr("storm_share[0] = 1.5"));
  config = StormChain(0.5);
  config.step_us = 2;
  EXPECT_THAT(PfcFluidChain::Create(config).status().message(), HasSubstr("step_us = 2"));
  config = StormChain(0.5);
  config.flows[0].stop_us = 0;
  EXPECT_THAT(PfcFluidChain::Create(config).status().message(),
              HasSubstr("flows[0].start_us = 0 is out of range: accepted [0, stop_us)"));
  config = StormChain(0.5);
  config.sender_is_switch_port = {true, false};
  EXPECT_THAT(PfcFluidChain::Create(config).status().message(),
              HasSubstr("sender_is_switch_port.size() = 2 is out of range: accepted 0 or 1"));
}

TEST(PfcFluidChainTest, AnUpstreamSwitchPortIsADcqcnBottleneckLikeTheFluidModels) {
  // Two DCQCN flows from line rate share a switch port into the ToR, then go to different
  // receivers: the port is their one bottleneck and marks as the CoNEXT'16 queue does.
  PfcChainConfig config;
  config.link_bps = kLinkBps;
  config.receivers = 2;
  config.sender_is_switch_port = {true};
  config.flows = {{.sender = 0, .receiver = 0}, {.sender = 0, .receiver = 1}};
  const PfcAverages averages = RunChain(config, 60000, 20000);
  const FixedPoint fixed_point = ClosedFormFixedPoint(DcqcnParams(), 2).value();
  EXPECT_NEAR(averages.sender_queue_bytes[0], fixed_point.queue_bytes,
              0.05 * fixed_point.queue_bytes);
  EXPECT_NEAR(averages.flow_rate_bps[0], kLinkBps / 2, 0.02 * kLinkBps / 2);
  EXPECT_NEAR(averages.flow_rate_bps[1], kLinkBps / 2, 0.02 * kLinkBps / 2);
  EXPECT_NEAR(averages.sender_sent_bps[0], kLinkBps, 0.01 * kLinkBps);
  EXPECT_EQ(averages.sender_pause_share[0], 0);
  // The ToR's ports only hold a step's arrival before serving it.
  EXPECT_LE(averages.egress_queue_bytes[0], kLinkBps / 2 / 8 * 0.1e-6 * (1 + 1e-9));
}

// (a) A NIC storming pauses at share s under one line-rate flow.
TEST(PfcCrossCheckTest, StormingReceiver) {
  for (double share : {0.5, 0.9}) {
    const std::string scenario = absl::StrCat("(a) receiver storming at s = ", share);
    const PfcAverages transient = RunChain(StormChain(share), 2000, 10000);
    const LiveModel live = MakeLiveChain(1, 1, {{0, 0}}, {share});
    CheckRow(scenario, "flow rate (Gb/s)", transient.flow_rate_bps[0] / 1e9,
             live.flows()[0].rate_bps / 1e9, 0.02, true);
    CheckRow(scenario, "sender NIC rx pause share", transient.sender_pause_share[0],
             live.nic_port(0).pause_rx_share, 0.02, false);
    CheckRow(scenario, "ToR port toward the receiver, rx pause share",
             transient.receiver_pause_share[0], live.nic_port(1).pause_tx_share, 0.02, false);
  }
}

// (b) One sender NIC, two flows: to the storming receiver and, the victim, to a healthy
// one; a bystander from another NIC shares the victim's receiver.
TEST(PfcCrossCheckTest, HeadOfLineVictim) {
  for (double share : {0.5, 0.75, 0.9}) {
    const std::string scenario = absl::StrCat("(b) victim, storm at s = ", share);
    PfcChainConfig config;
    config.link_bps = kLinkBps;
    config.senders = 2;
    config.receivers = 2;
    config.flows = {{.sender = 0, .receiver = 0, .fixed_rate_bps = kLinkBps},
                    {.sender = 0, .receiver = 1, .fixed_rate_bps = kLinkBps},
                    {.sender = 1, .receiver = 1, .fixed_rate_bps = kLinkBps / 2}};
    config.storm_share = {share, 0};
    const PfcAverages transient = RunChain(config, 2000, 10000);
    const LiveModel live =
        MakeLiveChain(2, 2, {{0, 0}, {0, 1}, {1, 1, kLinkBps / 2}}, {share, 0});
    CheckRow(scenario, "storm flow rate (Gb/s)", transient.flow_rate_bps[0] / 1e9,
             live.flows()[0].rate_bps / 1e9, 0.02, true);
    CheckRow(scenario, "victim rate (Gb/s)", transient.flow_rate_bps[1] / 1e9,
             live.flows()[1].rate_bps / 1e9, 0.02, true);
    CheckRow(scenario, "bystander rate (Gb/s)", transient.flow_rate_bps[2] / 1e9,
             live.flows()[2].rate_bps / 1e9, 0.02, true);
    CheckRow(scenario, "sender NIC rx pause share", transient.sender_pause_share[0],
             live.nic_port(0).pause_rx_share, 0.02, false);
    CheckRow(scenario, "bystander NIC rx pause share", transient.sender_pause_share[1],
             live.nic_port(1).pause_rx_share, 0.02, false);
    EXPECT_EQ(transient.dropped_bytes, 0);
  }
}

// (c) Incast N → 1 at line rate with PFC on, DCQCN on and off.
TEST(PfcCrossCheckTest, IncastWithAndWithoutDcqcn) {
  constexpr int kSenders = 10;
  for (bool dcqcn : {true, false}) {
    const std::string scenario =
        absl::StrCat("(c) incast ", kSenders, " → 1, DCQCN ", dcqcn ? "on" : "off");
    PfcChainConfig config;
    config.link_bps = kLinkBps;
    config.senders = kSenders;
    std::vector<LiveFlow> live_flows;
    for (int s = 0; s < kSenders; ++s) {
      config.flows.push_back({.sender = s, .receiver = 0, .fixed_rate_bps = dcqcn ? 0 : kLinkBps});
      live_flows.push_back({.sender = s, .receiver = 0, .congestion_controlled = dcqcn});
    }
    // DCQCN's α settles over ~1/g τ′ = 14 ms; the queue reaches its fixed point by ~80 ms.
    const PfcAverages transient = RunChain(config, dcqcn ? 100000 : 2000, 30000);
    const LiveModel live = MakeLiveChain(kSenders, 1, live_flows, {});
    double mean_rate_bps = 0, mean_pause = 0;
    for (int s = 0; s < kSenders; ++s) {
      mean_rate_bps += transient.flow_rate_bps[s] / kSenders;
      mean_pause += transient.sender_pause_share[s] / kSenders;
    }
    const PortState& egress = live.ports()[live.fabric().nics()[kSenders].downlink];
    CheckRow(scenario, "rate per flow (Gb/s)", mean_rate_bps / 1e9, live.flows()[0].rate_bps / 1e9,
             0.02, true);
    CheckRow(scenario, "sender NIC rx pause share (mean)", mean_pause,
             live.nic_port(0).pause_rx_share, 0.02, false);
    if (dcqcn) {
      CheckRow(scenario, "egress queue (KB)", transient.egress_queue_bytes[0] / 1e3,
               egress.queue_bytes / 1e3, 0.05, true);
    } else {
      PrintDiscrepancy(scenario, "egress queue (KB)", transient.egress_queue_bytes[0] / 1e3,
                       egress.queue_bytes / 1e3);
      EXPECT_NEAR(transient.egress_queue_bytes[0], PfcIncastQueueBytes(config),
                  0.03 * PfcIncastQueueBytes(config));
    }
    CheckRow(scenario, "marking probability", transient.egress_mark_probability[0],
             egress.mark_probability, 0.05, true);
    std::printf("%s: max queue %.1f KB, max headroom %.1f KB, dropped %.0f B\n", scenario.c_str(),
                transient.max_egress_queue_bytes / 1e3, transient.max_headroom_bytes / 1e3,
                transient.dropped_bytes);
    EXPECT_EQ(transient.dropped_bytes, 0);
  }
}

// (d) The incast of (c) without DCQCN, and sender 0 also sends to an idle receiver: PFC
// pauses sender 0's NIC to hold its incast flow to C/N, and the second flow, a victim of
// head-of-line blocking at the NIC, passes only while the NIC is not paused.
TEST(PfcCrossCheckTest, UncontrolledIncastVictimIsNotCutByTheLiveModel) {
  constexpr int kSenders = 10;
  const std::string scenario = "(d) incast 10 → 1, DCQCN off, sender 0 also → an idle receiver";
  PfcChainConfig config;
  config.link_bps = kLinkBps;
  config.senders = kSenders;
  config.receivers = 2;
  std::vector<LiveFlow> live_flows;
  for (int s = 0; s < kSenders; ++s) {
    config.flows.push_back({.sender = s, .receiver = 0, .fixed_rate_bps = kLinkBps});
    live_flows.push_back({.sender = s, .receiver = 0});
  }
  config.flows.push_back({.sender = 0, .receiver = 1, .fixed_rate_bps = kLinkBps});
  live_flows.push_back({.sender = 0, .receiver = 1});
  const PfcAverages transient = RunChain(config, 2000, 30000);
  const LiveModel live = MakeLiveChain(kSenders, 2, live_flows, {});
  CheckRow(scenario, "sender 0's incast flow (Gb/s)", transient.flow_rate_bps[0] / 1e9,
           live.flows()[0].rate_bps / 1e9, 0.02, true);
  PrintDiscrepancy(scenario, "victim rate (Gb/s)", transient.flow_rate_bps[kSenders] / 1e9,
                   live.flows()[kSenders].rate_bps / 1e9);
  PrintDiscrepancy(scenario, "sender 0 NIC rx pause share", transient.sender_pause_share[0],
                   live.nic_port(0).pause_rx_share);
  // The NIC splits its line rate 50/50 while not paused, u of the time: C/2·u = C/N for the
  // incast flow, so the victim gets C/N too and the NIC is paused 1 − 2/N.
  EXPECT_NEAR(transient.flow_rate_bps[kSenders], kLinkBps / kSenders, 0.02 * kLinkBps / kSenders);
  EXPECT_NEAR(transient.sender_pause_share[0], 1 - 2.0 / kSenders, 0.02);
  EXPECT_EQ(transient.dropped_bytes, 0);
}

// sc20anonymous/DCQCN-validation (fabric-facts §2): long flows F1 (H1 → R1) and F2 (H2 → R2)
// cross a switch-to-switch link P2 → P1; H3..H17 send 4 KB messages to R2 for 1 ms. Each
// message is a new QP starting at line rate, so as a fluid the 15 senders send at line
// rate for that ms. The paper's DCQCN set: Kmin 5 KB, Kmax 100 KB, Pmax 1 %, T = 50 µs,
// B = 10 MB, g = 1/256. Published: the link P2 → P1 is under-used for ~16 ms after.
TEST(PfcFluidChainTest, Sc20VictimLinkIsUnderUsedLongAfterTheBurst) {
  constexpr double kBurstStartUs = 60000, kBurstUs = 1000, kWindowUs = 100;
  PfcChainConfig config;
  config.link_bps = kLinkBps;
  config.senders = 16;  // 0: P2, the upstream switch's port; 1..15: H3..H17
  config.receivers = 2;  // R1, R2
  config.sender_is_switch_port.assign(config.senders, false);
  config.sender_is_switch_port[0] = true;
  config.dcqcn.kmax_bytes = 100e3;
  config.dcqcn.timer_us = 50;
  config.flows = {{.sender = 0, .receiver = 0}, {.sender = 0, .receiver = 1}};
  for (int s = 1; s < config.senders; ++s) {
    config.flows.push_back({.sender = s, .receiver = 1, .fixed_rate_bps = kLinkBps,
                            .start_us = kBurstStartUs, .stop_us = kBurstStartUs + kBurstUs});
  }
  absl::StatusOr<PfcFluidChain> chain = PfcFluidChain::Create(config);
  ASSERT_TRUE(chain.ok()) << chain.status();
  chain->RunFor(kBurstStartUs - 5000);
  chain->ResetAverages();
  chain->RunFor(5000);
  const PfcAverages before = chain->Averages();
  double f1_min_bps = kLinkBps, under_used_until_us = 0, max_upstream_queue = 0;
  while (chain->time_us() < kBurstStartUs + 60000) {
    chain->ResetAverages();
    chain->RunFor(kWindowUs);
    const PfcAverages window = chain->Averages();
    f1_min_bps = std::min(f1_min_bps, window.flow_rate_bps[0]);
    max_upstream_queue = std::max(max_upstream_queue, window.sender_queue_bytes[0]);
    if (window.sender_sent_bps[0] < 0.95 * before.sender_sent_bps[0]) {
      under_used_until_us = chain->time_us();
    }
  }
  const double under_used_ms = (under_used_until_us - kBurstStartUs - kBurstUs) / 1e3;
  std::printf(
      "sc20: P2 → P1 before the burst %.2f Gb/s (F1 %.2f, F2 %.2f); F1 at least %.2f Gb/s; P2 "
      "queue up to %.0f KB; P2 under 95 %% of its rate until %.1f ms after the burst\n",
      before.sender_sent_bps[0] / 1e9, before.flow_rate_bps[0] / 1e9,
      before.flow_rate_bps[1] / 1e9, f1_min_bps / 1e9, max_upstream_queue / 1e3, under_used_ms);
  EXPECT_GT(before.sender_sent_bps[0], 0.95 * kLinkBps);
  EXPECT_LT(f1_min_bps, 0.5 * before.flow_rate_bps[0]);  // F1, whose receiver is healthy, is cut
  // Qualitative: the under-use outlasts the 1 ms burst by an order of magnitude, within a
  // factor of 2 of the published 16 ms (22.5 ms here; docs/benchmarks.md says what differs).
  EXPECT_GT(under_used_ms, 8);
  EXPECT_LT(under_used_ms, 32);
}

TEST(PfcFluidChainTest, DcqcnIncastPausesOnlyUntilDcqcnCutsTheRates) {
  PfcChainConfig config;
  config.link_bps = kLinkBps;
  config.senders = 10;
  for (int s = 0; s < config.senders; ++s) config.flows.push_back({.sender = s, .receiver = 0});
  const PfcAverages start = RunChain(config, 0, 1000);
  double pause_at_start = 0;
  for (double share : start.sender_pause_share) pause_at_start += share / config.senders;
  std::printf(
      "DCQCN incast 10 → 1, first ms: mean sender pause share %.3f, max queue %.0f KB, max "
      "headroom %.1f KB\n",
      pause_at_start, start.max_egress_queue_bytes / 1e3, start.max_headroom_bytes / 1e3);
  EXPECT_GT(pause_at_start, 0.01);  // line-rate start: the queue hits Xoff before the cuts
  EXPECT_EQ(start.dropped_bytes, 0);
}

}  // namespace
}  // namespace weft::sim
