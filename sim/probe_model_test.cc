#include "sim/probe_model.h"

#include <cmath>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "sim/fabric.h"

namespace weft::sim {
namespace {

Fabric TwoRacks() {
  LeafSpineOptions options;
  options.racks = 2;
  options.nodes_per_rack = 2;
  options.nics_per_node = 1;
  options.uplinks_per_tor = 4;
  absl::StatusOr<Fabric> fabric = BuildLeafSpine(options);
  EXPECT_TRUE(fabric.ok()) << fabric.status();
  return *std::move(fabric);
}

// NIC 0 is in rack 0, NIC 2 in rack 1.
constexpr int kSrc = 0, kDst = 2;

// A stream from rack 0 to rack 1, prepared on the healthy fabric, and faults sized to it.
class ProbeModelPathTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(model_.Prepare({}, &stream_).ok());
    faults_.link_drop.assign(fabric_.links().size(), 0);
  }
  Fabric fabric_ = TwoRacks();
  ProbeModel model_{&fabric_, ProbeNoise{}};
  ProbeStream stream_{kSrc, kDst, 0xC123};
  ProbeFaults faults_;
};

TEST(ProbeModelTest, ProbeAndAnswerTakeTheTuplesEcmpPaths) {
  Fabric fabric = TwoRacks();
  ProbeModel model(&fabric, ProbeNoise{});
  ProbeStream stream{kSrc, kDst, 0xC123};
  ASSERT_TRUE(model.Prepare({}, &stream).ok());
  EXPECT_EQ(stream.forward, *fabric.EcmpPath({kSrc, kDst, 0xC123}));
  EXPECT_EQ(stream.back, *fabric.EcmpPath({kDst, kSrc, 0xC123}));
  EXPECT_EQ(stream.forward.size(), 4u);  // NIC → ToR → spine → ToR → NIC
  EXPECT_DOUBLE_EQ(stream.delivery, 1);
  // 8 links of 0.1 µs or 0.5 µs propagation, 3 switches each way at 0.6 µs.
  EXPECT_NEAR(stream.base_rtt_us, 2 * (0.1 + 0.5 + 0.5 + 0.1) + 6 * 0.6, 1e-9);
}

TEST_F(ProbeModelPathTest, LossOnAPathLinkIsSeenAtItsRate) {
  faults_.link_drop[stream_.back[1]] = 0.01;  // the answer's ToR → spine hop
  ASSERT_TRUE(model_.Prepare(faults_, &stream_).ok());
  EXPECT_NEAR(stream_.delivery, 0.99, 1e-12);
  std::mt19937_64 rng(1);
  int lost = 0;
  for (int w = 0; w < 10000; ++w) lost += model_.Send(stream_, 10, faults_, &rng).lost;
  // 100,000 probes at 1 %: 1,000 ± 31 (σ); 5σ either side.
  EXPECT_NEAR(lost, 1000, 160);
}

TEST_F(ProbeModelPathTest, LinkOffThePathChangesNothing) {
  for (size_t l = 0; l < fabric_.links().size(); ++l) {
    bool on_path = false;
    for (int p : stream_.forward) on_path |= p == static_cast<int>(l);
    for (int p : stream_.back) on_path |= p == static_cast<int>(l);
    if (!on_path) faults_.link_drop[l] = 1.0;
  }
  ASSERT_TRUE(model_.Prepare(faults_, &stream_).ok());
  std::mt19937_64 rng(2);
  EXPECT_EQ(model_.Send(stream_, 50, faults_, &rng).lost, 0);
}

TEST(ProbeModelTest, DeadNicLosesEveryProbeAndReportsNoDelay) {
  Fabric fabric = TwoRacks();
  ProbeModel model(&fabric, ProbeNoise{});
  ProbeFaults faults;
  faults.nic_dead.assign(fabric.nics().size(), false);
  faults.nic_dead[kDst] = true;
  ProbeStream stream{kSrc, kDst, 0xC123};
  ASSERT_TRUE(model.Prepare(faults, &stream).ok());
  std::mt19937_64 rng(3);
  ProbeWindowOutcome out = model.Send(stream, 7, faults, &rng);
  EXPECT_EQ(out.lost, 7);
  EXPECT_EQ(out.rtt_p50_us, 0);
}

TEST_F(ProbeModelPathTest, LinkDownIsRoutedAroundButANicCableDownLosesAll) {
  ProbeFaults faults;
  faults.link_down.assign(fabric_.links().size(), false);
  int uplink = stream_.forward[1];
  faults.link_down[uplink] = true;
  ASSERT_TRUE(model_.Prepare(faults, &stream_).ok());
  ASSERT_FALSE(stream_.forward.empty());
  for (int l : stream_.forward) EXPECT_NE(l, uplink);
  EXPECT_DOUBLE_EQ(stream_.delivery, 1);
  faults.link_down[fabric_.nics()[kDst].downlink] = true;
  ASSERT_TRUE(model_.Prepare(faults, &stream_).ok());
  EXPECT_TRUE(stream_.forward.empty());
  EXPECT_DOUBLE_EQ(stream_.delivery, 0);
}

TEST(ProbeModelTest, SlowHostShowsInHostDelayNotInRtt) {
  Fabric fabric = TwoRacks();
  ProbeNoise noise;
  noise.host_spike_probability = 0;
  ProbeModel model(&fabric, noise);
  ProbeFaults faults;
  faults.node_extra_host_delay_us.assign(fabric.num_nodes(), 0);
  faults.node_extra_host_delay_us[fabric.nics()[kDst].node] = 2000;
  ProbeStream stream{kSrc, kDst, 0xC123};
  ASSERT_TRUE(model.Prepare(faults, &stream).ok());
  std::mt19937_64 rng(4);
  double rtt = 0, sender = 0, responder = 0;
  for (int w = 0; w < 1000; ++w) {
    ProbeWindowOutcome out = model.Send(stream, 4, faults, &rng);
    rtt += out.rtt_p50_us / 1000, sender += out.sender_host_delay_us / 1000;
    responder += out.responder_host_delay_us / 1000;
  }
  EXPECT_NEAR(rtt, stream.base_rtt_us + noise.rtt_jitter_us, 0.1);
  EXPECT_NEAR(sender, noise.host_delay_us + noise.host_delay_jitter_us, 0.5);
  EXPECT_NEAR(responder, 2000 + noise.host_delay_us + noise.host_delay_jitter_us, 0.5);
}

TEST(ProbeModelTest, FaultVectorsOfTheWrongSizeAreRefused) {
  Fabric fabric = TwoRacks();
  ProbeModel model(&fabric, ProbeNoise{});
  ProbeFaults faults;
  faults.link_drop.assign(3, 0);
  ProbeStream stream{kSrc, kDst, 0xC123};
  absl::Status status = model.Prepare(faults, &stream);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("per-link vectors"), std::string::npos);
  stream.dst_nic = kSrc;
  EXPECT_EQ(model.Prepare({}, &stream).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace weft::sim
