// EtcdClient and EtcdWatch against one real etcd member (tests/etcd_cluster.h); the
// three-member cases are tests/etcd_ha_test.cc.
#include "store/etcd/etcd_client.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "common/clock.h"
#include "gtest/gtest.h"
#include "store/etcd/etcd_watch.h"
#include "tests/etcd_cluster.h"
#include "tests/subprocess.h"

namespace weft::store::etcd {
namespace {

using weft::testing::EtcdCluster;

etcdserverpb::PutRequest PutOf(const std::string& key, const std::string& value) {
  etcdserverpb::PutRequest put;
  put.set_key(key);
  put.set_value(value);
  return put;
}

class EtcdClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!EtcdCluster::SkipReason().empty()) GTEST_SKIP() << EtcdCluster::SkipReason();
    auto cluster = EtcdCluster::Start(1);
    ASSERT_TRUE(cluster.ok()) << cluster.status();
    cluster_ = std::move(*cluster);
    auto client = EtcdClient::Create({.endpoints = cluster_->endpoints()});
    ASSERT_TRUE(client.ok()) << client.status();
    client_ = std::move(*client);
  }

  std::unique_ptr<EtcdCluster> cluster_;
  std::unique_ptr<EtcdClient> client_;
};

TEST(EtcdClientOptionsTest, RefusesNoEndpointsAndMalformedOnes) {
  EXPECT_EQ(EtcdClient::Create({}).status().code(), absl::StatusCode::kInvalidArgument);
  auto bad = EtcdClient::Create({.endpoints = {"127.0.0.1"}});
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("'127.0.0.1' is not host:port"), std::string::npos)
      << bad.status();
  EXPECT_EQ(EtcdClient::Create({.endpoints = {"h:70000"}}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(EtcdClient::Create({.endpoints = {"h:1"}, .call_timeout = absl::ZeroDuration()})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(EtcdClient::Create({.endpoints = {"http://127.0.0.1:2379"}}).ok());
}

TEST(EtcdClientOptionsTest, PrefixEndIsTheNextKeyAfterThePrefix) {
  EXPECT_EQ(PrefixEnd("/weft/"), "/weft0");
  EXPECT_EQ(PrefixEnd(std::string("a\xff", 2)), "b");
}

TEST_F(EtcdClientTest, PutRangeDeleteAndTxnRoundTrip) {
  ASSERT_TRUE(client_->Put(PutOf("/weft/a", "1")).ok());
  ASSERT_TRUE(client_->Put(PutOf("/weft/b", "2")).ok());
  etcdserverpb::RangeRequest all;
  all.set_key("/weft/");
  all.set_range_end(PrefixEnd("/weft/"));
  auto got = client_->Range(all);
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->kvs_size(), 2);
  EXPECT_EQ(got->kvs(0).value(), "1");
  EXPECT_EQ(got->kvs(1).key(), "/weft/b");

  // Compare-and-swap on the value: the first succeeds, the same one again does not.
  etcdserverpb::TxnRequest cas;
  auto* cmp = cas.add_compare();
  cmp->set_key("/weft/a");
  cmp->set_target(etcdserverpb::Compare::VALUE);
  cmp->set_result(etcdserverpb::Compare::EQUAL);
  cmp->set_value("1");
  *cas.add_success()->mutable_request_put() = PutOf("/weft/a", "2");
  auto first = client_->Txn(cas);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_TRUE(first->succeeded());
  auto second = client_->Txn(cas);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_FALSE(second->succeeded());

  etcdserverpb::DeleteRangeRequest del;
  del.set_key("/weft/");
  del.set_range_end(PrefixEnd("/weft/"));
  auto deleted = client_->DeleteRange(del);
  ASSERT_TRUE(deleted.ok()) << deleted.status();
  EXPECT_EQ(deleted->deleted(), 2);
}

TEST_F(EtcdClientTest, TxnOverEtcdsLimitsIsRefusedBeforeSending) {
  etcdserverpb::TxnRequest big;
  for (int i = 0; i <= kMaxTxnOps; ++i) {
    *big.add_success()->mutable_request_put() = PutOf("/weft/k" + std::to_string(i), "v");
  }
  auto refused = client_->Txn(big);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("129 compares or operations"), std::string::npos)
      << refused.status();
  etcdserverpb::RangeRequest any;
  any.set_key("/weft/k0");
  EXPECT_EQ(client_->Range(any)->kvs_size(), 0);

  etcdserverpb::TxnRequest heavy;
  *heavy.add_success()->mutable_request_put() =
      PutOf("/weft/huge", std::string(kMaxRequestBytes, 'x'));
  EXPECT_EQ(client_->Txn(heavy).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(EtcdClientTest, LeaseGrantKeepAliveRevoke) {
  auto lease = client_->LeaseGrant(5);
  ASSERT_TRUE(lease.ok()) << lease.status();
  EXPECT_EQ(lease->ttl(), 5);
  etcdserverpb::PutRequest put = PutOf("/weft/leased", "x");
  put.set_lease(lease->id());
  ASSERT_TRUE(client_->Put(put).ok());
  auto ttl = client_->LeaseKeepAliveOnce(lease->id());
  ASSERT_TRUE(ttl.ok()) << ttl.status();
  EXPECT_EQ(*ttl, 5);
  ASSERT_TRUE(client_->LeaseRevoke(lease->id()).ok());
  // The key went with the lease, and the lease can no longer be renewed.
  etcdserverpb::RangeRequest read;
  read.set_key("/weft/leased");
  EXPECT_EQ(client_->Range(read)->kvs_size(), 0);
  EXPECT_EQ(client_->LeaseKeepAliveOnce(lease->id()).status().code(),
            absl::StatusCode::kNotFound);
}

TEST_F(EtcdClientTest, MemberStatusNamesTheVersionAndOnlyKnownEndpoints) {
  auto status = client_->MemberStatus(cluster_->endpoint(0));
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_EQ(status->version().substr(0, 4), "3.4.");
  EXPECT_NE(status->leader(), 0u);
  EXPECT_EQ(client_->MemberStatus("10.0.0.1:2379").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(EtcdClientTest, ErrorsNameTheMemberAndTheCallWhenEtcdIsDown) {
  cluster_->Kill(0);
  auto got = client_->Put(PutOf("/weft/x", "1"));
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(got.status().message().find("etcd Put"), std::string::npos) << got.status();
  EXPECT_NE(got.status().message().find(cluster_->endpoint(0)), std::string::npos)
      << got.status();
}

TEST_F(EtcdClientTest, FailsOverToTheNextEndpointThatServes) {
  // The first endpoint is a port nobody listens on.
  auto client = EtcdClient::Create(
      {.endpoints = {"127.0.0.1:" + std::to_string(weft::testing::FreePort()),
                     cluster_->endpoint(0)}});
  ASSERT_TRUE(client.ok());
  ASSERT_TRUE((*client)->Put(PutOf("/weft/failover", "ok")).ok());
  EXPECT_EQ((*client)->preferred(), 1u);
}

// Collects a watch's events on its thread.
struct Collected {
  absl::Mutex mu;
  std::vector<std::string> keys ABSL_GUARDED_BY(mu);
  std::vector<int64_t> revisions ABSL_GUARDED_BY(mu);
  absl::Status ended ABSL_GUARDED_BY(mu);

  EtcdWatch::EventsCallback OnEvents() {
    return [this](const std::vector<mvccpb::Event>& events) {
      absl::MutexLock lock(&mu);
      for (const auto& e : events) {
        keys.push_back(e.kv().key());
        revisions.push_back(e.kv().mod_revision());
      }
    };
  }
  EtcdWatch::EndCallback OnEnd() {
    return [this](const absl::Status& s) {
      absl::MutexLock lock(&mu);
      ended = s;
    };
  }
  bool AwaitCount(size_t n) {
    absl::MutexLock lock(&mu);
    auto enough = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) { return keys.size() >= n; };
    return mu.AwaitWithTimeout(absl::Condition(&enough), absl::Seconds(10));
  }
};

TEST_F(EtcdClientTest, WatchFromARevisionReplaysHistoryThenFollows) {
  auto first = client_->Put(PutOf("/weft/w/1", "a"));
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE(client_->Put(PutOf("/other", "ignored")).ok());
  ASSERT_TRUE(client_->Put(PutOf("/weft/w/2", "b")).ok());
  RealClock clock;
  Collected got;
  EtcdWatch watch(client_.get(), &clock,
                  {.key = "/weft/w/", .range_end = PrefixEnd("/weft/w/"),
                   .start_revision = first->header().revision()},
                  got.OnEvents(), got.OnEnd());
  ASSERT_TRUE(got.AwaitCount(2));
  ASSERT_TRUE(client_->Put(PutOf("/weft/w/3", "c")).ok());
  ASSERT_TRUE(got.AwaitCount(3));
  absl::MutexLock lock(&got.mu);
  EXPECT_EQ(got.keys, (std::vector<std::string>{"/weft/w/1", "/weft/w/2", "/weft/w/3"}));
  EXPECT_EQ(got.revisions[0], first->header().revision());
}

TEST_F(EtcdClientTest, WatchFromACompactedRevisionEndsWithOutOfRange) {
  auto first = client_->Put(PutOf("/weft/c", "1"));
  auto second = client_->Put(PutOf("/weft/c", "2"));
  ASSERT_TRUE(first.ok() && second.ok());
  etcdserverpb::CompactionRequest compact;
  compact.set_revision(second->header().revision());
  grpc::ClientContext context;
  etcdserverpb::CompactionResponse compacted;
  ASSERT_TRUE(client_->member(0).kv->Compact(&context, compact, &compacted).ok());
  RealClock clock;
  Collected got;
  {
    EtcdWatch watch(client_.get(), &clock,
                    {.key = "/weft/c", .start_revision = first->header().revision()},
                    got.OnEvents(), got.OnEnd());
    absl::MutexLock lock(&got.mu);
    auto ended = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(got.mu) { return !got.ended.ok(); };
    ASSERT_TRUE(got.mu.AwaitWithTimeout(absl::Condition(&ended), absl::Seconds(10)));
    EXPECT_EQ(got.ended.code(), absl::StatusCode::kOutOfRange);
    EXPECT_NE(got.ended.message().find("reload"), std::string::npos) << got.ended;
  }
}

}  // namespace
}  // namespace weft::store::etcd
