// Each health rule over hand-built windows: fires exactly when its condition holds for
// `consecutive_samples` readings, with the numbers that fired it, and never on
// invalid rates, errored readings or a missing counter group.
#include "controller/health/health_rules.h"

#include <deque>
#include <functional>
#include <iterator>
#include <set>
#include <string>

#include "common/daemon_config.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace weft::controller {
namespace {

using ::testing::HasSubstr;

const absl::Time kT0 = absl::FromUnixSeconds(1'800'000'000);

// A quiet, valid sample of mlx5_0 port 1 with every group present and the port up.
weft::v1::NicSample Quiet() {
  weft::v1::NicSample s;
  s.set_device("mlx5_0");
  s.set_port(1);
  s.set_rates_valid(true);
  s.set_port_state(weft::v1::PORT_STATE_ACTIVE);
  auto* port = s.mutable_port_counters();
  port->mutable_xmit_bytes()->set_per_second(10e9);
  port->mutable_rcv_bytes()->set_per_second(10e9);
  port->mutable_rcv_packets()->set_per_second(2'000'000);
  port->mutable_link_downed()->set_total(3);
  s.mutable_congestion()->mutable_np_ecn_marked_roce_packets()->set_per_second(100);
  s.mutable_retransmission();
  auto* pfc = s.add_pfc();
  pfc->set_priority(3);
  pfc->mutable_rx_pause_duration_us()->set_per_second(1000);
  return s;
}

using Mutation = std::function<void(weft::v1::NicSample&)>;

// A window of `n` readings one second apart, built from Quiet() changed by `change`.
std::deque<NicReading> Window(int n, const Mutation& change = [](weft::v1::NicSample&) {}) {
  std::deque<NicReading> window;
  for (int i = 0; i < n; ++i) {
    weft::v1::NicSample s = Quiet();
    change(s);
    window.push_back(ReadingFromSample(s, kT0 + absl::Seconds(i)));
  }
  return window;
}

void Append(std::deque<NicReading>& window, const Mutation& change) {
  weft::v1::NicSample s = Quiet();
  change(s);
  const absl::Time at =
      window.empty() ? kT0 : window.back().received_at + absl::Seconds(1);
  window.push_back(ReadingFromSample(s, at));
}

std::vector<Finding> Evaluate(const std::deque<NicReading>& window,
                              const HealthThresholds& t = HealthThresholds()) {
  return EvaluateNicWindow("mlx5_0", 1, window, t);
}

Mutation Storm(double rx_us, double tx_us, uint32_t priority = 3) {
  return [=](weft::v1::NicSample& s) {
    auto* pfc = s.add_pfc();
    pfc->set_priority(priority);
    pfc->mutable_rx_pause_duration_us()->set_per_second(rx_us);
    pfc->mutable_tx_pause_duration_us()->set_per_second(tx_us);
  };
}

TEST(HealthRulesTest, DefaultsMatchTheConfigDefaults) {
  const HealthThresholds from_config =
      HealthThresholds::FromConfig(DefaultControllerConfig().health());
  const HealthThresholds defaults;
  EXPECT_EQ(from_config.consecutive_samples, defaults.consecutive_samples);
  EXPECT_EQ(from_config.pfc_pause_share, defaults.pfc_pause_share);
  EXPECT_EQ(from_config.ecn_mark_ratio, defaults.ecn_mark_ratio);
  EXPECT_EQ(from_config.ecn_min_rcv_packets_per_s, defaults.ecn_min_rcv_packets_per_s);
  EXPECT_EQ(from_config.cnp_ignored_per_s, defaults.cnp_ignored_per_s);
  EXPECT_EQ(from_config.packet_seq_err_per_s, defaults.packet_seq_err_per_s);
  EXPECT_EQ(from_config.local_ack_timeout_err_per_s, defaults.local_ack_timeout_err_per_s);
  EXPECT_EQ(from_config.out_of_sequence_per_s, defaults.out_of_sequence_per_s);
  EXPECT_EQ(from_config.link_flaps_per_window, defaults.link_flaps_per_window);
}

TEST(HealthRulesTest, QuietWindowAndEmptyWindowFireNothing) {
  EXPECT_TRUE(Evaluate(Window(10)).empty());
  EXPECT_TRUE(Evaluate({}).empty());
}

TEST(HealthRulesTest, ReadingKeepsTheMostPausedPriority) {
  weft::v1::NicSample s = Quiet();
  Storm(300'000, 250'000, 4)(s);
  const NicReading r = ReadingFromSample(s, kT0);
  EXPECT_TRUE(r.pfc.has_pfc);
  EXPECT_EQ(r.pfc.rx_priority, 4u);
  EXPECT_DOUBLE_EQ(r.pfc.rx, 0.3);
  EXPECT_DOUBLE_EQ(r.pfc.tx, 0.25);
  EXPECT_DOUBLE_EQ(r.pfc.worst(), 0.3);
  // Rates for the node view come along.
  EXPECT_DOUBLE_EQ(r.rates.tx_gbps, 80.0);
  EXPECT_DOUBLE_EQ(r.rates.pfc_pause_us_per_s, 551'000);
}

TEST(HealthRulesTest, PfcStormNeedsConsecutiveSamplesAboveTheShare) {
  // One stormy reading is not enough with the default of two in a row.
  std::deque<NicReading> window = Window(5);
  Append(window, Storm(600'000, 200'000));
  EXPECT_TRUE(Evaluate(window).empty());

  Append(window, Storm(970'000, 470'000));
  std::vector<Finding> findings = Evaluate(window);
  ASSERT_EQ(findings.size(), 1u);
  const Finding& f = findings[0];
  EXPECT_EQ(f.rule, HealthRule::kPfcPauseStorm);
  EXPECT_EQ(HealthRuleName(f.rule), "pfc_pause_storm");
  EXPECT_EQ(f.device, "mlx5_0");
  EXPECT_EQ(f.port, 1u);
  EXPECT_DOUBLE_EQ(f.value, 0.97);  // the newest reading
  EXPECT_DOUBLE_EQ(f.threshold, 0.5);
  EXPECT_EQ(f.since, kT0 + absl::Seconds(5));  // the first reading of the run
  EXPECT_EQ(f.detail, "rx pause 97.0% of the time on priority 3 (threshold 50.0%)");
  EXPECT_EQ(DescribeFinding(f),
            "pfc_pause_storm on mlx5_0/1: rx pause 97.0% of the time on priority 3 "
            "(threshold 50.0%)");

  // A quiet reading ends the run at once.
  Append(window, [](weft::v1::NicSample&) {});
  EXPECT_TRUE(Evaluate(window).empty());
}

TEST(HealthRulesTest, PfcStormAtExactlyTheShareDoesNotFire) {
  EXPECT_TRUE(Evaluate(Window(3, Storm(500'000, 0))).empty());
  EXPECT_EQ(Evaluate(Window(3, Storm(500'001, 0))).size(), 1u);
}

TEST(HealthRulesTest, PfcStormJudgesEachDirectionOnItsOwn) {
  // 40% rx and 40% tx is not "paused 80% of the time": neither direction reaches 50%.
  EXPECT_TRUE(Evaluate(Window(3, Storm(400'000, 400'000))).empty());
  // A NIC pausing its switch 80% of the time (a stuck receiver) says tx.
  std::vector<Finding> findings = Evaluate(Window(3, Storm(10'000, 800'000)));
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_DOUBLE_EQ(findings[0].value, 0.8);
  EXPECT_EQ(findings[0].detail, "tx pause 80.0% of the time on priority 3 (threshold 50.0%)");
  // Both paused all the time read 100%, never 200%.
  findings = Evaluate(Window(3, Storm(1'000'000, 1'000'000)));
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_DOUBLE_EQ(findings[0].value, 1.0);
  EXPECT_EQ(findings[0].detail, "rx pause 100.0% of the time on priority 3 (threshold 50.0%)");
}

TEST(HealthRulesTest, InvalidRatesErrorsAndMissingPfcBreakTheRun) {
  // The middle reading is the first after a counter reset: its zeros are not "quiet",
  // but its stale per_second values must not count as "stormy" either.
  std::deque<NicReading> window;
  Append(window, Storm(900'000, 0));
  Append(window, [](weft::v1::NicSample& s) {
    Storm(900'000, 0)(s);
    s.set_rates_valid(false);
  });
  Append(window, Storm(900'000, 0));
  EXPECT_TRUE(Evaluate(window).empty());

  std::deque<NicReading> errored;
  Append(errored, Storm(900'000, 0));
  Append(errored, [](weft::v1::NicSample& s) {
    Storm(900'000, 0)(s);
    s.set_error("ethtool: No such device");
  });
  EXPECT_TRUE(Evaluate(errored).empty());

  // PFC off everywhere: nothing to judge.
  EXPECT_TRUE(Evaluate(Window(4, [](weft::v1::NicSample& s) { s.clear_pfc(); })).empty());

  // With one sample needed, a single valid stormy reading fires.
  HealthThresholds one;
  one.consecutive_samples = 1;
  EXPECT_EQ(Evaluate(window, one).size(), 1u);
}

TEST(HealthRulesTest, EcnMarkRatio) {
  auto marked = [](double ecn, double rcv) {
    return [=](weft::v1::NicSample& s) {
      s.mutable_congestion()->mutable_np_ecn_marked_roce_packets()->set_per_second(ecn);
      s.mutable_port_counters()->mutable_rcv_packets()->set_per_second(rcv);
    };
  };
  std::vector<Finding> findings = Evaluate(Window(2, marked(300'000, 2'000'000)));
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].rule, HealthRule::kEcnMarkRatio);
  EXPECT_DOUBLE_EQ(findings[0].value, 0.15);
  EXPECT_DOUBLE_EQ(findings[0].threshold, 0.1);
  EXPECT_THAT(findings[0].detail, HasSubstr("15.0% of received packets ECN-marked"));

  EXPECT_TRUE(Evaluate(Window(2, marked(200'000, 2'000'000))).empty());  // exactly 10%
  // A trickle of packets: the ratio is noise below ecn_min_rcv_packets_per_s.
  EXPECT_TRUE(Evaluate(Window(2, marked(500, 999))).empty());
  EXPECT_TRUE(Evaluate(Window(2, marked(500, 0))).empty());
  // A NIC without the congestion group is unknown, not "no marks" and not "all marks".
  EXPECT_TRUE(Evaluate(Window(4, [&](weft::v1::NicSample& s) {
                marked(300'000, 2'000'000)(s);
                s.clear_congestion();
              })).empty());
}

TEST(HealthRulesTest, CnpIgnoredFiresOnAnySustainedIncreaseByDefault) {
  auto ignored = [](double per_s) {
    return [=](weft::v1::NicSample& s) {
      s.mutable_congestion()->mutable_rp_cnp_ignored()->set_per_second(per_s);
    };
  };
  std::vector<Finding> findings = Evaluate(Window(3, ignored(0.5)));
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].rule, HealthRule::kCnpIgnored);
  EXPECT_DOUBLE_EQ(findings[0].value, 0.5);
  EXPECT_DOUBLE_EQ(findings[0].threshold, 0);
  EXPECT_EQ(findings[0].since, kT0);
  EXPECT_THAT(findings[0].detail, HasSubstr("congestion control"));

  // One blip is not sustained.
  std::deque<NicReading> blip = Window(3);
  Append(blip, ignored(4));
  EXPECT_TRUE(Evaluate(blip).empty());
  EXPECT_TRUE(Evaluate(Window(3, [&](weft::v1::NicSample& s) {
                ignored(4)(s);
                s.clear_congestion();
              })).empty());
}

TEST(HealthRulesTest, ACounterTheNicLacksKeepsItsRuleSilentWhileItsGroupIsThere) {
  // The congestion group is there (ECN marks) but rp_cnp_ignored is not: cnp_ignored,
  // whose threshold is 0, must not judge a missing counter as "0 ignored" or fire.
  ASSERT_TRUE(Quiet().has_congestion());
  ASSERT_FALSE(Quiet().congestion().has_rp_cnp_ignored());
  const NicReading r = ReadingFromSample(Quiet(), kT0);
  EXPECT_FALSE(r.cnp_ignored_per_s.has_value());
  EXPECT_TRUE(r.ecn_marked_per_s.has_value());
  // The retransmission group is there but empty: no counter, no rate rule.
  EXPECT_FALSE(r.packet_seq_err_per_s.has_value());
  EXPECT_TRUE(Evaluate(Window(5, [](weft::v1::NicSample& s) {
                s.mutable_retransmission()->mutable_duplicate_request()->set_per_second(1e6);
              })).empty());
  // link_downed missing: no flap count from it.
  EXPECT_TRUE(Evaluate(Window(5, [](weft::v1::NicSample& s) {
                s.mutable_port_counters()->clear_link_downed();
              })).empty());
}

TEST(HealthRulesTest, RetransmissionRulesEachWithItsOwnThreshold) {
  auto retrans = [](double seq, double ack, double oos) {
    return [=](weft::v1::NicSample& s) {
      auto* r = s.mutable_retransmission();
      r->mutable_packet_seq_err()->set_per_second(seq);
      r->mutable_local_ack_timeout_err()->set_per_second(ack);
      r->mutable_out_of_sequence()->set_per_second(oos);
    };
  };
  // At the thresholds: nothing.
  EXPECT_TRUE(Evaluate(Window(3, retrans(10, 1, 10))).empty());

  std::vector<Finding> all = Evaluate(Window(3, retrans(300, 150, 450)));
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].rule, HealthRule::kPacketSeqErr);
  EXPECT_DOUBLE_EQ(all[0].value, 300);
  EXPECT_DOUBLE_EQ(all[0].threshold, 10);
  EXPECT_EQ(all[0].detail, "packet_seq_err 300.0/s (threshold 10.0/s)");
  EXPECT_EQ(all[1].rule, HealthRule::kLocalAckTimeout);
  EXPECT_DOUBLE_EQ(all[1].value, 150);
  EXPECT_DOUBLE_EQ(all[1].threshold, 1);
  EXPECT_EQ(all[2].rule, HealthRule::kOutOfSequence);
  EXPECT_DOUBLE_EQ(all[2].value, 450);

  std::vector<Finding> ack_only = Evaluate(Window(3, retrans(0, 2, 0)));
  ASSERT_EQ(ack_only.size(), 1u);
  EXPECT_EQ(ack_only[0].rule, HealthRule::kLocalAckTimeout);

  // Missing group: unknown.
  EXPECT_TRUE(Evaluate(Window(3, [&](weft::v1::NicSample& s) {
                retrans(300, 150, 450)(s);
                s.clear_retransmission();
              })).empty());
}

TEST(HealthRulesTest, LinkDownReadsPortStateEvenWithoutValidRates) {
  auto down = [](weft::v1::NicSample& s) {
    s.set_port_state(weft::v1::PORT_STATE_DOWN);
    s.set_rates_valid(false);
  };
  std::deque<NicReading> window = Window(3);
  Append(window, down);
  EXPECT_TRUE(Evaluate(window).empty());
  Append(window, down);
  std::vector<Finding> findings = Evaluate(window);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].rule, HealthRule::kLinkDown);
  EXPECT_DOUBLE_EQ(findings[0].value, weft::v1::PORT_STATE_DOWN);
  EXPECT_DOUBLE_EQ(findings[0].threshold, weft::v1::PORT_STATE_ACTIVE);
  EXPECT_EQ(findings[0].detail, "port state DOWN (expected ACTIVE) for 2 readings");
  EXPECT_EQ(findings[0].since, kT0 + absl::Seconds(3));

  // ACTIVE_DEFER is up; an unreported state (0) is unknown.
  EXPECT_TRUE(Evaluate(Window(3, [](weft::v1::NicSample& s) {
                s.set_port_state(weft::v1::PORT_STATE_ACTIVE_DEFER);
              })).empty());
  EXPECT_TRUE(Evaluate(Window(3, [](weft::v1::NicSample& s) { s.clear_port_state(); }))
                  .empty());
}

TEST(HealthRulesTest, LinkFlapCountsLinkDownedIncreasesInTheWindow) {
  auto downed = [](uint64_t total, bool valid = true) {
    return [=](weft::v1::NicSample& s) {
      s.mutable_port_counters()->mutable_link_downed()->set_total(total);
      s.set_rates_valid(valid);
    };
  };
  std::deque<NicReading> window = Window(3);  // link_downed 3 throughout
  EXPECT_TRUE(Evaluate(window).empty());
  Append(window, downed(4));
  Append(window, downed(4));
  Append(window, downed(6));
  std::vector<Finding> findings = Evaluate(window);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].rule, HealthRule::kLinkFlap);
  EXPECT_DOUBLE_EQ(findings[0].value, 3);
  EXPECT_DOUBLE_EQ(findings[0].threshold, 0);
  EXPECT_EQ(findings[0].since, kT0 + absl::Seconds(3));
  EXPECT_EQ(findings[0].detail, "link went down 3 times in the last 6 readings (threshold 0)");

  HealthThresholds tolerant;
  tolerant.link_flaps_per_window = 3;
  EXPECT_TRUE(Evaluate(window, tolerant).empty());
  tolerant.link_flaps_per_window = 2;
  EXPECT_EQ(Evaluate(window, tolerant).size(), 1u);

  // The flaps age out of the window.
  Append(window, downed(6));
  while (window.size() > 2) window.pop_front();
  EXPECT_TRUE(Evaluate(window).empty()) << "6 -> 6 is no flap";

  // A reset (rates not valid) is not a flap, whatever the totals do.
  std::deque<NicReading> reset = Window(2);
  Append(reset, downed(9, /*valid=*/false));
  Append(reset, downed(9));
  EXPECT_TRUE(Evaluate(reset).empty());
}

TEST(HealthRulesTest, LinkFlapsCountedOnceOrSuppliedAgreeAndNeedNoWalk) {
  auto downed = [](uint64_t total, bool valid = true) {
    return [=](weft::v1::NicSample& s) {
      s.mutable_port_counters()->mutable_link_downed()->set_total(total);
      s.set_rates_valid(valid);
    };
  };
  std::deque<NicReading> window = Window(3);
  EXPECT_EQ(CountLinkFlaps(window).count, 0u);
  Append(window, downed(5));
  Append(window, downed(2, /*valid=*/false));  // a reset: no flap, whatever the totals
  Append(window, downed(3));
  const LinkFlaps flaps = CountLinkFlaps(window);
  EXPECT_EQ(flaps.count, 3u);  // 3 -> 5, then 2 -> 3
  EXPECT_EQ(flaps.first, kT0 + absl::Seconds(3));
  // Pairwise increases add up to the count, as a caller keeping a tally sums them.
  uint64_t tally = 0;
  for (size_t i = 1; i < window.size(); ++i) tally += LinkFlapIncrease(window[i - 1], window[i]);
  EXPECT_EQ(tally, flaps.count);

  const HealthThresholds defaults;
  const std::vector<Finding> walked = EvaluateNicWindow("mlx5_0", 1, window, defaults);
  const std::vector<Finding> supplied = EvaluateNicWindow("mlx5_0", 1, window, defaults, flaps);
  ASSERT_EQ(walked.size(), 1u);
  ASSERT_EQ(supplied.size(), 1u);
  EXPECT_EQ(supplied[0].rule, HealthRule::kLinkFlap);
  EXPECT_EQ(supplied[0].value, walked[0].value);
  EXPECT_EQ(supplied[0].since, walked[0].since);
  EXPECT_EQ(supplied[0].detail, walked[0].detail);
  // Supplied flaps are what the rule reads: none supplied, none found.
  EXPECT_TRUE(EvaluateNicWindow("mlx5_0", 1, window, defaults, LinkFlaps()).empty());
}

TEST(HealthRulesTest, NicUnreadableAfterConsecutiveErrors) {
  auto error = [](weft::v1::NicSample& s) {
    s.Clear();
    s.set_device("mlx5_0");
    s.set_port(1);
    s.set_error("open hw_counters: Permission denied");
  };
  std::deque<NicReading> window = Window(2);
  Append(window, error);
  EXPECT_TRUE(Evaluate(window).empty());
  Append(window, error);
  Append(window, error);
  std::vector<Finding> findings = Evaluate(window);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].rule, HealthRule::kNicUnreadable);
  EXPECT_DOUBLE_EQ(findings[0].value, 3);
  EXPECT_DOUBLE_EQ(findings[0].threshold, 2);
  EXPECT_EQ(findings[0].detail,
            "3 readings in a row failed: open hw_counters: Permission denied");
}

TEST(HealthRulesTest, SeveralRulesAtOnceComeInRuleOrder) {
  std::vector<Finding> findings = Evaluate(Window(2, [](weft::v1::NicSample& s) {
    s.set_port_state(weft::v1::PORT_STATE_INIT);
    Storm(800'000, 0)(s);
    s.mutable_retransmission()->mutable_out_of_sequence()->set_per_second(50);
  }));
  ASSERT_EQ(findings.size(), 3u);
  EXPECT_EQ(findings[0].rule, HealthRule::kPfcPauseStorm);
  EXPECT_EQ(findings[1].rule, HealthRule::kOutOfSequence);
  EXPECT_EQ(findings[2].rule, HealthRule::kLinkDown);
  EXPECT_THAT(findings[2].detail, HasSubstr("port state INIT"));
}

TEST(HealthRulesTest, FindingToProto) {
  Finding f;
  f.rule = HealthRule::kLinkFlap;
  f.device = "mlx5_3";
  f.port = 1;
  f.value = 2;
  f.threshold = 0;
  f.detail = "link went down 2 times";
  f.since = kT0;
  const weft::v1::Finding proto = f.ToProto();
  EXPECT_EQ(proto.rule(), "link_flap");
  EXPECT_EQ(proto.device(), "mlx5_3");
  EXPECT_EQ(proto.value(), 2);
  EXPECT_EQ(proto.since_us(), absl::ToUnixMicros(kT0));
  EXPECT_EQ(proto.detail(), "link went down 2 times");
}

TEST(HealthRulesTest, EveryRuleHasADistinctName) {
  std::set<std::string> names;
  for (HealthRule rule : kAllHealthRules) names.insert(std::string(HealthRuleName(rule)));
  EXPECT_EQ(names.size(), std::size(kAllHealthRules));
  EXPECT_EQ(names.count("unknown"), 0u);
}

}  // namespace
}  // namespace weft::controller
