#include "common/pfc_share.h"

#include "gtest/gtest.h"

namespace weft {
namespace {

weft::v1::NicSample SampleWith(
    std::initializer_list<std::tuple<uint32_t, double, double>> priorities) {
  weft::v1::NicSample sample;
  for (const auto& [priority, rx_us, tx_us] : priorities) {
    weft::v1::PriorityPfcCounters* p = sample.add_pfc();
    p->set_priority(priority);
    p->mutable_rx_pause_duration_us()->set_per_second(rx_us);
    p->mutable_tx_pause_duration_us()->set_per_second(tx_us);
  }
  return sample;
}

TEST(PfcShareTest, BothDirectionsPausedAllTheTimeAreEachOneHundredPercentNotTwoHundred) {
  const PfcPauseShares shares = PauseSharesOf(SampleWith({{3, 1e6, 1e6}}));
  EXPECT_TRUE(shares.has_pfc);
  EXPECT_DOUBLE_EQ(shares.rx, 1.0);
  EXPECT_DOUBLE_EQ(shares.tx, 1.0);
  EXPECT_DOUBLE_EQ(shares.worst(), 1.0);
  EXPECT_EQ(FormatShare(shares.worst()), "100.0%");
}

TEST(PfcShareTest, EachDirectionTakesItsMostPausedPriority) {
  const PfcPauseShares shares =
      PauseSharesOf(SampleWith({{0, 10000, 900000}, {3, 830000, 5000}, {4, 0, 0}}));
  EXPECT_DOUBLE_EQ(shares.rx, 0.83);
  EXPECT_EQ(shares.rx_priority, 3u);
  EXPECT_DOUBLE_EQ(shares.tx, 0.9);
  EXPECT_EQ(shares.tx_priority, 0u);
  EXPECT_STREQ(shares.worst_direction(), "tx");
  EXPECT_EQ(shares.worst_priority(), 0u);
}

TEST(PfcShareTest, ASampleSlightlyLongerThanASecondIsClampedAndNegativeIsZero) {
  EXPECT_DOUBLE_EQ(PauseShare(1000450), 1.0);
  EXPECT_DOUBLE_EQ(PauseShare(-5), 0.0);
  EXPECT_DOUBLE_EQ(PauseShare(250000), 0.25);
  EXPECT_EQ(FormatShare(0.1834), "18.3%");
}

TEST(PfcShareTest, NoPriorityMeansNoPfc) {
  const PfcPauseShares shares = PauseSharesOf(weft::v1::NicSample());
  EXPECT_FALSE(shares.has_pfc);
  EXPECT_DOUBLE_EQ(shares.worst(), 0.0);
}

}  // namespace
}  // namespace weft
