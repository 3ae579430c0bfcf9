#include "agent/agent.h"

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "agent/controller_client.h"
#include "agent/health_server.h"
#include "common/testing/metrics.h"
#include "agent/sim_backend.h"
#include "agent/probe/pingmesh.h"
#include "agent/sim_faults.h"
#include "common/fake_clock.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server.h"
#include "grpcpp/server_builder.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/grpc/health/v1/health.grpc.pb.h"
#include "proto/weft/v1/agent.grpc.pb.h"

namespace weft::agent {
namespace {

using weft::v1::AgentMessage;
using weft::v1::ControllerMessage;

constexpr absl::Duration kWait = absl::Seconds(10);  // generous: a loaded CI machine

// An in-process controller: grants increasing epochs, records what agents send, and
// can fence a stream (ABORTED) or push a desired state on request.
class FakeController : public weft::v1::AgentService::Service {
 public:
  struct Batch {
    weft::v1::TelemetryBatch batch;
    int stream;  // index of the stream (hello) it arrived on
  };

  grpc::Status Register(grpc::ServerContext*, const weft::v1::RegisterRequest* request,
                        weft::v1::RegisterResponse* response) override {
    absl::MutexLock lock(&mu_);
    registers_.push_back(*request);
    const uint64_t epoch = std::max(next_epoch_, request->last_session_epoch() + 1);
    next_epoch_ = epoch + 1;
    granted_.push_back(epoch);
    response->set_session_epoch(epoch);
    response->set_telemetry_interval_ms(1000);
    response->set_controller_version("fake");
    return grpc::Status::OK;
  }

  grpc::Status Connect(grpc::ServerContext*,
                       grpc::ServerReaderWriter<ControllerMessage, AgentMessage>* stream) override {
    AgentMessage message;
    int index;
    {
      if (!stream->Read(&message)) return grpc::Status::OK;
      absl::MutexLock lock(&mu_);
      first_messages_.push_back(message);
      index = static_cast<int>(first_messages_.size()) - 1;
    }
    int batches_here = 0;
    while (true) {
      std::vector<ControllerMessage> to_send;
      bool stalled = false;
      {
        absl::MutexLock lock(&mu_);
        if (fence_after_batches_ > 0 && batches_here >= fence_after_batches_) {
          if (!fence_every_session_) fence_after_batches_ = 0;
          return grpc::Status(grpc::StatusCode::ABORTED, "fenced by a newer session");
        }
        // While reads stall (a controller too busy to read), pushes still go out.
        auto writable = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
          return !stall_reads_ || !pending_.empty();
        };
        mu_.Await(absl::Condition(&writable));
        to_send.swap(pending_);
        stalled = stall_reads_;
      }
      for (const ControllerMessage& m : to_send) stream->Write(m);
      if (stalled) continue;
      if (!stream->Read(&message)) return grpc::Status::OK;
      absl::MutexLock lock(&mu_);
      if (message.has_telemetry()) {
        batches_.push_back({message.telemetry(), index});
        ++batches_here;
      } else if (message.has_desired_state_ack()) {
        acks_.push_back(message.desired_state_ack());
      } else {
        unexpected_.push_back(message);
      }
    }
  }

  // Waits until `done` holds over the recorded state (or `timeout` passes).
  bool WaitFor(const std::function<bool(FakeController&)>& done, absl::Duration timeout = kWait) {
    absl::MutexLock lock(&mu_);
    auto cond = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return done(*this); };
    return mu_.AwaitWithTimeout(absl::Condition(&cond), timeout);
  }

  // Fences the next stream (or, with `every_session`, each one) after `n` batches.
  void FenceAfterBatches(int n, bool every_session = false) {
    absl::MutexLock lock(&mu_);
    fence_after_batches_ = n;
    fence_every_session_ = every_session;
  }
  void Push(const ControllerMessage& message) {
    absl::MutexLock lock(&mu_);
    pending_.push_back(message);
  }
  // Stops (true) or resumes reading the agents' streams; the agent's writes back up.
  void StallReads(bool stall) {
    absl::MutexLock lock(&mu_);
    stall_reads_ = stall;
  }

  // Read these under WaitFor's lock or after the agent stopped.
  std::vector<weft::v1::RegisterRequest> registers_;
  std::vector<uint64_t> granted_;
  std::vector<AgentMessage> first_messages_;
  std::vector<Batch> batches_;
  std::vector<weft::v1::DesiredStateAck> acks_;
  std::vector<AgentMessage> unexpected_;
  absl::Mutex mu_;

 private:
  uint64_t next_epoch_ = 100;
  int fence_after_batches_ = 0;
  bool fence_every_session_ = false;
  bool stall_reads_ = false;
  std::vector<ControllerMessage> pending_;
};

// Passes readings through, except that one NIC cannot be read.
class OneNicFailsBackend : public NicBackend {
 public:
  OneNicFailsBackend(NicBackend* inner, std::string failing)
      : inner_(inner), failing_(std::move(failing)) {}
  absl::StatusOr<NodeInventory> Discover() override { return inner_->Discover(); }
  absl::StatusOr<std::vector<RawNicReading>> ReadCounters() override {
    absl::StatusOr<std::vector<RawNicReading>> readings = inner_->ReadCounters();
    if (readings.ok()) {
      for (RawNicReading& r : *readings) {
        if (r.device == failing_) r.error = "hw_counters/np_cnp_sent: Permission denied";
      }
    }
    return readings;
  }

 private:
  NicBackend* inner_;
  std::string failing_;
};

// Passes readings through, with `device` lacking two counters while `lacking` is set.
class CountersMissingBackend : public NicBackend {
 public:
  CountersMissingBackend(NicBackend* inner, std::string device)
      : inner_(inner), device_(std::move(device)) {}
  absl::StatusOr<NodeInventory> Discover() override { return inner_->Discover(); }
  absl::StatusOr<std::vector<RawNicReading>> ReadCounters() override {
    absl::StatusOr<std::vector<RawNicReading>> readings = inner_->ReadCounters();
    if (readings.ok() && lacking) {
      for (RawNicReading& r : *readings) {
        if (r.device != device_) continue;
        r.counters.symbol_error.reset();
        r.counters.port_xmit_wait.reset();
        r.missing_counters = {"port_xmit_wait", "symbol_error: Permission denied"};
      }
    }
    return readings;
  }
  std::atomic<bool> lacking{true};

 private:
  NicBackend* inner_;
  std::string device_;
};

int CountSubstrings(const std::string& text, const std::string& needle) {
  int count = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) {
    ++count;
  }
  return count;
}

class AgentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(&controller_);
    // A fixed 64 KiB stream window (no BDP growth), so a controller that stops reading
    // pushes back on the agent after a few dozen batches, as a congested one would.
    builder.AddChannelArgument(GRPC_ARG_HTTP2_BDP_PROBE, 0);
    builder.AddChannelArgument(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, 65536);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    controller_address_ = absl::StrCat("127.0.0.1:", port);

    config_.set_node_name("node-7");
    config_.set_rack("rack-2");
    config_.set_pod("pod-1");
    config_.set_controller_address(controller_address_);
    config_.set_interval_ms(50);
    config_.set_backend("simulated");
    weft::v1::SimulatedBackendConfig* sim = config_.mutable_simulated();
    sim->set_nics(4);
    sim->set_gpus(2);
    sim->set_link_speed_gbps(400);
    sim->set_traffic_level(0.5);
    sim->set_seed(1);
    config_.mutable_reconnect()->set_initial_backoff_ms(10);
    config_.mutable_reconnect()->set_max_backoff_ms(100);
  }

  void TearDown() override {
    if (agent_) agent_->Stop();
    agent_.reset();
    if (server_) server_->Shutdown(std::chrono::system_clock::now());
  }

  // Builds the agent from config_ (call after adjusting it) and starts it.
  // `wrap`, when given, puts a decorator between the agent and the simulated backend.
  void StartAgent(const std::function<std::unique_ptr<NicBackend>(NicBackend*)>& wrap = nullptr) {
    backend_ = SimBackend::Create(config_.simulated(), config_.node_name(), &clock_).value();
    if (wrap) wrapper_ = wrap(backend_.get());
    GrpcControllerClientOptions options;
    options.address = config_.controller_address();
    options.register_timeout = absl::Seconds(2);
    options.min_reconnect_backoff = absl::Milliseconds(10);
    options.max_reconnect_backoff = absl::Milliseconds(100);
    client_ = std::make_unique<GrpcControllerClient>(options);
    // The simulated connection faults, as the composition root applies them.
    faulty_client_ = WrapForSimulatedFaults(config_, client_.get());
    agent_ = std::make_unique<Agent>(config_, wrapper_ ? wrapper_.get() : backend_.get(),
                                     faulty_client_ ? faulty_client_.get() : client_.get(),
                                     &clock_, &registry_, health_.get(), pingmesh_.get());
    ASSERT_TRUE(agent_->Start().ok());
  }

  // Runs the agent on the FakeClock until `done` holds over what the controller has
  // recorded: each step lets the agent reach its next wait on the clock (the next
  // interval, or the end of a backoff) and moves the clock to that wait's deadline.
  // A step waits for the writer to send what was collected, so that stepping faster
  // than gRPC delivers never overflows the agent's queue.
  bool StepUntil(const std::function<bool(FakeController&)>& done, int max_steps = 1000) {
    for (int step = 0; step < max_steps; ++step) {
      if (controller_.WaitFor(done, absl::ZeroDuration())) return true;
      if (!clock_.AwaitWaiters(1, kWait)) break;
      AwaitWritesOrSessionEnd();
      if (!clock_.AdvanceToNextDeadline(kWait)) break;
    }
    return controller_.WaitFor(done);
  }

  // Moves the clock over `intervals` of the agent's waits, not waiting for the writer.
  void Step(int intervals) {
    for (int i = 0; i < intervals; ++i) ASSERT_TRUE(clock_.AdvanceToNextDeadline(kWait));
  }

  // Waits (real time: this is gRPC's work) until every batch collected was sent or
  // dropped, or the agent is out of session.
  void AwaitWritesOrSessionEnd() {
    const absl::Time deadline = absl::Now() + kWait;
    while (absl::Now() < deadline && agent_->registered()) {
      const double collected = Metric("weft_agent_collection_duration_seconds_count").value_or(0);
      const double gone = Metric("weft_agent_telemetry_batches_sent_total").value_or(0) +
                          Metric("weft_agent_telemetry_dropped_total").value_or(0);
      if (gone >= collected) return;
      absl::SleepFor(absl::Milliseconds(1));
    }
  }

  // Stops the agent and returns how long that took.
  absl::Duration TimedStop() {
    const absl::Time start = absl::Now();
    agent_->Stop();
    return absl::Now() - start;
  }

  std::optional<double> Metric(absl::string_view name,
                               const std::map<std::string, std::string>& labels = {}) {
    return MetricValue(registry_, name, labels);
  }

  FakeController controller_;
  std::unique_ptr<grpc::Server> server_;
  std::string controller_address_;
  weft::v1::AgentConfig config_;
  // The agent's loop, backoff and the simulated counters all run on it.
  FakeClock clock_;
  prometheus::Registry registry_;
  std::unique_ptr<HealthServer> health_;
  std::unique_ptr<SimBackend> backend_;
  std::unique_ptr<NicBackend> wrapper_;
  std::unique_ptr<GrpcControllerClient> client_;
  std::unique_ptr<ControllerClient> faulty_client_;
  std::unique_ptr<probe::Pingmesh> pingmesh_;  // declared before the agent that uses it
  std::unique_ptr<Agent> agent_;
};

// A free UDP port on loopback (bound by a responder, then released).
uint16_t FreeUdpPort() {
  absl::StatusOr<std::unique_ptr<probe::UdpResponder>> taken =
      probe::UdpResponder::Start("127.0.0.1", 0);
  return taken.ok() ? (*taken)->port() : 0;
}

// Pingmesh through the agent: the responder's port is advertised at Register, a
// pinglist pushed down the stream is probed (here, the agent's own responder over real
// UDP on loopback) and its windows come up in the telemetry batches.
TEST_F(AgentTest, AppliesAPushedPinglistAndReportsProbeWindowsInTelemetry) {
  const uint16_t responder_port = FreeUdpPort();
  const uint16_t source_port = FreeUdpPort();
  ASSERT_NE(responder_port, 0);
  ASSERT_NE(source_port, 0);
  weft::v1::ProbeConfig* probe = config_.mutable_probe();
  probe->set_udp_port(responder_port);
  probe->set_bind_address("127.0.0.1");
  probe->set_max_probes_per_second(1000);
  probe->set_max_nic_share(0.01);
  probe->set_max_cpu_share(0.5);
  absl::StatusOr<std::unique_ptr<probe::Pingmesh>> pingmesh =
      probe::Pingmesh::Create(config_, &clock_, &registry_);
  ASSERT_TRUE(pingmesh.ok()) << pingmesh.status();
  pingmesh_ = *std::move(pingmesh);
  StartAgent();
  ASSERT_TRUE(StepUntil([](FakeController& c) { return c.batches_.size() >= 1; }));
  {
    absl::MutexLock lock(&controller_.mu_);
    EXPECT_EQ(controller_.registers_[0].node().probe_udp_port(), responder_port);
    EXPECT_EQ(controller_.batches_[0].batch.pinglist_version(), 0u);
  }

  ControllerMessage push;
  weft::v1::Pinglist* list = push.mutable_pinglist();
  list->set_version(5);
  list->set_window_ms(1000);
  list->set_timeout_ms(5000);
  weft::v1::ProbePeer* peer = list->add_peers();
  peer->set_node("node-7");
  peer->set_address("127.0.0.1");
  peer->set_udp_port(responder_port);
  peer->set_source_address("127.0.0.1");
  peer->add_source_ports(source_port);
  peer->set_dscp(26);
  peer->set_probes_per_second(20);
  controller_.Push(push);
  auto windows_in = [](FakeController& c) {
    std::vector<std::pair<weft::v1::ProbeWindow, uint64_t>> windows;  // with the batch's version
    for (const FakeController::Batch& b : c.batches_) {
      for (const weft::v1::ProbeWindow& w : b.batch.probe_windows()) {
        windows.emplace_back(w, b.batch.pinglist_version());
      }
    }
    return windows;
  };
  // The first window is cut short by the list's arrival; the second is whole.
  ASSERT_TRUE(StepUntil([&](FakeController& c) { return windows_in(c).size() >= 2; }, 2000));
  absl::MutexLock lock(&controller_.mu_);
  const auto windows = windows_in(controller_);
  const weft::v1::ProbeWindow& w = windows[1].first;
  SCOPED_TRACE(w.ShortDebugString());
  EXPECT_EQ(windows[1].second, 5u);
  EXPECT_EQ(w.peer_node(), "node-7");
  EXPECT_EQ(w.source_port(), source_port);
  EXPECT_EQ(w.pinglist_version(), 5u);
  // 20/s over a 1 s window. Steps move the clock once either thread waits on it, so
  // one step can pass a probe's due time: it goes out late and the flow's grid moves
  // with it, which can drop one probe from a window or move one into the next
  // (prober_test counts exactly, with the prober alone on the clock).
  EXPECT_GE(w.sent(), 18u);
  EXPECT_LE(w.sent(), 21u);
  EXPECT_EQ(w.lost(), 0u);
  EXPECT_GT(w.rtt_p50_us(), 0);
  EXPECT_EQ(w.dscp_mismatches(), 0u);
  EXPECT_EQ(w.window_start_us(), windows[0].first.window_end_us());
  EXPECT_EQ(w.window_end_us() - w.window_start_us(), 1'000'000);
  EXPECT_GE(Metric("weft_agent_probes_sent_total", {{"node", "node-7"}}).value_or(0), 19.0);
  EXPECT_EQ(Metric("weft_agent_pinglists_total", {{"node", "node-7"}, {"result", "applied"}}),
            1.0);
}

TEST_F(AgentTest, RegistersStreamsTelemetryAtTheIntervalAndStopsPromptly) {
  StartAgent();
  ASSERT_TRUE(StepUntil([](FakeController& c) { return c.batches_.size() >= 8; }));
  ASSERT_TRUE(agent_->registered());
  EXPECT_EQ(Metric("weft_agent_registered"), 1.0);
  const absl::Duration stop_took = TimedStop();
  EXPECT_LT(stop_took, absl::Seconds(1));
  EXPECT_FALSE(agent_->registered());
  EXPECT_EQ(Metric("weft_agent_registered"), 0.0);

  absl::MutexLock lock(&controller_.mu_);
  // Register: identity, inventory, first epoch.
  ASSERT_EQ(controller_.registers_.size(), 1u);
  const weft::v1::RegisterRequest& reg = controller_.registers_[0];
  EXPECT_EQ(reg.last_session_epoch(), 0u);
  EXPECT_EQ(reg.node().name(), "node-7");
  EXPECT_EQ(reg.node().rack(), "rack-2");
  EXPECT_EQ(reg.node().pod(), "pod-1");
  EXPECT_EQ(reg.node().agent_version(), kAgentVersion);
  ASSERT_EQ(reg.node().nics_size(), 4);
  EXPECT_EQ(reg.node().nics(3).device(), "mlx5_3");
  EXPECT_EQ(reg.node().nics(0).speed_mbps(), 400000u);
  ASSERT_EQ(reg.node().gpus_size(), 2);
  EXPECT_EQ(reg.node().gpus(1).closest_nic(), "mlx5_2");

  // The stream opens with a hello carrying the granted epoch.
  ASSERT_EQ(controller_.first_messages_.size(), 1u);
  ASSERT_TRUE(controller_.first_messages_[0].has_hello());
  EXPECT_EQ(controller_.first_messages_[0].hello().node_name(), "node-7");
  EXPECT_EQ(controller_.first_messages_[0].hello().session_epoch(), controller_.granted_[0]);
  EXPECT_EQ(agent_->highest_epoch(), controller_.granted_[0]);

  // One batch per interval with every NIC; rates from the second batch on.
  const auto& batches = controller_.batches_;
  ASSERT_GE(batches.size(), 8u);
  for (size_t i = 0; i < batches.size(); ++i) {
    const weft::v1::TelemetryBatch& b = batches[i].batch;
    ASSERT_EQ(b.samples_size(), 4) << "batch " << i;
    for (int n = 0; n < 4; ++n) {
      const weft::v1::NicSample& s = b.samples(n);
      EXPECT_EQ(s.device(), absl::StrCat("mlx5_", n));
      EXPECT_EQ(s.port(), 1u);
      EXPECT_TRUE(s.error().empty());
      EXPECT_EQ(s.rates_valid(), i > 0) << "batch " << i;
      if (i == 0) continue;
      // 0.5 ± 0.25 of 400 Gb/s.
      const double tx = s.port_counters().xmit_bytes().per_second();
      EXPECT_GT(tx, 0.2 * 50e9) << "batch " << i;
      EXPECT_LT(tx, 0.8 * 50e9) << "batch " << i;
      EXPECT_GE(s.port_counters().xmit_bytes().total(),
                batches[i - 1].batch.samples(n).port_counters().xmit_bytes().total());
    }
    // Collected exactly one interval apart on the agent's clock.
    if (i > 0) EXPECT_EQ(b.collected_at_us() - batches[i - 1].batch.collected_at_us(), 50'000);
  }

  // The counter moves once the write completes, which may be just after the controller
  // has the batch: the newest one may not be counted yet.
  EXPECT_GE(Metric("weft_agent_telemetry_batches_sent_total").value_or(0),
            static_cast<double>(batches.size() - 1));
  EXPECT_EQ(Metric("weft_agent_telemetry_send_errors_total"), 0.0);
  EXPECT_EQ(Metric("weft_agent_reconnects_total"), 0.0);
  // NIC series carry the netdev and PCI address the node registered with.
  const weft::v1::Nic& nic0 = controller_.registers_.front().node().nics(0);
  EXPECT_GT(Metric("weft_nic_port_xmit_bytes_total", {{"node", "node-7"},
                                                      {"device", "mlx5_0"},
                                                      {"port", "1"},
                                                      {"netdev", nic0.netdev()},
                                                      {"pci", nic0.pci_address()}})
                .value_or(0),
            0.0);
  EXPECT_TRUE(controller_.unexpected_.empty());
}

TEST_F(AgentTest, ReregistersWithHigherEpochAfterTheStreamIsFenced) {
  controller_.FenceAfterBatches(3);
  StartAgent();
  ASSERT_TRUE(StepUntil([](FakeController& c) {
    int on_second = 0;
    for (const auto& b : c.batches_) on_second += b.stream == 1;
    return on_second >= 3;
  }));
  agent_->Stop();

  absl::MutexLock lock(&controller_.mu_);
  ASSERT_EQ(controller_.registers_.size(), 2u);
  const uint64_t first = controller_.granted_[0];
  const uint64_t second = controller_.granted_[1];
  EXPECT_EQ(controller_.registers_[1].last_session_epoch(), first);
  EXPECT_GT(second, first);
  // Full state again: the whole inventory.
  EXPECT_EQ(controller_.registers_[1].node().nics_size(), 4);
  EXPECT_EQ(controller_.registers_[1].node().gpus_size(), 2);
  ASSERT_EQ(controller_.first_messages_.size(), 2u);
  EXPECT_EQ(controller_.first_messages_[1].hello().session_epoch(), second);
  EXPECT_EQ(agent_->highest_epoch(), second);
  EXPECT_EQ(Metric("weft_agent_reconnects_total"), 1.0);
  // Rates carry on across the reconnect: the NIC counters did not reset.
  for (const auto& b : controller_.batches_) {
    if (b.stream == 1) EXPECT_TRUE(b.batch.samples(0).rates_valid());
  }
}

TEST_F(AgentTest, RepeatedFencingBacksOffInsteadOfFlapping) {
  // Each session lives two intervals, then is fenced, as when two agents share a name.
  controller_.FenceAfterBatches(2, /*every_session=*/true);
  ::testing::internal::CaptureStderr();
  StartAgent();
  ASSERT_TRUE(StepUntil(
      [](FakeController& c) { return c.registers_.size() >= 6 && c.batches_.size() >= 11; }));
  agent_->Stop();
  const std::string log = ::testing::internal::GetCapturedStderr();
  // The k-th retry waits 10 ms doubling, capped at 100 ms, jittered into [base/2, base]:
  // the 5th is 50-100 ms. Had the backoff started over after each healthy-looking
  // session, every one would be 5-10 ms.
  std::vector<int64_t> retries_ms;
  for (absl::string_view rest = log;;) {
    const size_t at = rest.find("retry_in_ms=");
    if (at == absl::string_view::npos) break;
    rest.remove_prefix(at + strlen("retry_in_ms="));
    int64_t ms = 0;
    while (!rest.empty() && absl::ascii_isdigit(rest.front())) {
      ms = ms * 10 + (rest.front() - '0');
      rest.remove_prefix(1);
    }
    retries_ms.push_back(ms);
  }
  ASSERT_GE(retries_ms.size(), 5u) << log;
  for (size_t k = 0; k < 5; ++k) {
    const int64_t base = std::min<int64_t>(10 << k, 100);
    EXPECT_GE(retries_ms[k], base / 2) << "retry " << k + 1;
    EXPECT_LE(retries_ms[k], base) << "retry " << k + 1;
  }
  absl::MutexLock lock(&controller_.mu_);
  for (size_t i = 1; i < controller_.registers_.size(); ++i) {
    EXPECT_EQ(controller_.registers_[i].last_session_epoch(), controller_.granted_[i - 1]);
  }
}

ControllerMessage DesiredStatePush(uint64_t version) {
  ControllerMessage push;
  push.mutable_desired_state()->set_node_name("node-7");
  push.mutable_desired_state()->set_version(version);
  push.mutable_desired_state()->set_nonce(absl::StrCat("n-", version));
  push.mutable_desired_state()->mutable_dcqcn()->set_rp_ai_rate(10);
  return push;
}

// Reads rp_ai_rate of mlx5_1 as "7" once `drifted` is set, as if someone had changed
// it by hand; everything else passes through.
class DriftingTunables : public NicTunables {
 public:
  DriftingTunables(NicTunables* inner, const std::atomic<bool>* drifted,
                   std::atomic<int>* reads)
      : inner_(inner), drifted_(drifted), reads_(reads) {}
  const std::string& device() const override { return inner_->device(); }
  std::vector<std::string> Parameters() const override { return inner_->Parameters(); }
  absl::StatusOr<std::string> Read(absl::string_view p) override {
    if (reads_ != nullptr) ++*reads_;
    if (*drifted_ && device() == "mlx5_1" && p == "rp_ai_rate") return std::string("7");
    return inner_->Read(p);
  }
  absl::Status Write(absl::string_view p, absl::string_view v) override { return inner_->Write(p, v); }

 private:
  NicTunables* inner_;
  const std::atomic<bool>* drifted_;
  std::atomic<int>* reads_;
};

class DriftingBackend : public NicBackend {
 public:
  DriftingBackend(NicBackend* inner, const std::atomic<bool>* drifted,
                  std::atomic<int>* reads = nullptr)
      : inner_(inner) {
    for (NicTunables* nic : inner_->Tunables()) {
      tunables_.push_back(std::make_unique<DriftingTunables>(nic, drifted, reads));
    }
  }
  absl::StatusOr<NodeInventory> Discover() override { return inner_->Discover(); }
  absl::StatusOr<std::vector<RawNicReading>> ReadCounters() override { return inner_->ReadCounters(); }
  std::vector<NicTunables*> Tunables() override {
    std::vector<NicTunables*> out;
    for (auto& t : tunables_) out.push_back(t.get());
    return out;
  }

 private:
  NicBackend* inner_;
  std::vector<std::unique_ptr<DriftingTunables>> tunables_;
};

TEST_F(AgentTest, AppliesDesiredStateAcksWithReadBackAndReportsDrift) {
  std::atomic<bool> drifted{false};
  StartAgent([&drifted](NicBackend* inner) {
    return std::unique_ptr<NicBackend>(std::make_unique<DriftingBackend>(inner, &drifted));
  });
  ASSERT_TRUE(StepUntil([](FakeController& c) { return c.batches_.size() >= 1; }));
  controller_.Push(DesiredStatePush(7));
  ASSERT_TRUE(StepUntil([](FakeController& c) { return !c.acks_.empty(); }));
  {
    absl::MutexLock lock(&controller_.mu_);
    const weft::v1::DesiredStateAck& ack = controller_.acks_[0];
    EXPECT_EQ(ack.version(), 7u);
    EXPECT_EQ(ack.nonce(), "n-7");
    EXPECT_TRUE(ack.accepted());
    EXPECT_EQ(ack.errors_size(), 0);
    ASSERT_EQ(ack.read_back_size(), 4);  // rp_ai_rate of each of the 4 NICs
    EXPECT_EQ(ack.read_back(3).device(), "mlx5_3");
    EXPECT_EQ(ack.read_back(3).parameter(), "rp_ai_rate");
    EXPECT_EQ(ack.read_back(3).value(), "10");
  }
  EXPECT_EQ(agent_->applied_version(), 7u);
  EXPECT_EQ(*backend_->Tunables()[0]->Read("rp_ai_rate"), "10");
  EXPECT_EQ(MetricValue(registry_, "weft_agent_tunables_applied_version"), 7);
  EXPECT_EQ(MetricValue(registry_, "weft_agent_desired_state_applies_total", {{"result", "ack"}}), 1);

  // Later batches carry the applied version and no drift...
  size_t seen = 0;
  ASSERT_TRUE(StepUntil([&seen](FakeController& c) {
    seen = c.batches_.size();
    return c.batches_.back().batch.tunables().applied_version() == 7;
  }));
  {
    absl::MutexLock lock(&controller_.mu_);
    EXPECT_EQ(controller_.batches_.back().batch.tunables().drift_size(), 0);
  }
  // ... until the NIC's value changes behind the agent's back.
  drifted = true;
  ASSERT_TRUE(StepUntil([](FakeController& c) {
    return c.batches_.back().batch.tunables().drift_size() > 0;
  }));
  absl::MutexLock lock(&controller_.mu_);
  const weft::v1::TunablesStatus& status = controller_.batches_.back().batch.tunables();
  EXPECT_EQ(status.applied_version(), 7u);
  ASSERT_EQ(status.drift_size(), 1);
  EXPECT_EQ(status.drift(0).device(), "mlx5_1");
  EXPECT_EQ(status.drift(0).parameter(), "rp_ai_rate");
  EXPECT_EQ(status.drift(0).expected(), "10");
  EXPECT_EQ(status.drift(0).actual(), "7");
}

// With a drift interval longer than the test, the NICs are read back once after the
// apply and not again: later batches repeat that result (no drift), even though the NIC
// has drifted meanwhile; reading every parameter of every NIC each telemetry interval
// is what drift_check_interval_ms exists to avoid.
TEST_F(AgentTest, DriftIsCheckedOnItsOwnIntervalAndAfterEachApply) {
  config_.set_drift_check_interval_ms(3600 * 1000);
  std::atomic<bool> drifted{false};
  std::atomic<int> reads{0};
  StartAgent([&](NicBackend* inner) {
    return std::unique_ptr<NicBackend>(std::make_unique<DriftingBackend>(inner, &drifted, &reads));
  });
  ASSERT_TRUE(StepUntil([](FakeController& c) { return c.batches_.size() >= 1; }));
  controller_.Push(DesiredStatePush(7));
  ASSERT_TRUE(StepUntil([](FakeController& c) { return !c.acks_.empty(); }));
  size_t first = 0;
  ASSERT_TRUE(StepUntil([&first](FakeController& c) {
    first = c.batches_.size();
    return c.batches_.back().batch.tunables().applied_version() == 7;
  }));
  // The check that follows the apply has run (the batch carries its result).
  const int reads_after_apply = reads.load();
  EXPECT_GT(reads_after_apply, 0);
  drifted = true;
  ASSERT_TRUE(StepUntil([first](FakeController& c) { return c.batches_.size() >= first + 5; }));
  EXPECT_EQ(reads.load(), reads_after_apply) << "the NICs were read again within the interval";
  absl::MutexLock lock(&controller_.mu_);
  for (size_t i = first; i < controller_.batches_.size(); ++i) {
    EXPECT_EQ(controller_.batches_[i].batch.tunables().applied_version(), 7u);
    EXPECT_EQ(controller_.batches_[i].batch.tunables().drift_size(), 0);
  }
}

TEST_F(AgentTest, NacksAnInvalidStateNamingParameterValueAndRange) {
  StartAgent();
  ASSERT_TRUE(StepUntil([](FakeController& c) { return c.batches_.size() >= 1; }));
  ControllerMessage push = DesiredStatePush(8);
  push.mutable_desired_state()->mutable_dcqcn()->set_rp_gd(99);
  controller_.Push(push);
  ASSERT_TRUE(StepUntil([](FakeController& c) { return !c.acks_.empty(); }));
  {
    absl::MutexLock lock(&controller_.mu_);
    const weft::v1::DesiredStateAck& ack = controller_.acks_[0];
    EXPECT_EQ(ack.version(), 8u);
    EXPECT_EQ(ack.nonce(), "n-8");
    EXPECT_FALSE(ack.accepted());
    ASSERT_EQ(ack.errors_size(), 1);
    EXPECT_EQ(ack.errors(0).parameter(), "rp_gd");
    EXPECT_EQ(ack.errors(0).value(), "99");
    EXPECT_THAT(ack.errors(0).reason(), ::testing::HasSubstr("0..15"));
    // The stream survives a NACK: no re-registration.
    EXPECT_EQ(controller_.registers_.size(), 1u);
  }
  EXPECT_EQ(agent_->applied_version(), 0u);
  EXPECT_EQ(*backend_->Tunables()[0]->Read("rp_ai_rate"), "5");  // nothing written
  EXPECT_EQ(MetricValue(registry_, "weft_agent_desired_state_applies_total", {{"result", "nack"}}), 1);
}

TEST_F(AgentTest, StateForAnotherNodeIsRefusedUntouched) {
  StartAgent();
  ASSERT_TRUE(StepUntil([](FakeController& c) { return c.batches_.size() >= 1; }));
  ControllerMessage push = DesiredStatePush(12);
  push.mutable_desired_state()->set_node_name("node-8");
  controller_.Push(push);
  ASSERT_TRUE(StepUntil([](FakeController& c) { return !c.acks_.empty(); }));
  {
    absl::MutexLock lock(&controller_.mu_);
    ASSERT_EQ(controller_.acks_[0].errors_size(), 1);
    EXPECT_EQ(controller_.acks_[0].errors(0).parameter(), "node_name");
    EXPECT_EQ(controller_.acks_[0].errors(0).value(), "node-8");
    EXPECT_THAT(controller_.acks_[0].errors(0).reason(), ::testing::HasSubstr("'node-7'"));
  }
  EXPECT_EQ(*backend_->Tunables()[0]->Read("rp_ai_rate"), "5");
}

// Two leaders speak in turn: the newer (epoch 9) applies version 7; the deposed one
// (epoch 4) wakes up and pushes version 8, which is ignored, unanswered and counted;
// the newer one's next push (version 9) applies.
TEST_F(AgentTest, ADeposedLeadersStateIsIgnoredAndCounted) {
  StartAgent();
  ASSERT_TRUE(StepUntil([](FakeController& c) { return c.batches_.size() >= 1; }));
  ControllerMessage newer = DesiredStatePush(7);
  newer.set_controller_epoch(9);
  controller_.Push(newer);
  ASSERT_TRUE(StepUntil([](FakeController& c) { return c.acks_.size() == 1; }));
  ControllerMessage deposed = DesiredStatePush(8);
  deposed.set_controller_epoch(4);
  deposed.mutable_desired_state()->mutable_dcqcn()->set_rp_ai_rate(20);
  controller_.Push(deposed);
  ControllerMessage next = DesiredStatePush(9);
  next.set_controller_epoch(9);
  controller_.Push(next);
  ASSERT_TRUE(StepUntil([](FakeController& c) { return c.acks_.size() >= 2; }));
  {
    absl::MutexLock lock(&controller_.mu_);
    ASSERT_EQ(controller_.acks_.size(), 2u);
    EXPECT_EQ(controller_.acks_[0].version(), 7u);
    EXPECT_EQ(controller_.acks_[1].version(), 9u) << "version 8 was never answered";
  }
  EXPECT_EQ(agent_->applied_version(), 9u);
  EXPECT_EQ(*backend_->Tunables()[0]->Read("rp_ai_rate"), "10");
  EXPECT_EQ(MetricValue(registry_, "weft_agent_controller_messages_fenced_total"), 1);
}

TEST_F(AgentTest, RejectTunablesFaultNacksNamingNicAndParameter) {
  config_.mutable_simulated()->add_faults(weft::v1::SIM_FAULT_REJECT_TUNABLES);
  StartAgent();
  ASSERT_TRUE(StepUntil([](FakeController& c) { return c.batches_.size() >= 1; }));
  controller_.Push(DesiredStatePush(9));
  ASSERT_TRUE(StepUntil([](FakeController& c) { return !c.acks_.empty(); }));
  absl::MutexLock lock(&controller_.mu_);
  const weft::v1::DesiredStateAck& ack = controller_.acks_[0];
  EXPECT_FALSE(ack.accepted());
  ASSERT_GE(ack.errors_size(), 1);
  EXPECT_EQ(ack.errors(0).device(), "mlx5_0");
  EXPECT_EQ(ack.errors(0).parameter(), "rp_ai_rate");
  EXPECT_EQ(ack.errors(0).value(), "10");
  EXPECT_THAT(ack.errors(0).reason(), ::testing::HasSubstr("simulated fault reject_tunables"));
}

TEST_F(AgentTest, DryRunWritesNothingAndNacksWhatWouldChange) {
  config_.set_tunables_dry_run(true);
  StartAgent();
  ASSERT_TRUE(StepUntil([](FakeController& c) { return c.batches_.size() >= 1; }));
  controller_.Push(DesiredStatePush(10));
  ASSERT_TRUE(StepUntil([](FakeController& c) { return !c.acks_.empty(); }));
  {
    absl::MutexLock lock(&controller_.mu_);
    const weft::v1::DesiredStateAck& ack = controller_.acks_[0];
    EXPECT_FALSE(ack.accepted());
    ASSERT_EQ(ack.errors_size(), 4);  // one per NIC
    EXPECT_THAT(ack.errors(0).reason(), ::testing::HasSubstr("dry run: would change from '5'"));
  }
  EXPECT_EQ(*backend_->Tunables()[0]->Read("rp_ai_rate"), "5");
  EXPECT_EQ(agent_->applied_version(), 0u);
}

TEST_F(AgentTest, HelloAfterReconnectCarriesTheAppliedVersion) {
  StartAgent();
  ASSERT_TRUE(StepUntil([](FakeController& c) { return c.batches_.size() >= 1; }));
  controller_.Push(DesiredStatePush(11));
  ASSERT_TRUE(StepUntil([](FakeController& c) { return !c.acks_.empty(); }));
  controller_.FenceAfterBatches(1);
  ASSERT_TRUE(StepUntil([](FakeController& c) { return c.first_messages_.size() >= 2; }));
  absl::MutexLock lock(&controller_.mu_);
  EXPECT_EQ(controller_.first_messages_[0].hello().applied_version(), 0u);
  EXPECT_EQ(controller_.first_messages_[1].hello().applied_version(), 11u);
}

// A controller that stops reading must not stall the node: collection keeps its
// cadence, the oldest queued batches are dropped (counted), and an ack produced
// meanwhile is never dropped: it arrives once the controller reads again.
TEST_F(AgentTest, StalledControllerDropsOldestTelemetryNeverAcksAndNeverStallsCollection) {
  StartAgent();
  ASSERT_TRUE(StepUntil([](FakeController& c) { return c.batches_.size() >= 2; }));
  controller_.StallReads(true);
  const double collections_before =
      Metric("weft_agent_collection_duration_seconds_count").value_or(-1);
  controller_.Push(DesiredStatePush(7));
  // gRPC's flow-control window fills after a few dozen 4-NIC batches; then the queue.
  for (int step = 0; step < 1000 && Metric("weft_agent_telemetry_dropped_total").value_or(0) < 5;
       ++step) {
    Step(1);
  }
  EXPECT_GE(Metric("weft_agent_telemetry_dropped_total").value_or(0), 5.0);
  // Collection went on at its interval the whole time.
  const double collections_during =
      Metric("weft_agent_collection_duration_seconds_count").value_or(-1) - collections_before;
  EXPECT_GE(collections_during, kTelemetryQueueCapacity + 5.0);
  {
    absl::MutexLock lock(&controller_.mu_);
    EXPECT_TRUE(controller_.acks_.empty());
  }
  controller_.StallReads(false);
  ASSERT_TRUE(StepUntil([](FakeController& c) { return !c.acks_.empty(); }));
  {
    absl::MutexLock lock(&controller_.mu_);
    EXPECT_EQ(controller_.acks_[0].version(), 7u);
    EXPECT_TRUE(controller_.acks_[0].accepted());
  }
  // The session survived the stall: no reconnect, no send error.
  EXPECT_EQ(Metric("weft_agent_reconnects_total"), 0.0);
  EXPECT_EQ(Metric("weft_agent_telemetry_send_errors_total"), 0.0);
}

TEST_F(AgentTest, DeadFaultRegistersButNeverSendsTelemetry) {
  config_.mutable_simulated()->add_faults(weft::v1::SIM_FAULT_DEAD);
  StartAgent();
  ASSERT_TRUE(StepUntil([](FakeController& c) { return !c.first_messages_.empty(); }));
  // Six intervals, each collected and written: none reaches the controller.
  Step(6);
  ASSERT_TRUE(clock_.AwaitWaiters(1));
  EXPECT_TRUE(agent_->registered());
  EXPECT_LT(TimedStop(), absl::Seconds(1));
  absl::MutexLock lock(&controller_.mu_);
  EXPECT_TRUE(controller_.batches_.empty());
  EXPECT_EQ(controller_.registers_.size(), 1u);
  // The agent itself collects and writes as always: the fault is in the connection.
  EXPECT_GT(Metric("weft_agent_telemetry_batches_sent_total").value_or(0), 0.0);
}

TEST_F(AgentTest, UnreadableNicIsReportedAndCountedWhileTheOthersStream) {
  StartAgent([](NicBackend* inner) -> std::unique_ptr<NicBackend> {
    return std::make_unique<OneNicFailsBackend>(inner, "mlx5_1");
  });
  ASSERT_TRUE(StepUntil([](FakeController& c) { return c.batches_.size() >= 3; }));
  agent_->Stop();

  absl::MutexLock lock(&controller_.mu_);
  const weft::v1::TelemetryBatch& last = controller_.batches_.back().batch;
  ASSERT_EQ(last.samples_size(), 4);
  EXPECT_EQ(last.samples(1).device(), "mlx5_1");
  EXPECT_EQ(last.samples(1).error(), "hw_counters/np_cnp_sent: Permission denied");
  EXPECT_FALSE(last.samples(1).has_port_counters());
  EXPECT_TRUE(last.samples(0).rates_valid());
  EXPECT_TRUE(last.samples(2).rates_valid());
  EXPECT_GE(Metric("weft_agent_collection_errors_total", {{"device", "mlx5_1"}}).value_or(0), 3.0);
  EXPECT_EQ(Metric("weft_agent_collection_errors_total", {{"device", "mlx5_0"}}), 0.0);
}

TEST_F(AgentTest, MissingCountersAreSaidOnceAndCountedNotRepeatedEveryInterval) {
  CountersMissingBackend* missing = nullptr;
  ::testing::internal::CaptureStderr();
  StartAgent([&missing](NicBackend* inner) -> std::unique_ptr<NicBackend> {
    auto backend = std::make_unique<CountersMissingBackend>(inner, "mlx5_2");
    missing = backend.get();
    return backend;
  });
  ASSERT_TRUE(StepUntil([](FakeController& c) { return c.batches_.size() >= 4; }));
  // NIC series carry the netdev and PCI address the node registered with.
  auto labels = [this](int nic) -> std::map<std::string, std::string> {
    absl::MutexLock lock(&controller_.mu_);
    const weft::v1::Nic& n = controller_.registers_.front().node().nics(nic);
    return {{"node", "node-7"}, {"device", n.device()}, {"port", "1"},
            {"netdev", n.netdev()}, {"pci", n.pci_address()}};
  };
  EXPECT_EQ(Metric("weft_nic_missing_counters", labels(2)), 2.0);
  EXPECT_EQ(Metric("weft_nic_missing_counters", labels(0)), 0.0);
  missing->lacking = false;
  const size_t seen = [&] {
    absl::MutexLock lock(&controller_.mu_);
    return controller_.batches_.size();
  }();
  ASSERT_TRUE(StepUntil([seen](FakeController& c) { return c.batches_.size() >= seen + 3; }));
  agent_->Stop();
  const std::string log = ::testing::internal::GetCapturedStderr();

  // Four and more collections lacked the counters: one warning naming them, then one
  // line when they are back.
  const std::string warning =
      "nic lacks counters (left out of telemetry, not zero) device=mlx5_2 port=1 "
      "missing=\"port_xmit_wait, symbol_error: Permission denied\"";
  EXPECT_EQ(CountSubstrings(log, warning), 1) << log;
  EXPECT_EQ(CountSubstrings(log, "nic reports every counter again device=mlx5_2 port=1"), 1)
      << log;
  EXPECT_EQ(CountSubstrings(log, "nic lacks counters"), 1) << log;
  EXPECT_EQ(Metric("weft_nic_missing_counters", labels(2)), 0.0);
  // The samples carried the names while they were missing, and the counters were unset.
  absl::MutexLock lock(&controller_.mu_);
  const weft::v1::NicSample& first = controller_.batches_[1].batch.samples(2);
  ASSERT_EQ(first.missing_counters_size(), 2);
  EXPECT_FALSE(first.port_counters().has_symbol_error());
  EXPECT_TRUE(first.port_counters().has_link_downed());
  EXPECT_EQ(controller_.batches_.back().batch.samples(2).missing_counters_size(), 0);
}

grpc::health::v1::HealthCheckResponse::ServingStatus Health(const std::string& address) {
  auto stub = grpc::health::v1::Health::NewStub(
      grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(2));
  grpc::health::v1::HealthCheckResponse response;
  if (!stub->Check(&context, grpc::health::v1::HealthCheckRequest(), &response).ok()) {
    return grpc::health::v1::HealthCheckResponse::UNKNOWN;
  }
  return response.status();
}

bool WaitForHealth(const std::string& address,
                   grpc::health::v1::HealthCheckResponse::ServingStatus want) {
  const absl::Time deadline = absl::Now() + kWait;
  while (absl::Now() < deadline) {
    if (Health(address) == want) return true;
    absl::SleepFor(absl::Milliseconds(20));
  }
  return false;
}

TEST_F(AgentTest, HealthIsServingOnlyWhileRegistered) {
  health_ = HealthServer::Start("127.0.0.1:0").value();
  const std::string address = health_->address();
  EXPECT_EQ(Health(address), grpc::health::v1::HealthCheckResponse::NOT_SERVING);
  StartAgent();
  ASSERT_TRUE(WaitForHealth(address, grpc::health::v1::HealthCheckResponse::SERVING));
  // The controller goes away: the stream breaks and registering keeps failing.
  server_->Shutdown(std::chrono::system_clock::now());
  server_.reset();
  ASSERT_TRUE(WaitForHealth(address, grpc::health::v1::HealthCheckResponse::NOT_SERVING));
  EXPECT_EQ(Metric("weft_agent_registered"), 0.0);
  EXPECT_LT(TimedStop(), absl::Seconds(1));
}

TEST_F(AgentTest, ControllerDownRetriesWithBackoffNotAFlood) {
  config_.set_controller_address("127.0.0.1:1");  // connection refused
  StartAgent();
  // Each failed attempt waits 10 ms doubling to 100 ms, jittered into [base/2, base],
  // on the agent's clock; the next attempt comes when, and only when, it ends.
  for (int attempt = 1; attempt <= 8; ++attempt) {
    ASSERT_TRUE(clock_.AwaitWaiters(1)) << "attempt " << attempt;
    const absl::Duration wait = *clock_.NextDeadline() - clock_.Now();
    const absl::Duration base = std::min(absl::Milliseconds(10) * (1 << (attempt - 1)),
                                         absl::Milliseconds(100));
    EXPECT_GE(wait, base / 2) << "attempt " << attempt;
    EXPECT_LE(wait, base) << "attempt " << attempt;
    EXPECT_EQ(Metric("weft_agent_reconnects_total"), attempt - 1);
    EXPECT_FALSE(agent_->registered());
    Step(1);
  }
  EXPECT_LT(TimedStop(), absl::Seconds(1));
}

TEST_F(AgentTest, StopInterruptsALongBackoff) {
  config_.set_controller_address("127.0.0.1:1");
  config_.mutable_reconnect()->set_initial_backoff_ms(30000);
  config_.mutable_reconnect()->set_max_backoff_ms(60000);
  StartAgent();
  ASSERT_TRUE(clock_.AwaitWaiters(1));  // the first attempt failed; it waits 15-30 s
  EXPECT_GE(*clock_.NextDeadline() - clock_.Now(), absl::Seconds(15));
  EXPECT_LT(TimedStop(), absl::Seconds(1));
}

}  // namespace
}  // namespace weft::agent
