#include "agent/probe/path_tracer.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "common/fake_clock.h"
#include "common/testing/metrics.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"

namespace weft::agent::probe {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::SizeIs;

// Records what is sent; the test queues the replies.
class FakeTraceTransport : public TraceTransport {
 public:
  struct Sent {
    ProbeFlow flow;
    uint64_t token;
    int ttl;
  };
  absl::Status SendTrace(const ProbeFlow& flow, uint64_t token, int ttl) override {
    absl::MutexLock lock(&mu_);
    sent_.push_back({flow, token, ttl});
    return absl::OkStatus();
  }
  std::vector<TraceReply> TakeTraceReplies() override {
    absl::MutexLock lock(&mu_);
    return std::exchange(replies_, {});
  }
  void Reply(TraceReply reply) {
    absl::MutexLock lock(&mu_);
    replies_.push_back(std::move(reply));
  }
  std::vector<Sent> TakeSent() {
    absl::MutexLock lock(&mu_);
    return std::exchange(sent_, {});
  }

 private:
  absl::Mutex mu_;
  std::vector<Sent> sent_;
  std::vector<TraceReply> replies_;
};

ProbeFlow Flow(uint16_t port, weft::v1::ProbeTransport transport = weft::v1::PROBE_TRANSPORT_UDP) {
  ProbeFlow flow;
  flow.peer_node = "gpu-b01";
  flow.peer_nic = "mlx5_0";
  flow.peer_address = "10.1.1.2";
  flow.peer_port = 7412;
  flow.source_nic = "mlx5_0";
  flow.source_address = "10.0.1.2";
  flow.source_port = port;
  flow.dscp = 26;
  flow.transport = transport;
  return flow;
}

class PathTracerTest : public ::testing::Test {
 protected:
  PathTracerTest() {
    options_.max_hops = 6;
    options_.traces_per_second = 2;
    options_.interval = absl::Seconds(10);
    options_.timeout = absl::Seconds(1);
  }
  FakeTraceTransport transport_;
  FakeClock clock_;
  prometheus::Registry registry_;
  PathTracerOptions options_;
};

TEST_F(PathTracerTest, TracesEachUdpFlowAtTheRateAndReportsTheHopsInOrder) {
  PathTracer tracer(&transport_, &clock_, options_, &registry_, "gpu-a01");
  tracer.SetFlows({Flow(49152), Flow(49153), Flow(49154, weft::v1::PROBE_TRANSPORT_RDMA_UD)});
  absl::Time now = clock_.Now();
  tracer.Tick(now);
  std::vector<FakeTraceTransport::Sent> sent = transport_.TakeSent();
  ASSERT_THAT(sent, SizeIs(6));  // one flow, TTL 1..6, at 2 traces a second
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(sent[i].flow.source_port, 49152);
    EXPECT_EQ(sent[i].ttl, i + 1);
  }
  const uint64_t first = sent[0].token;
  // Three routers, then the peer answers TTL 4 and above; out of order.
  transport_.Reply({first, 2, "10.100.0.1", false});
  transport_.Reply({first, 5, "", true});
  transport_.Reply({first, 1, "10.0.1.1", false});
  transport_.Reply({first, 4, "", true});
  tracer.Tick(now + absl::Milliseconds(100));
  EXPECT_THAT(tracer.TakeTraces(), IsEmpty());    // TTL 3 not heard yet
  EXPECT_THAT(transport_.TakeSent(), IsEmpty());  // the next flow waits its turn
  transport_.Reply({first, 3, "10.100.1.2", false});
  transport_.Reply({first + 100, 1, "192.0.2.1", false});  // no such trace: ignored
  tracer.Tick(now + absl::Milliseconds(200));
  std::vector<weft::v1::ProbePathTrace> traces = tracer.TakeTraces();
  ASSERT_THAT(traces, SizeIs(1));
  EXPECT_EQ(traces[0].peer_node(), "gpu-b01");
  EXPECT_EQ(traces[0].source_port(), 49152u);
  EXPECT_EQ(traces[0].dscp(), 26u);
  EXPECT_THAT(traces[0].hops(), ElementsAre("10.0.1.1", "10.100.0.1", "10.100.1.2"));
  EXPECT_TRUE(traces[0].reached());

  // Half a second later the second UDP flow; the UD one never.
  tracer.Tick(now + absl::Milliseconds(500));
  sent = transport_.TakeSent();
  ASSERT_THAT(sent, SizeIs(6));
  EXPECT_EQ(sent[0].flow.source_port, 49153);
  // Only the ToR answers (the path beyond drops it): reported cut short at the timeout.
  transport_.Reply({sent[0].token, 1, "10.0.1.1", false});
  tracer.Tick(now + absl::Milliseconds(1400));
  EXPECT_THAT(tracer.TakeTraces(), IsEmpty());
  tracer.Tick(now + absl::Milliseconds(1500));
  traces = tracer.TakeTraces();
  ASSERT_THAT(traces, SizeIs(1));
  EXPECT_THAT(traces[0].hops(), ElementsAre("10.0.1.1"));
  EXPECT_FALSE(traces[0].reached());
  EXPECT_THAT(transport_.TakeSent(), IsEmpty());

  // Each is traced again after the interval.
  tracer.Tick(now + absl::Seconds(10));
  sent = transport_.TakeSent();
  ASSERT_THAT(sent, SizeIs(6));
  EXPECT_EQ(sent[0].flow.source_port, 49152);
  EXPECT_EQ(tracer.traces_started(), 3u);
  auto count = [&](const char* result) {
    return MetricValue(registry_, "weft_agent_probe_traces_total",
                       {{"node", "gpu-a01"}, {"result", result}});
  };
  EXPECT_EQ(count("reached"), 1);
  EXPECT_EQ(count("incomplete"), 1);
  EXPECT_EQ(count("send_error"), 0);
}

TEST_F(PathTracerTest, ANewPinglistTracesAgainAndDropsTracesOfFlowsGone) {
  PathTracer tracer(&transport_, &clock_, options_, &registry_, "gpu-a01");
  tracer.SetFlows({Flow(49152)});
  absl::Time now = clock_.Now();
  tracer.Tick(now);
  const uint64_t token = transport_.TakeSent()[0].token;
  tracer.SetFlows({Flow(49153)});
  transport_.Reply({token, 1, "10.0.1.1", false});
  tracer.Tick(now + absl::Seconds(2));
  EXPECT_THAT(tracer.TakeTraces(), IsEmpty());  // 49152's trace was abandoned
  std::vector<FakeTraceTransport::Sent> sent = transport_.TakeSent();
  ASSERT_THAT(sent, SizeIs(6));
  EXPECT_EQ(sent[0].flow.source_port, 49153);
}

TEST_F(PathTracerTest, AFlowThatLosesIsTracedAgainSoonButNotTwiceWithinMinRetrace) {
  options_.interval = absl::Minutes(5);
  options_.min_retrace = absl::Seconds(10);
  PathTracer tracer(&transport_, &clock_, options_, &registry_, "gpu-a01");
  tracer.SetFlows({Flow(49152), Flow(49153)});
  absl::Time now = clock_.Now();
  tracer.Tick(now);
  tracer.Tick(now + absl::Milliseconds(500));
  ASSERT_THAT(transport_.TakeSent(), SizeIs(12));  // both traced once
  weft::v1::ProbeWindow lossy;
  lossy.set_peer_node("gpu-b01");
  lossy.set_peer_nic("mlx5_0");
  lossy.set_peer_address("10.1.1.2");
  lossy.set_source_address("10.0.1.2");
  lossy.set_source_port(49153);
  lossy.set_dscp(26);
  lossy.set_lost(3);
  tracer.TraceSoon(lossy);
  tracer.Tick(now + absl::Seconds(5));
  EXPECT_THAT(transport_.TakeSent(), IsEmpty());  // traced 4.5 s ago
  tracer.Tick(now + absl::Milliseconds(10500));
  std::vector<FakeTraceTransport::Sent> sent = transport_.TakeSent();
  ASSERT_THAT(sent, SizeIs(6));
  EXPECT_EQ(sent[0].flow.source_port, 49153);
  // A window of a flow it does not trace changes nothing.
  lossy.set_source_port(50000);
  tracer.TraceSoon(lossy);
  tracer.Tick(now + absl::Seconds(30));
  EXPECT_THAT(transport_.TakeSent(), IsEmpty());
}

TEST_F(PathTracerTest, StartTicksOnTheClock) {
  PathTracer tracer(&transport_, &clock_, options_, &registry_, "gpu-a01");
  tracer.SetFlows({Flow(49152)});
  tracer.Start();
  ASSERT_TRUE(clock_.AwaitWaiters(1));
  EXPECT_THAT(transport_.TakeSent(), SizeIs(6));
  tracer.Stop();
}

}  // namespace
}  // namespace weft::agent::probe
