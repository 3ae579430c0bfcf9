#include "sim/dcqcn_episode.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/cc_params.h"
#include "sim/dcqcn_fluid.h"

namespace weft::sim {
namespace {

using ::testing::HasSubstr;

constexpr double kLinkBps = 400e9;

EpisodeConfig Incast(const weft::v1::DcqcnParams& cc, int senders, double bytes) {
  const MappedCcParams m = MapCcParams(cc, HpccFabricSide(kLinkBps)).value();
  EpisodeConfig config;
  config.dcqcn = m.params;
  config.step_us = ModelStepUs(m.params);
  for (int i = 0; i < senders; ++i) {
    config.flows.push_back({.bytes = bytes, .feedback_delay_us = 4, .initial_alpha = m.initial_alpha});
  }
  return config;
}

TEST(DcqcnEpisodeTest, LoneFlowRunsAtLineRate) {
  const EpisodeResult r = RunEpisode(Incast(FirmwareDefaultCcParams(), 1, 4e6)).value();
  const double ideal_us = 4e6 * 8 / kLinkBps * 1e6;  // 80 µs
  EXPECT_NEAR(r.fct_us[0], ideal_us, 0.5);
  EXPECT_NEAR(r.utilization, 1, 0.01);
  EXPECT_EQ(r.unfinished, 0);
  EXPECT_DOUBLE_EQ(r.pause_share, 0);
}

TEST(DcqcnEpisodeTest, IncastDeliversEveryByteNoFasterThanTheLink) {
  const EpisodeResult r = RunEpisode(Incast(FirmwareDefaultCcParams(), 4, 4e6)).value();
  ASSERT_EQ(r.unfinished, 0);
  const double ideal_us = 4 * 4e6 * 8 / kLinkBps * 1e6;  // 320 µs
  EXPECT_GE(r.makespan_us, ideal_us - 0.5);
  EXPECT_LE(r.utilization, 1 + 1e-9);
  // Identical flows with identical delays obey identical equations: equal FCTs.
  EXPECT_NEAR(r.jain_fairness, 1, 1e-9);
  // A line-rate start into a 4→1 overshoots the ECN ramp's Kmin (1.6 MB at 400 Gb/s).
  EXPECT_GT(r.max_queue_bytes, 1.6e6);
}

TEST(DcqcnEpisodeTest, DifferentLoopDelaysMakeFlowsUnequal) {
  // With the paper's values (a cut at most every 50 µs) flows with other delays are cut at
  // other times and end apart; with the firmware's the link stays full to the end and the
  // FIFO drains every flow together.
  EpisodeConfig config = Incast(PaperCcParams(), 4, 8e6);
  config.flows[0].feedback_delay_us = 1;
  config.flows[3].feedback_delay_us = 12;
  const EpisodeResult r = RunEpisode(config).value();
  ASSERT_EQ(r.unfinished, 0);
  EXPECT_LT(r.jain_fairness, 0.9999);
  EXPECT_NE(r.fct_us[3], r.fct_us[0]);
  EXPECT_DOUBLE_EQ(r.fct_us[1], r.fct_us[2]);  // the two with equal delays stay equal
}

TEST(DcqcnEpisodeTest, PfcBoundsTheQueueAndCountsPauses) {
  EpisodeConfig config = Incast(FirmwareDefaultCcParams(), 8, 4e6);
  config.pfc_xoff_bytes = 1e6;
  config.pfc_xon_bytes = 0.9e6;
  config.pfc_delay_us = 1;
  const EpisodeResult r = RunEpisode(config).value();
  ASSERT_EQ(r.unfinished, 0);
  EXPECT_GT(r.pause_share, 0);
  // At most what 8 line-rate senders put in while the pause travels (1 µs + 2 steps).
  EXPECT_LE(r.max_queue_bytes, 1e6 + 8 * kLinkBps / 8 * (1 + 2 * config.step_us) * 1e-6);
  config.pfc_xoff_bytes = config.pfc_xon_bytes = 0;
  const EpisodeResult lossy = RunEpisode(config).value();
  EXPECT_DOUBLE_EQ(lossy.pause_share, 0);
  EXPECT_GT(lossy.max_queue_bytes, r.max_queue_bytes);
}

TEST(DcqcnEpisodeTest, PfcStallsAVictimThatNeverCrossesThePort) {
  EpisodeConfig config = Incast(FirmwareDefaultCcParams(), 8, 4e6);
  config.flows.push_back({.bytes = 8e6, .feedback_delay_us = 4, .max_rate_bps = kLinkBps / 2,
                          .victim = true});
  const double alone_us = 8e6 * 8 / (kLinkBps / 2) * 1e6;  // 160 µs at 200 Gb/s
  const EpisodeResult lossy = RunEpisode(config).value();
  EXPECT_NEAR(lossy.fct_us[8], alone_us, 0.5);  // no PFC: the victim never waits
  config.pfc_xoff_bytes = 1e6;
  config.pfc_xon_bytes = 0.9e6;
  const EpisodeResult paused = RunEpisode(config).value();
  ASSERT_GT(paused.pause_share, 0.1);
  EXPECT_GT(paused.fct_us[8], 1.1 * alone_us);
  config.flows[8].max_rate_bps = 0;
  EXPECT_THAT(std::string(RunEpisode(config).status().message()),
              HasSubstr("flows[8].max_rate_bps = 0"));
}

TEST(DcqcnEpisodeTest, OtherClassTakesItsShare) {
  // A flow capped at half the link (its sender's share) never congests the port alone;
  // with another class taking the other half it still does not, and it fills its half.
  EpisodeConfig config = Incast(FirmwareDefaultCcParams(), 1, 8e6);
  config.flows[0].max_rate_bps = kLinkBps / 2;
  config.other_class = {.share = 0.5, .period_us = 100, .on_fraction = 1};
  const EpisodeResult shared = RunEpisode(config).value();
  EXPECT_NEAR(shared.fct_us[0], 8e6 * 8 / (kLinkBps / 2) * 1e6, 0.5);  // 320 µs
  EXPECT_NEAR(shared.utilization, 1, 0.01);
  // On half of each 100 µs: the flow at half the link fills the whole port half the time.
  config.other_class.on_fraction = 0.5;
  EXPECT_NEAR(RunEpisode(config).value().utilization, 0.5 / 0.75, 0.02);
}

TEST(DcqcnEpisodeTest, RefusesBadInputNamingIt) {
  EpisodeConfig config = Incast(FirmwareDefaultCcParams(), 2, 1e6);
  config.flows[1].bytes = 0;
  EXPECT_THAT(std::string(RunEpisode(config).status().message()), HasSubstr("flows[1].bytes = 0"));
  config = Incast(FirmwareDefaultCcParams(), 2, 1e6);
  config.pfc_xoff_bytes = 1e5;
  config.pfc_xon_bytes = 2e5;
  EXPECT_THAT(std::string(RunEpisode(config).status().message()), HasSubstr("pfc_xon_bytes"));
  config = Incast(FirmwareDefaultCcParams(), 2, 1e6);
  config.step_us = 1;  // τ′ = 1 µs needs 0.2 µs
  EXPECT_THAT(std::string(RunEpisode(config).status().message()), HasSubstr("step_us = 1"));
}

}  // namespace
}  // namespace weft::sim
