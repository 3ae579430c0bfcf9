// The fabric twin end to end, as `make demo` runs it: a real weft-controller with
// automatic drain, a real weft-fabric placing a training job through the controller,
// real weft-agents reading their NICs from the twin. A NIC of the job storms PFC pauses:
// the job slows, the controller flags and drains the node, the job is placed again
// without it and runs at its old pace.
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/testing/temp_dir.h"
#include "common/testing/temp_file.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "proto/weft/v1/fabric.grpc.pb.h"
#include "tests/cluster_harness.h"
#include "tests/subprocess.h"

namespace weft {
namespace {

using weft::testing::WriteTempFile;

using weft::testing::Cluster;

constexpr char kFabricBinary[] = "fabric/weft-fabric";
constexpr int kIntervalMs = 200;

weft::v1::ListFabricJobsResponse FabricJobs(weft::v1::FabricService::Stub& fabric) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  weft::v1::ListFabricJobsResponse jobs;
  fabric.ListJobs(&context, {}, &jobs).ok();
  return jobs;
}

constexpr char kJobYaml[] = R"(
jobs:
  - name: llama
    model: llama-1b
    nodes: 2
    parameters: 1e9
    tokens_per_iteration: 1e6
    compute_s_per_iteration: 0.05
)";

// A controller (with auto-drain), weft-fabric with two racks of two nodes (two 100 Gb/s
// NICs each) and its agents on the fabric backend, every node HEALTHY.
class FabricTest : public ::testing::Test {
 protected:
  FabricTest()
      : cluster_({.telemetry_interval_ms = kIntervalMs,
                  .flags = {"--config", WriteTempFile("controller.yaml", R"(
health:
  degrade_after_ms: 1000
  auto_drain:
    enabled: true
    after_ms: 1500
    undrain_after_clean_ms: 600000
)")}}),
        fabric_address_(absl::StrCat("127.0.0.1:", weft::testing::FreePort())) {}

  void StartCluster(const std::string& jobs_yaml) {
    ASSERT_TRUE(cluster_.StartController());
    const std::string fabric_config = WriteTempFile("fabric.yaml", absl::StrCat(R"(
racks: 2
nodes_per_rack: 2
nics_per_node: 2
gpus_per_node: 2
nic_gbps: 100
uplinks_per_tor: 2
oversubscription: 1
tick_ms: 100
job_check_interval_ms: 200
controller_address: )", cluster_.address(), jobs_yaml));
    cluster_.Track("weft-fabric",
                   {kFabricBinary, "--config", fabric_config, "--listen", fabric_address_});
    fabric_ = weft::v1::FabricService::NewStub(
        grpc::CreateChannel(fabric_address_, grpc::InsecureChannelCredentials()));
    // Agents need the twin to discover their NICs, as real ones need their NICs.
    ASSERT_TRUE(weft::testing::WaitFor("weft-fabric serving", absl::Seconds(10),
                                       [&](std::string* observed) {
                                         absl::StatusOr<weft::v1::ReadNodeResponse> node =
                                             ReadNode("gpu-a01");
                                         *observed = node.status().ToString();
                                         return node.ok();
                                       }));
    for (const std::string& node : kNodes) {
      cluster_.StartAgent({.name = node,
                           .rack = node.substr(0, 5) == "gpu-a" ? "rack-a" : "rack-b",
                           .interval_ms = kIntervalMs,
                           .flags = {"--backend", "fabric", "--fabric", fabric_address_}});
    }
    // Idle nodes send nothing, so HEALTHY is all there is to wait for.
    ASSERT_TRUE(cluster_.WaitForNodes("every node HEALTHY", absl::Seconds(30),
                                      [&](const std::map<std::string, weft::v1::NodeStatus>& all) {
                                        for (const std::string& node : kNodes) {
                                          if (!all.count(node) || all.at(node).state() !=
                                                                      weft::v1::NODE_STATE_HEALTHY) {
                                            return false;
                                          }
                                        }
                                        return true;
                                      }));
  }

  absl::StatusOr<weft::v1::ReadNodeResponse> ReadNode(const std::string& name) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    weft::v1::ReadNodeRequest read;
    read.set_node(name);
    weft::v1::ReadNodeResponse node;
    const grpc::Status status = fabric_->ReadNode(&context, read, &node);
    if (!status.ok()) return absl::UnavailableError(status.error_message());
    return node;
  }

  const std::vector<std::string> kNodes = {"gpu-a01", "gpu-a02", "gpu-b01", "gpu-b02"};
  Cluster cluster_;
  const std::string fabric_address_;
  std::unique_ptr<weft::v1::FabricService::Stub> fabric_;
};

TEST_F(FabricTest, AStormingNicSlowsItsJobUntilTheNodeIsDrainedAndTheJobMoves) {
  StartCluster(kJobYaml);
  Cluster& cluster = cluster_;
  weft::v1::FabricService::Stub* fabric = fabric_.get();
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

// A rollout's DCQCN profile reaches the twin's NICs through the agents, so it changes the
// fabric the jobs run on: the firmware's rp_ai_rate (5 Mb/s) becomes 20 on every NIC.
TEST_F(FabricTest, ARolloutWritesItsDcqcnProfileIntoTheTwin) {
  StartCluster("");
  absl::StatusOr<weft::v1::ReadNodeResponse> before = ReadNode("gpu-b02");
  ASSERT_TRUE(before.ok()) << before.status();
  EXPECT_EQ(before->nics(1).tunables().dcqcn().rp_ai_rate(), 5u);

  const std::string policy = WriteTempFile("policy.yaml", R"(qos:
  trust: dscp
  classes:
    - {name: training, dscp: 26, priority: 3, lossless: true, roce: true}
    - {name: cnp, dscp: 48, priority: 6, cnp: true}
  traffic_classes:
    - {tc: 0, priorities: [0, 1, 2, 4, 5, 7], tsa: ets, bandwidth_percent: 50}
    - {tc: 3, priorities: [3], tsa: ets, bandwidth_percent: 50}
    - {tc: 6, priorities: [6], tsa: strict}
dcqcn:
  profiles:
    - name: default
      params: {rp_ai_rate: 20}
rollout:
  canary_per_rack: 1
  bake_s: 1
  wave_size: 2
  wave_bake_s: 1
  ack_timeout_s: 10
  max_nack_share: 0
  kpis:
    pfc_pause_share_increase: 0.05
    ecn_marks_increase_ratio: 100
    cnps_increase_ratio: 100
    rate_floor_per_s: 1000000
    retransmissions_increase_per_s: 100000
    throughput_drop_ratio: 0.95
    sustain_s: 1
)");
  const weft::testing::CommandResult started = cluster_.Weftctl({"rollout", "start", policy});
  ASSERT_EQ(started.exit_status, 0) << started.out << started.err;
  ASSERT_TRUE(weft::testing::WaitFor("the rollout completed", absl::Seconds(60),
                                     [&](std::string* observed) {
                                       *observed = cluster_.Weftctl({"rollout", "status"}).out;
                                       return absl::StrContains(*observed, "phase COMPLETED");
                                     }));
  for (const std::string& name : kNodes) {
    absl::StatusOr<weft::v1::ReadNodeResponse> node = ReadNode(name);
    ASSERT_TRUE(node.ok()) << node.status();
    for (const weft::v1::FabricNic& nic : node->nics()) {
      EXPECT_EQ(nic.tunables().dcqcn().rp_ai_rate(), 20u) << name << " " << nic.nic().device();
      EXPECT_EQ(nic.tunables().qos().pfc_priorities_size(), 1) << name;
    }
  }
}

}  // namespace
}  // namespace weft
