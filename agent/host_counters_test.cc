#include "agent/host_counters.h"

#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace weft::agent {
namespace {

const HostCounterSpec& Spec(absl::string_view file) {
  for (const HostCounterSpec& spec : HostCounterSpecs()) {
    if (spec.file == file) return spec;
  }
  ADD_FAILURE() << "no spec for " << file;
  return HostCounterSpecs().front();
}

TEST(HostCountersTest, DataCountersAreFourOctetWordsOthersPassThrough) {
  RawNicCounters counters;
  SetHostCounter(Spec("port_xmit_data"), 1000, &counters);
  SetHostCounter(Spec("out_of_sequence"), 4294967295u, &counters);
  EXPECT_EQ(counters.port_xmit_bytes, 4000u);
  EXPECT_EQ(counters.out_of_sequence, 4294967295u) << "32-bit Q-counter passed through raw";
}

TEST(HostCountersTest, ExpectationFollowsGroupHwCountersAndLinkLayer) {
  EXPECT_TRUE(ExpectedOnPort(Spec("port_xmit_wait"), false, false));
  EXPECT_FALSE(ExpectedOnPort(Spec("packet_seq_err"), false, true));
  EXPECT_TRUE(ExpectedOnPort(Spec("packet_seq_err"), true, false));
  EXPECT_FALSE(ExpectedOnPort(Spec("rp_cnp_handled"), true, false)) << "InfiniBand port";
  EXPECT_TRUE(ExpectedOnPort(Spec("rp_cnp_handled"), true, true));
  EXPECT_FALSE(ExpectedOnPort(Spec("cc_rx_ce_pkts"), true, true)) << "optional";
}

TEST(HostCountersTest, PfcOnlyForPrioritiesWithPauseCounters) {
  const std::vector<std::pair<std::string, uint64_t>> stats = {
      {"rx_prio3_pause", 10},      {"tx_prio3_pause_duration", 900},
      {"rx_prio0_bytes", 1},       {"tx_prio5_pause", 2},
      {"rx_prio8_pause", 99},      {"rx_prio3_pause_transition", 5}};
  std::vector<RawPfcCounters> pfc = PfcFromEthtool(stats);
  ASSERT_EQ(pfc.size(), 2u);
  EXPECT_EQ(pfc[0].priority, 3u);
  EXPECT_EQ(pfc[0].rx_pause, 10u);
  EXPECT_EQ(pfc[0].tx_pause_duration_us, 900u);
  EXPECT_EQ(pfc[1].priority, 5u);
  EXPECT_EQ(pfc[1].tx_pause, 2u);
}

}  // namespace
}  // namespace weft::agent
