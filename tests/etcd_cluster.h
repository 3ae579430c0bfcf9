// EtcdCluster: real etcd members (Debian's etcd-server) on loopback for the tests of
// store/etcd and, later, the controller's HA tests. Each member gets free client and
// peer ports and its own data directory under TEST_TMPDIR; raft runs with a 50 ms
// heartbeat and a 500 ms election timeout, so etcd's minimum lease TTL is 1 s and a
// lost raft leader is replaced in about a second. Members can be killed (SIGKILL),
// paused (SIGSTOP), resumed and restarted on the same data directory.
// testonly; not thread-safe (one test thread drives it). The destructor kills all.
#ifndef WEFT_TESTS_ETCD_CLUSTER_H_
#define WEFT_TESTS_ETCD_CLUSTER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "tests/subprocess.h"

namespace weft::testing {

class EtcdCluster {
 public:
  // The etcd binary, or "" when etcd-server is not installed.
  static std::string EtcdBinary();
  // Why a test that needs etcd is skipped ("" when etcd is installed).
  static std::string SkipReason();

  // Starts `members` members and waits (up to `timeout`) until every one answers and
  // the cluster has a raft leader.
  static absl::StatusOr<std::unique_ptr<EtcdCluster>> Start(
      int members, absl::Duration timeout = absl::Seconds(20));
  ~EtcdCluster();

  int size() const { return static_cast<int>(members_.size()); }
  // "127.0.0.1:<client port>" of every member, in order, or of one.
  std::vector<std::string> endpoints() const;
  std::string endpoint(int i) const;

  void Kill(int i);     // SIGKILL and reap
  void Pause(int i);    // SIGSTOP
  void Resume(int i);   // SIGCONT
  bool running(int i);
  // Starts a killed member again on its data directory; waits until it accepts
  // connections.
  absl::Status Restart(int i, absl::Duration timeout = absl::Seconds(20));
  // The members' logs, for a failing test's message.
  std::string Logs() const;

 private:
  struct Member {
    std::string name;
    int client_port = 0;
    int peer_port = 0;
    std::string data_dir;
    std::string log_path;
    std::unique_ptr<Subprocess> process;
  };
  EtcdCluster() = default;
  std::vector<std::string> Argv(const Member& m) const;

  std::string binary_;
  std::string initial_cluster_;
  std::string token_;
  std::vector<Member> members_;
};

}  // namespace weft::testing

#endif  // WEFT_TESTS_ETCD_CLUSTER_H_
