#include "bench/ingest/synthetic_node.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace weft::bench {
namespace {

using weft::v1::Counter;
using weft::v1::NicSample;
using weft::v1::TelemetryBatch;

constexpr double kLineBytesPerS = 400e9 / 8;

const absl::Time kStart = absl::FromUnixSeconds(1'800'000'000);

std::unique_ptr<SyntheticNode> MustCreate(const std::string& name) {
  absl::StatusOr<std::unique_ptr<SyntheticNode>> node =
      SyntheticNode::Create(name, 8, 8, kStart);
  EXPECT_TRUE(node.ok()) << node.status();
  return std::move(node).value();
}

// The counters of one sample, in a fixed order.
std::vector<const Counter*> Counters(const NicSample& s) {
  const auto& p = s.port_counters();
  const auto& c = s.congestion();
  const auto& r = s.retransmission();
  std::vector<const Counter*> out = {
      &p.xmit_bytes(), &p.rcv_bytes(), &p.xmit_packets(), &p.rcv_packets(),
      &c.np_ecn_marked_roce_packets(), &c.np_cnp_sent(), &c.rp_cnp_handled(),
      &r.packet_seq_err(), &r.out_of_sequence()};
  for (const auto& pfc : s.pfc()) {
    out.push_back(&pfc.rx_pause());
    out.push_back(&pfc.rx_pause_duration_us());
  }
  return out;
}

TEST(SyntheticNodeTest, RegistersLikeAnEightNicSimulatedAgent) {
  auto node = MustCreate("ingest-000001");
  const weft::v1::NodeInfo& info = node->info();
  EXPECT_EQ(info.name(), "ingest-000001");
  ASSERT_EQ(info.nics_size(), 8);
  ASSERT_EQ(info.gpus_size(), 8);
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(info.nics(i).device(), "mlx5_" + std::to_string(i));
    EXPECT_EQ(info.nics(i).state(), weft::v1::PORT_STATE_ACTIVE);
    EXPECT_EQ(info.nics(i).gids_size(), 4);
  }
}

TEST(SyntheticNodeTest, FirstBatchIsTheAgentsSampleStampedNow) {
  auto node = MustCreate("ingest-000002");
  const absl::Time now = kStart + absl::Milliseconds(300);
  const TelemetryBatch& batch = node->NextBatch(now).telemetry();
  EXPECT_EQ(batch.collected_at_us(), absl::ToUnixMicros(now));
  ASSERT_EQ(batch.samples_size(), 8);
  for (int i = 0; i < 8; ++i) {
    const NicSample& s = batch.samples(i);
    EXPECT_EQ(s.device(), node->info().nics(i).device());
    EXPECT_EQ(s.timestamp_us(), absl::ToUnixMicros(now));
    EXPECT_TRUE(s.rates_valid());
    EXPECT_TRUE(s.has_port_counters());
    EXPECT_TRUE(s.has_congestion());
    EXPECT_TRUE(s.has_retransmission());
    ASSERT_EQ(s.pfc_size(), 1);
    EXPECT_EQ(s.pfc(0).priority(), 3u);
    EXPECT_GT(s.port_counters().xmit_bytes().per_second(), 0.3 * kLineBytesPerS);
  }
}

TEST(SyntheticNodeTest, CountersAdvanceAndRatesMatchTheIncrease) {
  auto node = MustCreate("ingest-000003");
  TelemetryBatch previous = node->NextBatch(kStart).telemetry();
  absl::Time now = kStart;
  for (int tick = 0; tick < 20; ++tick) {
    const absl::Duration dt = absl::Milliseconds(tick % 2 == 0 ? 1000 : 1100);
    now += dt;
    const TelemetryBatch current = node->NextBatch(now).telemetry();
    ASSERT_EQ(current.samples_size(), previous.samples_size());
    for (int i = 0; i < current.samples_size(); ++i) {
      const NicSample& a = previous.samples(i);
      const NicSample& b = current.samples(i);
      EXPECT_TRUE(b.rates_valid());
      EXPECT_EQ(b.timestamp_us(), absl::ToUnixMicros(now));
      const std::vector<const Counter*> before = Counters(a);
      const std::vector<const Counter*> after = Counters(b);
      ASSERT_EQ(before.size(), after.size());
      for (size_t c = 0; c < after.size(); ++c) {
        ASSERT_GE(after[c]->total(), before[c]->total()) << "NIC " << i << " counter " << c;
        const double increase = static_cast<double>(after[c]->total() - before[c]->total());
        EXPECT_NEAR(after[c]->per_second(), increase / absl::ToDoubleSeconds(dt),
                    1e-6 * (1 + increase));
      }
      // Line-rate magnitudes within the ±10% wave of the template's 60% load.
      const double tx = b.port_counters().xmit_bytes().per_second();
      EXPECT_GT(tx, 0.3 * kLineBytesPerS);
      EXPECT_LT(tx, 0.95 * kLineBytesPerS);
    }
    previous = current;
  }
}

TEST(SyntheticNodeTest, NothingMovesWhenTimeDoesNot) {
  auto node = MustCreate("ingest-000004");
  node->NextBatch(kStart);
  const TelemetryBatch a = node->NextBatch(kStart + absl::Seconds(1)).telemetry();
  const TelemetryBatch b = node->NextBatch(kStart + absl::Seconds(1)).telemetry();
  EXPECT_EQ(a.samples(0).port_counters().xmit_bytes().total(),
            b.samples(0).port_counters().xmit_bytes().total());
}

TEST(SyntheticNodeTest, NodesDifferByName) {
  auto a = MustCreate("ingest-000005");
  auto b = MustCreate("ingest-000006");
  EXPECT_NE(a->NextBatch(kStart).telemetry().samples(0).port_counters().xmit_bytes().total(),
            b->NextBatch(kStart).telemetry().samples(0).port_counters().xmit_bytes().total());
}

TEST(SyntheticNodeTest, RefusesShapesTheSimulatedBackendRefuses) {
  EXPECT_EQ(SyntheticNode::Create("n", 0, 8, kStart).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(SyntheticNode::Create("", 8, 8, kStart).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace weft::bench
