#include "bench/placement/fabric_model.h"

#include "gtest/gtest.h"
#include "placement/traffic_model.h"

namespace weft::bench {
namespace {

TEST(FabricModelTest, NicBoundInsideARack) {
  placement::LinkLoads loads;
  loads.node_egress_bytes = {400e9, 400e9};
  loads.node_ingress_bytes = {400e9, 400e9};
  loads.rack_egress_bytes = {0};
  loads.rack_ingress_bytes = {0};
  EXPECT_DOUBLE_EQ(IterationSeconds(FabricModel{}, loads, {0, 0}), 1.0);
}

TEST(FabricModelTest, OneNodeInARackGetsAQuarterOfItsUplinkAt4To1) {
  // Node 0 alone in rack 1 sends 400 GB out of the rack: its share is 100 GB/s.
  placement::LinkLoads loads;
  loads.node_egress_bytes = {400e9, 400e9, 400e9};
  loads.node_ingress_bytes = {400e9, 400e9, 400e9};
  loads.rack_egress_bytes = {400e9, 400e9};
  loads.rack_ingress_bytes = {400e9, 400e9};
  FabricModel model;
  model.oversubscription = 4;
  EXPECT_DOUBLE_EQ(IterationSeconds(model, loads, {1, 0, 0}), 4.0);
  model.oversubscription = 2;
  EXPECT_DOUBLE_EQ(IterationSeconds(model, loads, {1, 0, 0}), 2.0);
}

}  // namespace
}  // namespace weft::bench
