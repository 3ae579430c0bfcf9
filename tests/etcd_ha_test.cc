// Leader election and fenced writes on a real three-member etcd cluster on loopback
// (issue 23): a killed leader process is replaced within its TTL plus a margin. Losing
// one etcd member costs at most the writes in flight on it or sent during raft's
// re-election (outcome unknown, said so); the leader keeps leading and a watch loses no
// event. Losing quorum refuses writes with a clear error, the leader steps down before
// its lease can expire, and no transaction is ever applied in part (one sent just as
// quorum went may commit whole later: raft kept it). Real time throughout (etcd's
// leases and raft run on it), with 2 s TTLs; the figures are recorded as test properties.
#include <signal.h>

#include <algorithm>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "common/clock.h"
#include "gtest/gtest.h"
#include "store/etcd/etcd_client.h"
#include "store/etcd/etcd_watch.h"
#include "store/etcd/leader_election.h"
#include "tests/etcd_cluster.h"
#include "tests/subprocess.h"

namespace weft::testing {
namespace {

namespace etcd = weft::store::etcd;

constexpr char kElection[] = "/weft/ha/leader";
constexpr absl::Duration kTtl = absl::Seconds(2);

etcdserverpb::RequestOp PutOp(const std::string& key, const std::string& value) {
  etcdserverpb::RequestOp op;
  op.mutable_request_put()->set_key(key);
  op.mutable_request_put()->set_value(value);
  return op;
}

etcd::ElectionOptions Candidate(const std::string& name) {
  return {.election = kElection, .candidate = name, .address = name + ":7070", .lease_ttl = kTtl};
}

class EtcdHaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!EtcdCluster::SkipReason().empty()) GTEST_SKIP() << EtcdCluster::SkipReason();
    auto cluster = EtcdCluster::Start(3);
    ASSERT_TRUE(cluster.ok()) << cluster.status();
    cluster_ = std::move(*cluster);
    client_ = NewClient();
  }

  std::unique_ptr<etcd::EtcdClient> NewClient() {
    auto client = etcd::EtcdClient::Create(
        {.endpoints = cluster_->endpoints(), .call_timeout = absl::Seconds(1)});
    EXPECT_TRUE(client.ok()) << client.status();
    return client.ok() ? std::move(*client) : nullptr;
  }

  // Keys under `prefix`, read through a fresh client (any member that serves).
  int KeysUnder(const std::string& prefix) {
    etcdserverpb::RangeRequest read;
    read.set_key(prefix);
    read.set_range_end(etcd::PrefixEnd(prefix));
    auto got = NewClient()->Range(read);
    EXPECT_TRUE(got.ok()) << got.status();
    return got.ok() ? got->kvs_size() : -1;
  }

  std::unique_ptr<EtcdCluster> cluster_;
  std::unique_ptr<etcd::EtcdClient> client_;
  RealClock clock_;
};

TEST_F(EtcdHaTest, AKilledLeaderProcessIsReplacedWithinItsTtlPlusAMargin) {
  const std::string log = TempPath("etcd_candidate.log");
  Subprocess leader({"tests/etcd_candidate", absl::StrJoin(cluster_->endpoints(), ","),
                     kElection, "ctl-a", "2"},
                    log);
  const absl::Time wait_until = absl::Now() + absl::Seconds(10);
  while (leader.Log().find("leading epoch=") == std::string::npos && absl::Now() < wait_until) {
    absl::SleepFor(absl::Milliseconds(20));
  }
  ASSERT_NE(leader.Log().find("leading epoch="), std::string::npos) << leader.Log();
  auto before = etcd::CurrentLeader(*client_, kElection);
  ASSERT_TRUE(before.ok()) << before.status();
  EXPECT_EQ(before->candidate, "ctl-a");

  etcd::LeaderElection b(client_.get(), &clock_, Candidate("ctl-b"));
  absl::StatusOr<etcd::Fence> won;
  absl::Time won_at;
  std::thread campaign([&] {
    won = b.Campaign(absl::Seconds(20));
    won_at = absl::Now();
  });
  const absl::Time killed_at = absl::Now();
  leader.Signal(SIGKILL);
  campaign.join();
  ASSERT_TRUE(won.ok()) << won.status();
  const absl::Duration failover = won_at - killed_at;
  RecordProperty("failover_ms", absl::ToInt64Milliseconds(failover));
  std::cout << "leader process SIGKILLed, TTL 2 s: new leader after "
            << absl::FormatDuration(failover) << std::endl;
  // The lease runs out 2 s after the last renewal at most; etcd checks expiry every
  // 500 ms: the new leader is in by TTL + 1 s.
  EXPECT_LT(failover, kTtl + absl::Seconds(1));
  EXPECT_GT(won->epoch, before->epoch);
  auto after = etcd::CurrentLeader(*client_, kElection);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->candidate, "ctl-b");
  EXPECT_EQ(after->address, "ctl-b:7070");
}

struct WatchedKeys {
  absl::Mutex mu;
  std::vector<std::string> keys ABSL_GUARDED_BY(mu);
};

TEST_F(EtcdHaTest, LosingOneMemberKeepsTheLeaderAndTheWatchWhole) {
  // The default lease TTL (5 s), not the 2 s of the other cases: the leader steps down
  // TTL/4 before its lease could expire, and when the lost member led raft, re-election
  // plus a call's and a connect's timeouts (up to the 2 s window below) can outlast the
  // 1.5 s a 2 s TTL leaves (seen once under ASan).
  etcd::ElectionOptions options = Candidate("ctl-a");
  options.lease_ttl = absl::Seconds(5);
  etcd::LeaderElection a(client_.get(), &clock_, options);
  auto fence = a.Campaign(absl::Seconds(10));
  ASSERT_TRUE(fence.ok()) << fence.status();
  // A follower's warm copy: a watch from the revision after the leader's key.
  auto watch_client = NewClient();
  WatchedKeys seen;
  etcd::EtcdWatch watch(
      watch_client.get(), &clock_,
      {.key = "/weft/ha/data/", .range_end = etcd::PrefixEnd("/weft/ha/data/"),
       .start_revision = fence->epoch + 1},
      [&](const std::vector<mvccpb::Event>& events) {
        absl::MutexLock lock(&seen.mu);
        for (const auto& e : events) seen.keys.push_back(e.kv().key());
      },
      [](const absl::Status&) {});
  ASSERT_TRUE(a.GuardedTxn({}, {PutOp("/weft/ha/data/0", "x")}).ok());

  // The member both clients talk to first goes; the rest keep quorum.
  cluster_->Kill(static_cast<int>(watch_client->preferred()));
  // Guarded writes for 4 s. Those in flight on the dead member's connection, or sent
  // while the others elect a new raft leader (when the dead one led), may fail with an
  // unknown outcome (they may have been applied); after that window every one succeeds,
  // and the leader's renewals moved members in time.
  const absl::Time killed_at = absl::Now();
  const absl::Duration window = absl::Seconds(2);  // raft election + call + connect timeouts
  const absl::Time until = killed_at + 2 * kTtl;  // long enough to see writes recover
  int writes = 1;
  int failed = 0;
  std::vector<std::string> acknowledged = {"/weft/ha/data/0"};
  while (absl::Now() < until) {
    const absl::Time sent = absl::Now();
    const std::string key = "/weft/ha/data/" + std::to_string(writes);
    auto wrote = a.GuardedTxn({}, {PutOp(key, "x")});
    ++writes;
    if (wrote.ok()) acknowledged.push_back(key);
    if (!wrote.ok()) {
      ++failed;
      EXPECT_NE(wrote.status().message().find("outcome unknown"), std::string::npos)
          << wrote.status();
      ASSERT_LT(sent - killed_at, window) << "write " << writes - 1 << ": " << wrote.status();
    }
    absl::SleepFor(absl::Milliseconds(100));
  }
  RecordProperty("writes", writes);
  RecordProperty("writes_failed_after_the_kill", failed);
  std::cout << "one member SIGKILLed: " << failed << " of " << writes - 1
            << " writes failed (outcome unknown), all within " << absl::FormatDuration(window)
            << std::endl;
  EXPECT_TRUE(a.IsLeader());
  // The watch delivers exactly what etcd holds, each once and in order, across the
  // reconnect.
  etcdserverpb::RangeRequest read;
  read.set_key("/weft/ha/data/");
  read.set_range_end(etcd::PrefixEnd("/weft/ha/data/"));
  read.set_sort_target(etcdserverpb::RangeRequest::MOD);
  read.set_sort_order(etcdserverpb::RangeRequest::ASCEND);
  auto stored = client_->Range(read);
  ASSERT_TRUE(stored.ok()) << stored.status();
  std::vector<std::string> expected;
  for (const auto& kv : stored->kvs()) expected.push_back(kv.key());
  // Every acknowledged write is there; a write of unknown outcome may or may not be.
  for (const std::string& key : acknowledged) {
    EXPECT_NE(std::find(expected.begin(), expected.end(), key), expected.end())
        << "acknowledged write " << key << " is lost";
  }
  EXPECT_LE(expected.size(), static_cast<size_t>(writes));
  {
    absl::MutexLock lock(&seen.mu);
    auto all = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(seen.mu) {
      return seen.keys.size() >= expected.size();
    };
    ASSERT_TRUE(seen.mu.AwaitWithTimeout(absl::Condition(&all), absl::Seconds(10)))
        << seen.keys.size() << " of " << expected.size();
    EXPECT_EQ(seen.keys, expected);
  }
  EXPECT_GE(watch.streams_opened(), 2);
}

TEST_F(EtcdHaTest, LosingQuorumRefusesWritesClearlyAndNeverAppliesPartOfOne) {
  etcd::LeaderElection a(client_.get(), &clock_, Candidate("ctl-a"));
  ASSERT_TRUE(a.Campaign(absl::Seconds(10)).ok());
  const int survivor = static_cast<int>(client_->preferred());
  for (int i = 0; i < 3; ++i) {
    if (i != survivor) cluster_->Kill(i);
  }
  const absl::Time lost_quorum = absl::Now();
  // Sent at once, before the survivor knows quorum is gone: it may sit in a raft log.
  auto first = a.GuardedTxn({}, {PutOp("/weft/ha/first/a", "1"), PutOp("/weft/ha/first/b", "2"),
                                 PutOp("/weft/ha/first/c", "3")});
  ASSERT_FALSE(first.ok());
  std::cout << "write just after quorum was lost: " << first.status() << std::endl;
  EXPECT_NE(first.status().message().find("etcd Txn"), std::string::npos) << first.status();
  // It cannot renew either: it steps down before its lease could expire, counted from
  // the last renewal etcd accepted (a raft leader that has not yet noticed it lost
  // quorum may still accept one just after the kill).
  ASSERT_TRUE(a.AwaitLoss(absl::Now() + 2 * kTtl));
  const absl::Time lost_at = absl::Now();
  const etcd::LeaseTimer timer = a.timer();
  const absl::Duration step_down = lost_at - lost_quorum;
  RecordProperty("step_down_ms", absl::ToInt64Milliseconds(step_down));
  RecordProperty("step_down_before_expiry_ms",
                 absl::ToInt64Milliseconds(timer.EarliestExpiry() - lost_at));
  std::cout << "quorum lost, TTL 2 s: leader stepped down after "
            << absl::FormatDuration(step_down) << ", "
            << absl::FormatDuration(timer.EarliestExpiry() - lost_at)
            << " before its lease could expire" << std::endl;
  EXPECT_LT(lost_at, timer.EarliestExpiry());
  auto local = a.GuardedTxn({}, {PutOp("/weft/ha/local/a", "1")});
  EXPECT_EQ(local.status().code(), absl::StatusCode::kFailedPrecondition) << local.status();
  // The same write with the old fence, sent anyway: etcd itself refuses it now.
  auto fence_key = etcd::CurrentLeader(*client_, kElection);
  std::cout << "leader lookup without quorum: " << fence_key.status() << std::endl;
  EXPECT_FALSE(fence_key.ok());

  for (int i = 0; i < 3; ++i) {
    if (i != survivor) {
      ASSERT_TRUE(cluster_->Restart(i).ok());
    }
  }
  // Quorum is back. A transaction is all or nothing: never a part of one.
  auto count = [&](const std::string& prefix) {
    const absl::Time until = absl::Now() + absl::Seconds(15);
    while (absl::Now() < until) {
      etcdserverpb::RangeRequest read;
      read.set_key(prefix);
      read.set_range_end(etcd::PrefixEnd(prefix));
      auto got = client_->Range(read);
      if (got.ok()) return got->kvs_size();
      absl::SleepFor(absl::Milliseconds(100));
    }
    return -1;
  };
  const int first_keys = count("/weft/ha/first/");
  RecordProperty("first_write_applied_later", first_keys == 3 ? 1 : 0);
  std::cout << "keys of the write sent without quorum, after quorum came back: " << first_keys
            << " of 3" << std::endl;
  EXPECT_TRUE(first_keys == 0 || first_keys == 3) << first_keys;
  if (first_keys == 3) {
    EXPECT_NE(first.status().message().find("outcome unknown"), std::string::npos)
        << first.status();
  }
  EXPECT_EQ(count("/weft/ha/local/"), 0);
}

}  // namespace
}  // namespace weft::testing
