#include "controller/api/audit_log.h"

#include <memory>

#include "gtest/gtest.h"
#include "store/controller_store.h"

namespace weft::controller {
namespace {

AuditEntry Entry(absl::Time at, std::string who, std::string method, std::string target,
                 std::string result = "OK") {
  AuditEntry entry;
  entry.at = at;
  entry.who = std::move(who);
  entry.role = "operator";
  entry.method = std::move(method);
  entry.target = std::move(target);
  entry.result = std::move(result);
  return entry;
}

// The same behaviour with the SQLite store and in memory.
class AuditLogTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    if (GetParam()) {
      auto opened = store::ControllerStore::OpenInMemory();
      ASSERT_TRUE(opened.ok()) << opened.status();
      store_ = *std::move(opened);
    }
    log_ = std::make_unique<AuditLog>(store_.get());
  }
  std::unique_ptr<store::ControllerStore> store_;
  std::unique_ptr<AuditLog> log_;
};

const absl::Time kT0 = absl::FromUnixSeconds(1'800'000'000);

TEST_P(AuditLogTest, ListFiltersByTimeWhoAndMethod) {
  ASSERT_TRUE(log_->Record(Entry(kT0, "alice", "/weft.v1.AdminService/DrainNode", "gpu-1")).ok());
  ASSERT_TRUE(log_->Record(Entry(kT0 + absl::Seconds(1), "bob",
                                 "/weft.v1.PlacementService/Place", "job-7")).ok());
  ASSERT_TRUE(log_->Record(Entry(kT0 + absl::Seconds(2), "alice",
                                 "/weft.v1.AdminService/UndrainNode", "gpu-1",
                                 "FAILED_PRECONDITION: not drained")).ok());

  auto all = log_->List({});
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 3u);
  EXPECT_EQ((*all)[0].sequence, 1u);
  EXPECT_EQ((*all)[2].sequence, 3u);
  EXPECT_EQ((*all)[2].result, "FAILED_PRECONDITION: not drained");
  EXPECT_EQ((*all)[1].at, kT0 + absl::Seconds(1));

  AuditQuery by_who;
  by_who.who = "alice";
  auto alice = log_->List(by_who);
  ASSERT_TRUE(alice.ok());
  ASSERT_EQ(alice->size(), 2u);
  EXPECT_EQ((*alice)[1].method, "/weft.v1.AdminService/UndrainNode");

  AuditQuery by_method;
  by_method.method = "DrainNode";  // the last component; must not match UndrainNode
  auto drains = log_->List(by_method);
  ASSERT_TRUE(drains.ok());
  ASSERT_EQ(drains->size(), 1u);
  EXPECT_EQ((*drains)[0].target, "gpu-1");
  by_method.method = "/weft.v1.PlacementService/Place";
  ASSERT_EQ(log_->List(by_method)->size(), 1u);

  AuditQuery since;
  since.since = kT0 + absl::Seconds(1);
  since.limit = 1;
  auto newest = log_->List(since);
  ASSERT_TRUE(newest.ok());
  ASSERT_EQ(newest->size(), 1u);
  EXPECT_EQ((*newest)[0].who, "alice");
  EXPECT_EQ((*newest)[0].sequence, 3u);
}

TEST_P(AuditLogTest, RefusesEntryWithoutWhoOrMethod) {
  EXPECT_EQ(log_->Record(Entry(kT0, "", "/m", "x")).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(log_->Record(Entry(kT0, "alice", "", "x")).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(log_->List({})->empty());
}

INSTANTIATE_TEST_SUITE_P(StoreAndMemory, AuditLogTest, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "Store" : "Memory"; });

TEST(AuditResultTest, NamesCodeAndMessage) {
  EXPECT_EQ(AuditResult(absl::OkStatus()), "OK");
  EXPECT_EQ(AuditResult(absl::PermissionDeniedError("role viewer may not drain")),
            "PERMISSION_DENIED: role viewer may not drain");
}

}  // namespace
}  // namespace weft::controller
