// PlacementServiceImpl over a real in-process gRPC server on 127.0.0.1:0: each RPC maps
// to the PlacementManager and its refusals arrive with the right code and message.
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

}  // namespace
}  // namespace weft::controller
