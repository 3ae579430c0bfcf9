#include "agent/probe/probe_windows.h"

#include <vector>

#include "gtest/gtest.h"

namespace weft::agent::probe {
namespace {

const absl::Time kOrigin = absl::FromUnixSeconds(1'800'000'000);

ProbeFlow Flow(uint16_t source_port) {
  ProbeFlow flow;
  flow.peer_node = "gpu-b01";
  flow.peer_nic = "mlx5_0";
  flow.peer_address = "10.0.1.1";
  flow.peer_port = 7412;
  flow.source_port = source_port;
  flow.dscp = 26;
  return flow;
}

ProbeMeasurement Answer(double rtt_us, TimestampSource source = TimestampSource::kSoftware) {
  ProbeMeasurement m;
  m.network_rtt = absl::Microseconds(rtt_us);
  m.sender_host_delay = absl::Microseconds(rtt_us / 10);
  m.responder_host_delay = absl::Microseconds(rtt_us / 5);
  m.timestamps = source;
  m.dscp_at_responder = 26;
  return m;
}

TEST(PercentileTest, NearestRank) {
  std::vector<double> v;
  for (int i = 100; i >= 1; --i) v.push_back(i);
  EXPECT_EQ(Percentile(&v, 50), 50);
  EXPECT_EQ(Percentile(&v, 99), 99);
  EXPECT_EQ(Percentile(&v, 100), 100);
  std::vector<double> one = {7};
  EXPECT_EQ(Percentile(&one, 99), 7);
  std::vector<double> none;
  EXPECT_EQ(Percentile(&none, 50), 0);
}

TEST(ProbeWindowsTest, SummarisesEachFlowPerWindowAndClosesOnlyResolvedWindows) {
  ProbeWindows windows(absl::Seconds(30), kOrigin);
  // Flow 1 in window 0: 100 probes, RTT 1..100 µs except #37 lost.
  for (int i = 1; i <= 100; ++i) {
    const absl::Time at = kOrigin + absl::Milliseconds(i * 100);
    windows.Sent(Flow(50001), at);
    if (i == 37) {
      windows.Lost(Flow(50001), at);
    } else {
      windows.Answered(Flow(50001), at, Answer(i));
    }
  }
  // Flow 2: one probe in window 1, re-marked on the way (arrived as DSCP 0).
  ProbeMeasurement remarked = Answer(20, TimestampSource::kHardware);
  remarked.dscp_at_responder = 0;
  windows.Sent(Flow(50002), kOrigin + absl::Seconds(31));
  windows.Answered(Flow(50002), kOrigin + absl::Seconds(31), remarked);

  // Window 0 ends at 30 s: not closed before then.
  EXPECT_TRUE(windows.TakeClosed(kOrigin + absl::Seconds(29), 4).empty());
  std::vector<weft::v1::ProbeWindow> closed = windows.TakeClosed(kOrigin + absl::Seconds(30), 4);
  ASSERT_EQ(closed.size(), 1u);
  const weft::v1::ProbeWindow& w = closed[0];
  EXPECT_EQ(w.source_port(), 50001u);
  EXPECT_EQ(w.peer_node(), "gpu-b01");
  EXPECT_EQ(w.sent(), 100u);
  EXPECT_EQ(w.lost(), 1u);
  EXPECT_DOUBLE_EQ(w.rtt_min_us(), 1);
  EXPECT_DOUBLE_EQ(w.rtt_p50_us(), 51);  // 99 answers without 37: the 50th is 51
  EXPECT_DOUBLE_EQ(w.rtt_p99_us(), 100);  // rank ceil(0.99 · 99) = 99: the largest
  EXPECT_EQ(w.window_start_us(), absl::ToUnixMicros(kOrigin));
  EXPECT_EQ(w.window_end_us(), absl::ToUnixMicros(kOrigin + absl::Seconds(30)));
  EXPECT_EQ(w.pinglist_version(), 4u);
  EXPECT_EQ(w.timestamps(), "software");
  EXPECT_EQ(w.dscp_mismatches(), 0u);

  std::vector<weft::v1::ProbeWindow> rest = windows.TakeAll(5);
  ASSERT_EQ(rest.size(), 1u);
  EXPECT_EQ(rest[0].source_port(), 50002u);
  EXPECT_EQ(rest[0].dscp_mismatches(), 1u);
  EXPECT_EQ(rest[0].timestamps(), "hardware");
  EXPECT_EQ(rest[0].window_start_us(), absl::ToUnixMicros(kOrigin + absl::Seconds(30)));
  EXPECT_TRUE(windows.TakeAll(5).empty());
}

TEST(ProbeWindowsTest, ClosedWindowsComeInTimeThenFlowOrderAndLaterOnesStayOpen) {
  ProbeWindows windows(absl::Seconds(1), kOrigin);
  // Three windows of two flows, sent out of flow order.
  for (int w = 0; w < 3; ++w) {
    windows.Sent(Flow(50002), kOrigin + absl::Seconds(w) + absl::Milliseconds(100));
    windows.Sent(Flow(50001), kOrigin + absl::Seconds(w) + absl::Milliseconds(200));
  }
  std::vector<weft::v1::ProbeWindow> closed = windows.TakeClosed(kOrigin + absl::Seconds(2), 1);
  ASSERT_EQ(closed.size(), 4u);
  const int64_t start0 = absl::ToUnixMicros(kOrigin);
  const int64_t start1 = absl::ToUnixMicros(kOrigin + absl::Seconds(1));
  EXPECT_EQ(closed[0].window_start_us(), start0);
  EXPECT_EQ(closed[0].source_port(), 50001u);
  EXPECT_EQ(closed[1].window_start_us(), start0);
  EXPECT_EQ(closed[1].source_port(), 50002u);
  EXPECT_EQ(closed[2].window_start_us(), start1);
  EXPECT_EQ(closed[3].window_start_us(), start1);
  EXPECT_TRUE(windows.TakeClosed(kOrigin + absl::Seconds(2), 1).empty()) << "taken once";
  const std::vector<weft::v1::ProbeWindow> rest = windows.TakeAll(1);
  ASSERT_EQ(rest.size(), 2u);
  EXPECT_EQ(rest[0].window_start_us(), absl::ToUnixMicros(kOrigin + absl::Seconds(2)));
}

TEST(ProbeWindowsTest, AllLostWindowHasNoRttAndKeepsTheError) {
  ProbeWindows windows(absl::Seconds(10), kOrigin);
  windows.Sent(Flow(50003), kOrigin + absl::Seconds(1));
  windows.Lost(Flow(50003), kOrigin + absl::Seconds(1));
  windows.Failed(Flow(50004), kOrigin + absl::Seconds(2), "bind 0.0.0.0:50004: in use");
  std::vector<weft::v1::ProbeWindow> closed = windows.TakeClosed(kOrigin + absl::Seconds(10), 1);
  ASSERT_EQ(closed.size(), 2u);
  EXPECT_EQ(closed[0].lost(), 1u);
  EXPECT_FALSE(closed[0].has_rtt_p50_us());
  EXPECT_EQ(closed[1].sent(), 0u);
  EXPECT_EQ(closed[1].error(), "bind 0.0.0.0:50004: in use");
}

}  // namespace
}  // namespace weft::agent::probe
