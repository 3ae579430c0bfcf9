// Crash test of the controller's durable state: a real weft-controller with six
// simulated agents; a client drives a seeded random stream of placements, releases,
// drains, undrains and registrations while another thread kills the controller with
// SIGKILL at a random moment. The controller is restarted on the same --state_dir,
// and then:
//   * every operation acknowledged before the kill is there (reservations with the
//     same id, nodes, ranks and lease; drains with their reason; the drain events);
//   * nothing appears that was never acknowledged, except the effect of the one call
//     in flight at the kill (which may or may not have committed), and such a
//     reservation is whole (all its nodes and ranks);
//   * a node registering with no memory of its epoch (last_session_epoch 0) gets an
//     epoch above every one acknowledged before the kill.
// Several iterations on one state_dir; the seed is printed and can be replaced with
// WEFT_CRASH_SEED=N.
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "proto/weft/v1/admin.grpc.pb.h"
#include "proto/weft/v1/agent.grpc.pb.h"
#include "proto/weft/v1/placement.grpc.pb.h"
#include "common/testing/temp_dir.h"
#include "tests/cluster_harness.h"
#include "tests/subprocess.h"

namespace weft {
namespace {

using weft::testing::Cluster;
using weft::testing::FreePort;

constexpr int kIntervalMs = 200;
constexpr int kGpus = 8;
constexpr int kIterations = 6;
constexpr uint32_t kDefaultSeed = 20261130;
// Registered by the test itself, without a rack (never placed), to check epochs.
constexpr char kProbeNode[] = "probe";

struct NodeSpec {
  const char* name;
  const char* rack;
};
constexpr NodeSpec kNodes[] = {{"gpu-a1", "rack-a"}, {"gpu-a2", "rack-a"},
                               {"gpu-b1", "rack-b"}, {"gpu-b2", "rack-b"},
                               {"gpu-c1", "rack-c"}, {"gpu-c2", "rack-c"}};

// What the client was told, and what was in flight when the controller died.
struct Model {
  // Acknowledged live reservations by job, with the node count asked for.
  std::map<std::string, weft::v1::PlacementResponse> reservations;
  std::set<std::string> released_ids;
  // Acknowledged drain reason per node (nullopt: undrained).
  std::map<std::string, std::optional<std::string>> drains;
  // The highest probe epoch acknowledged.
  uint64_t max_probe_epoch = 0;

  // The call in flight at the kill: its effect may or may not be there.
  std::string ambiguous_job;
  uint32_t ambiguous_job_nodes = 0;
  std::string ambiguous_release;
  std::string ambiguous_node;
};

// A status that means "the controller died under this call": its effect is unknown.
bool CallLost(const grpc::Status& status) {
  switch (status.error_code()) {
    case grpc::StatusCode::UNAVAILABLE:
    case grpc::StatusCode::CANCELLED:
    case grpc::StatusCode::DEADLINE_EXCEEDED:
    case grpc::StatusCode::UNKNOWN:
    case grpc::StatusCode::INTERNAL:
      return true;
    default:
      return false;
  }
}

std::unique_ptr<grpc::ClientContext> Deadline(int ms = 3000) {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(ms));
  return context;
}

class CrashTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* seed = std::getenv("WEFT_CRASH_SEED");
    seed_ = seed != nullptr ? static_cast<uint32_t>(std::strtoul(seed, nullptr, 10))
                            : kDefaultSeed;
    rng_.seed(seed_);
    for (const NodeSpec& spec : kNodes) model_.drains[spec.name] = std::nullopt;
  }

  void StartController() {
    ASSERT_TRUE(cluster_.StartController({}, absl::Seconds(15)));
    // A fresh channel each time: no reconnect backoff left over from the dead one.
    grpc::ChannelArguments args;
    args.SetInt("weft.crash_test.start", ++starts_);
    auto channel =
        grpc::CreateCustomChannel(cluster_.address(), grpc::InsecureChannelCredentials(), args);
    admin_ = weft::v1::AdminService::NewStub(channel);
    placement_ = weft::v1::PlacementService::NewStub(channel);
    agent_service_ = weft::v1::AgentService::NewStub(channel);
  }

  void StartAgents() {
    for (const NodeSpec& spec : kNodes) {
      cluster_.StartAgent({.name = spec.name,
                           .rack = spec.rack,
                           .pod = "pod-1",
                           .interval_ms = kIntervalMs,
                           .nics = 2,
                           .gpus = kGpus});
    }
  }

  // Every agent's node is reporting again (drained ones included).
  ::testing::AssertionResult WaitForAgents(absl::Duration timeout) {
    return cluster_.WaitForNodes("every agent's node reporting with rates", timeout,
                                 [](const auto& nodes) {
                                   int reporting = 0;
                                   for (const auto& [name, node] : nodes) {
                                     if (name != kProbeNode && node.reporting() &&
                                         node.rates().tx_gbps() > 0) {
                                       ++reporting;
                                     }
                                   }
                                   return reporting == static_cast<int>(std::size(kNodes));
                                 });
  }

  const std::string& RandomNode() {
    static const std::vector<std::string> names = [] {
      std::vector<std::string> out;
      for (const NodeSpec& spec : kNodes) out.push_back(spec.name);
      return out;
    }();
    return names[std::uniform_int_distribution<size_t>(0, names.size() - 1)(rng_)];
  }

  // The probe registers as an agent that remembers no epoch (last_session_epoch 0).
  grpc::Status RegisterProbe(weft::v1::RegisterResponse* response) {
    weft::v1::RegisterRequest request;
    request.mutable_node()->set_name(kProbeNode);
    weft::v1::Nic* nic = request.mutable_node()->add_nics();
    nic->set_device("mlx5_0");
    nic->set_port(1);
    return agent_service_->Register(Deadline().get(), request, response);
  }

  // One operation; false once the controller is gone (the call's effect is then
  // recorded as ambiguous).
  bool DriveOne(int iteration, int n) {
    const int dice = std::uniform_int_distribution<int>(0, 99)(rng_);
    if (dice < 35) {
      weft::v1::PlacementRequest request;
      request.set_job_id(absl::StrCat("job-", iteration, "-", n));
      request.set_node_count(std::uniform_int_distribution<uint32_t>(1, 2)(rng_));
      request.set_lease_ttl_s(3600);
      weft::v1::PlacementResponse response;
      const grpc::Status status = placement_->Place(Deadline().get(), request, &response);
      if (CallLost(status)) {
        model_.ambiguous_job = request.job_id();
        model_.ambiguous_job_nodes = request.node_count();
        return false;
      }
      if (status.ok()) {
        model_.reservations[request.job_id()] = response;
      } else {
        EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
            << status.error_message();
      }
      return true;
    }
    if (dice < 60) {
      if (model_.reservations.empty()) return true;
      auto it = model_.reservations.begin();
      std::advance(it, std::uniform_int_distribution<size_t>(
                           0, model_.reservations.size() - 1)(rng_));
      weft::v1::ReleaseRequest request;
      request.set_reservation_id(it->second.reservation_id());
      weft::v1::ReleaseResponse response;
      const grpc::Status status = placement_->Release(Deadline().get(), request, &response);
      if (CallLost(status)) {
        model_.ambiguous_release = it->first;
        return false;
      }
      // An acknowledged reservation must still be there to release.
      EXPECT_TRUE(status.ok()) << it->second.reservation_id() << ": "
                               << status.error_message();
      model_.released_ids.insert(it->second.reservation_id());
      model_.reservations.erase(it);
      return true;
    }
    const std::string node = RandomNode();
    if (dice < 80) {
      weft::v1::DrainNodeRequest request;
      request.set_name(node);
      request.set_reason(absl::StrCat("drain-", iteration, "-", n));
      weft::v1::DrainNodeResponse response;
      const grpc::Status status = admin_->DrainNode(Deadline().get(), request, &response);
      if (CallLost(status)) {
        model_.ambiguous_node = node;
        return false;
      }
      EXPECT_TRUE(status.ok()) << status.error_message();
      model_.drains[node] = request.reason();
      drained_this_round_.push_back(request.reason());
      return true;
    }
    if (dice < 95) {
      weft::v1::UndrainNodeRequest request;
      request.set_name(node);
      weft::v1::UndrainNodeResponse response;
      const grpc::Status status = admin_->UndrainNode(Deadline().get(), request, &response);
      if (CallLost(status)) {
        model_.ambiguous_node = node;
        return false;
      }
      if (status.ok()) {
        EXPECT_TRUE(model_.drains[node].has_value()) << node << " was undrained but not drained";
        model_.drains[node] = std::nullopt;
      } else {
        EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
        EXPECT_FALSE(model_.drains[node].has_value()) << node << ": " << status.error_message();
      }
      return true;
    }
    weft::v1::RegisterResponse response;
    const grpc::Status status = RegisterProbe(&response);
    if (CallLost(status)) return false;
    EXPECT_TRUE(status.ok()) << status.error_message();
    EXPECT_GT(response.session_epoch(), model_.max_probe_epoch);
    model_.max_probe_epoch = std::max(model_.max_probe_epoch, response.session_epoch());
    return true;
  }

  // After a restart: the state matches the model, up to the call in flight.
  void Verify(int iteration) {
    SCOPED_TRACE(absl::StrCat("iteration ", iteration, ", seed ", seed_));
    weft::v1::ListReservationsResponse live;
    ASSERT_TRUE(placement_->ListReservations(Deadline().get(), {}, &live).ok());
    std::map<std::string, weft::v1::PlacementResponse> actual;
    for (const auto& r : live.reservations()) actual[r.job_id()] = r;
    for (const auto& [job, acked] : model_.reservations) {
      auto it = actual.find(job);
      if (job == model_.ambiguous_release) {
        if (it == actual.end()) continue;  // the release in flight committed
      } else {
        ASSERT_NE(it, actual.end()) << "acknowledged reservation of " << job << " is lost";
      }
      EXPECT_EQ(it->second.reservation_id(), acked.reservation_id());
      EXPECT_EQ(std::vector<std::string>(it->second.ring_order().begin(),
                                         it->second.ring_order().end()),
                std::vector<std::string>(acked.ring_order().begin(), acked.ring_order().end()))
          << job;
      EXPECT_EQ(it->second.ranks_size(), acked.ranks_size()) << job;
      EXPECT_EQ(it->second.expires_at_unix_s(), acked.expires_at_unix_s()) << job;
    }
    for (const auto& [job, r] : actual) {
      EXPECT_EQ(model_.released_ids.count(r.reservation_id()), 0u)
          << "released reservation " << r.reservation_id() << " came back";
      if (model_.reservations.count(job) > 0) continue;
      ASSERT_EQ(job, model_.ambiguous_job) << "reservation of " << job
                                           << " was never acknowledged";
      // The in-flight placement committed: whole, never half.
      EXPECT_EQ(static_cast<uint32_t>(r.ring_order_size()), model_.ambiguous_job_nodes);
      EXPECT_EQ(static_cast<uint32_t>(r.ranks_size()), model_.ambiguous_job_nodes * kGpus);
      model_.reservations[job] = r;
    }
    if (!model_.ambiguous_release.empty() && actual.count(model_.ambiguous_release) == 0) {
      model_.released_ids.insert(model_.reservations[model_.ambiguous_release].reservation_id());
      model_.reservations.erase(model_.ambiguous_release);
    }

    weft::v1::ListNodesResponse nodes;
    ASSERT_TRUE(admin_->ListNodes(Deadline().get(), {}, &nodes).ok());
    int seen = 0;
    for (const auto& node : nodes.nodes()) {
      auto it = model_.drains.find(node.info().name());
      if (it == model_.drains.end()) continue;
      ++seen;
      const bool drained = node.state() == weft::v1::NODE_STATE_DRAINED;
      if (node.info().name() == model_.ambiguous_node) {
        it->second = drained ? std::optional<std::string>(node.drain_reason()) : std::nullopt;
        continue;
      }
      EXPECT_EQ(drained, it->second.has_value()) << node.info().name();
      if (drained && it->second.has_value()) {
        EXPECT_EQ(node.drain_reason(), *it->second) << node.info().name();
        EXPECT_EQ(node.drained_by(), weft::v1::DRAIN_SOURCE_OPERATOR);
      }
    }
    EXPECT_EQ(seen, static_cast<int>(std::size(kNodes))) << "restored nodes are missing";

    // Every acknowledged drain left its event (written through before the reply).
    weft::v1::ListEventsRequest events_request;
    events_request.set_limit(0);
    weft::v1::ListEventsResponse events;
    ASSERT_TRUE(admin_->ListEvents(Deadline().get(), events_request, &events).ok());
    std::set<std::string> drain_messages;
    for (const auto& event : events.events()) {
      if (event.kind() == weft::v1::EVENT_KIND_DRAINED) drain_messages.insert(event.message());
    }
    for (const std::string& reason : drained_this_round_) {
      EXPECT_EQ(drain_messages.count(reason), 1u) << "no DRAINED event for " << reason;
    }

    if (model_.max_probe_epoch > 0) {
      weft::v1::RegisterResponse response;
      ASSERT_TRUE(RegisterProbe(&response).ok());
      EXPECT_GT(response.session_epoch(), model_.max_probe_epoch)
          << "an epoch granted before the restart was granted again";
      model_.max_probe_epoch = response.session_epoch();
    }
    model_.ambiguous_job.clear();
    model_.ambiguous_release.clear();
    model_.ambiguous_node.clear();
    drained_this_round_.clear();
  }

  uint32_t seed_ = 0;
  std::mt19937 rng_;
  int starts_ = 0;
  // One --state_dir across every restart.
  Cluster cluster_{{.telemetry_interval_ms = kIntervalMs}};
  std::unique_ptr<weft::v1::AdminService::Stub> admin_;
  std::unique_ptr<weft::v1::PlacementService::Stub> placement_;
  std::unique_ptr<weft::v1::AgentService::Stub> agent_service_;
  Model model_;
  std::vector<std::string> drained_this_round_;
};

TEST_F(CrashTest, AcknowledgedStateSurvivesKill9AtRandomPoints) {
  std::cout << "crash_test seed " << seed_ << " (WEFT_CRASH_SEED to replay)\n";
  ASSERT_NO_FATAL_FAILURE(StartController());
  StartAgents();
  int acknowledged = 0, kills_mid_call = 0;
  for (int iteration = 0; iteration < kIterations; ++iteration) {
    ASSERT_TRUE(WaitForAgents(absl::Seconds(30))) << "iteration " << iteration;
    const int kill_after_ms = std::uniform_int_distribution<int>(50, 900)(rng_);
    const pid_t pid = cluster_.controller().pid();
    std::thread killer([pid, kill_after_ms] {
      absl::SleepFor(absl::Milliseconds(kill_after_ms));
      ::kill(pid, SIGKILL);
    });
    int n = 0;
    while (DriveOne(iteration, n)) {
      ++n;
      ++acknowledged;
    }
    killer.join();
    if (!model_.ambiguous_job.empty() || !model_.ambiguous_release.empty() ||
        !model_.ambiguous_node.empty()) {
      ++kills_mid_call;
    }
    ASSERT_EQ(cluster_.controller().Wait(absl::Seconds(5)), 128 + SIGKILL);
    ASSERT_NO_FATAL_FAILURE(StartController());
    ASSERT_NO_FATAL_FAILURE(Verify(iteration));
    if (HasFailure()) return;
  }
  std::cout << "crash_test: " << kIterations << " kills, " << acknowledged
            << " acknowledged operations, " << kills_mid_call << " kills during a call, "
            << model_.reservations.size() << " reservations live at the end\n";
  // The stream must have done real work for the test to mean anything.
  EXPECT_GT(acknowledged, kIterations * 5);
}

TEST(CrashRefusalTest, CorruptStateIsRefusedAndLeftUntouched) {
  const std::string dir = weft::testing::MakeTempDir("corrupt-state");
  ASSERT_FALSE(dir.empty());
  const std::string db = dir + "/controller.db";
  const std::string garbage(10000, '\x7f');
  FILE* f = fopen(db.c_str(), "w");
  ASSERT_NE(f, nullptr);
  fwrite(garbage.data(), 1, garbage.size(), f);
  fclose(f);
  weft::testing::CommandResult result = weft::testing::RunCommand(
      {weft::testing::kControllerBinary, "--listen", absl::StrCat("127.0.0.1:", FreePort()),
       "--metrics", "127.0.0.1:0", "--state_dir", dir},
      absl::Seconds(10));
  EXPECT_EQ(result.exit_status, 1) << result.out << result.err;
  EXPECT_NE(result.err.find(db + " is not a readable weft state database"), std::string::npos)
      << result.err;
  EXPECT_NE(result.err.find("move it aside"), std::string::npos);
  f = fopen(db.c_str(), "r");
  ASSERT_NE(f, nullptr);
  std::string after(garbage.size() + 1, '\0');
  after.resize(fread(after.data(), 1, after.size(), f));
  fclose(f);
  EXPECT_EQ(after, garbage);
}

}  // namespace
}  // namespace weft
