#include "tests/etcd_cluster.h"

#include <signal.h>
#include <unistd.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/testing/temp_dir.h"
#include "store/etcd/etcd_client.h"

namespace weft::testing {

std::string EtcdCluster::EtcdBinary() {
  for (const char* path : {"/usr/bin/etcd", "/usr/local/bin/etcd"}) {
    if (access(path, X_OK) == 0) return path;
  }
  return "";
}

std::string EtcdCluster::SkipReason() {
  if (!EtcdBinary().empty()) return "";
  return "skipped: needs Debian's etcd-server (/usr/bin/etcd); tools/deps.sh installs it";
}

std::vector<std::string> EtcdCluster::Argv(const Member& m) const {
  const std::string client = absl::StrCat("http://127.0.0.1:", m.client_port);
  const std::string peer = absl::StrCat("http://127.0.0.1:", m.peer_port);
  return {binary_,
          "--name=" + m.name,
          "--data-dir=" + m.data_dir,
          "--listen-client-urls=" + client,
          "--advertise-client-urls=" + client,
          "--listen-peer-urls=" + peer,
          "--initial-advertise-peer-urls=" + peer,
          "--initial-cluster=" + initial_cluster_,
          "--initial-cluster-state=new",
          "--initial-cluster-token=" + token_,
          "--heartbeat-interval=50",
          "--election-timeout=500",
          "--logger=zap",
          "--log-outputs=stderr",
          "--log-level=warn"};
}

absl::StatusOr<std::unique_ptr<EtcdCluster>> EtcdCluster::Start(int members,
                                                                absl::Duration timeout) {
  std::unique_ptr<EtcdCluster> cluster(new EtcdCluster());
  cluster->binary_ = EtcdBinary();
  if (cluster->binary_.empty()) return absl::FailedPreconditionError(SkipReason());
  const std::string base = MakeTempDir("etcd");
  if (base.empty()) return absl::InternalError("cannot create a temp dir for etcd");
  cluster->token_ = absl::StrCat("weft-test-", getpid(), "-", base.size(), "-", members);
  std::vector<std::string> peers;
  for (int i = 0; i < members; ++i) {
    Member m;
    m.name = absl::StrCat("m", i);
    m.client_port = FreePort();
    m.peer_port = FreePort();
    m.data_dir = absl::StrCat(base, "/", m.name);
    m.log_path = absl::StrCat(base, "/", m.name, ".log");
    peers.push_back(absl::StrCat(m.name, "=http://127.0.0.1:", m.peer_port));
    cluster->members_.push_back(std::move(m));
  }
  cluster->initial_cluster_ = absl::StrJoin(peers, ",");
  for (Member& m : cluster->members_) {
    m.process = std::make_unique<Subprocess>(cluster->Argv(m), m.log_path);
  }
  // Ready: every member answers Status and names a raft leader.
  const absl::Time deadline = absl::Now() + timeout;
  for (int i = 0; i < members; ++i) {
    auto client = store::etcd::EtcdClient::Create({.endpoints = {cluster->endpoint(i)},
                                                   .call_timeout = absl::Seconds(1)});
    if (!client.ok()) return client.status();
    while (true) {
      auto status = (*client)->MemberStatus(cluster->endpoint(i));
      if (status.ok() && status->leader() != 0) break;
      if (absl::Now() >= deadline || !cluster->running(i)) {
        return absl::DeadlineExceededError(
            absl::StrCat("etcd member ", i, " at ", cluster->endpoint(i), " not ready within ",
                         absl::FormatDuration(timeout), ": ",
                         status.ok() ? "no raft leader" : status.status().message(),
                         "\n", cluster->Logs()));
      }
      absl::SleepFor(absl::Milliseconds(50));
    }
  }
  return cluster;
}

EtcdCluster::~EtcdCluster() = default;  // each Subprocess kills and reaps its member

std::vector<std::string> EtcdCluster::endpoints() const {
  std::vector<std::string> out;
  for (int i = 0; i < size(); ++i) out.push_back(endpoint(i));
  return out;
}

std::string EtcdCluster::endpoint(int i) const {
  return absl::StrCat("127.0.0.1:", members_[i].client_port);
}

void EtcdCluster::Kill(int i) {
  Member& m = members_[i];
  if (m.process == nullptr) return;
  m.process->Signal(SIGKILL);
  m.process->Wait(absl::Seconds(10));
}

void EtcdCluster::Pause(int i) { members_[i].process->Signal(SIGSTOP); }
void EtcdCluster::Resume(int i) { members_[i].process->Signal(SIGCONT); }

bool EtcdCluster::running(int i) {
  return members_[i].process != nullptr && members_[i].process->running();
}

absl::Status EtcdCluster::Restart(int i, absl::Duration timeout) {
  Member& m = members_[i];
  if (running(i)) return absl::FailedPreconditionError("etcd member still running");
  m.process.reset();
  m.process = std::make_unique<Subprocess>(Argv(m), m.log_path);
  if (!WaitForPort(m.client_port, timeout)) {
    return absl::DeadlineExceededError(absl::StrCat("etcd member ", i, " did not come back\n", Logs()));
  }
  return absl::OkStatus();
}

std::string EtcdCluster::Logs() const {
  std::string out;
  for (const Member& m : members_) {
    if (m.process == nullptr) continue;
    std::string log = m.process->Log();
    if (log.size() > 4000) log = "..." + log.substr(log.size() - 4000);
    absl::StrAppend(&out, "--- etcd ", m.name, " (", endpoint(&m - members_.data()), ")\n", log);
  }
  return out;
}

}  // namespace weft::testing
