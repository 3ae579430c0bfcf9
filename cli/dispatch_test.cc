// weftctl's commands run as main() runs them (RunWeftctl: the table's dispatch, the
// controller client, the handlers) on string streams, against a fake controller: an
// AdminService and a PlacementService served by a real grpc::Server on 127.0.0.1 port
// 0. The fake answers from fixed data and records what it was asked, so each test checks
// both the request weftctl sent and what it printed where.
#include <chrono>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "cli/command_table.h"
#include "cli/weftctl_test_fixture.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "proto/weft/v1/admin.grpc.pb.h"
#include "proto/weft/v1/placement.grpc.pb.h"

namespace weft {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// Nothing listens on port 1 (tcpmux, never served on test machines).
constexpr char kNobodyHome[] = "127.0.0.1:1";

// The few AdminService RPCs the tests call. ListNodes answers `nodes`, or
// `list_nodes_error` when set; DrainNode refuses unknown nodes as the controller does.
class FakeAdmin final : public weft::v1::AdminService::Service {
 public:
  FakeAdmin() {
    weft::v1::NodeStatus* a01 = nodes_.add_nodes();
    a01->mutable_info()->set_name("gpu-a01");
    a01->mutable_info()->set_rack("rack-a");
    a01->set_state(weft::v1::NODE_STATE_HEALTHY);
    weft::v1::NodeStatus* b07 = nodes_.add_nodes();
    b07->mutable_info()->set_name("gpu-b07");
    b07->mutable_info()->set_rack("rack-b");
    b07->set_state(weft::v1::NODE_STATE_DRAINED);
    b07->set_drain_reason("bad optic");
  }

  grpc::Status ListNodes(grpc::ServerContext* context, const weft::v1::ListNodesRequest* request,
                         weft::v1::ListNodesResponse* response) override {
    absl::MutexLock lock(&mu_);
    list_nodes_requests_.push_back(*request);
    last_deadline_ = context->deadline();
    if (!list_nodes_error_.ok()) return list_nodes_error_;
    *response = nodes_;
    return grpc::Status::OK;
  }

  grpc::Status DrainNode(grpc::ServerContext*, const weft::v1::DrainNodeRequest* request,
                         weft::v1::DrainNodeResponse* response) override {
    absl::MutexLock lock(&mu_);
    drain_requests_.push_back(*request);
    for (const weft::v1::NodeStatus& node : nodes_.nodes()) {
      if (node.info().name() != request->name()) continue;
      *response->mutable_node() = node;
      response->mutable_node()->set_state(weft::v1::NODE_STATE_DRAINED);
      response->mutable_node()->set_drain_reason(request->reason());
      return grpc::Status::OK;
    }
    return grpc::Status(grpc::StatusCode::NOT_FOUND,
                        absl::StrCat("no node named '", request->name(), "'"));
  }

  void FailListNodes(grpc::Status status) {
    absl::MutexLock lock(&mu_);
    list_nodes_error_ = std::move(status);
  }
  std::vector<weft::v1::ListNodesRequest> list_nodes_requests() {
    absl::MutexLock lock(&mu_);
    return list_nodes_requests_;
  }
  std::vector<weft::v1::DrainNodeRequest> drain_requests() {
    absl::MutexLock lock(&mu_);
    return drain_requests_;
  }
  std::chrono::system_clock::time_point last_deadline() {
    absl::MutexLock lock(&mu_);
    return last_deadline_;
  }

 private:
  absl::Mutex mu_;
  weft::v1::ListNodesResponse nodes_;  // fixed at construction
  grpc::Status list_nodes_error_ ABSL_GUARDED_BY(mu_);
  std::vector<weft::v1::ListNodesRequest> list_nodes_requests_ ABSL_GUARDED_BY(mu_);
  std::vector<weft::v1::DrainNodeRequest> drain_requests_ ABSL_GUARDED_BY(mu_);
  std::chrono::system_clock::time_point last_deadline_ ABSL_GUARDED_BY(mu_);
};

// One live reservation, r-17 of job "train-7"; Release records the ids it is given.
class FakePlacement final : public weft::v1::PlacementService::Service {
 public:
  grpc::Status ListReservations(grpc::ServerContext*, const weft::v1::ListReservationsRequest*,
                                weft::v1::ListReservationsResponse* response) override {
    weft::v1::PlacementResponse* reservation = response->add_reservations();
    reservation->set_reservation_id("r-17");
    reservation->set_job_id("train-7");
    return grpc::Status::OK;
  }

  // train-7 on two nodes, having reported one iteration.
  grpc::Status ListJobs(grpc::ServerContext*, const weft::v1::ListJobsRequest*,
                        weft::v1::ListJobsResponse* response) override {
    weft::v1::JobStatus* job = response->add_jobs();
    job->mutable_reservation()->set_reservation_id("r-17");
    job->mutable_reservation()->set_job_id("train-7");
    job->mutable_reservation()->add_ring_order("gpu-a01");
    job->mutable_reservation()->add_ring_order("gpu-a02");
    job->mutable_progress()->set_iterations_done(9);
    job->mutable_congestion()->add_findings("gpu-a02: DOWN (not reporting)");
    return grpc::Status::OK;
  }

  grpc::Status Release(grpc::ServerContext*, const weft::v1::ReleaseRequest* request,
                       weft::v1::ReleaseResponse*) override {
    absl::MutexLock lock(&mu_);
    released_.push_back(request->reservation_id());
    return grpc::Status::OK;
  }

  std::vector<std::string> released() {
    absl::MutexLock lock(&mu_);
    return released_;
  }

 private:
  absl::Mutex mu_;
  std::vector<std::string> released_ ABSL_GUARDED_BY(mu_);
};

class DispatchTest : public WeftctlTest {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(StartServing({&admin_, &placement_}));
    options_.transport.controller = address();
    options_.timeout_ms = 5000;
  }

  FakeAdmin admin_;
  FakePlacement placement_;
};

TEST_F(DispatchTest, NodesPrintsOneRowPerNodeOfTheControllersAnswer) {
  options_.rack = "rack-a";
  ASSERT_EQ(Run({"nodes"}), 0) << err_.str();
  EXPECT_EQ(err_.str(), "");
  EXPECT_THAT(out_.str(), StartsWith("NODE "));
  EXPECT_THAT(out_.str(), HasSubstr("\ngpu-a01  rack-a  HEALTHY"));
  EXPECT_THAT(out_.str(), HasSubstr("\ngpu-b07  rack-b  DRAINED"));
  EXPECT_THAT(out_.str(), HasSubstr("bad optic"));
  // --rack travels in the request (the controller filters).
  ASSERT_EQ(admin_.list_nodes_requests().size(), 1u);
  EXPECT_EQ(admin_.list_nodes_requests()[0].rack(), "rack-a");
}

TEST_F(DispatchTest, NodesAsJsonIsTheControllersAnswer) {
  options_.output = "json";
  ASSERT_EQ(Run({"nodes"}), 0) << err_.str();
  EXPECT_THAT(out_.str(), StartsWith("{"));
  EXPECT_THAT(out_.str(), HasSubstr("\"name\": \"gpu-b07\""));
  EXPECT_THAT(out_.str(), HasSubstr("\"drain_reason\": \"bad optic\""));
}

TEST_F(DispatchTest, JobsPrintsTheControllersJobsAsATableOrJson) {
  ASSERT_EQ(Run({"jobs"}), 0) << err_.str();
  EXPECT_THAT(out_.str(), StartsWith("JOB "));
  EXPECT_THAT(out_.str(), HasSubstr("train-7  2 gpu-a01,gpu-a02"));
  EXPECT_THAT(out_.str(), HasSubstr("gpu-a02: DOWN (not reporting)\n"));
  options_.output = "json";
  ASSERT_EQ(Run({"jobs"}), 0) << err_.str();
  EXPECT_THAT(out_.str(), HasSubstr("\"iterations_done\": \"9\""));
  EXPECT_EQ(Run({"jobs", "extra"}), 2);
}

TEST_F(DispatchTest, EachCallCarriesTheTimeoutAsItsDeadline) {
  options_.timeout_ms = 60000;
  const auto before = std::chrono::system_clock::now();
  ASSERT_EQ(Run({"nodes"}), 0) << err_.str();
  const auto after = std::chrono::system_clock::now();
  const auto deadline = admin_.last_deadline();
  EXPECT_GE(deadline, before + std::chrono::milliseconds(60000) - std::chrono::seconds(1));
  EXPECT_LE(deadline, after + std::chrono::milliseconds(60000) + std::chrono::seconds(1));
}

TEST_F(DispatchTest, DrainSendsTheNameAndReason) {
  options_.reason = "replace optic";
  ASSERT_EQ(Run({"drain", "gpu-a01"}), 0) << err_.str();
  EXPECT_EQ(out_.str(), "drained gpu-a01 (replace optic)\n");
  EXPECT_EQ(err_.str(), "");
  const std::vector<weft::v1::DrainNodeRequest> sent = admin_.drain_requests();
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].name(), "gpu-a01");
  EXPECT_EQ(sent[0].reason(), "replace optic");
}

TEST_F(DispatchTest, ARefusalPrintsTheControllersMessageAndExitsOne) {
  EXPECT_EQ(Run({"drain", "gpu-z99"}), 1);
  EXPECT_EQ(out_.str(), "");
  EXPECT_EQ(err_.str(), "weftctl: drain gpu-z99: no node named 'gpu-z99'\n");
}

TEST_F(DispatchTest, AnUnavailableControllerExitsOneSayingItCannotBeReached) {
  admin_.FailListNodes(grpc::Status(grpc::StatusCode::UNAVAILABLE, "connection refused"));
  EXPECT_EQ(Run({"nodes"}), 1);
  EXPECT_EQ(out_.str(), "");
  EXPECT_EQ(err_.str(), absl::StrCat("weftctl: list nodes: cannot reach the controller at ",
                                     options_.transport.controller,
                                     " (connection refused); is weft-controller running? "
                                     "(--controller)\n"));
}

TEST_F(DispatchTest, EveryCommandReportsAnUnreachableControllerTheSameWay) {
  options_.transport.controller = kNobodyHome;
  options_.timeout_ms = 2000;
  const std::vector<std::vector<std::string>> commands = {
      {"nodes"},           {"node", "gpu-a01"}, {"events"},       {"racks"},
      {"reservations"},    {"release", "r-1"},  {"audit"},        {"prometheus", "targets"},
      {"topology", "export"}, {"rollout", "history"},
  };
  options_.format = "json";  // topology export needs a format
  for (const std::vector<std::string>& command : commands) {
    SCOPED_TRACE(command[0]);
    EXPECT_EQ(Run(command), 1);
    EXPECT_EQ(out_.str(), "");
    EXPECT_THAT(err_.str(), StartsWith("weftctl: "));
    EXPECT_THAT(err_.str(), HasSubstr(": cannot reach the controller at 127.0.0.1:1 ("));
    EXPECT_THAT(err_.str(), HasSubstr("); is weft-controller running? (--controller)\n"));
  }
}

TEST_F(DispatchTest, ReleaseByJobFindsTheReservationThenReleasesIt) {
  options_.place.job = "train-7";
  ASSERT_EQ(Run({"release"}), 0) << err_.str();
  EXPECT_EQ(out_.str(), "released r-17\n");
  EXPECT_THAT(placement_.released(), ElementsAre("r-17"));

  options_.place.job = "train-8";
  EXPECT_EQ(Run({"release"}), 1);
  EXPECT_EQ(out_.str(), "");
  EXPECT_THAT(err_.str(), HasSubstr("weftctl: job 'train-8' holds no live reservation"));
  EXPECT_THAT(placement_.released(), ElementsAre("r-17"));
}

TEST_F(DispatchTest, AnUnknownCommandIsAUsageErrorWithTheUsageOnErr) {
  EXPECT_EQ(Run({"frobnicate"}), 2);
  EXPECT_EQ(out_.str(), "");
  EXPECT_EQ(err_.str(), "weftctl: unknown command 'frobnicate'\n\nusage: " + UsageText() + "\n");
}

TEST_F(DispatchTest, UsageErrorsAskNothingOfTheController) {
  EXPECT_EQ(Run({}), 2);
  EXPECT_THAT(err_.str(), StartsWith("weftctl: no command given\n\nusage: "));
  EXPECT_EQ(Run({"drain"}), 2);
  EXPECT_THAT(err_.str(), StartsWith("weftctl: 'drain' needs one node name\n\nusage: "));
  EXPECT_EQ(Run({"nodes", "extra"}), 2);
  EXPECT_THAT(err_.str(), StartsWith("weftctl: 'nodes' takes no arguments\n"));
  options_.output = "yaml";
  EXPECT_EQ(Run({"nodes"}), 2);
  EXPECT_THAT(err_.str(), StartsWith("weftctl: --output 'yaml' is not one of: table, json\n"));
  EXPECT_EQ(out_.str(), "");
  EXPECT_TRUE(admin_.list_nodes_requests().empty());
  EXPECT_TRUE(admin_.drain_requests().empty());
}

TEST(CommandTableDispatchTest, EveryCommandHasOneHandler) {
  for (const Command& command : Commands()) {
    SCOPED_TRACE(command.name);
    ASSERT_NE(command.run, nullptr);
    for (const Command& other : Commands()) {
      if (other.name == command.name) EXPECT_EQ(other.run, command.run);
    }
  }
}

}  // namespace
}  // namespace weft
