// PlacementServiceImpl over a real in-process gRPC server on 127.0.0.1:0: each RPC maps
// to the PlacementManager and its refusals arrive with the right code and message; jobs'
// progress joins the inventory's telemetry in ListJobs.
#include "controller/api/placement_service.h"

#include <memory>
#include <string>

#include "common/fake_clock.h"
#include "controller/inventory/controller_metrics.h"
#include "controller/inventory/inventory.h"
#include "controller/placement/placement_manager.h"
#include "controller/placement/placement_metrics.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"

namespace weft::controller {
namespace {

using ::testing::HasSubstr;

weft::v1::NodeInfo MakeNode(const std::string& name, const std::string& rack) {
  weft::v1::NodeInfo info;
  info.set_name(name);
  info.set_rack(rack);
  info.set_pod("p1");
  weft::v1::Nic* nic = info.add_nics();
  nic->set_device("mlx5_0");
  nic->set_port(1);
  nic->set_netdev("ens1np0");
  for (int g = 0; g < 4; ++g) info.add_gpus()->set_index(g);
  return info;
}

class PlacementServiceTest : public ::testing::Test {
 protected:
  PlacementServiceTest()
      : metrics_(registry_),
        inventory_(&clock_, InventoryOptions{}, &metrics_),
        placement_metrics_(registry_),
        manager_(&inventory_, &clock_, PlacementOptions{}, &placement_metrics_),
        service_(&manager_) {
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    EXPECT_NE(server_, nullptr);
    stub_ = weft::v1::PlacementService::NewStub(grpc::CreateChannel(
        "127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials()));
    for (const auto& [name, rack] : {std::pair{"n1", "r1"}, std::pair{"n2", "r1"},
                                     std::pair{"n3", "r2"}}) {
      EXPECT_TRUE(inventory_.Register(MakeNode(name, rack), 0).ok());
    }
  }

  ~PlacementServiceTest() override { server_->Shutdown(); }

  grpc::Status Place(const weft::v1::PlacementRequest& request,
                     weft::v1::PlacementResponse* response) {
    grpc::ClientContext context;
    return stub_->Place(&context, request, response);
  }

  FakeClock clock_;
  prometheus::Registry registry_;
  ControllerMetrics metrics_;
  Inventory inventory_;
  PlacementMetrics placement_metrics_;
  PlacementManager manager_;
  PlacementServiceImpl service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<weft::v1::PlacementService::Stub> stub_;
};

TEST_F(PlacementServiceTest, PlaceListRenewRelease) {
  weft::v1::PlacementRequest request;
  request.set_job_id("job-7");
  request.set_rank_count(8);
  request.set_gpus_per_node(4);
  weft::v1::PlacementResponse placed;
  grpc::Status status = Place(request, &placed);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(placed.job_id(), "job-7");
  EXPECT_EQ(placed.ranks_size(), 8);
  EXPECT_EQ(placed.racks_used(), 1u);
  EXPECT_EQ(placed.racks(0), "r1");
  EXPECT_EQ(placed.ranks(5).node(), placed.ring_order(1));
  EXPECT_EQ(placed.ranks(5).nic(), "mlx5_0");

  weft::v1::PlacementResponse again;
  ASSERT_TRUE(Place(request, &again).ok());
  EXPECT_EQ(again.reservation_id(), placed.reservation_id());

  {
    grpc::ClientContext context;
    weft::v1::ListReservationsResponse list;
    ASSERT_TRUE(
        stub_->ListReservations(&context, weft::v1::ListReservationsRequest(), &list).ok());
    ASSERT_EQ(list.reservations_size(), 1);
    EXPECT_EQ(list.reservations(0).reservation_id(), placed.reservation_id());
  }
  {
    clock_.Advance(absl::Seconds(10));
    grpc::ClientContext context;
    weft::v1::RenewRequest renew;
    renew.set_reservation_id(placed.reservation_id());
    renew.set_lease_ttl_s(3600);
    weft::v1::RenewResponse renewed;
    ASSERT_TRUE(stub_->Renew(&context, renew, &renewed).ok());
    EXPECT_EQ(renewed.expires_at_unix_s(), absl::ToUnixSeconds(clock_.Now()) + 3600);
  }
  {
    grpc::ClientContext context;
    weft::v1::RenewRequest renew;
    renew.set_reservation_id(placed.reservation_id());
    renew.set_lease_ttl_s(7 * 24 * 3600);
    weft::v1::RenewResponse renewed;
    grpc::Status too_long = stub_->Renew(&context, renew, &renewed);
    EXPECT_EQ(too_long.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_THAT(too_long.error_message(), HasSubstr("lease_ttl_s 604800 is too long"));
  }
  weft::v1::ReleaseRequest release;
  release.set_reservation_id(placed.reservation_id());
  {
    grpc::ClientContext context;
    weft::v1::ReleaseResponse released;
    ASSERT_TRUE(stub_->Release(&context, release, &released).ok());
  }
  grpc::ClientContext context;
  weft::v1::ReleaseResponse released;
  grpc::Status twice = stub_->Release(&context, release, &released);
  EXPECT_EQ(twice.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(twice.error_message(), HasSubstr(placed.reservation_id()));
}

TEST_F(PlacementServiceTest, RefusalsPassThroughWithCodeAndMessage) {
  weft::v1::PlacementRequest request;
  request.set_job_id("big");
  request.set_node_count(4);
  weft::v1::PlacementResponse response;
  grpc::Status status = Place(request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(status.error_message(),
              HasSubstr("job 'big' needs 4 nodes with 4 GPUs; 3 are free and eligible "
                        "(by pod: p1 3; by rack: r1 2, r2 1)"));

  request.set_node_count(3);
  request.mutable_constraints()->set_max_racks(1);
  status = Place(request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(status.error_message(), HasSubstr("constraints.max_racks is 1"));

  request.clear_constraints();
  request.set_qos_class("bulk");
  status = Place(request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("unknown qos_class 'bulk'"));

  request.clear_job_id();
  request.clear_qos_class();
  status = Place(request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("job_id is empty"));

  grpc::ClientContext context;
  weft::v1::ReleaseResponse released;
  EXPECT_EQ(stub_->Release(&context, weft::v1::ReleaseRequest(), &released).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
}

TEST_F(PlacementServiceTest, GetTopology) {
  ASSERT_TRUE(inventory_.Drain("n3", "bad cable").ok());
  grpc::ClientContext context;
  weft::v1::GetTopologyResponse topology;
  ASSERT_TRUE(
      stub_->GetTopology(&context, weft::v1::GetTopologyRequest(), &topology).ok());
  ASSERT_EQ(topology.snapshot().nodes_size(), 3);
  EXPECT_EQ(topology.snapshot().nodes(2).name(), "n3");
  EXPECT_EQ(topology.snapshot().nodes(2).rack(), "r2");
  EXPECT_TRUE(topology.snapshot().nodes(2).drained());
  EXPECT_EQ(topology.snapshot().nodes(0).gpus_size(), 4);
  EXPECT_EQ(topology.omitted_size(), 0);
}

weft::v1::TelemetryBatch CongestedNicBatch() {
  weft::v1::NicSample sample;
  sample.set_device("mlx5_0");
  sample.set_port(1);
  sample.set_rates_valid(true);
  sample.mutable_congestion()->mutable_np_ecn_marked_roce_packets()->set_per_second(1200);
  sample.mutable_congestion()->mutable_np_cnp_sent()->set_per_second(150);
  sample.mutable_retransmission()->mutable_packet_seq_err()->set_per_second(2);
  weft::v1::PriorityPfcCounters* pfc = sample.add_pfc();
  pfc->set_priority(3);
  pfc->mutable_rx_pause_duration_us()->set_per_second(250'000);  // paused 25% of the time
  weft::v1::TelemetryBatch batch;
  *batch.add_samples() = sample;
  return batch;
}

weft::v1::JobProgress Iteration(uint64_t done, double iteration_s) {
  weft::v1::JobProgress progress;
  progress.set_iterations_done(done);
  progress.set_iteration_s(iteration_s);
  progress.set_first_iteration_s(1.0);
  progress.set_model("llama-7b");
  return progress;
}

class JobsApiTest : public PlacementServiceTest {
 protected:
  // Places "job-1" on the two nodes of rack r1 (n1, n2) for 60 s.
  weft::v1::PlacementResponse PlaceJob() {
    weft::v1::PlacementRequest request;
    request.set_job_id("job-1");
    request.set_node_count(2);
    request.set_lease_ttl_s(60);
    weft::v1::PlacementResponse placed;
    grpc::Status status = Place(request, &placed);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return placed;
  }

  grpc::Status Report(const std::string& reservation_id, const weft::v1::JobProgress& progress) {
    grpc::ClientContext context;
    weft::v1::ReportJobProgressRequest request;
    request.set_reservation_id(reservation_id);
    *request.mutable_progress() = progress;
    weft::v1::ReportJobProgressResponse response;
    return stub_->ReportJobProgress(&context, request, &response);
  }

  weft::v1::ListJobsResponse ListJobs() {
    grpc::ClientContext context;
    weft::v1::ListJobsResponse jobs;
    grpc::Status status = stub_->ListJobs(&context, weft::v1::ListJobsRequest(), &jobs);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return jobs;
  }
};

TEST_F(JobsApiTest, ReportedProgressAndTheNodesCongestionAppearInListJobs) {
  const weft::v1::PlacementResponse placed = PlaceJob();
  ASSERT_THAT(placed.ring_order(), ::testing::UnorderedElementsAre("n1", "n2"));
  ASSERT_EQ(ListJobs().jobs_size(), 1);
  EXPECT_FALSE(ListJobs().jobs(0).has_progress());

  ASSERT_TRUE(inventory_.AcceptTelemetry("n1", 1, CongestedNicBatch()).ok());
  ASSERT_TRUE(inventory_.Drain("n2", "bad optic").ok());
  ASSERT_TRUE(Report(placed.reservation_id(), Iteration(7, 1.25)).ok());

  const weft::v1::ListJobsResponse jobs = ListJobs();
  ASSERT_EQ(jobs.jobs_size(), 1);
  const weft::v1::JobStatus& job = jobs.jobs(0);
  EXPECT_EQ(job.reservation().reservation_id(), placed.reservation_id());
  EXPECT_EQ(job.progress().iterations_done(), 7u);
  EXPECT_EQ(job.progress().model(), "llama-7b");
  EXPECT_EQ(job.progress().reported_at_unix_ms(), absl::ToUnixMillis(clock_.Now()));
  EXPECT_DOUBLE_EQ(job.congestion().ecn_marked_per_s(), 1200);
  EXPECT_DOUBLE_EQ(job.congestion().cnp_sent_per_s(), 150);
  EXPECT_DOUBLE_EQ(job.congestion().retransmits_per_s(), 2);
  EXPECT_DOUBLE_EQ(job.congestion().pfc_pause_share(), 0.25);
  EXPECT_THAT(job.congestion().findings(), ::testing::ElementsAre("n2: DRAINED (bad optic)"));
}

TEST_F(JobsApiTest, ProgressOfAnUnknownReservationIsNotFoundWithAHint) {
  grpc::Status status = Report("r-nope", Iteration(1, 1));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(status.error_message(), HasSubstr("'r-nope'"));
  EXPECT_THAT(status.error_message(), HasSubstr("place the job first, or renew its lease"));

  status = Report("", Iteration(1, 1));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
}

TEST_F(JobsApiTest, InvalidProgressIsRefusedNamingTheField) {
  const weft::v1::PlacementResponse placed = PlaceJob();
  weft::v1::JobProgress progress = Iteration(1, 1);
  progress.add_phases()->set_busbw_bytes_per_s(-5);
  grpc::Status status = Report(placed.reservation_id(), progress);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("progress.phases[0].busbw_bytes_per_s is -5"));
  EXPECT_FALSE(ListJobs().jobs(0).has_progress());
}

TEST_F(JobsApiTest, ProgressLeavesWithItsReleasedOrExpiredReservation) {
  weft::v1::PlacementResponse placed = PlaceJob();
  ASSERT_TRUE(Report(placed.reservation_id(), Iteration(1, 1)).ok());
  ASSERT_TRUE(manager_.Release(placed.reservation_id()).ok());
  EXPECT_EQ(ListJobs().jobs_size(), 0);
  EXPECT_EQ(Report(placed.reservation_id(), Iteration(2, 1)).error_code(),
            grpc::StatusCode::NOT_FOUND);

  placed = PlaceJob();
  ASSERT_TRUE(Report(placed.reservation_id(), Iteration(1, 1)).ok());
  clock_.Advance(absl::Seconds(61));
  EXPECT_EQ(ListJobs().jobs_size(), 0);
  EXPECT_EQ(Report(placed.reservation_id(), Iteration(2, 1)).error_code(),
            grpc::StatusCode::NOT_FOUND);
}

}  // namespace
}  // namespace weft::controller
