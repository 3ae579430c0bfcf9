// RolloutServiceImpl over a real in-process gRPC server on 127.0.0.1:0: each RPC reaches
// the RolloutManager and its errors arrive with the right code and message.
#include "common/file.h"
#include "controller/api/rollout_service.h"

#include <memory>
#include <string>

#include "common/fake_clock.h"
#include "controller/inventory/controller_metrics.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"

namespace weft::controller {
namespace {

using ::testing::HasSubstr;

weft::v1::PolicyRequest ExamplePolicy() {
  weft::v1::PolicyRequest request;
  request.set_policy_yaml(ReadWholeFile("deploy/examples/policy.yaml").value());
  request.set_source_name("policy.yaml");
  return request;
}

class RolloutServiceTest : public ::testing::Test {
 protected:
  RolloutServiceTest()
      : metrics_(registry_),
        rollout_metrics_(registry_),
        inventory_(&clock_, InventoryOptions{}, &metrics_),
        desired_(&clock_, &rollout_metrics_, /*sender=*/nullptr),
        manager_(&inventory_, &desired_, &store_, &rollout_metrics_, &clock_),
        service_(&manager_) {
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    EXPECT_NE(server_, nullptr);
    stub_ = weft::v1::RolloutService::NewStub(grpc::CreateChannel(
        "127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials()));
    weft::v1::NodeInfo info;
    info.set_name("n1");
    info.set_rack("rack-1");
    weft::v1::Nic* nic = info.add_nics();
    nic->set_device("mlx5_0");
    nic->set_port(1);
    EXPECT_TRUE(inventory_.Register(info, 0).ok());
    EXPECT_TRUE(manager_.Recover().ok());
  }

  ~RolloutServiceTest() override { server_->Shutdown(); }

  FakeClock clock_;
  prometheus::Registry registry_;
  ControllerMetrics metrics_;
  RolloutMetrics rollout_metrics_;
  Inventory inventory_;
  DesiredStateManager desired_;
  store::MemoryRolloutStore store_;
  RolloutManager manager_;
  RolloutServiceImpl service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<weft::v1::RolloutService::Stub> stub_;
};

TEST_F(RolloutServiceTest, ErrorsKeepTheirCodesAndMessages) {
  grpc::ClientContext get_context;
  weft::v1::RolloutResponse response;
  EXPECT_EQ(stub_->GetRollout(&get_context, weft::v1::RolloutRequest(), &response).error_code(),
            grpc::StatusCode::NOT_FOUND);
  grpc::ClientContext pause_context;
  EXPECT_EQ(
      stub_->PauseRollout(&pause_context, weft::v1::RolloutRequest(), &response).error_code(),
      grpc::StatusCode::FAILED_PRECONDITION);
  weft::v1::PolicyRequest bad = ExamplePolicy();
  bad.set_policy_yaml(bad.policy_yaml() + "\nbogus: 1\n");
  grpc::ClientContext start_context;
  grpc::Status status = stub_->StartRollout(&start_context, bad, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("policy.yaml:"));
  EXPECT_THAT(status.error_message(), HasSubstr("bogus"));
}

TEST_F(RolloutServiceTest, ValidateDiffStartAndList) {
  grpc::ClientContext validate_context;
  weft::v1::ValidatePolicyResponse validated;
  ASSERT_TRUE(stub_->ValidatePolicy(&validate_context, ExamplePolicy(), &validated).ok());
  EXPECT_EQ(validated.nodes(), 1u);
  grpc::ClientContext diff_context;
  weft::v1::DiffPolicyResponse diff;
  ASSERT_TRUE(stub_->DiffPolicy(&diff_context, ExamplePolicy(), &diff).ok());
  EXPECT_EQ(diff.nodes_changed(), 1u);
  grpc::ClientContext start_context;
  weft::v1::RolloutResponse started;
  ASSERT_TRUE(stub_->StartRollout(&start_context, ExamplePolicy(), &started).ok());
  EXPECT_EQ(started.rollout().id(), "rollout-1");
  EXPECT_EQ(started.rollout().phase(), weft::v1::ROLLOUT_PHASE_CANARY);
  // The caller's authenticated name: nobody is authenticated on a plaintext listener.
  EXPECT_EQ(started.rollout().started_by(), "anonymous");
  EXPECT_EQ(started.rollout().source(), ExamplePolicy().source_name());
  grpc::ClientContext abort_context;
  weft::v1::RolloutRequest abort;
  abort.set_reason("test");
  weft::v1::RolloutResponse aborted;
  ASSERT_TRUE(stub_->AbortRollout(&abort_context, abort, &aborted).ok());
  EXPECT_EQ(aborted.rollout().phase(), weft::v1::ROLLOUT_PHASE_ROLLING_BACK);
  grpc::ClientContext list_context;
  weft::v1::ListRolloutsResponse list;
  ASSERT_TRUE(stub_->ListRollouts(&list_context, weft::v1::ListRolloutsRequest(), &list).ok());
  ASSERT_EQ(list.rollouts_size(), 1);
  EXPECT_THAT(list.rollouts(0).reason(), HasSubstr("aborted by anonymous: test"));
}

}  // namespace
}  // namespace weft::controller
