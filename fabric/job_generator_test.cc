#include "fabric/job_generator.h"

#include <atomic>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "common/fake_clock.h"
#include "gmock/gmock.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/server_builder.h"
#include "gtest/gtest.h"
#include "proto/weft/v1/placement.grpc.pb.h"
#include "sim/twin.h"

namespace weft::fabric {
namespace {

using ::testing::HasSubstr;

// A scheduler's view of the controller, over real gRPC: places jobs on the first free
// nodes of its list that are not drained, in list order.
class TestPlacementService final : public weft::v1::PlacementService::Service {
 public:
  explicit TestPlacementService(std::vector<std::string> nodes) : nodes_(std::move(nodes)) {}

  grpc::Status Place(grpc::ServerContext*, const weft::v1::PlacementRequest* request,
                     weft::v1::PlacementResponse* response) override {
    absl::MutexLock lock(&mu_);
    if (refuse_) return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, "no room");
    std::vector<std::string> chosen;
    for (const std::string& node : nodes_) {
      if (chosen.size() < request->node_count() && !drained_.count(node) && !held_.count(node)) {
        chosen.push_back(node);
      }
    }
    if (chosen.size() < request->node_count()) {
      return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, "not enough nodes");
    }
    response->set_reservation_id(absl::StrCat("r", ++reservations_));
    response->set_job_id(request->job_id());
    for (const std::string& node : chosen) {
      response->add_ring_order(node);
      held_.insert(node);
    }
    response->set_expires_at_unix_s(1'800'000'000 + 60);
    placed_[response->reservation_id()] = *response;
    return grpc::Status::OK;
  }
  grpc::Status Release(grpc::ServerContext*, const weft::v1::ReleaseRequest* request,
                       weft::v1::ReleaseResponse*) override {
    absl::MutexLock lock(&mu_);
    auto found = placed_.find(request->reservation_id());
    if (found == placed_.end()) return grpc::Status(grpc::StatusCode::NOT_FOUND, "gone");
    for (const std::string& node : found->second.ring_order()) held_.erase(node);
    placed_.erase(found);
    ++releases_;
    return grpc::Status::OK;
  }
  grpc::Status Renew(grpc::ServerContext*, const weft::v1::RenewRequest*,
                     weft::v1::RenewResponse* response) override {
    absl::MutexLock lock(&mu_);
    ++renewals_;
    response->set_expires_at_unix_s(1'800'000'000 + 120);
    return grpc::Status::OK;
  }
  grpc::Status ListReservations(grpc::ServerContext*, const weft::v1::ListReservationsRequest*,
                                weft::v1::ListReservationsResponse* response) override {
    absl::MutexLock lock(&mu_);
    for (const auto& [id, reservation] : placed_) *response->add_reservations() = reservation;
    return grpc::Status::OK;
  }
  grpc::Status GetTopology(grpc::ServerContext*, const weft::v1::GetTopologyRequest*,
                           weft::v1::GetTopologyResponse* response) override {
    if (absl::Notification* entered = hold_entered_.exchange(nullptr)) {
      entered->Notify();
      hold_release_->WaitForNotification();
    }
    absl::MutexLock lock(&mu_);
    for (const std::string& name : nodes_) {
      weft::v1::SnapshotNode* node = response->mutable_snapshot()->add_nodes();
      node->set_name(name);
      node->set_drained(drained_.count(name) > 0);
    }
    return grpc::Status::OK;
  }
  grpc::Status ReportJobProgress(grpc::ServerContext*,
                                 const weft::v1::ReportJobProgressRequest* request,
                                 weft::v1::ReportJobProgressResponse*) override {
    absl::MutexLock lock(&mu_);
    reports_.push_back(*request);
    return grpc::Status::OK;
  }

  // The next GetTopology notifies `entered`, then answers only after `release`.
  void HoldNextTopology(absl::Notification* entered, absl::Notification* release) {
    hold_release_ = release;
    hold_entered_ = entered;
  }
  void Drain(const std::string& node) {
    absl::MutexLock lock(&mu_);
    drained_.insert(node);
  }
  void set_refuse(bool refuse) {
    absl::MutexLock lock(&mu_);
    refuse_ = refuse;
  }
  std::vector<weft::v1::ReportJobProgressRequest> reports() {
    absl::MutexLock lock(&mu_);
    return reports_;
  }
  int releases() {
    absl::MutexLock lock(&mu_);
    return releases_;
  }
  int renewals() {
    absl::MutexLock lock(&mu_);
    return renewals_;
  }

 private:
  const std::vector<std::string> nodes_;
  // Set before the call they hold is made (HoldNextTopology), read by one handler.
  std::atomic<absl::Notification*> hold_entered_ = nullptr;
  absl::Notification* hold_release_ = nullptr;
  absl::Mutex mu_;
  bool refuse_ ABSL_GUARDED_BY(mu_) = false;
  int reservations_ ABSL_GUARDED_BY(mu_) = 0;
  int releases_ ABSL_GUARDED_BY(mu_) = 0;
  int renewals_ ABSL_GUARDED_BY(mu_) = 0;
  std::set<std::string> drained_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> held_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, weft::v1::PlacementResponse> placed_ ABSL_GUARDED_BY(mu_);
  std::vector<weft::v1::ReportJobProgressRequest> reports_ ABSL_GUARDED_BY(mu_);
};

weft::v1::FabricJobConfig JobConfig() {
  weft::v1::FabricJobConfig job;
  job.set_name("llama");
  job.set_model("llama-1b");
  job.set_nodes(2);
  job.set_parameters(1e9);
  job.set_tokens_per_iteration(1e6);
  job.set_compute_s_per_iteration(0.05);
  return job;
}

class JobGeneratorTest : public ::testing::Test {
 protected:
  JobGeneratorTest()
      : service_({"gpu-a01", "gpu-a02", "gpu-b01", "gpu-b02"}), twin_(MakeTwin()) {
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    stub_ = weft::v1::PlacementService::NewStub(grpc::CreateChannel(
        absl::StrCat("127.0.0.1:", port), grpc::InsecureChannelCredentials()));
    generator_ = std::make_unique<JobGenerator>(std::vector<weft::v1::FabricJobConfig>{JobConfig()},
                                                &twin_, stub_.get(), &clock_);
  }
  ~JobGeneratorTest() override { server_->Shutdown(); }

  static TwinHost MakeTwin() {
    sim::TwinFabricOptions options;
    options.nics_per_node = 2;
    options.nic_bps = 100e9;
    options.uplinks_per_tor = 2;
    absl::StatusOr<sim::TwinTopology> topology =
        sim::BuildTwinTopology(sim::DemoRacks(2, 2, 2), options);
    absl::StatusOr<sim::Twin> twin = sim::Twin::Create(*std::move(topology), sim::DcqcnParams());
    return TwinHost(*std::move(twin), 2);
  }

  FakeClock clock_;
  TestPlacementService service_;
  TwinHost twin_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<weft::v1::PlacementService::Stub> stub_;
  std::unique_ptr<JobGenerator> generator_;
};

TEST_F(JobGeneratorTest, PlacesTheJobRunsItOnTheReservedNodesAndReportsIterations) {
  generator_->Check();
  std::vector<TwinHost::JobView> jobs = twin_.Jobs();
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0].nodes, (std::vector<std::string>{"gpu-a01", "gpu-a02"}));
  EXPECT_TRUE(service_.reports().empty());  // no iteration done yet

  ASSERT_TRUE(twin_.Advance(2.0).ok());
  generator_->Check();
  ASSERT_EQ(service_.reports().size(), 1u);
  const weft::v1::ReportJobProgressRequest report = service_.reports()[0];
  EXPECT_EQ(report.reservation_id(), "r1");
  EXPECT_EQ(report.progress().model(), "llama-1b");
  EXPECT_GT(report.progress().iterations_done(), 1u);
  EXPECT_GT(report.progress().iteration_s(), 0.05);  // compute plus the all-reduce
  ASSERT_EQ(report.progress().phases_size(), 1);
  EXPECT_GT(report.progress().phases(0).busbw_bytes_per_s(), 0);

  generator_->Check();  // no new iteration: nothing new to report
  EXPECT_EQ(service_.reports().size(), 1u);

  const weft::v1::ListFabricJobsResponse listed = generator_->ListJobs();
  ASSERT_EQ(listed.jobs_size(), 1);
  EXPECT_EQ(listed.jobs(0).reservation_id(), "r1");
  EXPECT_EQ(listed.jobs(0).state(), "running");
  EXPECT_EQ(listed.jobs(0).placements(), 1u);
  EXPECT_EQ(listed.jobs(0).pattern(), "ring all-reduce");
}

TEST_F(JobGeneratorTest, ListJobsAnswersWhileARoundWaitsOnTheController) {
  generator_->Check();
  const weft::v1::ListFabricJobsResponse before = generator_->ListJobs();
  ASSERT_EQ(before.jobs_size(), 1);
  ASSERT_FALSE(before.jobs(0).reservation_id().empty());

  absl::Notification entered, release, listed;
  service_.HoldNextTopology(&entered, &release);
  std::thread round([&] { generator_->Check(); });
  entered.WaitForNotification();
  // The round is inside GetTopology; ListJobs must not wait for it.
  weft::v1::ListFabricJobsResponse during;
  std::thread reader([&] {
    during = generator_->ListJobs();
    listed.Notify();
  });
  const bool answered = listed.WaitForNotificationWithTimeout(absl::Seconds(10));
  release.Notify();
  round.join();
  reader.join();
  ASSERT_TRUE(answered) << "ListJobs waited for a round blocked on the controller";
  ASSERT_EQ(during.jobs_size(), 1);
  EXPECT_EQ(during.jobs(0).reservation_id(), before.jobs(0).reservation_id());
  EXPECT_EQ(during.jobs(0).state(), before.jobs(0).state());
}

TEST_F(JobGeneratorTest, ADrainedNodeMovesTheJobToOtherNodes) {
  generator_->Check();
  service_.Drain("gpu-a02");
  generator_->Check();
  EXPECT_EQ(service_.releases(), 1);
  std::vector<TwinHost::JobView> jobs = twin_.Jobs();
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0].nodes, (std::vector<std::string>{"gpu-a01", "gpu-b01"}));
  const weft::v1::ListFabricJobsResponse listed = generator_->ListJobs();
  EXPECT_EQ(listed.jobs(0).placements(), 2u);
  EXPECT_EQ(listed.jobs(0).reservation_id(), "r2");
}

TEST_F(JobGeneratorTest, AJobTheControllerCannotPlaceWaitsAndSaysWhy) {
  service_.set_refuse(true);
  generator_->Check();
  EXPECT_TRUE(twin_.Jobs().empty());
  EXPECT_THAT(generator_->ListJobs().jobs(0).state(),
              HasSubstr("waiting for placement: no room"));
  service_.set_refuse(false);
  generator_->Check();
  EXPECT_EQ(twin_.Jobs().size(), 1u);
}

TEST_F(JobGeneratorTest, TheLeaseIsRenewedOnceHalfOfItIsGone) {
  generator_->Check();
  clock_.Advance(absl::Seconds(20));
  generator_->Check();
  EXPECT_EQ(service_.renewals(), 0);
  clock_.Advance(absl::Seconds(15));  // 35 s of 60
  generator_->Check();
  EXPECT_EQ(service_.renewals(), 1);
}

TEST_F(JobGeneratorTest, NothingIsPlacedUntilTheClusterHasRegisteredOrTheGraceIsOver) {
  TestPlacementService partial({"gpu-a01", "gpu-a02", "gpu-b01"});
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&partial);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  auto stub = weft::v1::PlacementService::NewStub(grpc::CreateChannel(
      absl::StrCat("127.0.0.1:", port), grpc::InsecureChannelCredentials()));
  JobGenerator generator({JobConfig()}, &twin_, stub.get(), &clock_, absl::Seconds(30));
  generator.Check();
  EXPECT_TRUE(twin_.Jobs().empty());
  EXPECT_EQ(generator.ListJobs().jobs(0).state(),
            "waiting for the cluster: 3 of 4 nodes registered with the controller");
  clock_.Advance(absl::Seconds(30));
  generator.Check();
  EXPECT_EQ(twin_.Jobs().size(), 1u);
  server->Shutdown();
}

TEST(JobGeneratorMappingTest, ConfiguredJobsBecomeTwinJobsAndPlacementRequests) {
  weft::v1::FabricJobConfig job = JobConfig();
  job.set_nodes(8);
  job.set_all_reduce("tree");
  job.set_pipeline_stages(2);
  job.set_activation_bytes_per_node(1e9);
  const sim::TrainingJobSpec spec = TrainingJobOf(job);
  EXPECT_EQ(spec.layout.all_reduce, sim::AllReduceAlgorithm::kDoubleBinaryTree);
  EXPECT_EQ(spec.layout.pipeline_stages, 2);
  EXPECT_DOUBLE_EQ(spec.model.bytes_per_gradient_element, 2);  // unset: bf16
  const weft::v1::PlacementRequest request = PlacementRequestOf(job);
  EXPECT_EQ(request.job_id(), "llama");
  EXPECT_EQ(request.node_count(), 8u);
  EXPECT_EQ(request.parallelism().pipeline(), 2u);
  EXPECT_EQ(request.gradient_bytes(), 1'000'000'000u);  // 1e9 params x 2 B / 2 stages
  EXPECT_EQ(request.activation_bytes(), 1'000'000'000u);
}

}  // namespace
}  // namespace weft::fabric
