#include "agent/counter_math.h"

#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace weft::agent {
namespace {

const absl::Time kT0 = absl::FromUnixSeconds(1'800'000'000);

RawNicReading Reading(absl::Time at) {
  RawNicReading r;
  r.device = "mlx5_0";
  r.port = 1;
  r.timestamp = at;
  r.port_state = weft::v1::PORT_STATE_ACTIVE;
  return r;
}

TEST(CounterIncreaseTest, ForwardMoveIsTheDifference) {
  EXPECT_EQ(CounterIncrease(100, 350, CounterWidth::k64Bits), 250u);
  EXPECT_EQ(CounterIncrease(7, 7, CounterWidth::k64Bits), 0u);
  EXPECT_EQ(CounterIncrease(100, 350, CounterWidth::k32Bits), 250u);
}

TEST(CounterIncreaseTest, SixtyFourBitBackwardsIsAReset) {
  EXPECT_EQ(CounterIncrease(1'000'000, 12, CounterWidth::k64Bits), std::nullopt);
  EXPECT_EQ(CounterIncrease(~uint64_t{0}, 0, CounterWidth::k64Bits), std::nullopt);
}

TEST(CounterIncreaseTest, ThirtyTwoBitWrapGivesTheTrueIncrease) {
  EXPECT_EQ(CounterIncrease(0xFFFFFF00u, 0x10u, CounterWidth::k32Bits), 0x110u);
  EXPECT_EQ(CounterIncrease(0xFFFFFFFFu, 0u, CounterWidth::k32Bits), 1u);
}

TEST(CounterIncreaseTest, ThirtyTwoBitDropFromSmallValueIsAReset) {
  // 1000 -> 5 would be a "wrap" of 2^32 - 995: no Q-counter moves that much per interval.
  EXPECT_EQ(CounterIncrease(1000, 5, CounterWidth::k32Bits), std::nullopt);
}

TEST(CounterIncreaseTest, ThirtyTwoBitCounterWithWideValuesIsNotWrapped) {
  EXPECT_EQ(CounterIncrease(uint64_t{1} << 33, 5, CounterWidth::k32Bits), std::nullopt);
}

TEST(ComputeNicUpdateTest, FirstReadingHasTotalsButNoRates) {
  RawNicReading cur = Reading(kT0);
  cur.counters.port_xmit_bytes = 4096;
  cur.counters.np_cnp_sent = 3;
  cur.counters.pfc.push_back({3, 1, 2, 30, 40});
  const NicUpdate u = ComputeNicUpdate(nullptr, cur);
  EXPECT_FALSE(u.sample.rates_valid());
  EXPECT_FALSE(u.increase.has_value());
  EXPECT_EQ(u.sample.device(), "mlx5_0");
  EXPECT_EQ(u.sample.port(), 1u);
  EXPECT_EQ(u.sample.timestamp_us(), absl::ToUnixMicros(kT0));
  EXPECT_EQ(u.sample.port_state(), 4u);
  EXPECT_EQ(u.sample.port_counters().xmit_bytes().total(), 4096u);
  EXPECT_EQ(u.sample.port_counters().xmit_bytes().per_second(), 0.0);
  EXPECT_EQ(u.sample.congestion().np_cnp_sent().total(), 3u);
  ASSERT_EQ(u.sample.pfc_size(), 1);
  EXPECT_EQ(u.sample.pfc(0).priority(), 3u);
  EXPECT_EQ(u.sample.pfc(0).tx_pause_duration_us().total(), 40u);
  EXPECT_EQ(u.sample.pfc(0).tx_pause_duration_us().per_second(), 0.0);
  EXPECT_TRUE(u.sample.error().empty());
}

TEST(ComputeNicUpdateTest, RatesAreIncreasesOverElapsedTime) {
  RawNicReading prev = Reading(kT0);
  prev.counters.port_xmit_bytes = 1'000'000;
  prev.counters.port_rcv_packets = 10;
  prev.counters.np_ecn_marked_roce_packets = 100;
  prev.counters.rp_cnp_handled = 50;
  prev.counters.packet_seq_err = 7;
  prev.counters.pfc.push_back({3, 10, 20, 1000, 2000});
  RawNicReading cur = prev;
  cur.timestamp = kT0 + absl::Milliseconds(500);
  cur.counters.port_xmit_bytes = 26'000'000;  // +25 MB in 0.5 s
  cur.counters.port_rcv_packets = 1010;
  cur.counters.np_ecn_marked_roce_packets = 400;
  cur.counters.rp_cnp_handled = 150;
  cur.counters.packet_seq_err = 9;
  cur.counters.pfc[0] = {3, 15, 20, 1500, 2250};

  const NicUpdate u = ComputeNicUpdate(&prev, cur);
  ASSERT_TRUE(u.sample.rates_valid());
  EXPECT_DOUBLE_EQ(u.sample.port_counters().xmit_bytes().per_second(), 50e6);
  EXPECT_EQ(u.sample.port_counters().xmit_bytes().total(), 26'000'000u);
  EXPECT_DOUBLE_EQ(u.sample.port_counters().rcv_packets().per_second(), 2000);
  EXPECT_DOUBLE_EQ(u.sample.congestion().np_ecn_marked_roce_packets().per_second(), 600);
  EXPECT_DOUBLE_EQ(u.sample.congestion().rp_cnp_handled().per_second(), 200);
  EXPECT_DOUBLE_EQ(u.sample.congestion().rp_cnp_ignored().per_second(), 0);
  EXPECT_DOUBLE_EQ(u.sample.retransmission().packet_seq_err().per_second(), 4);
  ASSERT_EQ(u.sample.pfc_size(), 1);
  EXPECT_DOUBLE_EQ(u.sample.pfc(0).rx_pause().per_second(), 10);
  EXPECT_DOUBLE_EQ(u.sample.pfc(0).tx_pause().per_second(), 0);
  EXPECT_DOUBLE_EQ(u.sample.pfc(0).rx_pause_duration_us().per_second(), 1000);
  EXPECT_DOUBLE_EQ(u.sample.pfc(0).tx_pause_duration_us().per_second(), 500);

  ASSERT_TRUE(u.increase.has_value());
  EXPECT_EQ(u.increase->port_xmit_bytes, 25'000'000u);
  EXPECT_EQ(u.increase->packet_seq_err, 2u);
  ASSERT_EQ(u.increase->pfc.size(), 1u);
  EXPECT_EQ(u.increase->pfc[0].priority, 3u);
  EXPECT_EQ(u.increase->pfc[0].rx_pause_duration_us, 500u);
}

TEST(ComputeNicUpdateTest, QCounterWrapKeepsRatesValidAndRight) {
  RawNicReading prev = Reading(kT0);
  prev.counters.local_ack_timeout_err = 0xFFFFFFF0u;
  RawNicReading cur = prev;
  cur.timestamp = kT0 + absl::Seconds(1);
  cur.counters.local_ack_timeout_err = 0x20u;  // +0x30 across the wrap
  const NicUpdate u = ComputeNicUpdate(&prev, cur);
  ASSERT_TRUE(u.sample.rates_valid());
  EXPECT_DOUBLE_EQ(u.sample.retransmission().local_ack_timeout_err().per_second(), 48);
  EXPECT_EQ(u.sample.retransmission().local_ack_timeout_err().total(), 0x20u);
  EXPECT_EQ(u.increase->local_ack_timeout_err, 48u);
}

TEST(ComputeNicUpdateTest, SixtyFourBitCounterGoingBackwardsInvalidatesTheSample) {
  RawNicReading prev = Reading(kT0);
  prev.counters.port_xmit_bytes = 5'000'000'000;
  prev.counters.port_rcv_bytes = 100;
  RawNicReading cur = prev;
  cur.timestamp = kT0 + absl::Seconds(1);
  cur.counters.port_xmit_bytes = 4096;  // driver reload
  cur.counters.port_rcv_bytes = 200;
  const NicUpdate u = ComputeNicUpdate(&prev, cur);
  EXPECT_FALSE(u.sample.rates_valid());
  EXPECT_FALSE(u.increase.has_value());
  // Never negative, never huge: every rate is 0, even those that moved forward.
  EXPECT_EQ(u.sample.port_counters().xmit_bytes().per_second(), 0.0);
  EXPECT_EQ(u.sample.port_counters().rcv_bytes().per_second(), 0.0);
  EXPECT_EQ(u.sample.port_counters().xmit_bytes().total(), 4096u);
}

TEST(ComputeNicUpdateTest, QCounterResetInvalidatesTheSample) {
  RawNicReading prev = Reading(kT0);
  prev.counters.out_of_sequence = 5000;
  RawNicReading cur = prev;
  cur.timestamp = kT0 + absl::Seconds(1);
  cur.counters.out_of_sequence = 3;
  const NicUpdate u = ComputeNicUpdate(&prev, cur);
  EXPECT_FALSE(u.sample.rates_valid());
  EXPECT_EQ(u.sample.retransmission().out_of_sequence().per_second(), 0.0);
}

TEST(ComputeNicUpdateTest, PfcCounterGoingBackwardsInvalidatesTheSample) {
  RawNicReading prev = Reading(kT0);
  prev.counters.pfc.push_back({3, 100, 100, 100, 100});
  RawNicReading cur = prev;
  cur.timestamp = kT0 + absl::Seconds(1);
  cur.counters.pfc[0].rx_pause_duration_us = 1;
  EXPECT_FALSE(ComputeNicUpdate(&prev, cur).sample.rates_valid());
}

TEST(ComputeNicUpdateTest, NewlyEnabledPriorityHasNoRateYet) {
  RawNicReading prev = Reading(kT0);
  prev.counters.pfc.push_back({3, 0, 0, 0, 0});
  RawNicReading cur = prev;
  cur.timestamp = kT0 + absl::Seconds(2);
  cur.counters.pfc = {{3, 0, 0, 200, 0}, {4, 50, 50, 5000, 5000}};
  const NicUpdate u = ComputeNicUpdate(&prev, cur);
  ASSERT_TRUE(u.sample.rates_valid());
  ASSERT_EQ(u.sample.pfc_size(), 2);
  EXPECT_DOUBLE_EQ(u.sample.pfc(0).rx_pause_duration_us().per_second(), 100);
  EXPECT_EQ(u.sample.pfc(1).priority(), 4u);
  EXPECT_EQ(u.sample.pfc(1).rx_pause_duration_us().total(), 5000u);
  EXPECT_EQ(u.sample.pfc(1).rx_pause_duration_us().per_second(), 0.0);
  ASSERT_EQ(u.increase->pfc.size(), 1u);
  EXPECT_EQ(u.increase->pfc[0].priority, 3u);
}

TEST(ComputeNicUpdateTest, TimestampNotMovingForwardGivesNoRates) {
  RawNicReading prev = Reading(kT0);
  RawNicReading cur = prev;
  cur.counters.port_xmit_bytes = 100;
  EXPECT_FALSE(ComputeNicUpdate(&prev, cur).sample.rates_valid());
  cur.timestamp = kT0 - absl::Seconds(1);
  EXPECT_FALSE(ComputeNicUpdate(&prev, cur).sample.rates_valid());
}

TEST(ComputeNicUpdateTest, PreviousOfAnotherNicCountsAsNone) {
  RawNicReading prev = Reading(kT0);
  prev.device = "mlx5_1";
  RawNicReading cur = Reading(kT0 + absl::Seconds(1));
  cur.counters.port_xmit_bytes = 100;
  EXPECT_FALSE(ComputeNicUpdate(&prev, cur).sample.rates_valid());
}

TEST(ComputeNicUpdateTest, FailedReadingCarriesOnlyTheError) {
  RawNicReading prev = Reading(kT0);
  RawNicReading cur = Reading(kT0 + absl::Seconds(1));
  cur.error = "hw_counters/np_cnp_sent: Permission denied";
  cur.counters.port_xmit_bytes = 100;
  const NicUpdate u = ComputeNicUpdate(&prev, cur);
  EXPECT_EQ(u.sample.error(), cur.error);
  EXPECT_FALSE(u.sample.rates_valid());
  EXPECT_FALSE(u.sample.has_port_counters());
  EXPECT_FALSE(u.sample.has_congestion());
  EXPECT_EQ(u.sample.pfc_size(), 0);
  EXPECT_FALSE(u.increase.has_value());
}

}  // namespace
}  // namespace weft::agent

namespace weft::agent {
namespace {

TEST(CounterMathGroupsTest, AbsentCongestionGroupIsLeftOutNotZero) {
  RawNicReading first;
  first.device = "mlx5_1";
  first.timestamp = absl::FromUnixSeconds(1000);
  first.counters.port_xmit_bytes = 1000;
  first.counters.out_of_sequence = 5;
  first.missing_counters = {"np_cnp_sent", "np_ecn_marked_roce_packets", "rp_cnp_handled",
                            "rp_cnp_ignored"};
  RawNicReading second = first;
  second.timestamp += absl::Seconds(1);
  second.counters.port_xmit_bytes = 3000;
  second.counters.out_of_sequence = 8;

  NicUpdate update = ComputeNicUpdate(&first, second);
  ASSERT_TRUE(update.sample.rates_valid());
  EXPECT_FALSE(update.sample.has_congestion());
  EXPECT_TRUE(update.sample.has_retransmission());
  EXPECT_DOUBLE_EQ(update.sample.retransmission().out_of_sequence().per_second(), 3.0);
  EXPECT_DOUBLE_EQ(update.sample.port_counters().xmit_bytes().per_second(), 2000.0);
  ASSERT_EQ(update.sample.missing_counters_size(), 4);
  EXPECT_EQ(update.sample.missing_counters(3), "rp_cnp_ignored");
}

TEST(CounterMathGroupsTest, OneAbsentCounterIsUnsetWhileItsGroupIsReported) {
  RawNicReading first;
  first.device = "mlx5_0";
  first.timestamp = absl::FromUnixSeconds(1000);
  first.counters.np_cnp_sent = 10;
  first.counters.port_rcv_packets = 100;
  RawNicReading second = first;
  second.timestamp += absl::Seconds(1);
  second.counters.np_cnp_sent = 15;
  second.counters.port_rcv_packets = 160;

  NicUpdate update = ComputeNicUpdate(&first, second);
  ASSERT_TRUE(update.sample.rates_valid());
  ASSERT_TRUE(update.sample.has_congestion());
  EXPECT_TRUE(update.sample.congestion().has_np_cnp_sent());
  EXPECT_FALSE(update.sample.congestion().has_rp_cnp_ignored());
  EXPECT_FALSE(update.sample.port_counters().has_xmit_bytes());
  EXPECT_FALSE(update.sample.has_rdma_traffic());
  ASSERT_TRUE(update.increase.has_value());
  EXPECT_EQ(update.increase->np_cnp_sent, 5u);
  EXPECT_FALSE(update.increase->rp_cnp_ignored.has_value());
}

TEST(CounterMathGroupsTest, OptionalRdmaTrafficCountersGoToTheirOwnGroup) {
  RawNicReading first;
  first.device = "mlx5_0";
  first.timestamp = absl::FromUnixSeconds(1000);
  first.counters.rdma_tx_bytes = 1'000;
  first.counters.cc_rx_ce_pkts = 7;
  RawNicReading second = first;
  second.timestamp += absl::Seconds(2);
  second.counters.rdma_tx_bytes = 5'000;
  second.counters.cc_rx_ce_pkts = 9;

  NicUpdate update = ComputeNicUpdate(&first, second);
  ASSERT_TRUE(update.sample.rates_valid());
  EXPECT_EQ(update.sample.rdma_traffic().tx_bytes().total(), 5'000u);
  EXPECT_DOUBLE_EQ(update.sample.rdma_traffic().tx_bytes().per_second(), 2'000.0);
  EXPECT_FALSE(update.sample.rdma_traffic().has_rx_bytes());
  EXPECT_DOUBLE_EQ(update.sample.congestion().cc_rx_ce_pkts().per_second(), 1.0);
}

TEST(CounterMathGroupsTest, GroupAppearingGivesNoRateButKeepsTheRest) {
  RawNicReading first;
  first.device = "mlx5_0";
  first.timestamp = absl::FromUnixSeconds(1000);
  first.counters.port_rcv_bytes = 10;
  RawNicReading second = first;
  second.timestamp += absl::Seconds(2);
  second.counters.np_cnp_sent = 1'000'000;  // cumulative since boot: not a rate
  second.counters.port_rcv_bytes = 30;

  NicUpdate update = ComputeNicUpdate(&first, second);
  ASSERT_TRUE(update.sample.rates_valid());
  EXPECT_EQ(update.sample.congestion().np_cnp_sent().total(), 1'000'000u);
  EXPECT_DOUBLE_EQ(update.sample.congestion().np_cnp_sent().per_second(), 0.0);
  EXPECT_DOUBLE_EQ(update.sample.port_counters().rcv_bytes().per_second(), 10.0);
}

}  // namespace
}  // namespace weft::agent
