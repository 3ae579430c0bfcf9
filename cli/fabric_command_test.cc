// `weftctl fabric` as main() runs it (WeftctlTest: RunWeftctl) against a test double of weft-fabric's
// FabricService on a real grpc::Server at 127.0.0.1 port 0: the double keeps injected
// faults as the twin would ("f1", "f2", ...), so each test checks the request weftctl
// sent, what it printed, and the exit status.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "cli/weftctl_test_fixture.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "proto/weft/v1/fabric.grpc.pb.h"

namespace weft {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

class FakeFabric final : public weft::v1::FabricService::Service {
 public:
  grpc::Status InjectFault(grpc::ServerContext*, const weft::v1::InjectFaultRequest* request,
                           weft::v1::InjectFaultResponse* response) override {
    absl::MutexLock lock(&mu_);
    weft::v1::FabricFault fault = request->fault();
    fault.set_id(absl::StrCat("f", ++last_id_));
    *faults_.add_faults() = fault;
    *response->mutable_fault() = fault;
    return grpc::Status::OK;
  }

  grpc::Status ClearFault(grpc::ServerContext*, const weft::v1::ClearFaultRequest* request,
                          weft::v1::ClearFaultResponse*) override {
    absl::MutexLock lock(&mu_);
    if (request->id() == "all") {
      faults_.clear_faults();
      return grpc::Status::OK;
    }
    auto* list = faults_.mutable_faults();
    for (auto it = list->begin(); it != list->end(); ++it) {
      if (it->id() != request->id()) continue;
      list->erase(it);
      return grpc::Status::OK;
    }
    return grpc::Status(grpc::StatusCode::NOT_FOUND,
                        absl::StrCat("no fault '", request->id(), "'"));
  }

  grpc::Status ListFaults(grpc::ServerContext*, const weft::v1::ListFaultsRequest*,
                          weft::v1::ListFaultsResponse* response) override {
    absl::MutexLock lock(&mu_);
    *response = faults_;
    return grpc::Status::OK;
  }

  grpc::Status ListLinks(grpc::ServerContext*, const weft::v1::ListLinksRequest* request,
                         weft::v1::ListLinksResponse* response) override {
    absl::MutexLock lock(&mu_);
    links_requests_.push_back(*request);
    weft::v1::FabricLink* link = response->add_links();
    link->set_name("tor-a--spine-0");
    link->set_from("tor-a");
    link->set_to("spine-0");
    return grpc::Status::OK;
  }

  std::vector<weft::v1::ListLinksRequest> links_requests() {
    absl::MutexLock lock(&mu_);
    return links_requests_;
  }

 private:
  absl::Mutex mu_;
  int last_id_ ABSL_GUARDED_BY(mu_) = 0;
  weft::v1::ListFaultsResponse faults_ ABSL_GUARDED_BY(mu_);
  std::vector<weft::v1::ListLinksRequest> links_requests_ ABSL_GUARDED_BY(mu_);
};

class FabricCommandTest : public WeftctlTest {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(StartServing({&fabric_}));
    options_.fabric.address = address();
    options_.timeout_ms = 5000;
  }

  FakeFabric fabric_;
};

TEST_F(FabricCommandTest, InjectListAndClearFaults) {
  options_.node = "gpu-b03";
  options_.fabric.nic = "mlx5_0";
  options_.fabric.value = 0.9;
  ASSERT_EQ(Run({"fabric", "inject", "pfc_storm"}), 0) << err_.str();
  EXPECT_EQ(out_.str(), "injected f1 (pfc_storm); `weftctl fabric clear f1` ends it\n");

  options_ = WeftctlOptions{.fabric = options_.fabric};
  options_.fabric.nic.clear();
  options_.fabric.value.reset();
  options_.fabric.link = "tor-a--spine-0";
  ASSERT_EQ(Run({"fabric", "inject", "link_down"}), 0) << err_.str();

  ASSERT_EQ(Run({"fabric", "faults"}), 0) << err_.str();
  EXPECT_THAT(out_.str(), HasSubstr("f1  pfc_storm  gpu-b03/mlx5_0  0.9"));
  EXPECT_THAT(out_.str(), HasSubstr("f2  link_down  tor-a--spine-0  -"));

  ASSERT_EQ(Run({"fabric", "clear", "f1"}), 0) << err_.str();
  EXPECT_EQ(out_.str(), "cleared f1\n");
  options_.output = "json";
  ASSERT_EQ(Run({"fabric", "faults"}), 0) << err_.str();
  EXPECT_THAT(out_.str(), StartsWith("{"));
  EXPECT_THAT(out_.str(), HasSubstr("\"id\": \"f2\""));
  EXPECT_THAT(out_.str(), ::testing::Not(HasSubstr("\"id\": \"f1\"")));

  options_.output = "table";
  ASSERT_EQ(Run({"fabric", "clear", "all"}), 0) << err_.str();
  ASSERT_EQ(Run({"fabric", "faults"}), 0) << err_.str();
  EXPECT_EQ(out_.str(), "no faults\n");
}

TEST_F(FabricCommandTest, TheTwinsRefusalIsPrintedAndExitsOne) {
  EXPECT_EQ(Run({"fabric", "clear", "f9"}), 1);
  EXPECT_THAT(err_.str(), HasSubstr("weftctl: fabric clear f9: no fault 'f9'"));
}

TEST_F(FabricCommandTest, AnIncompleteFaultIsAUsageErrorAndNothingIsSent) {
  options_.fabric.link = "tor-a--spine-0";
  EXPECT_EQ(Run({"fabric", "inject", "gray_loss"}), 2);
  EXPECT_THAT(err_.str(), HasSubstr("gray_loss needs --value X"));
  ASSERT_EQ(Run({"fabric", "faults"}), 0);
  EXPECT_EQ(out_.str(), "no faults\n");
  EXPECT_EQ(Run({"fabric", "inject"}), 2);
  EXPECT_THAT(err_.str(), HasSubstr("needs one fault kind: link_down, gray_loss,"));
  EXPECT_EQ(Run({"fabric", "explode"}), 2);
  EXPECT_THAT(err_.str(), HasSubstr("unknown fabric subcommand 'explode'"));
}

TEST_F(FabricCommandTest, LinksSendsPrefixAndBusy) {
  options_.fabric.prefix = "tor-a";
  options_.fabric.busy = true;
  ASSERT_EQ(Run({"fabric", "links"}), 0) << err_.str();
  EXPECT_THAT(out_.str(), HasSubstr("tor-a--spine-0  tor-a->spine-0"));
  ASSERT_EQ(fabric_.links_requests().size(), 1u);
  EXPECT_EQ(fabric_.links_requests()[0].prefix(), "tor-a");
  EXPECT_TRUE(fabric_.links_requests()[0].busy_only());
}

TEST_F(FabricCommandTest, AnUnreachableTwinSaysWhereAndWhatToCheck) {
  options_.fabric.address = "127.0.0.1:1";  // nothing listens on tcpmux
  EXPECT_EQ(Run({"fabric", "jobs"}), 1);
  EXPECT_THAT(err_.str(), HasSubstr("cannot reach weft-fabric at 127.0.0.1:1"));
  EXPECT_THAT(err_.str(), HasSubstr("is weft-fabric running? (--fabric HOST:PORT)"));
}

}  // namespace
}  // namespace weft
