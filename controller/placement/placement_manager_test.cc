// PlacementManager over a real Inventory on a FakeClock: what gets placed where, which
// nodes are never placed, idempotence by job id, leases, refusals and metrics.
#include "controller/placement/placement_manager.h"

#include <limits>
#include <string>
#include <vector>

#include "common/fake_clock.h"
#include "controller/inventory/controller_metrics.h"
#include "controller/inventory/inventory.h"
#include "common/testing/metrics.h"
#include "controller/placement/placement_metrics.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"
#include "store/controller_store.h"

namespace weft::controller {
namespace {

using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;
using weft::v1::PlacementRequest;
using weft::v1::PlacementResponse;

constexpr int kNics = 2;
constexpr int kGpus = 8;

weft::v1::NodeInfo MakeNode(const std::string& name, const std::string& rack,
                            const std::string& pod) {
  weft::v1::NodeInfo info;
  info.set_name(name);
  info.set_rack(rack);
  info.set_pod(pod);
  for (int i = 0; i < kNics; ++i) {
    weft::v1::Nic* nic = info.add_nics();
    nic->set_device("mlx5_" + std::to_string(i));
    nic->set_port(1);
    nic->set_netdev("ens" + std::to_string(i + 1) + "np0");
    nic->set_link_layer("Ethernet");
    weft::v1::GidEntry* gid = nic->add_gids();
    gid->set_index(3);
    gid->set_gid("0000:0000:0000:0000:0000:ffff:0a00:0001");
    gid->set_type(weft::v1::GID_TYPE_ROCE_V2);
    gid->set_netdev(nic->netdev());
  }
  for (int g = 0; g < kGpus; ++g) {
    weft::v1::Gpu* gpu = info.add_gpus();
    gpu->set_index(g);
    gpu->set_closest_nic("mlx5_" + std::to_string(g * kNics / kGpus));
  }
  return info;
}

PlacementRequest Nodes(const std::string& job, uint32_t nodes) {
  PlacementRequest request;
  request.set_job_id(job);
  request.set_node_count(nodes);
  return request;
}

std::vector<std::string> RingOrder(const PlacementResponse& placed) {
  return {placed.ring_order().begin(), placed.ring_order().end()};
}

class PlacementManagerTest : public ::testing::Test {
 protected:
  PlacementManagerTest()
      : controller_metrics_(registry_),
        inventory_(&clock_, InventoryOptions{}, &controller_metrics_),
        placement_metrics_(registry_),
        manager_(&inventory_, &clock_, PlacementOptions{}, &placement_metrics_) {}

  // Racks a (a1, a2) and b (b1, b2) in pod p1; rack c (c1, c2) in pod p2.
  void RegisterSixNodes() {
    for (const auto& [name, rack, pod] :
         std::vector<std::tuple<std::string, std::string, std::string>>{
             {"a1", "a", "p1"}, {"a2", "a", "p1"}, {"b1", "b", "p1"},
             {"b2", "b", "p1"}, {"c1", "c", "p2"}, {"c2", "c", "p2"}}) {
      Register(MakeNode(name, rack, pod));
    }
  }

  void Register(const weft::v1::NodeInfo& info) {
    absl::StatusOr<Registration> r = inventory_.Register(info, 0);
    ASSERT_TRUE(r.ok()) << r.status();
    epochs_[info.name()] = r->session_epoch;
  }

  // One sample per NIC, mlx5_0 paused `pause_share` of the second on priority 3.
  void SendTelemetry(const std::string& node, double pause_share) {
    weft::v1::TelemetryBatch batch;
    for (int i = 0; i < kNics; ++i) {
      weft::v1::NicSample* sample = batch.add_samples();
      sample->set_device("mlx5_" + std::to_string(i));
      sample->set_port(1);
      sample->set_rates_valid(true);
      sample->mutable_port_counters()->mutable_rcv_packets()->set_per_second(1e6);
      weft::v1::PriorityPfcCounters* pfc = sample->add_pfc();
      pfc->set_priority(3);
      pfc->mutable_rx_pause_duration_us()->set_per_second(i == 0 ? pause_share * 1e6 : 0);
    }
    ASSERT_TRUE(inventory_.AcceptTelemetry(node, epochs_[node], batch).ok());
  }

  double Metric(const std::string& name, const std::map<std::string, std::string>& labels = {}) {
    return MetricValue(registry_, name, labels).value_or(-1);
  }

  FakeClock clock_;
  prometheus::Registry registry_;
  ControllerMetrics controller_metrics_;
  Inventory inventory_;
  PlacementMetrics placement_metrics_;
  PlacementManager manager_;
  std::map<std::string, uint64_t> epochs_;
};

TEST_F(PlacementManagerTest, PlacesOnFewestRacksAndNeverTwiceOnANode) {
  RegisterSixNodes();
  absl::StatusOr<PlacementResponse> first = manager_.Place(Nodes("job-1", 2));
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->racks_used(), 1u);
  EXPECT_EQ(first->ranks_size(), 2 * kGpus);
  EXPECT_EQ(first->reservation_id(), "rsv-1");
  // Default lease: 5 minutes on the controller's clock.
  EXPECT_EQ(first->expires_at_unix_s(), absl::ToUnixSeconds(clock_.Now()) + 300);
  ASSERT_EQ(first->node_env_size(), 2);
  std::map<std::string, std::string> env;
  for (const auto& var : first->node_env(0).env()) env[var.name()] = var.value();
  EXPECT_EQ(env["NCCL_IB_HCA"], "=mlx5_0:1,mlx5_1:1");
  EXPECT_EQ(env["NCCL_IB_GID_INDEX"], "3");
  EXPECT_EQ(env["NCCL_IB_TC"], "106");
  EXPECT_EQ(env["NCCL_SOCKET_IFNAME"], "=ens1np0");

  absl::StatusOr<PlacementResponse> second = manager_.Place(Nodes("job-2", 2));
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(second->racks_used(), 1u);
  for (const std::string& node : second->ring_order()) {
    EXPECT_THAT(RingOrder(*first), ::testing::Not(::testing::Contains(node)));
  }
  // The third job gets the last whole rack.
  absl::StatusOr<PlacementResponse> third = manager_.Place(Nodes("job-3", 2));
  ASSERT_TRUE(third.ok()) << third.status();
  EXPECT_EQ(Metric("weft_controller_placements_total", {{"result", "placed"}}), 3);
  EXPECT_EQ(Metric("weft_controller_reservations"), 3);
  EXPECT_EQ(Metric("weft_controller_reserved_nodes"), 6);

  absl::StatusOr<PlacementResponse> full = manager_.Place(Nodes("job-4", 1));
  EXPECT_EQ(full.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(full.status().message(), HasSubstr("0 are free and eligible"));
  EXPECT_THAT(full.status().message(), HasSubstr("6 in use"));
  EXPECT_EQ(Metric("weft_controller_placements_total", {{"result", "no_capacity"}}), 1);
}

TEST_F(PlacementManagerTest, SameJobSameRequestReturnsTheSameReservation) {
  RegisterSixNodes();
  PlacementRequest request = Nodes("job-1", 3);
  request.set_lease_ttl_s(600);
  absl::StatusOr<PlacementResponse> first = manager_.Place(request);
  ASSERT_TRUE(first.ok()) << first.status();
  request.set_lease_ttl_s(900);  // the lease alone does not make it a new request
  absl::StatusOr<PlacementResponse> again = manager_.Place(request);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->reservation_id(), first->reservation_id());
  EXPECT_EQ(RingOrder(*again), RingOrder(*first));
  EXPECT_EQ(again->expires_at_unix_s(), first->expires_at_unix_s());
  EXPECT_EQ(Metric("weft_controller_placements_total", {{"result", "existing"}}), 1);
  EXPECT_EQ(Metric("weft_controller_reservations"), 1);

  absl::StatusOr<PlacementResponse> other = manager_.Place(Nodes("job-1", 2));
  EXPECT_EQ(other.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(other.status().message(), HasSubstr("already holds reservation rsv-1"));
  EXPECT_EQ(Metric("weft_controller_placements_total", {{"result", "conflict"}}), 1);
}

TEST_F(PlacementManagerTest, DrainedDownAndRacklessNodesAreNeverPlaced) {
  RegisterSixNodes();
  Register(MakeNode("lost", "", "p1"));
  ASSERT_TRUE(inventory_.Drain("a1", "swap optics").ok());
  // Everyone goes silent, then all but b2 come back: b2 is DOWN.
  clock_.Advance(absl::Seconds(4));
  inventory_.Sweep();
  for (const std::string name : {"a1", "a2", "b1", "c1", "c2", "lost"}) {
    Register(MakeNode(name, name == "lost" ? "" : std::string(1, name[0]),
                      name[0] == 'c' ? "p2" : "p1"));
  }
  ASSERT_EQ(inventory_.GetNode("b2")->state(), weft::v1::NODE_STATE_DOWN);

  absl::StatusOr<PlacementResponse> placed = manager_.Place(Nodes("job-1", 4));
  ASSERT_TRUE(placed.ok()) << placed.status();
  EXPECT_THAT(RingOrder(*placed), UnorderedElementsAre("a2", "b1", "c1", "c2"));

  ASSERT_TRUE(manager_.Release(placed->reservation_id()).ok());
  absl::StatusOr<PlacementResponse> too_big = manager_.Place(Nodes("job-2", 5));
  ASSERT_EQ(too_big.status().code(), absl::StatusCode::kResourceExhausted);
  const std::string message(too_big.status().message());
  EXPECT_THAT(message, HasSubstr("job 'job-2' needs 5 nodes with 8 GPUs"));
  EXPECT_THAT(message, HasSubstr("4 are free and eligible"));
  EXPECT_THAT(message, HasSubstr("1 unhealthy"));
  EXPECT_THAT(message, HasSubstr("1 drained"));
  EXPECT_THAT(message, HasSubstr("registered but not in the topology: lost (no rack"));
}

TEST_F(PlacementManagerTest, CongestedRackIsAvoidedAndMaxCongestionExcludes) {
  Register(MakeNode("a1", "a", "p1"));
  Register(MakeNode("a2", "a", "p1"));
  Register(MakeNode("b1", "b", "p1"));
  Register(MakeNode("b2", "b", "p1"));
  // a1 paused 30% of the time: score 0.6 (the pause rule fires at 50%); rack a 0.3.
  SendTelemetry("a1", 0.3);
  for (const std::string name : {"a2", "b1", "b2"}) SendTelemetry(name, 0);
  weft::v1::GetTopologyResponse topology = manager_.GetTopology();
  ASSERT_EQ(topology.snapshot().nodes_size(), 4);
  EXPECT_DOUBLE_EQ(topology.snapshot().nodes(0).congestion(), 0.6);

  absl::StatusOr<PlacementResponse> placed = manager_.Place(Nodes("job-1", 2));
  ASSERT_TRUE(placed.ok()) << placed.status();
  EXPECT_THAT(RingOrder(*placed), UnorderedElementsAre("b1", "b2"));

  PlacementRequest picky = Nodes("job-2", 2);
  picky.mutable_constraints()->set_max_congestion(0.5);
  absl::StatusOr<PlacementResponse> refused = manager_.Place(picky);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(refused.status().message(), HasSubstr("1 above max_congestion"));
}

TEST_F(PlacementManagerTest, BadRequestsAndImpossibleConstraintsAreCountedApart) {
  RegisterSixNodes();
  PlacementRequest bulk = Nodes("job-1", 1);
  bulk.set_qos_class("bulk");
  absl::StatusOr<PlacementResponse> refused = manager_.Place(bulk);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(refused.status().message(),
            "unknown qos_class 'bulk'; accepted: training, storage, control");

  PlacementRequest one_rack = Nodes("job-2", 3);
  one_rack.mutable_constraints()->set_max_racks(1);
  refused = manager_.Place(one_rack);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(refused.status().message(), HasSubstr("allow at least 2 racks"));

  EXPECT_EQ(Metric("weft_controller_placements_total", {{"result", "invalid"}}), 1);
  EXPECT_EQ(Metric("weft_controller_placements_total", {{"result", "infeasible"}}), 1);
  EXPECT_EQ(Metric("weft_controller_reservations"), 0);
}

TEST_F(PlacementManagerTest, LeasesExpireByTheClockAndRenewExtendsThem) {
  RegisterSixNodes();
  PlacementRequest request = Nodes("job-1", 6);
  request.set_lease_ttl_s(60);
  absl::StatusOr<PlacementResponse> placed = manager_.Place(request);
  ASSERT_TRUE(placed.ok()) << placed.status();

  clock_.Advance(absl::Seconds(50));
  absl::StatusOr<PlacementResponse> renewed = manager_.Renew(placed->reservation_id(), 120);
  ASSERT_TRUE(renewed.ok()) << renewed.status();
  EXPECT_EQ(renewed->expires_at_unix_s(), absl::ToUnixSeconds(clock_.Now()) + 120);
  clock_.Advance(absl::Seconds(100));
  manager_.RefreshGauges();
  EXPECT_EQ(Metric("weft_controller_reservations"), 1);
  EXPECT_EQ(Metric("weft_controller_reserved_nodes"), 6);
  ASSERT_EQ(manager_.ListReservations().reservations_size(), 1);

  clock_.Advance(absl::Seconds(21));
  manager_.RefreshGauges();
  EXPECT_EQ(Metric("weft_controller_reservations"), 0);
  EXPECT_EQ(Metric("weft_controller_reserved_nodes"), 0);
  EXPECT_EQ(manager_.ListReservations().reservations_size(), 0);
  // Its nodes are free again: the same job gets a new reservation.
  absl::StatusOr<PlacementResponse> again = manager_.Place(request);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_NE(again->reservation_id(), placed->reservation_id());

  absl::Status expired = manager_.Release(placed->reservation_id());
  EXPECT_EQ(expired.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(expired.message(), HasSubstr("may have expired"));
  EXPECT_EQ(manager_.Release("").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(manager_.Renew("", 0).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(PlacementManagerTest, PlacedJobsCarryTheirDeclaredTrafficAndProgress) {
  RegisterSixNodes();
  PlacementRequest moe = Nodes("moe", 2);
  moe.set_alltoall_bytes(1'000'000);
  moe.set_lease_ttl_s(60);
  absl::StatusOr<PlacementResponse> placed = manager_.Place(moe);
  ASSERT_TRUE(placed.ok()) << placed.status();
  ASSERT_TRUE(manager_.Place(Nodes("llm", 2)).ok());
  weft::v1::JobProgress progress;
  progress.set_iteration_s(0.6);
  progress.set_first_iteration_s(0.5);
  ASSERT_TRUE(manager_.ReportJobProgress(placed->reservation_id(), progress).ok());

  std::vector<PlacementManager::PlacedJob> jobs = manager_.ListPlacedJobs();
  ASSERT_EQ(jobs.size(), 2u);
  EXPECT_EQ(jobs[0].request.job_id(), "moe");
  EXPECT_EQ(jobs[0].request.alltoall_bytes(), 1'000'000u);
  EXPECT_EQ(jobs[0].reservation.reservation_id(), placed->reservation_id());
  ASSERT_TRUE(jobs[0].progress.has_value());
  EXPECT_DOUBLE_EQ(jobs[0].progress->first_iteration_s(), 0.5);
  EXPECT_EQ(jobs[1].request.job_id(), "llm");
  EXPECT_FALSE(jobs[1].progress.has_value());

  clock_.Advance(absl::Seconds(61));  // the MoE job's lease ends
  jobs = manager_.ListPlacedJobs();
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0].request.job_id(), "llm");
}

TEST_F(PlacementManagerTest, JobSeriesFollowReportsAndLeaveWithTheReservation) {
  RegisterSixNodes();
  PlacementRequest request = Nodes("llm-7b", 2);
  request.set_lease_ttl_s(60);
  absl::StatusOr<PlacementResponse> placed = manager_.Place(request);
  ASSERT_TRUE(placed.ok()) << placed.status();
  absl::StatusOr<PlacementResponse> other = manager_.Place(Nodes("moe", 2));
  ASSERT_TRUE(other.ok()) << other.status();
  // No series before a job reports.
  EXPECT_FALSE(MetricValue(registry_, "weft_job_iteration_seconds", {{"job_id", "llm-7b"}}));

  weft::v1::JobProgress progress;
  progress.set_iterations_done(12);
  progress.set_iteration_s(0.84);
  progress.set_first_iteration_s(0.52);
  progress.set_communication_s(0.40);
  progress.set_tokens_per_s(1420);
  ASSERT_TRUE(manager_.ReportJobProgress(placed->reservation_id(), progress).ok());
  EXPECT_DOUBLE_EQ(Metric("weft_job_iteration_seconds", {{"job_id", "llm-7b"}}), 0.84);
  EXPECT_DOUBLE_EQ(Metric("weft_job_first_iteration_seconds", {{"job_id", "llm-7b"}}), 0.52);
  EXPECT_DOUBLE_EQ(Metric("weft_job_communication_seconds", {{"job_id", "llm-7b"}}), 0.40);
  EXPECT_DOUBLE_EQ(Metric("weft_job_tokens_per_second", {{"job_id", "llm-7b"}}), 1420);
  EXPECT_EQ(Metric("weft_job_iterations", {{"job_id", "llm-7b"}}), 12);
  EXPECT_EQ(Metric("weft_job_nodes", {{"job_id", "llm-7b"}}), 2);

  // A newer report replaces the values; a refused one (bad number) changes nothing.
  progress.set_iterations_done(13);
  progress.set_tokens_per_s(2380);
  ASSERT_TRUE(manager_.ReportJobProgress(placed->reservation_id(), progress).ok());
  EXPECT_DOUBLE_EQ(Metric("weft_job_tokens_per_second", {{"job_id", "llm-7b"}}), 2380);
  EXPECT_EQ(Metric("weft_job_iterations", {{"job_id", "llm-7b"}}), 13);
  weft::v1::JobProgress bad = progress;
  bad.set_iteration_s(-1);
  EXPECT_EQ(manager_.ReportJobProgress(placed->reservation_id(), bad).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_DOUBLE_EQ(Metric("weft_job_iteration_seconds", {{"job_id", "llm-7b"}}), 0.84);

  // Released: its series leave; the other job's stay.
  ASSERT_TRUE(manager_.ReportJobProgress(other->reservation_id(), progress).ok());
  ASSERT_TRUE(manager_.Release(other->reservation_id()).ok());
  EXPECT_FALSE(MetricValue(registry_, "weft_job_tokens_per_second", {{"job_id", "moe"}}));
  EXPECT_EQ(Metric("weft_job_iterations", {{"job_id", "llm-7b"}}), 13);

  // Expired without a call: the series leave at the next refresh.
  clock_.Advance(absl::Seconds(61));
  manager_.RefreshGauges();
  EXPECT_FALSE(MetricValue(registry_, "weft_job_iteration_seconds", {{"job_id", "llm-7b"}}));
  EXPECT_FALSE(MetricValue(registry_, "weft_job_nodes", {{"job_id", "llm-7b"}}));
}

TEST_F(PlacementManagerTest, TopologyListsEveryNodeWithARackAndSaysWhichAreLeftOut) {
  RegisterSixNodes();
  Register(MakeNode("lost", "", ""));
  ASSERT_TRUE(inventory_.Drain("c2", "").ok());
  const weft::v1::GetTopologyResponse topology = manager_.GetTopology();
  ASSERT_EQ(topology.snapshot().nodes_size(), 6);
  EXPECT_EQ(topology.snapshot().taken_at_unix_s(), absl::ToUnixSeconds(clock_.Now()));
  EXPECT_TRUE(topology.snapshot().nodes(5).drained());
  EXPECT_EQ(topology.snapshot().nodes(5).pod(), "p2");
  ASSERT_EQ(topology.omitted_size(), 1);
  EXPECT_EQ(topology.omitted(0).node(), "lost");
}

// A controller's placement side over a shared store; a new one is a restart.
struct StoredController {
  StoredController(FakeClock* clock, store::ControllerStore* store)
      : controller_metrics(registry),
        inventory(clock, InventoryOptions{}, &controller_metrics, store),
        placement_metrics(registry),
        manager(&inventory, clock, PlacementOptions{}, &placement_metrics, store) {
    EXPECT_TRUE(inventory.Restore().ok());
    EXPECT_TRUE(manager.Restore().ok());
    for (const auto& [name, rack] : std::vector<std::pair<std::string, std::string>>{
             {"a1", "a"}, {"a2", "a"}, {"b1", "b"}, {"b2", "b"}}) {
      EXPECT_TRUE(inventory.Register(MakeNode(name, rack, "p1"), 0).ok());
    }
  }
  prometheus::Registry registry;
  ControllerMetrics controller_metrics;
  Inventory inventory;
  PlacementMetrics placement_metrics;
  PlacementManager manager;
};

TEST(PlacementManagerRestartTest, LiveReservationsSurviveWithTheirNodesAndLeases) {
  FakeClock clock;
  auto store = store::ControllerStore::OpenInMemory();
  ASSERT_TRUE(store.ok());
  PlacementResponse kept, released, renewed;
  {
    StoredController before(&clock, store->get());
    PlacementRequest short_lease = Nodes("short", 1);
    short_lease.set_lease_ttl_s(10);
    kept = *before.manager.Place(Nodes("kept", 1));
    released = *before.manager.Place(Nodes("released", 1));
    ASSERT_TRUE(before.manager.Place(short_lease).ok());
    renewed = *before.manager.Place(short_lease);  // same job: same reservation
    ASSERT_TRUE(before.manager.Release(released.reservation_id()).ok());
    clock.Advance(absl::Seconds(5));
    renewed = *before.manager.Renew(renewed.reservation_id(), 3600);
  }
  clock.Advance(absl::Seconds(30));  // beyond the first lease of "short"
  StoredController after(&clock, store->get());
  weft::v1::ListReservationsResponse live = after.manager.ListReservations();
  ASSERT_EQ(live.reservations_size(), 2);
  EXPECT_EQ(live.reservations(0).reservation_id(), kept.reservation_id());
  EXPECT_EQ(RingOrder(live.reservations(0)), RingOrder(kept));
  EXPECT_EQ(live.reservations(0).ranks_size(), kept.ranks_size());
  EXPECT_EQ(live.reservations(0).expires_at_unix_s(), kept.expires_at_unix_s());
  EXPECT_EQ(live.reservations(1).reservation_id(), renewed.reservation_id());
  EXPECT_EQ(live.reservations(1).expires_at_unix_s(), renewed.expires_at_unix_s());

  // The restored reservations' nodes are taken; ids continue past every id given.
  absl::StatusOr<PlacementResponse> next = after.manager.Place(Nodes("next", 2));
  ASSERT_TRUE(next.ok()) << next.status();
  for (const std::string& node : next->ring_order()) {
    EXPECT_THAT(RingOrder(kept), ::testing::Not(::testing::Contains(node)));
    EXPECT_THAT(RingOrder(renewed), ::testing::Not(::testing::Contains(node)));
  }
  EXPECT_EQ(next->reservation_id(), "rsv-4");
  // The same job and request after the restart is still the same reservation.
  EXPECT_EQ(after.manager.Place(Nodes("kept", 1))->reservation_id(), kept.reservation_id());
}

TEST(PlacementManagerRestartTest, ExpiredReservationsAreNotRestored) {
  FakeClock clock;
  auto store = store::ControllerStore::OpenInMemory();
  ASSERT_TRUE(store.ok());
  {
    StoredController before(&clock, store->get());
    PlacementRequest request = Nodes("job", 1);
    request.set_lease_ttl_s(60);
    ASSERT_TRUE(before.manager.Place(request).ok());
  }
  clock.Advance(absl::Seconds(61));
  StoredController after(&clock, store->get());
  EXPECT_EQ(after.manager.ListReservations().reservations_size(), 0);
  EXPECT_TRUE((*store)->LoadReservations(std::numeric_limits<int64_t>::min())->empty());
}

}  // namespace
}  // namespace weft::controller
