#include "controller/rendezvous/rendezvous_table.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "common/fake_clock.h"
#include "gtest/gtest.h"

namespace weft::controller {
namespace {

using Result = absl::StatusOr<std::vector<std::string>>;

weft::v1::RendezvousRequest Request(uint32_t rank, uint32_t world_size, std::string endpoint,
                                    uint32_t timeout_ms = 5000, std::string job = "job-1",
                                    std::string key = "weft/tcp") {
  weft::v1::RendezvousRequest r;
  r.set_job_id(job);
  r.set_key(key);
  r.set_rank(rank);
  r.set_world_size(world_size);
  r.set_endpoint(endpoint);
  r.set_timeout_ms(timeout_ms);
  r.set_node("node-" + std::to_string(rank));
  return r;
}

// One join's outcome: nullopt while the join waits.
struct Joined {
  std::optional<Result> result;
  std::optional<RendezvousTable::WaiterId> id;
};

// Joins and records the result; `holders` keeps the records alive.
Joined* JoinInto(RendezvousTable& table, const weft::v1::RendezvousRequest& request,
                 std::vector<std::unique_ptr<Joined>>& holders) {
  holders.push_back(std::make_unique<Joined>());
  Joined* j = holders.back().get();
  j->id = table.Join(request, [j](Result r) {
    EXPECT_FALSE(j->result.has_value()) << "done called twice";
    j->result = std::move(r);
  });
  return j;
}

class RendezvousTableTest : public ::testing::Test {
 protected:
  Joined* Add(const weft::v1::RendezvousRequest& request) {
    return JoinInto(table_, request, joined_);
  }

  FakeClock clock_;
  RendezvousTable table_{&clock_, RendezvousTableOptions{.retention = absl::Seconds(60)}};
  std::vector<std::unique_ptr<Joined>> joined_;
};

TEST_F(RendezvousTableTest, EveryRankGetsEveryEndpointOnceTheLastArrives) {
  Joined* r2 = Add(Request(2, 3, "c"));
  Joined* r0 = Add(Request(0, 3, "a"));
  EXPECT_FALSE(r2->result.has_value());
  EXPECT_FALSE(r0->result.has_value());
  EXPECT_EQ(table_.waiter_count(), 2u);
  Joined* r1 = Add(Request(1, 3, "b"));
  EXPECT_FALSE(r1->id.has_value()) << "the completing join is answered at once";
  for (Joined* j : {r0, r1, r2}) {
    ASSERT_TRUE(j->result.has_value());
    ASSERT_TRUE(j->result->ok()) << j->result->status();
    EXPECT_EQ(**j->result, (std::vector<std::string>{"a", "b", "c"}));
  }
  EXPECT_EQ(table_.waiter_count(), 0u);
}

TEST_F(RendezvousTableTest, ASingleRankJobCompletesAlone) {
  Joined* r0 = Add(Request(0, 1, "only"));
  ASSERT_TRUE(r0->result.has_value());
  EXPECT_EQ(**r0->result, std::vector<std::string>{"only"});
}

TEST_F(RendezvousTableTest, ExchangesOfOtherJobsAndKeysDoNotMix) {
  Joined* a = Add(Request(0, 2, "a0", 5000, "job-1", "k"));
  Joined* b = Add(Request(1, 2, "b1", 5000, "job-2", "k"));
  Joined* c = Add(Request(1, 2, "c1", 5000, "job-1", "other"));
  EXPECT_FALSE(a->result || b->result || c->result);
  Joined* a1 = Add(Request(1, 2, "a1", 5000, "job-1", "k"));
  ASSERT_TRUE(a->result.has_value() && a1->result.has_value());
  EXPECT_EQ(**a->result, (std::vector<std::string>{"a0", "a1"}));
  EXPECT_FALSE(b->result || c->result);
  EXPECT_EQ(table_.exchange_count(), 3u);
}

TEST_F(RendezvousTableTest, TimeoutNamesTheRanksThatNeverArrived) {
  Joined* r0 = Add(Request(0, 4, "a", 5000));
  Joined* r1 = Add(Request(1, 4, "b", 5000));
  clock_.Advance(absl::Seconds(1));
  Joined* r2 = Add(Request(2, 4, "c", 5000));
  clock_.Advance(absl::Milliseconds(3999));
  table_.Sweep();
  EXPECT_FALSE(r0->result.has_value()) << "1 ms before its deadline";
  clock_.Advance(absl::Milliseconds(1));
  table_.Sweep();
  ASSERT_TRUE(r0->result.has_value() && r1->result.has_value());
  EXPECT_FALSE(r2->result.has_value()) << "rank 2 joined later and still waits";
  EXPECT_EQ(r0->result->status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(r0->result->status().message(),
            "rendezvous job 'job-1' key 'weft/tcp': rank 3 never arrived (waited 5s for 4 "
            "ranks; 3 arrived)");
  clock_.Advance(absl::Seconds(1));
  table_.Sweep();
  ASSERT_TRUE(r2->result.has_value());
  EXPECT_EQ(r2->result->status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_NE(r2->result->status().message().find("rank 3 never arrived"), std::string::npos)
      << "ranks that arrived and left are not named: " << r2->result->status();
}

TEST_F(RendezvousTableTest, ALongListOfMissingRanksIsCut) {
  Joined* r0 = Add(Request(0, 100, "a", 10));
  clock_.Advance(absl::Milliseconds(10));
  table_.Sweep();
  ASSERT_TRUE(r0->result.has_value());
  EXPECT_EQ(r0->result->status().message(),
            "rendezvous job 'job-1' key 'weft/tcp': ranks 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, "
            "12, 13, 14, 15, 16 and 83 more never arrived (waited 10ms for 100 ranks; 1 "
            "arrived)");
}

TEST_F(RendezvousTableTest, ALateRankStillCompletesTheExchangeForItselfAndWaitingRanks) {
  Joined* r0 = Add(Request(0, 3, "a", 1000));
  Joined* r1 = Add(Request(1, 3, "b", 9000));
  clock_.Advance(absl::Seconds(2));
  table_.Sweep();
  ASSERT_TRUE(r0->result.has_value());
  EXPECT_FALSE(r0->result->ok());
  Joined* r2 = Add(Request(2, 3, "c"));
  ASSERT_TRUE(r1->result.has_value() && r2->result.has_value());
  EXPECT_EQ(**r1->result, (std::vector<std::string>{"a", "b", "c"}));
}

TEST_F(RendezvousTableTest, ConflictingWorldSizeIsRefusedNamingBoth) {
  Joined* r0 = Add(Request(0, 4, "a"));
  Joined* r1 = Add(Request(1, 8, "b"));
  ASSERT_TRUE(r1->result.has_value());
  EXPECT_EQ(r1->result->status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(r1->result->status().message(),
            "rendezvous job 'job-1' key 'weft/tcp': rank 1 (node node-1) asked for world size 8 "
            "but the exchange was opened for 4 ranks by rank 0 (node node-0); every rank of a "
            "run must pass the same world size, and each run its own job id");
  EXPECT_FALSE(r0->result.has_value()) << "the exchange is intact";
  Add(Request(1, 4, "b"));
  Add(Request(2, 4, "c"));
  Add(Request(3, 4, "d"));
  ASSERT_TRUE(r0->result.has_value());
  EXPECT_EQ(**r0->result, (std::vector<std::string>{"a", "b", "c", "d"}));
}

TEST_F(RendezvousTableTest, RetryWithTheSameEndpointIsFineADifferentOneIsRefused) {
  Joined* first = Add(Request(0, 2, "a"));
  Joined* retry = Add(Request(0, 2, "a"));
  EXPECT_FALSE(retry->result.has_value()) << "a retry waits like the first call";
  Joined* other = Add(Request(0, 2, "elsewhere"));
  ASSERT_TRUE(other->result.has_value());
  EXPECT_EQ(other->result->status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_NE(other->result->status().message().find("rank 0 (node node-0) already published"),
            std::string::npos)
      << other->result->status();
  Add(Request(1, 2, "b"));
  ASSERT_TRUE(first->result.has_value() && retry->result.has_value());
  EXPECT_EQ(**retry->result, (std::vector<std::string>{"a", "b"}));
}

TEST_F(RendezvousTableTest, ACompleteExchangeAnswersRetriesUntilItExpires) {
  Add(Request(0, 2, "a"));
  Add(Request(1, 2, "b"));
  clock_.Advance(absl::Seconds(59));
  table_.Sweep();
  Joined* retry = Add(Request(1, 2, "b"));
  ASSERT_TRUE(retry->result.has_value());
  EXPECT_EQ(**retry->result, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(table_.exchange_count(), 1u);
  clock_.Advance(absl::Seconds(60));
  table_.Sweep();
  EXPECT_EQ(table_.exchange_count(), 0u);
  // A new run with the same job id starts afresh.
  Joined* again = Add(Request(0, 2, "new-a"));
  EXPECT_FALSE(again->result.has_value());
}

TEST_F(RendezvousTableTest, AnExchangeWithWaitersNeverExpires) {
  Joined* r0 = Add(Request(0, 2, "a", 3'600'000));
  clock_.Advance(absl::Minutes(10));
  table_.Sweep();
  EXPECT_EQ(table_.exchange_count(), 1u);
  EXPECT_FALSE(r0->result.has_value());
  Add(Request(1, 2, "b"));
  EXPECT_TRUE(r0->result.has_value());
}

TEST_F(RendezvousTableTest, CancelEndsOnlyThatJoinAndKeepsItsEndpoint) {
  Joined* r0 = Add(Request(0, 3, "a"));
  Joined* r1 = Add(Request(1, 3, "b"));
  ASSERT_TRUE(r0->id.has_value());
  table_.Cancel(*r0->id);
  ASSERT_TRUE(r0->result.has_value());
  EXPECT_EQ(r0->result->status().code(), absl::StatusCode::kCancelled);
  table_.Cancel(*r0->id);  // no-op, done is not called twice
  EXPECT_FALSE(r1->result.has_value());
  Add(Request(2, 3, "c"));
  ASSERT_TRUE(r1->result.has_value());
  EXPECT_EQ(**r1->result, (std::vector<std::string>{"a", "b", "c"}));
}

TEST_F(RendezvousTableTest, FailAllEndsEveryWaiter) {
  Joined* a = Add(Request(0, 2, "a", 5000, "job-1"));
  Joined* b = Add(Request(0, 2, "b", 5000, "job-2"));
  table_.FailAll(absl::UnavailableError("controller shutting down"));
  ASSERT_TRUE(a->result.has_value() && b->result.has_value());
  EXPECT_EQ(a->result->status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(table_.waiter_count(), 0u);
}

TEST_F(RendezvousTableTest, BadRequestsAreRefusedAndLeaveNoTrace) {
  struct Case {
    weft::v1::RendezvousRequest request;
    std::string message;
  };
  weft::v1::RendezvousRequest no_job = Request(0, 2, "a");
  no_job.clear_job_id();
  std::vector<Case> cases = {
      {no_job, "job_id is empty"},
      {Request(2, 2, "a"), "rank 2 is out of range; accepted: 0 to 1 (world_size 2)"},
      {Request(0, 0, "a"), "world_size 0 is out of range; accepted: 1 to 65536"},
      {Request(0, 70000, "a"), "world_size 70000 is out of range"},
      {Request(0, 2, "a", 0), "timeout_ms 0 is out of range; accepted: 1 to 3600000"},
      {Request(0, 2, std::string(64 * 1024 + 1, 'x')), "has 65537 bytes; at most 65536"},
      {Request(0, 2, "a", 5000, std::string(257, 'j')), "at most 256 bytes"},
  };
  for (const Case& c : cases) {
    Joined* j = Add(c.request);
    ASSERT_TRUE(j->result.has_value()) << c.message;
    EXPECT_EQ(j->result->status().code(), absl::StatusCode::kInvalidArgument) << c.message;
    EXPECT_NE(j->result->status().message().find(c.message), std::string::npos)
        << j->result->status();
  }
  EXPECT_EQ(table_.exchange_count(), 0u);
  EXPECT_EQ(table_.waiter_count(), 0u);
}

TEST(RendezvousTableLimitTest, TooManyExchangesIsResourceExhausted) {
  FakeClock clock;
  RendezvousTable table(&clock, RendezvousTableOptions{.max_exchanges = 2});
  std::vector<std::unique_ptr<Joined>> joined;
  JoinInto(table, Request(0, 2, "a", 5000, "j1"), joined);
  JoinInto(table, Request(0, 2, "a", 5000, "j2"), joined);
  Joined* third = JoinInto(table, Request(0, 2, "a", 5000, "j3"), joined);
  ASSERT_TRUE(third->result.has_value());
  EXPECT_EQ(third->result->status().code(), absl::StatusCode::kResourceExhausted);
  // Joining an exchange that exists is still fine.
  Joined* j1 = JoinInto(table, Request(1, 2, "b", 5000, "j1"), joined);
  ASSERT_TRUE(j1->result.has_value());
  EXPECT_TRUE(j1->result->ok());
}

}  // namespace
}  // namespace weft::controller
