#include "controller/health/nic_rates.h"

#include "gtest/gtest.h"

namespace weft::controller {
namespace {

weft::v1::NicSample FullSample() {
  weft::v1::NicSample sample;
  sample.set_device("mlx5_0");
  sample.set_port(1);
  sample.set_rates_valid(true);
  sample.mutable_port_counters()->mutable_xmit_bytes()->set_per_second(25e9);  // 200 Gb/s
  sample.mutable_port_counters()->mutable_rcv_bytes()->set_per_second(12.5e9);  // 100 Gb/s
  sample.mutable_congestion()->mutable_np_ecn_marked_roce_packets()->set_per_second(1000);
  sample.mutable_congestion()->mutable_np_cnp_sent()->set_per_second(900);
  sample.mutable_congestion()->mutable_rp_cnp_handled()->set_per_second(800);
  sample.mutable_congestion()->mutable_rp_cnp_ignored()->set_per_second(5);  // not summed
  sample.mutable_retransmission()->mutable_packet_seq_err()->set_per_second(3);
  sample.mutable_retransmission()->mutable_local_ack_timeout_err()->set_per_second(2);
  sample.mutable_retransmission()->mutable_out_of_sequence()->set_per_second(7);
  sample.mutable_retransmission()->mutable_duplicate_request()->set_per_second(100);
  auto* p3 = sample.add_pfc();
  p3->set_priority(3);
  p3->mutable_rx_pause_duration_us()->set_per_second(1500);
  p3->mutable_tx_pause_duration_us()->set_per_second(500);
  p3->mutable_rx_pause()->set_per_second(99);  // frames, not duration: not summed
  auto* p4 = sample.add_pfc();
  p4->set_priority(4);
  p4->mutable_rx_pause_duration_us()->set_per_second(10);
  return sample;
}

TEST(RatesFromSampleTest, ConvertsAndSumsTheDocumentedCounters) {
  const NicRates rates = RatesFromSample(FullSample());
  EXPECT_DOUBLE_EQ(rates.tx_gbps, 200.0);
  EXPECT_DOUBLE_EQ(rates.rx_gbps, 100.0);
  EXPECT_DOUBLE_EQ(rates.ecn_marked_per_s, 1000);
  EXPECT_DOUBLE_EQ(rates.cnp_sent_per_s, 900);
  EXPECT_DOUBLE_EQ(rates.cnp_handled_per_s, 800);
  EXPECT_DOUBLE_EQ(rates.pfc_pause_us_per_s, 2010);
  EXPECT_DOUBLE_EQ(rates.retransmissions_per_s, 12);
  EXPECT_DOUBLE_EQ(rates.pfc_rx_pause_share, 0.0015);  // priority 3, rx
  EXPECT_DOUBLE_EQ(rates.pfc_tx_pause_share, 0.0005);
}

TEST(RatesFromSampleTest, ErroredSampleContributesNothing) {
  weft::v1::NicSample sample = FullSample();
  sample.set_error("cannot read /sys/class/infiniband/mlx5_0/ports/1/counters: EIO");
  const NicRates rates = RatesFromSample(sample);
  EXPECT_EQ(rates.tx_gbps, 0);
  EXPECT_EQ(rates.pfc_pause_us_per_s, 0);
  EXPECT_EQ(rates.retransmissions_per_s, 0);
}

TEST(RatesFromSampleTest, InvalidRatesContributeNothing) {
  weft::v1::NicSample sample = FullSample();
  sample.set_rates_valid(false);
  EXPECT_EQ(RatesFromSample(sample).rx_gbps, 0);
}

TEST(NicRatesTest, SumAndProto) {
  NicRates total = RatesFromSample(FullSample());
  total += RatesFromSample(FullSample());
  const weft::v1::NodeRates proto = ToProto(total);
  EXPECT_DOUBLE_EQ(proto.tx_gbps(), 400.0);
  EXPECT_DOUBLE_EQ(proto.rx_gbps(), 200.0);
  EXPECT_DOUBLE_EQ(proto.ecn_marked_per_s(), 2000);
  EXPECT_DOUBLE_EQ(proto.cnp_sent_per_s(), 1800);
  EXPECT_DOUBLE_EQ(proto.cnp_handled_per_s(), 1600);
  EXPECT_DOUBLE_EQ(proto.pfc_pause_us_per_s(), 4020);
  EXPECT_DOUBLE_EQ(proto.retransmissions_per_s(), 24);
  // Shares of time keep the larger, never add up.
  EXPECT_DOUBLE_EQ(proto.pfc_rx_pause_share(), 0.0015);
  EXPECT_DOUBLE_EQ(proto.pfc_tx_pause_share(), 0.0005);
}

TEST(NicRatesTest, PauseSharesOfManyStormingNicsStayAtMostOne) {
  weft::v1::NicSample storming = FullSample();
  storming.mutable_pfc(0)->mutable_rx_pause_duration_us()->set_per_second(1e6);
  storming.mutable_pfc(0)->mutable_tx_pause_duration_us()->set_per_second(830'000);
  NicRates node;
  for (int nic = 0; nic < 8; ++nic) node += RatesFromSample(storming);
  EXPECT_DOUBLE_EQ(node.pfc_rx_pause_share, 1.0);
  EXPECT_DOUBLE_EQ(node.pfc_tx_pause_share, 0.83);
}

}  // namespace
}  // namespace weft::controller
