// LeaderElection against one real etcd member (tests/etcd_cluster.h). The leader's own
// timing (renewals, step-down) runs on a FakeClock; what etcd does with the lease
// (expiry, the next candidate winning) takes real time, so those TTLs are 1 s, the
// least etcd allows with the harness's 500 ms election timeout.
#include "store/etcd/leader_election.h"

#include <memory>
#include <string>
#include <thread>

#include "common/clock.h"
#include "common/fake_clock.h"
#include "gtest/gtest.h"
#include "tests/etcd_cluster.h"

namespace weft::store::etcd {
namespace {

using weft::testing::EtcdCluster;

etcdserverpb::RequestOp PutOp(const std::string& key, const std::string& value) {
  etcdserverpb::RequestOp op;
  op.mutable_request_put()->set_key(key);
  op.mutable_request_put()->set_value(value);
  return op;
}

ElectionOptions Candidate(const std::string& name, absl::Duration ttl = absl::Seconds(5)) {
  return {.election = "/weft/test/leader",
          .candidate = name,
          .address = name + ".example:7070",
          .lease_ttl = ttl};
}

class LeaderElectionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!EtcdCluster::SkipReason().empty()) GTEST_SKIP() << EtcdCluster::SkipReason();
    auto cluster = EtcdCluster::Start(1);
    ASSERT_TRUE(cluster.ok()) << cluster.status();
    cluster_ = std::move(*cluster);
    client_a_ = NewClient();
    client_b_ = NewClient();
  }

  std::unique_ptr<EtcdClient> NewClient() {
    auto client = EtcdClient::Create({.endpoints = cluster_->endpoints(),
                                      .call_timeout = absl::Seconds(1)});
    EXPECT_TRUE(client.ok()) << client.status();
    return client.ok() ? std::move(*client) : nullptr;
  }

  int KeysUnder(const std::string& prefix) {
    etcdserverpb::RangeRequest read;
    read.set_key(prefix);
    read.set_range_end(PrefixEnd(prefix));
    auto got = client_a_->Range(read);
    EXPECT_TRUE(got.ok()) << got.status();
    return got.ok() ? got->kvs_size() : -1;
  }

  std::unique_ptr<EtcdCluster> cluster_;
  std::unique_ptr<EtcdClient> client_a_;
  std::unique_ptr<EtcdClient> client_b_;
  RealClock real_clock_;
};

TEST(LeaderElectionOptionsTest, RefusesTtlsEtcdCannotGrantAndNamelessCandidates) {
  ElectionOptions options = Candidate("ctl-a");
  EXPECT_TRUE(LeaderElection::Validate(options).ok());
  options.lease_ttl = absl::Milliseconds(1500);
  absl::Status s = LeaderElection::Validate(options);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("whole seconds in 1s..3600s"), std::string::npos) << s;
  options.lease_ttl = absl::ZeroDuration();
  EXPECT_FALSE(LeaderElection::Validate(options).ok());
  options = Candidate("");
  EXPECT_EQ(LeaderElection::Validate(options).code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(LeaderElectionTest, TheWinnersEpochIsItsKeysCreateRevisionAndFollowersSeeWhoAndWhere) {
  LeaderElection a(client_a_.get(), &real_clock_, Candidate("ctl-a"));
  auto fence = a.Campaign(absl::Seconds(10));
  ASSERT_TRUE(fence.ok()) << fence.status();
  EXPECT_TRUE(a.IsLeader());
  etcdserverpb::RangeRequest read;
  read.set_key(fence->key);
  auto key = client_a_->Range(read);
  ASSERT_TRUE(key.ok() && key->kvs_size() == 1);
  EXPECT_EQ(fence->epoch, key->kvs(0).create_revision());
  EXPECT_EQ(fence->key.rfind("/weft/test/leader/", 0), 0u) << fence->key;

  auto seen = CurrentLeader(*client_b_, "/weft/test/leader");
  ASSERT_TRUE(seen.ok()) << seen.status();
  EXPECT_EQ(seen->candidate, "ctl-a");
  EXPECT_EQ(seen->address, "ctl-a.example:7070");
  EXPECT_EQ(seen->epoch, fence->epoch);

  auto wrote = a.GuardedTxn({}, {PutOp("/weft/test/data/drain", "gpu-a01")});
  ASSERT_TRUE(wrote.ok()) << wrote.status();
  EXPECT_EQ(KeysUnder("/weft/test/data/"), 1);
}

TEST_F(LeaderElectionTest, NobodyLeadingIsNotFound) {
  EXPECT_EQ(CurrentLeader(*client_a_, "/weft/test/leader").status().code(),
            absl::StatusCode::kNotFound);
}

TEST_F(LeaderElectionTest, AFailedCompareOfTheCallerIsAbortedNotDeposed) {
  LeaderElection a(client_a_.get(), &real_clock_, Candidate("ctl-a"));
  ASSERT_TRUE(a.Campaign(absl::Seconds(10)).ok());
  etcdserverpb::Compare absent;
  absent.set_key("/weft/test/data/version");
  absent.set_target(etcdserverpb::Compare::VALUE);
  absent.set_result(etcdserverpb::Compare::EQUAL);
  absent.set_value("7");
  auto wrote = a.GuardedTxn({absent}, {PutOp("/weft/test/data/a", "1"),
                                       PutOp("/weft/test/data/b", "2")});
  EXPECT_EQ(wrote.status().code(), absl::StatusCode::kAborted) << wrote.status();
  EXPECT_EQ(KeysUnder("/weft/test/data/"), 0);
  EXPECT_TRUE(a.IsLeader());
}

TEST_F(LeaderElectionTest, KeepsItsLeaseAliveOnItsOwnSchedule) {
  FakeClock clock;
  LeaderElection a(client_a_.get(), &clock, Candidate("ctl-a"));
  ASSERT_TRUE(a.Campaign(absl::Seconds(10)).ok());
  const absl::Time first_step_down = a.timer().StepDownAt();
  // Six renewals, every ttl / 3 of the fake clock: each one moves the step-down on.
  for (int i = 1; i <= 6; ++i) {
    ASSERT_TRUE(clock.AwaitWaiters(1));
    auto at = clock.AdvanceToNextDeadline();
    ASSERT_TRUE(at.has_value());
    ASSERT_TRUE(clock.AwaitWaiters(1));  // the renewal is done, the keeper waits again
    EXPECT_EQ(a.timer().last_renewal_sent(), *at) << "renewal " << i;
  }
  EXPECT_GT(clock.Now(), first_step_down);
  EXPECT_TRUE(a.IsLeader());
  EXPECT_TRUE(a.GuardedTxn({}, {PutOp("/weft/test/data/x", "1")}).ok());
}

TEST_F(LeaderElectionTest, StepsDownAMarginBeforeItsLeaseCanExpireWhenEtcdIsGone) {
  FakeClock clock;
  LeaderElection a(client_a_.get(), &clock, Candidate("ctl-a"));
  ASSERT_TRUE(a.Campaign(absl::Seconds(10)).ok());
  cluster_->Kill(0);
  const LeaseTimer timer = a.timer();
  const absl::Time step_down = timer.StepDownAt();
  EXPECT_EQ(timer.EarliestExpiry() - step_down, absl::Milliseconds(1250));  // ttl 5 s / 4
  // Renewals fail (etcd is gone) until the keeper's next deadline is the step-down.
  while (true) {
    ASSERT_TRUE(clock.AwaitWaiters(1));
    if (*clock.NextDeadline() >= step_down) break;
    clock.AdvanceToNextDeadline();
  }
  EXPECT_EQ(*clock.NextDeadline(), step_down);
  clock.Set(step_down - absl::Milliseconds(1));
  EXPECT_TRUE(a.IsLeader());
  clock.Set(step_down);
  EXPECT_FALSE(a.IsLeader());
  EXPECT_TRUE(a.AwaitLoss(clock.Now()));
  EXPECT_FALSE(a.fence().has_value());
  auto refused = a.GuardedTxn({}, {PutOp("/weft/test/data/x", "1")});
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.status().message().find("not the leader"), std::string::npos)
      << refused.status();
}

TEST_F(LeaderElectionTest, ADeposedLeaderThatStillBelievesItLeadsCannotCommit) {
  // A's clock never moves: its keeper never renews, as if the process were paused.
  FakeClock frozen;
  LeaderElection a(client_a_.get(), &frozen, Candidate("ctl-a", absl::Seconds(1)));
  auto old_fence = a.Campaign(absl::Seconds(10));
  ASSERT_TRUE(old_fence.ok()) << old_fence.status();
  LeaderElection b(client_b_.get(), &real_clock_, Candidate("ctl-b", absl::Seconds(1)));
  const absl::Time start = absl::Now();
  auto new_fence = b.Campaign(absl::Seconds(15));  // wins once A's lease expires in etcd
  ASSERT_TRUE(new_fence.ok()) << new_fence.status();
  const absl::Duration takeover = absl::Now() - start;
  EXPECT_LT(takeover, absl::Seconds(4));
  EXPECT_GT(new_fence->epoch, old_fence->epoch);
  ::testing::Test::RecordProperty("takeover_ms", absl::ToInt64Milliseconds(takeover));

  ASSERT_TRUE(a.IsLeader());  // it has not noticed
  auto refused = a.GuardedTxn({}, {PutOp("/weft/test/data/drain", "from-a"),
                                   PutOp("/weft/test/data/epoch", "a")});
  ASSERT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition) << refused.status();
  EXPECT_NE(refused.status().message().find("deposed"), std::string::npos) << refused.status();
  EXPECT_NE(refused.status().message().find(old_fence->key), std::string::npos);
  EXPECT_EQ(KeysUnder("/weft/test/data/"), 0);
  ASSERT_TRUE(b.GuardedTxn({}, {PutOp("/weft/test/data/drain", "from-b")}).ok());
  EXPECT_EQ(KeysUnder("/weft/test/data/"), 1);
}

TEST_F(LeaderElectionTest, ResignHandsLeadershipOverAtOnce) {
  LeaderElection a(client_a_.get(), &real_clock_, Candidate("ctl-a"));
  ASSERT_TRUE(a.Campaign(absl::Seconds(10)).ok());
  LeaderElection b(client_b_.get(), &real_clock_, Candidate("ctl-b"));
  absl::StatusOr<Fence> b_fence;
  std::thread campaign([&] { b_fence = b.Campaign(absl::Seconds(10)); });
  // B is queued behind A once its key exists.
  const absl::Time wait_until = absl::Now() + absl::Seconds(5);
  while (KeysUnder("/weft/test/leader/") < 2 && absl::Now() < wait_until) {
    absl::SleepFor(absl::Milliseconds(20));
  }
  const absl::Time resigned = absl::Now();
  ASSERT_TRUE(a.Resign().ok());
  campaign.join();
  ASSERT_TRUE(b_fence.ok()) << b_fence.status();
  // Well inside the 5 s TTL: the handover did not wait for A's lease to run out.
  EXPECT_LT(absl::Now() - resigned, absl::Seconds(2));
  EXPECT_FALSE(a.IsLeader());
  auto seen = CurrentLeader(*client_a_, "/weft/test/leader");
  ASSERT_TRUE(seen.ok());
  EXPECT_EQ(seen->candidate, "ctl-b");
}

TEST_F(LeaderElectionTest, StopEndsACampaignThatWaits) {
  LeaderElection a(client_a_.get(), &real_clock_, Candidate("ctl-a"));
  ASSERT_TRUE(a.Campaign(absl::Seconds(10)).ok());
  LeaderElection b(client_b_.get(), &real_clock_, Candidate("ctl-b"));
  absl::StatusOr<Fence> b_fence;
  std::thread campaign([&] { b_fence = b.Campaign(absl::Seconds(30)); });
  const absl::Time wait_until = absl::Now() + absl::Seconds(5);
  while (KeysUnder("/weft/test/leader/") < 2 && absl::Now() < wait_until) {
    absl::SleepFor(absl::Milliseconds(20));
  }
  b.Stop();
  campaign.join();
  EXPECT_EQ(b_fence.status().code(), absl::StatusCode::kCancelled) << b_fence.status();
  EXPECT_TRUE(a.IsLeader());
}

}  // namespace
}  // namespace weft::store::etcd
