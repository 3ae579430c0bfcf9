// Multi-process placement test: a real weft-controller and six weft-agent processes
// (simulated NICs, 2 NICs and 8 GPUs each) in three racks of two pods on loopback,
// placed on through weftctl the way a scheduler would: hostfile, JSON and env output,
// idempotence by job id, release, refusals, drained nodes, the topology exports and
// offline placement on a topology file.
//
//   rack-a (pod-1): gpu-a01 gpu-a02    rack-b (pod-1): gpu-b01 gpu-b02
//   rack-c (pod-2): gpu-c01 gpu-c02
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "common/testing/temp_dir.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "proto/weft/v1/placement.pb.h"
#include "tests/cluster_harness.h"
#include "tests/subprocess.h"

namespace weft {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;
using weft::testing::Cluster;
using weft::testing::CommandResult;
using weft::testing::kWeftctlBinary;
using weft::testing::RunCommand;
using weft::testing::TempPath;

constexpr int kIntervalMs = 200;
constexpr int kGpus = 8;

struct NodeSpec {
  const char* name;
  const char* rack;
  const char* pod;
};
constexpr NodeSpec kNodes[] = {
    {"gpu-a01", "rack-a", "pod-1"}, {"gpu-a02", "rack-a", "pod-1"},
    {"gpu-b01", "rack-b", "pod-1"}, {"gpu-b02", "rack-b", "pod-1"},
    {"gpu-c01", "rack-c", "pod-2"}, {"gpu-c02", "rack-c", "pod-2"}};

std::string RackOf(const std::string& node) {
  for (const NodeSpec& spec : kNodes) {
    if (node == spec.name) return spec.rack;
  }
  return "?";
}

std::vector<std::string> Lines(const std::string& text) {
  return absl::StrSplit(text, '\n', absl::SkipEmpty());
}

// The distinct nodes of a hostfile, in order of first appearance.
std::vector<std::string> HostfileNodes(const std::string& hostfile) {
  std::vector<std::string> nodes;
  for (const std::string& line : Lines(hostfile)) {
    if (nodes.empty() || nodes.back() != line) nodes.push_back(line);
  }
  return nodes;
}

weft::v1::PlacementResponse ParsePlacement(const std::string& json) {
  weft::v1::PlacementResponse placed;
  EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(json, &placed).ok()) << json;
  return placed;
}

class PlacementTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(cluster_.StartController());
    std::vector<std::string> names;
    for (const NodeSpec& spec : kNodes) {
      cluster_.StartAgent({.name = spec.name,
                           .rack = spec.rack,
                           .pod = spec.pod,
                           .interval_ms = kIntervalMs,
                           .nics = 2,
                           .gpus = kGpus});
      names.push_back(spec.name);
    }
    ASSERT_TRUE(cluster_.WaitForHealthy(names, absl::Seconds(20)));
  }

  CommandResult Weftctl(std::vector<std::string> args) { return cluster_.Weftctl(args); }

  // `weftctl place` that must succeed; its stdout.
  std::string Place(std::vector<std::string> args) {
    args.insert(args.begin(), "place");
    CommandResult result = Weftctl(args);
    EXPECT_EQ(result.exit_status, 0) << result.err;
    return result.out;
  }

  Cluster cluster_{{.telemetry_interval_ms = kIntervalMs}};
};

TEST_F(PlacementTest, PlacesOnFewestRacksIdempotentlyAndReleases) {
  // Two nodes fit in one rack: 16 ranks, 8 per node, on one rack.
  const std::string hostfile =
      Place({"--job", "job-1", "--nodes", "2", "--format", "hostfile"});
  const std::vector<std::string> lines = Lines(hostfile);
  ASSERT_EQ(lines.size(), 2u * kGpus) << hostfile;
  const std::vector<std::string> nodes = HostfileNodes(hostfile);
  ASSERT_EQ(nodes.size(), 2u) << "ranks of a node must be consecutive:\n" << hostfile;
  EXPECT_EQ(RackOf(nodes[0]), RackOf(nodes[1]));

  // The same job again: the same reservation, as JSON.
  weft::v1::PlacementResponse first =
      ParsePlacement(Place({"--job", "job-1", "--nodes", "2", "--format", "json"}));
  EXPECT_EQ(first.reservation_id(), "rsv-1");
  EXPECT_THAT(first.ring_order(), ElementsAre(nodes[0], nodes[1]));
  EXPECT_EQ(first.racks_used(), 1u);
  EXPECT_EQ(first.traffic_class(), 106u);
  ASSERT_EQ(first.ranks_size(), 2 * kGpus);
  EXPECT_EQ(first.ranks(9).node(), nodes[1]);
  EXPECT_EQ(first.ranks(9).gpu_index(), 1u);
  EXPECT_EQ(first.ranks(9).nic(), "mlx5_0");  // GPUs 0-3 sit by mlx5_0, 4-7 by mlx5_1

  // ... and its NCCL environment, one line per node in ring order.
  const std::string env = Place({"--job", "job-1", "--nodes", "2", "--format", "env"});
  EXPECT_THAT(Lines(env),
              ElementsAre(absl::StrCat(nodes[0],
                                       ": NCCL_IB_HCA==mlx5_0:1,mlx5_1:1 NCCL_IB_GID_INDEX=3 "
                                       "NCCL_IB_TC=106 NCCL_SOCKET_IFNAME==ens1np0"),
                          absl::StrCat(nodes[1],
                                       ": NCCL_IB_HCA==mlx5_0:1,mlx5_1:1 NCCL_IB_GID_INDEX=3 "
                                       "NCCL_IB_TC=106 NCCL_SOCKET_IFNAME==ens1np0")));

  // Three more nodes cannot share a rack any more (two racks of two are left): two
  // racks, none of job-1's nodes.
  weft::v1::PlacementResponse second = ParsePlacement(Place(
      {"--job", "job-2", "--nodes", "3", "--format", "json", "--ttl", "3600"}));
  EXPECT_EQ(second.racks_used(), 2u);
  for (const std::string& node : second.ring_order()) {
    EXPECT_NE(node, nodes[0]);
    EXPECT_NE(node, nodes[1]);
  }

  // Too big: refused with where capacity is.
  CommandResult refused = Weftctl({"place", "--job", "big", "--nodes", "2"});
  EXPECT_EQ(refused.exit_status, 1);
  EXPECT_THAT(refused.err, HasSubstr("job 'big' needs 2 nodes with 8 GPUs; 1 are free and "
                                     "eligible"));
  EXPECT_THAT(refused.err, HasSubstr("not eligible: 5 in use"));
  CommandResult huge = Weftctl({"place", "--job", "huge", "--nodes", "7"});
  EXPECT_EQ(huge.exit_status, 1);
  EXPECT_THAT(huge.err, HasSubstr("job 'huge' needs 7 nodes"));

  CommandResult list = Weftctl({"reservations"});
  ASSERT_EQ(list.exit_status, 0) << list.err;
  EXPECT_THAT(list.out, HasSubstr("rsv-1"));
  EXPECT_THAT(list.out, HasSubstr("rsv-2"));

  CommandResult release = Weftctl({"release", "rsv-1"});
  ASSERT_EQ(release.exit_status, 0) << release.err;
  EXPECT_EQ(release.out, "released rsv-1\n");
  list = Weftctl({"reservations"});
  EXPECT_THAT(list.out, ::testing::Not(HasSubstr("rsv-1")));
  CommandResult again = Weftctl({"release", "rsv-1"});
  EXPECT_EQ(again.exit_status, 1);
  EXPECT_THAT(again.err, HasSubstr("no live reservation 'rsv-1'"));

  // job-1's nodes are free again.
  weft::v1::PlacementResponse third =
      ParsePlacement(Place({"--job", "big", "--nodes", "2", "--format", "json"}));
  EXPECT_THAT(third.ring_order(), UnorderedElementsAre(nodes[0], nodes[1]));

  CommandResult renew = Weftctl({"renew", "rsv-2", "--ttl", "7200"});
  ASSERT_EQ(renew.exit_status, 0) << renew.err;
  EXPECT_THAT(renew.out, HasSubstr("renewed rsv-2 until "));

  const std::string metrics = cluster_.Metrics();
  ASSERT_FALSE(metrics.empty()) << "no /metrics on " << cluster_.metrics_address();
  EXPECT_THAT(metrics, HasSubstr("weft_controller_placements_total{result=\"placed\"} 3"));
  EXPECT_THAT(metrics, HasSubstr("weft_controller_placements_total{result=\"existing\"} 2"));
  EXPECT_THAT(metrics,
              HasSubstr("weft_controller_placements_total{result=\"no_capacity\"} 2"));
  EXPECT_THAT(metrics, HasSubstr("weft_controller_reservations 2"));
  EXPECT_THAT(metrics, HasSubstr("weft_controller_reserved_nodes 5"));

  // What a batch script's exit trap does: release by job id.
  CommandResult by_job = Weftctl({"release", "--job", "big"});
  ASSERT_EQ(by_job.exit_status, 0) << by_job.err;
  EXPECT_EQ(by_job.out, "released rsv-3\n");
  by_job = Weftctl({"release", "--job", "big"});
  EXPECT_EQ(by_job.exit_status, 1);
  EXPECT_THAT(by_job.err, HasSubstr("job 'big' holds no live reservation"));
}

TEST_F(PlacementTest, DrainedNodeIsNeverPlacedButStaysInTheTopology) {
  CommandResult drain = Weftctl({"drain", "gpu-b01", "--reason", "reseat NIC"});
  ASSERT_EQ(drain.exit_status, 0) << drain.err;

  // Confined to a Slurm-style allocation, still rack-aware: the two of rack-c.
  weft::v1::PlacementResponse within = ParsePlacement(
      Place({"--job", "slurm-77", "--nodes", "2", "--within", "gpu-a02,gpu-c01,gpu-c02",
             "--format", "json"}));
  EXPECT_THAT(within.ring_order(), ElementsAre("gpu-c01", "gpu-c02"));
  CommandResult released = Weftctl({"release", within.reservation_id()});
  ASSERT_EQ(released.exit_status, 0) << released.err;
  CommandResult unknown = Weftctl({"place", "--job", "x", "--nodes", "1", "--within", "gpu-z9"});
  EXPECT_EQ(unknown.exit_status, 2);
  EXPECT_THAT(unknown.err, HasSubstr("--within names a node the topology does not have: gpu-z9"));

  // Five nodes wanted, five eligible: everyone but gpu-b01.
  const std::string hostfile =
      Place({"--job", "wide", "--nodes", "5", "--format", "hostfile"});
  const std::vector<std::string> nodes = HostfileNodes(hostfile);
  EXPECT_THAT(nodes, UnorderedElementsAre("gpu-a01", "gpu-a02", "gpu-b02", "gpu-c01",
                                          "gpu-c02"));
  CommandResult refused = Weftctl({"place", "--job", "more", "--nodes", "1"});
  EXPECT_EQ(refused.exit_status, 1);
  EXPECT_THAT(refused.err, HasSubstr("not eligible: 1 drained, 5 in use"));

  // Exports list every node with a rack, drained or not.
  CommandResult slurm = Weftctl({"topology", "export", "--format", "slurm"});
  ASSERT_EQ(slurm.exit_status, 0) << slurm.err;
  EXPECT_THAT(slurm.out, HasSubstr("SwitchName=rack-a Nodes=gpu-a01,gpu-a02\n"
                                   "SwitchName=rack-b Nodes=gpu-b01,gpu-b02\n"
                                   "SwitchName=rack-c Nodes=gpu-c01,gpu-c02\n"
                                   "SwitchName=pod-1 Switches=rack-a,rack-b\n"
                                   "SwitchName=pod-2 Switches=rack-c\n"
                                   "SwitchName=fabric Switches=pod-1,pod-2\n"));
  CommandResult labels = Weftctl({"topology", "export", "--format", "k8s-labels"});
  ASSERT_EQ(labels.exit_status, 0) << labels.err;
  EXPECT_THAT(labels.out, HasSubstr("kubectl label node gpu-b01 topology.weft.io/pod=pod-1 "
                                    "topology.weft.io/rack=rack-b --overwrite\n"));

  // The JSON export is a what-if input: offline, gpu-b01 is drained there too, and the
  // occupancy file stands in for the reservation.
  CommandResult json = Weftctl({"topology", "export", "--format", "json"});
  ASSERT_EQ(json.exit_status, 0) << json.err;
  const std::string topology = TempPath("exported-topology.json");
  const std::string occupancy = TempPath("occupancy.yaml");
  {
    FILE* f = fopen(topology.c_str(), "w");
    ASSERT_NE(f, nullptr);
    fputs(json.out.c_str(), f);
    fclose(f);
    f = fopen(occupancy.c_str(), "w");
    ASSERT_NE(f, nullptr);
    fputs("entries:\n  - {node: gpu-c01, job_id: wide}\n  - {node: gpu-c02, job_id: wide}\n",
          f);
    fclose(f);
  }
  CommandResult offline = RunCommand({kWeftctlBinary, "place", "--offline", "--topology", topology,
                                      "--occupancy", occupancy, "--job", "what-if", "--nodes",
                                      "3", "--format", "hostfile"},
                                     absl::Seconds(10));
  ASSERT_EQ(offline.exit_status, 0) << offline.err;
  EXPECT_THAT(HostfileNodes(offline.out), UnorderedElementsAre("gpu-a01", "gpu-a02", "gpu-b02"));
  offline = RunCommand({kWeftctlBinary, "place", "--offline", "--topology", topology, "--occupancy",
                        occupancy, "--job", "what-if", "--nodes", "4"},
                       absl::Seconds(10));
  EXPECT_EQ(offline.exit_status, 1);
  EXPECT_THAT(offline.err, HasSubstr("not eligible: 1 drained, 2 in use"));
}

TEST(OfflinePlacementTest, TopologyFileWithoutAController) {
  const std::string path = TempPath("static-topology.yaml");
  FILE* f = fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr);
  fputs(
      "node_defaults:\n"
      "  gpu_count: 4\n"
      "  nics: [{device: mlx5_0, netdev: ens1np0, roce_v2_gid_index: 3}]\n"
      "nodes:\n"
      "  - {name: n01, rack: r1, pod: p1}\n"
      "  - {name: n02, rack: r1, pod: p1}\n"
      "  - {name: n03, rack: r2, pod: p1}\n"
      "  - {name: n04, rack: r2, pod: p1}\n"
      "  - {name: n05, rack: r2, pod: p1}\n",
      f);
  fclose(f);
  // Nothing listens on the controller address: --offline must not need it.
  CommandResult placed = RunCommand(
      {kWeftctlBinary, "--controller", "127.0.0.1:1", "place", "--offline", "--topology", path,
       "--job", "plan", "--ranks", "12", "--gpus-per-node", "4", "--format", "hostfile"},
      absl::Seconds(10));
  ASSERT_EQ(placed.exit_status, 0) << placed.err;
  ASSERT_EQ(Lines(placed.out).size(), 12u);
  EXPECT_THAT(HostfileNodes(placed.out), UnorderedElementsAre("n03", "n04", "n05"));

  CommandResult slurm = RunCommand({kWeftctlBinary, "topology", "export", "--offline", "--topology",
                                    path, "--format", "slurm"},
                                   absl::Seconds(10));
  ASSERT_EQ(slurm.exit_status, 0) << slurm.err;
  EXPECT_THAT(slurm.out, HasSubstr("SwitchName=r2 Nodes=n03,n04,n05\n"
                                   "SwitchName=p1 Switches=r1,r2\n"));

  CommandResult usage = RunCommand({kWeftctlBinary, "place", "--offline", "--job", "plan",
                                    "--nodes", "1"},
                                   absl::Seconds(10));
  EXPECT_EQ(usage.exit_status, 2);
  EXPECT_THAT(usage.err, HasSubstr("--offline needs --topology"));
}

}  // namespace
}  // namespace weft
