// Multi-process test of the job data path: a real weft-controller, two real
// weft-agent processes (simulated NICs and GPUs), each serving its own job socket, and
// job processes (tests/job_rank, linking libweft and its agent client) that ask their
// agent for a path, meet through agents and controller, and all-reduce over TCP.
#include <dirent.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cluster_harness.h"
#include "tests/subprocess.h"

namespace weft {
namespace {

using ::testing::HasSubstr;
using weft::testing::Cluster;
using weft::testing::Subprocess;

constexpr char kRank[] = "tests/job_rank";

// Whether this machine has an RDMA device; the ranks would then try RC on the
// simulated agents' device names, which is not what this test is about.
bool HasRdmaDevice() {
  DIR* dir = opendir("/sys/class/infiniband");
  if (dir == nullptr) return false;
  bool found = false;
  while (dirent* entry = readdir(dir)) found |= entry->d_name[0] != '.';
  closedir(dir);
  return found;
}

// Whether a process accepts connections on the Unix socket `path` (an agent killed by
// an earlier test leaves its socket file behind, so existing is not enough).
bool Accepting(const std::string& path) {
  const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::snprintf(address.sun_path, sizeof(address.sun_path), "%s", path.c_str());
  const bool ok = connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0;
  close(fd);
  return ok;
}

class JobTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (HasRdmaDevice()) GTEST_SKIP() << "this machine has an RDMA device; the test needs TCP";
    ASSERT_TRUE(cluster_.StartController());
    for (const std::string node : {"node-a", "node-b"}) {
      // Unix socket paths must stay under 108 bytes: not under TEST_TMPDIR.
      const std::string socket =
          absl::StrCat("/tmp/weft-jobtest-", getpid(), "-", ++test_count_, "-", node, ".sock");
      sockets_[node] = socket;
      cluster_.StartAgent(
          {.name = node, .nics = 2, .gpus = 2, .flags = {"--job_socket", socket}});
    }
    for (const auto& [node, socket] : sockets_) {
      ASSERT_TRUE(weft::testing::WaitFor(
          absl::StrCat(node, "'s agent accepting on ", socket), absl::Seconds(10),
          [&](std::string*) { return Accepting(socket); }, absl::Milliseconds(20)));
    }
  }

  void TearDown() override {
    // SIGTERM, so the agents remove their sockets as a real stop does.
    for (auto& [node, agent] : cluster_.agents()) {
      agent->Signal(SIGTERM);
      EXPECT_EQ(agent->Wait(absl::Seconds(10)), 0);
      EXPECT_FALSE(Accepting(sockets_[node]));
      struct stat st {};
      EXPECT_NE(stat(sockets_[node].c_str(), &st), 0) << "a stopped agent removes its socket";
    }
  }

  // Rank `rank` of `size` on `node`, driving GPU `gpu`.
  Subprocess& StartRank(const std::string& job, int rank, int size, const std::string& node,
                        int gpu, int timeout_ms) {
    return cluster_.Track(absl::StrCat("rank", rank),
                          {"/usr/bin/env",
                           absl::StrCat("WEFT_RANK=", rank),
                           absl::StrCat("WEFT_WORLD_SIZE=", size),
                           "WEFT_AGENT_SOCKET=" + sockets_[node],
                           "WEFT_JOB_ID=" + job,
                           absl::StrCat("WEFT_GPU=", gpu),
                           "WEFT_QOS_CLASS=storage",
                           kRank,
                           absl::StrCat("--timeout_ms=", timeout_ms)});
  }

  Cluster cluster_;
  std::map<std::string, std::string> sockets_;
  static inline int test_count_ = 0;
};

TEST_F(JobTest, FourRanksOnTwoAgentsChooseTheirPathMeetAndAllReduce) {
  std::vector<Subprocess*> ranks;
  for (int rank = 0; rank < 4; ++rank) {
    ranks.push_back(&StartRank("job-ok", rank, 4, rank < 2 ? "node-a" : "node-b", rank % 2, 30000));
  }
  for (int rank = 0; rank < 4; ++rank) {
    const std::optional<int> exit = ranks[rank]->Wait(absl::Seconds(60));
    ASSERT_TRUE(exit.has_value()) << "rank " << rank << " still running\n" << ranks[rank]->Log();
    EXPECT_EQ(*exit, 0) << ranks[rank]->Log();
    const std::string log = ranks[rank]->Log();
    EXPECT_THAT(log, HasSubstr(absl::StrCat("rank=", rank, " ok")));
    // The agent's answer: GPU g's closest simulated NIC is mlx5_g, RoCE v2 IPv4 GID 3,
    // storage class (DSCP 24 -> 98); then TCP, since this process has no RDMA device.
    EXPECT_THAT(log, HasSubstr(absl::StrCat("device=mlx5_", rank % 2, " gid_index=3 "
                                            "traffic_class=98 transport=tcp")));
    EXPECT_THAT(log, HasSubstr("reason=\"no RDMA device found"));
  }
}

TEST_F(JobTest, ARankThatNeverStartsIsNamedWithinTheTimeout) {
  constexpr int kTimeoutMs = 3000;
  std::vector<Subprocess*> ranks;
  const absl::Time start = absl::Now();
  for (int rank = 0; rank < 3; ++rank) {  // rank 3 never starts
    ranks.push_back(
        &StartRank("job-short", rank, 4, rank < 2 ? "node-a" : "node-b", rank % 2, kTimeoutMs));
  }
  for (int rank = 0; rank < 3; ++rank) {
    const std::optional<int> exit = ranks[rank]->Wait(absl::Seconds(30));
    ASSERT_TRUE(exit.has_value()) << "rank " << rank << " still running\n" << ranks[rank]->Log();
    EXPECT_EQ(*exit, 1) << ranks[rank]->Log();
    EXPECT_THAT(ranks[rank]->Log(),
                HasSubstr("DEADLINE_EXCEEDED: rendezvous job 'job-short' key 'weft/transport': "
                          "rank 3 never arrived"));
  }
  const absl::Duration took = absl::Now() - start;
  EXPECT_GE(took, absl::Milliseconds(kTimeoutMs));
  EXPECT_LT(took, absl::Milliseconds(kTimeoutMs) + absl::Seconds(5))
      << "the error comes at the timeout, not after gRPC's own deadline";
}

}  // namespace
}  // namespace weft
