// The fabric twin end to end, as `make demo` runs it: a real weft-controller with
// automatic drain, a real weft-fabric placing a training job through the controller,
// real weft-agents reading their NICs from the twin. A NIC of the job storms PFC pauses:
// the job slows, the controller flags and drains the node, the job is placed again
// without it and runs at its old pace.
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/testing/temp_dir.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "proto/weft/v1/fabric.grpc.pb.h"
#include "tests/cluster_harness.h"
#include "tests/subprocess.h"

namespace weft {
namespace {

using weft::testing::Cluster;

constexpr char kFabricBinary[] = "fabric/weft-fabric";
constexpr int kIntervalMs = 200;

std::string WriteFile(const std::string& name, const std::string& contents) {
  const std::string path = weft::testing::TempPath(name);
  std::ofstream(path) << contents;
  return path;
}

weft::v1::ListFabricJobsResponse FabricJobs(weft::v1::FabricService::Stub& fabric) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  weft::v1::ListFabricJobsResponse jobs;
  fabric.ListJobs(&context, {}, &jobs).ok();
  return jobs;
}

TEST(FabricTest, AStormingNicSlowsItsJobUntilTheNodeIsDrainedAndTheJobMoves) {
  const std::string controller_config = WriteFile("controller.yaml", R"(
health:
  degrade_after_ms: 1000
  auto_drain:
    enabled: true
    after_ms: 1500
    undrain_after_clean_ms: 600000
)");
  Cluster cluster({.telemetry_interval_ms = kIntervalMs, .flags = {"--config", controller_config}});
  ASSERT_TRUE(cluster.StartController());

  const std::string fabric_address = absl::StrCat("127.0.0.1:", weft::testing::FreePort());
  // Two racks of two nodes, two 100 Gb/s NICs each; one two-node job of 1e9 parameters.
  const std::string fabric_config = WriteFile("fabric.yaml", absl::StrCat(R"(
racks: 2
nodes_per_rack: 2
nics_per_node: 2
gpus_per_node: 2
nic_gbps: 100
uplinks_per_tor: 2
oversubscription: 1
tick_ms: 100
job_check_interval_ms: 200
controller_address: )", cluster.address(), R"(
jobs:
  - name: llama
    model: llama-1b
    nodes: 2
    parameters: 1e9
    tokens_per_iteration: 1e6
    compute_s_per_iteration: 0.05
)"));
  cluster.Track("weft-fabric", {kFabricBinary, "--config", fabric_config, "--listen", fabric_address});
  auto fabric = weft::v1::FabricService::NewStub(
      grpc::CreateChannel(fabric_address, grpc::InsecureChannelCredentials()));
  // Agents need the twin to discover their NICs, as real ones need their NICs.
  ASSERT_TRUE(weft::testing::WaitFor("weft-fabric serving", absl::Seconds(10),
                                     [&](std::string* observed) {
                                       grpc::ClientContext context;
                                       weft::v1::ReadNodeRequest read;
                                       read.set_node("gpu-a01");
                                       weft::v1::ReadNodeResponse node;
                                       const grpc::Status status =
                                           fabric->ReadNode(&context, read, &node);
                                       *observed = status.error_message();
                                       return status.ok();
                                     }));
  const std::vector<std::string> nodes = {"gpu-a01", "gpu-a02", "gpu-b01", "gpu-b02"};
  for (const std::string& node : nodes) {
    cluster.StartAgent({.name = node,
                        .rack = node.substr(0, 5) == "gpu-a" ? "rack-a" : "rack-b",
                        .interval_ms = kIntervalMs,
                        .flags = {"--backend", "fabric", "--fabric", fabric_address}});
  }
  // Idle nodes send nothing, so HEALTHY is all there is to wait for.
  ASSERT_TRUE(cluster.WaitForNodes("every node HEALTHY", absl::Seconds(30),
                                   [&](const std::map<std::string, weft::v1::NodeStatus>& all) {
                                     for (const std::string& node : nodes) {
                                       if (!all.count(node) ||
                                           all.at(node).state() != weft::v1::NODE_STATE_HEALTHY) {
                                         return false;
                                       }
                                     }
                                     return true;
                                   }));
  weft::v1::FabricJob job;
  ASSERT_TRUE(weft::testing::WaitFor("the job placed and iterating", absl::Seconds(30),
                                     [&](std::string* observed) {
                                       weft::v1::ListFabricJobsResponse jobs = FabricJobs(*fabric);
                                       *observed = jobs.ShortDebugString();
                                       if (jobs.jobs_size() != 1) return false;
                                       job = jobs.jobs(0);
                                       return job.progress().iterations_done() >= 3;
                                     }));
  const double healthy_iteration_s = job.progress().iteration_s();
  const std::string victim = job.nodes(0);

  grpc::ClientContext inject_context;
  weft::v1::InjectFaultRequest inject;
  inject.mutable_fault()->set_kind(weft::v1::FABRIC_FAULT_PFC_STORM);
  inject.mutable_fault()->set_node(victim);
  inject.mutable_fault()->set_device("mlx5_0");
  inject.mutable_fault()->set_value(0.95);
  weft::v1::InjectFaultResponse injected;
  ASSERT_TRUE(fabric->InjectFault(&inject_context, inject, &injected).ok());

  // The job slows while it still runs on the storming node ...
  ASSERT_TRUE(weft::testing::WaitFor("the job slowed by the storm", absl::Seconds(20),
                                     [&](std::string* observed) {
                                       weft::v1::ListFabricJobsResponse jobs = FabricJobs(*fabric);
                                       *observed = jobs.ShortDebugString();
                                       return jobs.jobs_size() == 1 &&
                                              jobs.jobs(0).placements() == 1 &&
                                              jobs.jobs(0).progress().iteration_s() >
                                                  2 * healthy_iteration_s;
                                     }));
  // ... the controller drains the node, and the job is placed again without it ...
  ASSERT_TRUE(cluster.WaitForNodes("the victim drained", absl::Seconds(30),
                                   [&](const std::map<std::string, weft::v1::NodeStatus>& all) {
                                     return all.count(victim) &&
                                            all.at(victim).drained_by() !=
                                                weft::v1::DRAIN_SOURCE_UNSPECIFIED;
                                   }));
  ASSERT_TRUE(weft::testing::WaitFor(
      "the job placed again without the victim, at its old pace", absl::Seconds(30),
      [&](std::string* observed) {
        weft::v1::ListFabricJobsResponse jobs = FabricJobs(*fabric);
        *observed = jobs.ShortDebugString();
        if (jobs.jobs_size() != 1 || jobs.jobs(0).placements() != 2) return false;
        const weft::v1::FabricJob& moved = jobs.jobs(0);
        for (const std::string& node : moved.nodes()) {
          if (node == victim) return false;
        }
        return moved.progress().iterations_done() >= 2 &&
               moved.progress().iteration_s() < 1.2 * healthy_iteration_s;
      }));
  // ... and the controller's view of the job has its progress and nodes.
  const weft::testing::CommandResult listed = cluster.Weftctl({"jobs", "--output", "json"});
  EXPECT_EQ(listed.exit_status, 0) << listed.err;
  EXPECT_THAT(listed.out, ::testing::HasSubstr("llama"));
}

}  // namespace
}  // namespace weft
