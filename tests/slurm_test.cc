// Weft with a real Slurm (Debian 12's 22.05: packages slurmctld, slurmd, slurm-client),
// configured from scratch under TEST_TMPDIR with auth/none, on loopback:
//   * `weftctl topology export --format slurm` is loaded by slurmctld with
//     TopologyPlugin=topology/tree, and `scontrol show topology` shows each rack as a
//     leaf switch with its nodes, each pod over its racks, the top switch over the pods;
//   * deploy/slurm/weft-sbatch.sh, submitted with sbatch to a slurmd that plays node
//     gpu-a01 next to a weft-controller and a simulated weft-agent of that name, places
//     the job, runs one task per GPU through SLURM_HOSTFILE and
//     --distribution=arbitrary with the node's NCCL variables, and releases the
//     reservation when the job ends.
// Each test skips, saying why, where its Slurm binaries are missing or this Slurm cannot
// run without munge (auth/none was removed in Slurm 23.11).
#include <pwd.h>
#include <stdlib.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "common/testing/temp_dir.h"
#include "tests/cluster_harness.h"
#include "tests/subprocess.h"

namespace weft {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using weft::testing::Cluster;
using weft::testing::CommandResult;
using weft::testing::FreePort;
using weft::testing::kWeftctlBinary;
using weft::testing::RunCommand;
using weft::testing::Subprocess;
using weft::testing::TempPath;

constexpr char kSbatchWrapper[] = "deploy/slurm/weft-sbatch.sh";
constexpr char kSlurmctld[] = "/usr/sbin/slurmctld";
constexpr char kSlurmd[] = "/usr/sbin/slurmd";
constexpr char kScontrol[] = "/usr/bin/scontrol";
constexpr char kSbatch[] = "/usr/bin/sbatch";

constexpr char kTopology[] =
    "node_defaults: {gpu_count: 8}\n"
    "nodes:\n"
    "  - {name: gpu-a01, rack: rack-a, pod: pod-1}\n"
    "  - {name: gpu-a02, rack: rack-a, pod: pod-1}\n"
    "  - {name: gpu-b01, rack: rack-b, pod: pod-1}\n"
    "  - {name: gpu-c01, rack: rack-c, pod: pod-2}\n"
    "  - {name: gpu-c02, rack: rack-c, pod: pod-2, drained: true}\n";

void WriteFile(const std::string& path, const std::string& content) {
  FILE* f = fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr) << path;
  fputs(content.c_str(), f);
  fclose(f);
}

std::string ReadFile(const std::string& path) {
  std::string out;
  FILE* f = fopen(path.c_str(), "r");
  if (f == nullptr) return out;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof(buffer), f)) > 0) out.append(buffer, n);
  fclose(f);
  return out;
}

std::string CurrentUser() {
  const passwd* pw = getpwuid(getuid());
  return pw == nullptr ? "root" : pw->pw_name;
}

std::string Cwd() {
  char buffer[4096];
  return getcwd(buffer, sizeof(buffer)) == nullptr ? "." : buffer;
}

// One switch line of `scontrol show topology`: "SwitchName=x Level=0 ... Nodes=... ".
struct Switch {
  std::string level;
  std::string nodes;     // a Slurm hostlist, possibly compressed ("gpu-a[01-02]")
  std::string switches;  // comma-separated
};

std::map<std::string, Switch> ParseTopology(const std::string& text) {
  std::map<std::string, Switch> out;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    std::string name;
    Switch s;
    for (absl::string_view field : absl::StrSplit(line, ' ', absl::SkipEmpty())) {
      const std::pair<std::string, std::string> kv = absl::StrSplit(field, '=');
      if (kv.first == "SwitchName") name = kv.second;
      if (kv.first == "Level") s.level = kv.second;
      if (kv.first == "Nodes") s.nodes = kv.second;
      if (kv.first == "Switches") s.switches = kv.second;
    }
    if (!name.empty()) out[name] = s;
  }
  return out;
}

class SlurmTest : public ::testing::Test {
 protected:
  void TearDown() override {
    for (Subprocess* p : {slurmd_, slurmctld_, agent_, controller_}) {
      if (p != nullptr && p->running()) {
        p->Signal(SIGTERM);
        p->Wait(absl::Seconds(10));
      }
    }
    if (!short_spool_.empty()) RunCommand({"/bin/rm", "-rf", short_spool_}, absl::Seconds(10));
  }

  // Skips the test when one of `binaries` is missing.
  bool HaveBinaries(std::initializer_list<const char*> binaries) {
    for (const char* binary : binaries) {
      if (access(binary, X_OK) != 0) {
        missing_ = binary;
        return false;
      }
    }
    dir_ = TempPath(::testing::UnitTest::GetInstance()->current_test_info()->name());
    // slurmd's spool holds the Unix sockets of job steps, whose paths must fit in 108
    // bytes; TEST_TMPDIR under Bazel's output base is far longer. So the spool is a
    // short directory under /tmp, removed again in TearDown.
    char spool[] = "/tmp/weft-slurmd-XXXXXX";
    if (mkdtemp(spool) == nullptr) return false;
    short_spool_ = spool;
    return RunCommand({"/bin/mkdir", "-p", dir_ + "/state"}, absl::Seconds(5)).exit_status == 0;
  }

  // slurm.conf for `node_lines` (NodeName=... lines) with the tree topology plugin;
  // topology.conf must be written next to it.
  void WriteSlurmConf(const std::string& node_lines, const std::string& extra = "") {
    conf_ = dir_ + "/slurm.conf";
    ctld_port_ = FreePort();
    WriteFile(conf_, absl::StrCat("ClusterName=weft\n"
                                  "SlurmctldHost=localhost\n"
                                  "SlurmUser=", CurrentUser(), "\n",
                                  "SlurmdUser=root\n"
                                  "AuthType=auth/none\n"
                                  "CredType=cred/none\n"
                                  "SlurmctldPort=", ctld_port_, "\n",
                                  "SlurmdPort=", FreePort(), "\n",
                                  "StateSaveLocation=", dir_, "/state\n",
                                  "SlurmdSpoolDir=", short_spool_, "\n",
                                  "SlurmctldPidFile=", dir_, "/slurmctld.pid\n",
                                  "SlurmdPidFile=", dir_, "/slurmd.pid\n",
                                  "MailProg=/bin/true\n"
                                  "ProctrackType=proctrack/linuxproc\n"
                                  "TaskPlugin=task/none\n"
                                  "ReturnToService=2\n"
                                  "TopologyPlugin=topology/tree\n",
                                  extra, node_lines,
                                  "PartitionName=gpu Nodes=ALL Default=YES State=UP\n"));
  }

  // Starts slurmctld; false (with the reason in skip_reason_ or a test failure) when
  // it does not listen.
  bool StartSlurmctld() {
    slurmctld_ = &cluster_.Track("slurmctld", {kSlurmctld, "-D", "-f", conf_});
    if (weft::testing::WaitForPort(ctld_port_, absl::Seconds(20))) return true;
    const std::string log = slurmctld_->Log();
    if (absl::StrContains(log, "auth/none") || absl::StrContains(log, "auth_none")) {
      skip_reason_ = absl::StrCat(
          "this Slurm cannot run without munge (no auth/none plugin); slurmctld said:\n", log);
    } else {
      ADD_FAILURE() << "slurmctld did not listen on port " << ctld_port_ << "; its log:\n"
                    << log;
    }
    return false;
  }

  // `scontrol ARGS...` with our slurm.conf.
  CommandResult Scontrol(std::vector<std::string> args) {
    std::vector<std::string> argv = {"/usr/bin/env", absl::StrCat("SLURM_CONF=", conf_),
                                     kScontrol};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunCommand(argv, absl::Seconds(10));
  }

  // Hostnames of a Slurm hostlist, expanded by scontrol itself.
  std::vector<std::string> Hostnames(const std::string& hostlist) {
    CommandResult result = Scontrol({"show", "hostnames", hostlist});
    EXPECT_EQ(result.exit_status, 0) << result.err;
    return absl::StrSplit(result.out, '\n', absl::SkipEmpty());
  }

  std::string missing_;
  std::string skip_reason_;
  std::string short_spool_;
  std::string dir_;
  std::string conf_;
  int ctld_port_ = 0;
  // Weft's controller and agent, and slurmctld and slurmd: their logs come with a failure.
  Cluster cluster_;
  Subprocess* controller_ = nullptr;
  Subprocess* agent_ = nullptr;
  Subprocess* slurmctld_ = nullptr;
  Subprocess* slurmd_ = nullptr;
};

TEST_F(SlurmTest, SlurmctldLoadsTheExportedTreeTopology) {
  if (!HaveBinaries({kSlurmctld, kScontrol})) {
    GTEST_SKIP() << missing_ << " is not installed (Debian packages slurmctld and "
                 << "slurm-client); the Slurm topology export was not checked against a "
                 << "real slurmctld";
  }
  const std::string topology_yaml = dir_ + "/topology.yaml";
  WriteFile(topology_yaml, kTopology);
  CommandResult exported = RunCommand({kWeftctlBinary, "topology", "export", "--offline",
                                       "--topology", topology_yaml, "--format", "slurm"},
                                      absl::Seconds(10));
  ASSERT_EQ(exported.exit_status, 0) << exported.err;
  // slurmctld reads topology.conf from the directory of slurm.conf.
  WriteFile(dir_ + "/topology.conf", exported.out);
  WriteSlurmConf(
      "NodeName=gpu-a01,gpu-a02,gpu-b01,gpu-c01,gpu-c02 CPUs=1 State=CLOUD\n");
  if (!StartSlurmctld()) {
    if (!skip_reason_.empty()) GTEST_SKIP() << skip_reason_;
    return;
  }

  CommandResult shown = Scontrol({"show", "topology"});
  ASSERT_EQ(shown.exit_status, 0) << shown.err << "\nslurmctld log:\n" << slurmctld_->Log();
  const std::map<std::string, Switch> switches = ParseTopology(shown.out);
  ASSERT_EQ(switches.size(), 6u) << shown.out;

  EXPECT_EQ(switches.at("rack-a").level, "0");
  EXPECT_THAT(Hostnames(switches.at("rack-a").nodes), ElementsAre("gpu-a01", "gpu-a02"));
  EXPECT_THAT(Hostnames(switches.at("rack-b").nodes), ElementsAre("gpu-b01"));
  EXPECT_THAT(Hostnames(switches.at("rack-c").nodes), ElementsAre("gpu-c01", "gpu-c02"));

  EXPECT_EQ(switches.at("pod-1").level, "1");
  EXPECT_EQ(switches.at("pod-1").switches, "rack-a,rack-b");
  EXPECT_THAT(Hostnames(switches.at("pod-1").nodes),
              ElementsAre("gpu-a01", "gpu-a02", "gpu-b01"));
  EXPECT_EQ(switches.at("pod-2").switches, "rack-c");

  EXPECT_EQ(switches.at("fabric").level, "2");
  EXPECT_EQ(switches.at("fabric").switches, "pod-1,pod-2");
  EXPECT_EQ(Hostnames(switches.at("fabric").nodes).size(), 5u);

  // slurmctld warns when a node is in no switch or the tree has no single root.
  EXPECT_THAT(slurmctld_->Log(), ::testing::Not(HasSubstr("TOPOLOGY: warning")));
}

TEST_F(SlurmTest, SbatchWrapperRunsRanksInWeftOrderWithTheNodesNcclEnv) {
  if (!HaveBinaries({kSlurmctld, kSlurmd, kScontrol, kSbatch})) {
    GTEST_SKIP() << missing_ << " is not installed (Debian packages slurmctld, slurmd and "
                 << "slurm-client); deploy/slurm/weft-sbatch.sh was not run under Slurm";
  }
  if (getuid() != 0) {
    GTEST_SKIP() << "slurmd needs root to start job steps (running as uid " << getuid()
                 << "); deploy/slurm/weft-sbatch.sh was not run under Slurm";
  }
  // Weft: a controller and the simulated agent of gpu-a01 (2 NICs, 8 GPUs).
  ASSERT_TRUE(cluster_.StartController());
  controller_ = &cluster_.controller();
  const std::string weft_address = cluster_.address();
  agent_ = &cluster_.StartAgent(
      {.name = "gpu-a01", .rack = "rack-a", .pod = "pod-1", .nics = 2, .gpus = 8});

  // Slurm: slurmd plays node gpu-a01 on this machine, claiming 8 CPUs for 8 tasks.
  WriteFile(dir_ + "/topology.conf", "SwitchName=rack-a Nodes=gpu-a01\n");
  WriteSlurmConf("NodeName=gpu-a01 NodeHostname=localhost NodeAddr=127.0.0.1 CPUs=8\n",
                 "SlurmdParameters=config_overrides\n");
  if (!StartSlurmctld()) {
    if (!skip_reason_.empty()) GTEST_SKIP() << skip_reason_;
    return;
  }
  slurmd_ = &cluster_.Track("slurmd", {kSlurmd, "-D", "-f", conf_, "-N", "gpu-a01"});

  // The node must be registered with Weft before the job asks for a placement.
  CommandResult nodes;
  ASSERT_TRUE(weft::testing::WaitFor(
      "gpu-a01 HEALTHY in `weftctl nodes`", absl::Seconds(15),
      [&](std::string* observed) {
        nodes = cluster_.Weftctl({"nodes"}, absl::Seconds(5));
        *observed = nodes.out + nodes.err;
        return absl::StrContains(nodes.out, "HEALTHY");
      },
      absl::Milliseconds(100)));

  // The job: every task prints what it was given.
  const std::string out = dir_ + "/job.out";
  const std::string program =
      "echo rank=$RANK local=$LOCAL_RANK world=$WORLD_SIZE node=$SLURMD_NODENAME "
      "hca=$NCCL_IB_HCA gid=$NCCL_IB_GID_INDEX tc=$NCCL_IB_TC ifname=$NCCL_SOCKET_IFNAME";
  const std::string weftctl_dir = Cwd() + "/cli";
  CommandResult submitted = RunCommand(
      {"/usr/bin/env", absl::StrCat("SLURM_CONF=", conf_),
       absl::StrCat("PATH=", weftctl_dir, ":/usr/bin:/bin:/usr/sbin:/sbin"),
       absl::StrCat("WEFT_CONTROLLER=", weft_address), kSbatch, "--wait", "--nodes=1",
       "--time=5", "-o", out, Cwd() + "/" + kSbatchWrapper, "/bin/sh", "-c", program},
      absl::Seconds(60));
  ASSERT_EQ(submitted.exit_status, 0)
      << submitted.out << submitted.err << "\njob output:\n" << ReadFile(out)
      << "\nslurmctld log:\n" << slurmctld_->Log() << "\nslurmd log:\n" << slurmd_->Log();

  const std::string output = ReadFile(out);
  // The placement summary (stderr of the batch script), then one line per rank.
  EXPECT_THAT(output, HasSubstr(": 1 node, 8 ranks in 1 rack (rack-a), 1 pod"));
  for (int rank = 0; rank < 8; ++rank) {
    EXPECT_THAT(output, HasSubstr(absl::StrCat(
                            "rank=", rank, " local=", rank,
                            " world=8 node=gpu-a01 hca==mlx5_0:1,mlx5_1:1 gid=3 tc=106 "
                            "ifname==ens1np0\n")))
        << output;
  }
  // The exit trap released the reservation.
  CommandResult reservations = cluster_.Weftctl({"reservations"}, absl::Seconds(5));
  EXPECT_EQ(reservations.out, "no live reservations\n") << reservations.err;
}

}  // namespace
}  // namespace weft
