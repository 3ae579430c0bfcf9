// weftctl place's flags -> request, the output formats, and offline placement on the
// static topology in placement/testdata/topology.yaml.
#include "cli/place_command.h"

#include <cstdio>
#include <cstdlib>
#include <string>

#include "gmock/gmock.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"

namespace weft {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using weft::v1::PlacementRequest;
using weft::v1::PlacementResponse;

std::string TestTopology() {
  return std::string(std::getenv("TEST_SRCDIR")) + "/weft/placement/testdata/topology.yaml";
}

std::string WriteTempFile(const std::string& name, const std::string& content) {
  const std::string path = std::string(std::getenv("TEST_TMPDIR")) + "/" + name;
  FILE* f = fopen(path.c_str(), "w");
  EXPECT_NE(f, nullptr) << path;
  fputs(content.c_str(), f);
  fclose(f);
  return path;
}

// Two nodes of two GPUs each; ranks listed out of order on purpose.
PlacementResponse TwoNodeAnswer() {
  PlacementResponse placed;
  placed.set_reservation_id("rsv-4");
  placed.set_job_id("1234");
  placed.add_ring_order("gpu-b01");
  placed.add_ring_order("gpu-a01");
  placed.set_racks_used(2);
  placed.set_pods_used(1);
  placed.add_racks("b");
  placed.add_racks("a");
  placed.set_traffic_class(106);
  placed.set_expires_at_unix_s(1'800'003'600);
  const char* nodes[] = {"gpu-b01", "gpu-b01", "gpu-a01", "gpu-a01"};
  const char* racks[] = {"b", "b", "a", "a"};
  for (int rank : {2, 0, 3, 1}) {
    weft::v1::RankAssignment* r = placed.add_ranks();
    r->set_rank(rank);
    r->set_node(nodes[rank]);
    r->set_gpu_index(rank % 2);
    r->set_nic(rank % 2 == 0 ? "mlx5_0" : "mlx5_1");
    r->set_rack(racks[rank]);
    r->set_pod("p1");
  }
  for (const char* node : {"gpu-b01", "gpu-a01"}) {
    weft::v1::NodeEnv* env = placed.add_node_env();
    env->set_node(node);
    for (const auto& [name, value] :
         {std::pair<const char*, const char*>{"NCCL_IB_HCA", "=mlx5_0:1,mlx5_1:1"},
          {"NCCL_IB_GID_INDEX", "3"},
          {"NCCL_IB_TC", "106"},
          {"NCCL_SOCKET_IFNAME", "=ens1np0"}}) {
      weft::v1::EnvVar* var = env->add_env();
      var->set_name(name);
      var->set_value(value);
    }
  }
  return placed;
}

TEST(MakePlacementRequestTest, MapsEveryFlag) {
  PlaceFlags flags;
  flags.job = "1234";
  flags.ranks = 32;
  flags.gpus_per_node = 8;
  flags.tp = 8;
  flags.pp = 2;
  flags.qos = "storage";
  flags.exclude = {"gpu-a01", " gpu-b02", ""};
  flags.max_racks = 2;
  flags.one_pod = true;
  flags.max_congestion = 0.75;
  flags.ttl_s = 3600;
  flags.gradient_bytes = 1 << 30;
  flags.activation_bytes = 1 << 20;
  absl::StatusOr<PlacementRequest> request = MakePlacementRequest(flags);
  ASSERT_TRUE(request.ok()) << request.status();
  EXPECT_EQ(request->job_id(), "1234");
  EXPECT_EQ(request->size_case(), PlacementRequest::kRankCount);
  EXPECT_EQ(request->rank_count(), 32u);
  EXPECT_EQ(request->gpus_per_node(), 8u);
  EXPECT_EQ(request->shape_case(), PlacementRequest::kParallelism);
  EXPECT_EQ(request->parallelism().tensor(), 8u);
  EXPECT_EQ(request->parallelism().pipeline(), 2u);
  EXPECT_EQ(request->parallelism().data(), 0u);
  EXPECT_EQ(request->qos_class(), "storage");
  EXPECT_THAT(request->constraints().exclude_nodes(),
              ::testing::ElementsAre("gpu-a01", "gpu-b02"));
  EXPECT_EQ(request->constraints().max_racks(), 2u);
  EXPECT_TRUE(request->constraints().single_pod());
  ASSERT_TRUE(request->constraints().has_max_congestion());
  EXPECT_DOUBLE_EQ(request->constraints().max_congestion(), 0.75);
  EXPECT_EQ(request->lease_ttl_s(), 3600u);
  EXPECT_EQ(request->gradient_bytes(), 1u << 30);
  EXPECT_EQ(request->activation_bytes(), 1u << 20);
}

TEST(MakePlacementRequestTest, PatternsAndDefaults) {
  PlaceFlags flags;
  flags.job = "j";
  flags.nodes = 4;
  absl::StatusOr<PlacementRequest> request = MakePlacementRequest(flags);
  ASSERT_TRUE(request.ok());
  EXPECT_EQ(request->node_count(), 4u);
  EXPECT_EQ(request->shape_case(), PlacementRequest::SHAPE_NOT_SET);
  EXPECT_FALSE(request->constraints().has_max_congestion());
  for (const auto& [name, pattern] :
       {std::pair{"ring", weft::v1::TRAFFIC_PATTERN_RING_ALLREDUCE},
        std::pair{"AllReduce", weft::v1::TRAFFIC_PATTERN_RING_ALLREDUCE},
        std::pair{"alltoall", weft::v1::TRAFFIC_PATTERN_ALL_TO_ALL},
        std::pair{"all_to_all", weft::v1::TRAFFIC_PATTERN_ALL_TO_ALL},
        std::pair{"pipeline", weft::v1::TRAFFIC_PATTERN_PIPELINE}}) {
    flags.pattern = name;
    request = MakePlacementRequest(flags);
    ASSERT_TRUE(request.ok()) << name;
    EXPECT_EQ(request->pattern(), pattern) << name;
  }
}

TEST(MakePlacementRequestTest, RefusalsNameTheFlag) {
  PlaceFlags flags;
  flags.nodes = 2;
  EXPECT_THAT(MakePlacementRequest(flags).status().message(), HasSubstr("--job is required"));
  flags.job = "j";
  flags.ranks = 16;
  EXPECT_THAT(MakePlacementRequest(flags).status().message(),
              HasSubstr("--nodes and --ranks both size the job"));
  flags.ranks = 0;
  flags.nodes = 0;
  EXPECT_THAT(MakePlacementRequest(flags).status().message(),
              HasSubstr("say how big the job is"));
  flags.nodes = 2;
  flags.pattern = "butterfly";
  EXPECT_EQ(MakePlacementRequest(flags).status().message(),
            "--pattern 'butterfly' is not a traffic pattern; accepted: ring, alltoall, "
            "pipeline");
  flags.pattern = "ring";
  flags.tp = 2;
  EXPECT_THAT(MakePlacementRequest(flags).status().message(),
              HasSubstr("--pattern and --tp/--pp/--dp/--ep"));
  flags.pattern.clear();
  flags.max_congestion = 1.5;
  absl::Status status = MakePlacementRequest(flags).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("--max-congestion 1.5 is out of range"));
}

TEST(ParsePlaceFormatTest, KnownAndUnknown) {
  EXPECT_EQ(*ParsePlaceFormat("hostfile"), PlaceFormat::kHostfile);
  EXPECT_EQ(*ParsePlaceFormat("env"), PlaceFormat::kEnv);
  EXPECT_EQ(*ParsePlaceFormat("json"), PlaceFormat::kJson);
  EXPECT_EQ(*ParsePlaceFormat("table"), PlaceFormat::kTable);
  EXPECT_EQ(ParsePlaceFormat("yaml").status().message(),
            "--format 'yaml' is not a placement format; accepted: table, hostfile, env, json");
}

TEST(FormatPlacementTest, HostfileHasOneLinePerRankInRankOrder) {
  EXPECT_EQ(FormatPlacement(TwoNodeAnswer(), PlaceFormat::kHostfile),
            "gpu-b01\ngpu-b01\ngpu-a01\ngpu-a01\n");
}

TEST(FormatPlacementTest, EnvHasOneLinePerNodeInRingOrder) {
  EXPECT_EQ(FormatPlacement(TwoNodeAnswer(), PlaceFormat::kEnv),
            "gpu-b01: NCCL_IB_HCA==mlx5_0:1,mlx5_1:1 NCCL_IB_GID_INDEX=3 NCCL_IB_TC=106 "
            "NCCL_SOCKET_IFNAME==ens1np0\n"
            "gpu-a01: NCCL_IB_HCA==mlx5_0:1,mlx5_1:1 NCCL_IB_GID_INDEX=3 NCCL_IB_TC=106 "
            "NCCL_SOCKET_IFNAME==ens1np0\n");
}

TEST(FormatPlacementTest, JsonIsThePlacementResponse) {
  const std::string json = FormatPlacement(TwoNodeAnswer(), PlaceFormat::kJson);
  PlacementResponse parsed;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(json, &parsed).ok()) << json;
  EXPECT_EQ(parsed.reservation_id(), "rsv-4");
  EXPECT_EQ(parsed.ranks_size(), 4);
  EXPECT_THAT(json, HasSubstr("\"reservation_id\": \"rsv-4\""));
}

TEST(FormatPlacementTest, TableSummarisesPerNode) {
  const std::string table = FormatPlacement(TwoNodeAnswer(), PlaceFormat::kTable);
  EXPECT_THAT(table, HasSubstr("job 1234: 2 nodes, 4 ranks in 2 racks (b, a), 1 pod; "
                               "NCCL_IB_TC 106\n"));
  EXPECT_THAT(table, HasSubstr("reservation rsv-4, expires 2027-01-15T09:00:00Z\n"));
  EXPECT_THAT(table, HasSubstr("predicted traffic: none without sizes"));
  EXPECT_THAT(table, HasSubstr("NODE     RACK  POD  RANKS  NICS\n"
                               "gpu-b01  b     p1   0-1    mlx5_0,mlx5_1\n"
                               "gpu-a01  a     p1   2-3    mlx5_0,mlx5_1\n"));
}

TEST(FormatPlacementTest, TableShowsThePredictionWhenThereIsOne) {
  PlacementResponse placed = TwoNodeAnswer();
  placed.set_predicted_inter_node_bytes(3 << 20);
  placed.set_predicted_cross_rack_bytes(1 << 20);
  EXPECT_THAT(FormatPlacement(placed, PlaceFormat::kTable),
              HasSubstr("predicted bytes per iteration: cross-rack 1048576, cross-pod 0, "
                        "inter-node 3145728\n"));
}

TEST(FormatPrecheckTest, NamesTheNodesLeftOutAndWhatIsBlamedOrSaysItPassed) {
  PlacementResponse placed = TwoNodeAnswer();
  EXPECT_EQ(FormatPrecheck(placed), "") << "no check, no line";
  weft::v1::CheckResponse* check = placed.mutable_precheck();
  check->set_passed(true);
  for (const std::string node : {"gpu-a01", "gpu-b01"}) {
    weft::v1::NodeCheck* n = check->add_nodes();
    n->set_node(node);
    n->set_passed(true);
  }
  EXPECT_EQ(FormatPrecheck(placed), "pre-job check: passed\n");
  check->set_passed(false);
  weft::v1::NodeCheck* bad = check->add_nodes();
  bad->set_node("gpu-c01");
  bad->set_reason("nic gpu-c01/mlx5_1 unreachable");
  weft::v1::PingmeshVerdict* verdict = check->add_verdicts();
  verdict->set_kind("nic");
  verdict->set_component("gpu-c01/mlx5_1");
  verdict->set_problem("unreachable");
  EXPECT_EQ(FormatPrecheck(placed),
            "pre-job check: left out gpu-c01 (nic gpu-c01/mlx5_1 unreachable)\n"
            "  blamed: nic gpu-c01/mlx5_1 (unreachable)\n");
  // The table carries it; the hostfile does not (weftctl prints it on stderr).
  EXPECT_THAT(FormatPlacement(placed, PlaceFormat::kTable), HasSubstr("left out gpu-c01"));
  EXPECT_THAT(FormatPlacement(placed, PlaceFormat::kHostfile), Not(HasSubstr("pre-job")));
}

TEST(ShellQuoteIfNeededTest, QuotesOnlyWhatAShellWouldSplitOrExpand) {
  EXPECT_EQ(ShellQuoteIfNeeded("=mlx5_0:1,mlx5_1:1"), "=mlx5_0:1,mlx5_1:1");
  EXPECT_EQ(ShellQuoteIfNeeded("a b"), "'a b'");
  EXPECT_EQ(ShellQuoteIfNeeded("$HOME"), "'$HOME'");
  EXPECT_EQ(ShellQuoteIfNeeded("it's"), "'it'\\''s'");
  EXPECT_EQ(ShellQuoteIfNeeded(""), "''");
}

TEST(FormatReservationsTableTest, RowsAndEmpty) {
  weft::v1::ListReservationsResponse list;
  EXPECT_EQ(FormatReservationsTable(list), "no live reservations\n");
  *list.add_reservations() = TwoNodeAnswer();
  EXPECT_EQ(FormatReservationsTable(list),
            "RESERVATION  JOB   NODES  RANKS  RACKS  EXPIRES\n"
            "rsv-4        1234  2      4      b,a    2027-01-15T09:00:00Z\n");
}

TEST(ReservationOfJobTest, FindsTheJobsReservation) {
  weft::v1::ListReservationsResponse list;
  *list.add_reservations() = TwoNodeAnswer();
  EXPECT_EQ(*ReservationOfJob(list, "1234"), "rsv-4");
  absl::Status missing = ReservationOfJob(list, "99").status();
  EXPECT_EQ(missing.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing.message(), HasSubstr("job '99' holds no live reservation"));
}

TEST(PlaceOfflineTest, PlacesOnTheTopologyFileMinusTheOccupancy) {
  PlacementRequest request;
  request.set_job_id("what-if");
  request.set_node_count(2);
  request.set_gpus_per_node(8);
  absl::StatusOr<PlacementResponse> placed = PlaceOffline(TestTopology(), "", {}, request);
  ASSERT_TRUE(placed.ok()) << placed.status();
  EXPECT_TRUE(placed->reservation_id().empty());
  // gpu-a02 is drained, gpu-b02 unhealthy, gpu-c01 has 2 GPUs: a01 and b01 are left.
  EXPECT_THAT(placed->ring_order(), ::testing::UnorderedElementsAre("gpu-a01", "gpu-b01"));
  EXPECT_EQ(placed->racks_used(), 2u);

  const std::string occupancy = WriteTempFile(
      "occupancy.yaml", "entries:\n  - {node: gpu-a01, job_id: \"41\"}\n");
  absl::StatusOr<PlacementResponse> refused = PlaceOffline(TestTopology(), occupancy, {}, request);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(refused.status().message(), HasSubstr("1 in use"));

  const std::string bad = WriteTempFile("bad.yaml", "entries:\n  - {host: gpu-a01}\n");
  refused = PlaceOffline(TestTopology(), bad, {}, request);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.status().message(), HasSubstr("bad.yaml:2:"));
  EXPECT_THAT(refused.status().message(), HasSubstr("host"));

  refused = PlaceOffline("/nonexistent/topology.yaml", "", {}, request);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(refused.status().message(), HasSubstr("/nonexistent/topology.yaml"));
}

TEST(PlaceOfflineTest, WithinConfinesThePlacementToTheGivenNodes) {
  PlacementRequest request;
  request.set_job_id("slurm-1234");
  request.set_node_count(1);
  request.set_gpus_per_node(8);
  absl::StatusOr<PlacementResponse> placed =
      PlaceOffline(TestTopology(), "", {"gpu-b01", ""}, request);
  ASSERT_TRUE(placed.ok()) << placed.status();
  EXPECT_THAT(placed->ring_order(), ::testing::ElementsAre("gpu-b01"));

  request.set_node_count(2);
  absl::StatusOr<PlacementResponse> refused =
      PlaceOffline(TestTopology(), "", {"gpu-b01", "gpu-b02"}, request);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(refused.status().message(), HasSubstr("1 unhealthy"));
}

TEST(RestrictToNodesTest, ExcludesEverythingElseOnceAndNamesUnknownNodes) {
  weft::v1::ClusterSnapshot snapshot;
  for (const char* name : {"n1", "n2", "n3", "n4"}) snapshot.add_nodes()->set_name(name);
  PlacementRequest request;
  request.mutable_constraints()->add_exclude_nodes("n3");
  ASSERT_TRUE(RestrictToNodes(snapshot, {"n2", " n1"}, &request).ok());
  EXPECT_THAT(request.constraints().exclude_nodes(), ::testing::ElementsAre("n3", "n4"));

  PlacementRequest untouched;
  ASSERT_TRUE(RestrictToNodes(snapshot, {}, &untouched).ok());
  EXPECT_EQ(untouched.constraints().exclude_nodes_size(), 0);

  absl::Status status = RestrictToNodes(snapshot, {"n1", "x9", "x8"}, &untouched);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("--within names nodes the topology does not have: "
                                          "x8, x9"));
}

}  // namespace
}  // namespace weft
