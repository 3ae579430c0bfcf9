#include "cli/fabric_format.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace weft {
namespace {

using ::testing::HasSubstr;

FabricFlags Flags(std::string link, std::string nic, std::optional<double> value) {
  FabricFlags flags;
  flags.link = std::move(link);
  flags.nic = std::move(nic);
  flags.value = value;
  return flags;
}

TEST(MakeFabricFaultTest, EachKindGetsTheFieldsItNeeds) {
  absl::StatusOr<weft::v1::FabricFault> fault =
      MakeFabricFault("pfc_storm", "gpu-b03", Flags("", "mlx5_0", 0.9));
  ASSERT_TRUE(fault.ok()) << fault.status();
  EXPECT_EQ(fault->kind(), weft::v1::FABRIC_FAULT_PFC_STORM);
  EXPECT_EQ(fault->node(), "gpu-b03");
  EXPECT_EQ(fault->device(), "mlx5_0");
  EXPECT_EQ(fault->value(), 0.9);

  fault = MakeFabricFault("link_down", "", Flags("tor-a--spine-0", "", std::nullopt));
  ASSERT_TRUE(fault.ok()) << fault.status();
  EXPECT_EQ(fault->kind(), weft::v1::FABRIC_FAULT_LINK_DOWN);
  EXPECT_EQ(fault->link(), "tor-a--spine-0");

  fault = MakeFabricFault("dead_node", "gpu-a01", Flags("", "", std::nullopt));
  ASSERT_TRUE(fault.ok()) << fault.status();
  EXPECT_EQ(fault->kind(), weft::v1::FABRIC_FAULT_DEAD_NODE);
  EXPECT_TRUE(MakeFabricFault("flapping_link", "", Flags("tor-a--spine-0", "", 4)).ok());
  EXPECT_TRUE(MakeFabricFault("degraded_link", "", Flags("tor-a--spine-0", "", 0.5)).ok());
}

TEST(MakeFabricFaultTest, RefusalsNameWhatIsMissingOutOfRangeOrNotTaken) {
  auto message = [](absl::string_view kind, const std::string& node, const FabricFlags& flags) {
    absl::StatusOr<weft::v1::FabricFault> fault = MakeFabricFault(kind, node, flags);
    EXPECT_EQ(fault.status().code(), absl::StatusCode::kInvalidArgument);
    return std::string(fault.status().message());
  };
  EXPECT_THAT(message("pfc_storm", "gpu-b03", Flags("", "", 0.5)),
              HasSubstr("fabric inject pfc_storm needs --nic DEVICE"));
  EXPECT_THAT(message("gray_loss", "", Flags("tor-a--spine-0", "", std::nullopt)),
              HasSubstr("gray_loss needs --value X: the share of packets dropped, 0 < X < 1"));
  EXPECT_THAT(message("gray_loss", "", Flags("tor-a--spine-0", "", 1.5)),
              HasSubstr("--value 1.5 is out of range"));
  EXPECT_THAT(message("link_down", "gpu-a01", Flags("x--y", "", std::nullopt)),
              HasSubstr("link_down does not take --node"));
  EXPECT_THAT(message("dead_node", "", Flags("", "", std::nullopt)),
              HasSubstr("dead_node needs --node N"));
  EXPECT_THAT(message("meteor", "", Flags("", "", std::nullopt)),
              HasSubstr("unknown fault kind 'meteor'; one of: link_down, gray_loss, "
                        "flapping_link, pfc_storm, degraded_link, dead_node"));
}

TEST(FabricFormatTest, FaultsTableNamesKindAndTarget) {
  weft::v1::ListFaultsResponse faults;
  weft::v1::FabricFault* storm = faults.add_faults();
  storm->set_id("f1");
  storm->set_kind(weft::v1::FABRIC_FAULT_PFC_STORM);
  storm->set_node("gpu-b03");
  storm->set_device("mlx5_0");
  storm->set_value(0.9);
  storm->set_injected_at_s(12.5);
  weft::v1::FabricFault* down = faults.add_faults();
  down->set_id("f2");
  down->set_kind(weft::v1::FABRIC_FAULT_LINK_DOWN);
  down->set_link("tor-a--spine-0");
  EXPECT_EQ(FormatFaultsTable(faults),
            "ID  KIND       TARGET          VALUE  INJECTED_AT_S\n"
            "f1  pfc_storm  gpu-b03/mlx5_0  0.9    12.5\n"
            "f2  link_down  tor-a--spine-0  -      0.0\n");
  EXPECT_EQ(FormatFaultsTable(weft::v1::ListFaultsResponse()), "no faults\n");
}

TEST(FabricFormatTest, LinksTableShowsLoadInItsUnits) {
  weft::v1::ListLinksResponse links;
  weft::v1::FabricLink* link = links.add_links();
  link->set_name("tor-a--spine-0");
  link->set_from("tor-a");
  link->set_to("spine-0");
  link->set_capacity_bps(400e9);
  link->set_utilization(0.875);
  link->set_queue_bytes(51'200);
  link->set_mark_probability(0.02);
  link->set_pause_share(0);
  link->set_flows(6);
  link->set_down(true);
  EXPECT_EQ(FormatLinksTable(links),
            "LINK            FROM->TO        GBPS  UTIL%  QUEUE_KB  MARK%  PAUSE%  FLOWS  DOWN\n"
            "tor-a--spine-0  tor-a->spine-0  400   87.5%  51.2      2.0%   0.0%    6      down\n");
}

TEST(FabricFormatTest, FabricJobsShowPlacementAndProgress) {
  weft::v1::ListFabricJobsResponse jobs;
  weft::v1::FabricJob* job = jobs.add_jobs();
  job->set_name("llama");
  job->add_nodes("gpu-a01");
  job->add_racks("rack-a");
  job->set_pattern("ring all-reduce");
  job->set_placements(2);
  job->mutable_progress()->set_iterations_done(3);
  job->mutable_progress()->set_iteration_s(0.5);
  EXPECT_THAT(FormatFabricJobsTable(jobs),
              HasSubstr("llama  -            1 gpu-a01  rack-a  ring all-reduce  2           3"));
  EXPECT_THAT(FormatFabricJobsTable(jobs), HasSubstr("0.0       -           -              -           -            -\n"));
  job->set_max_utilization(1);
  job->set_max_queue_bytes(122600);
  job->set_max_mark_probability(0.006);
  job->set_max_pause_share(0.95);
  job->set_hottest_link("tor-a->gpu-a01/mlx5_0");
  EXPECT_THAT(FormatFabricJobsTable(jobs),
              HasSubstr("100.0%      122.6          0.6%        95.0%        tor-a->gpu-a01/mlx5_0"));
}

}  // namespace
}  // namespace weft
