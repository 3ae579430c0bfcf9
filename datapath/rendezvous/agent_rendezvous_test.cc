#include "datapath/rendezvous/agent_rendezvous.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "datapath/transport/transport_test_util.h"
#include "gtest/gtest.h"
#include "tests/agent_socket_fixture.h"

namespace weft::datapath {
namespace {

using ::weft::testing::AgentSocketFixture;

// Rank `rank` of a job of `size` on the agent at `socket`.
std::unique_ptr<AgentRendezvous> RankOn(const std::string& socket, const std::string& job,
                                        int rank, int size) {
  absl::StatusOr<std::unique_ptr<AgentClient>> client = AgentClient::Connect(socket);
  EXPECT_TRUE(client.ok()) << client.status();
  return std::make_unique<AgentRendezvous>(*std::move(client), job, rank, size);
}

class AgentRendezvousTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto started = AgentSocketFixture::Start(
        "rdv", {AgentSocketFixture::RoceNode(2), AgentSocketFixture::RoceNode(2)});
    ASSERT_TRUE(started.ok()) << started.status();
    fixture_ = *std::move(started);
  }
  std::unique_ptr<AgentSocketFixture> fixture_;
};

TEST_F(AgentRendezvousTest, RanksOnTwoAgentsExchangeThroughTheController) {
  constexpr int kRanks = 4;
  std::vector<std::vector<std::string>> got(kRanks);
  std::vector<std::unique_ptr<AgentRendezvous>> ranks;
  for (int r = 0; r < kRanks; ++r) ranks.push_back(RankOn(fixture_->socket(r % 2), "j", r, kRanks));
  RunRanks(kRanks, [&](int rank) {
    absl::StatusOr<std::vector<std::string>> all =
        ExchangeAll(*ranks[rank], "comm0/tcp", rank, kRanks, absl::StrCat("addr-", rank),
                    absl::Seconds(20));
    ASSERT_TRUE(all.ok()) << all.status();
    got[rank] = *all;
    // Later lookups of the same key are served from the exchange, any subset, in order.
    absl::StatusOr<std::vector<std::string>> some =
        ranks[rank]->Lookup("comm0/tcp", {3, 0}, absl::Seconds(1));
    ASSERT_TRUE(some.ok()) << some.status();
    EXPECT_EQ(*some, (std::vector<std::string>{"addr-3", "addr-0"}));
  });
  for (int r = 0; r < kRanks; ++r) {
    EXPECT_EQ(got[r], (std::vector<std::string>{"addr-0", "addr-1", "addr-2", "addr-3"}));
  }
  EXPECT_EQ(fixture_->rendezvous().table().exchange_count(), 1u);
}

TEST_F(AgentRendezvousTest, AMissingRankIsNamedByTheControllersTimeout) {
  std::vector<std::unique_ptr<AgentRendezvous>> ranks;
  for (int r = 0; r < 3; ++r) ranks.push_back(RankOn(fixture_->socket(r % 2), "j2", r, 4));
  RunRanks(3, [&](int rank) {
    absl::StatusOr<std::vector<std::string>> all =
        ExchangeAll(*ranks[rank], "weft/transport", rank, 4, "tcp", absl::Milliseconds(300));
    ASSERT_FALSE(all.ok());
    EXPECT_EQ(all.status().code(), absl::StatusCode::kDeadlineExceeded);
    EXPECT_NE(all.status().message().find(
                  "rendezvous job 'j2' key 'weft/transport': rank 3 never arrived"),
              std::string::npos)
        << all.status();
  });
}

TEST_F(AgentRendezvousTest, MisuseIsRefusedClearly) {
  std::unique_ptr<AgentRendezvous> rank1 = RankOn(fixture_->socket(0), "j3", 1, 2);
  absl::Status other = rank1->Publish("k", 0, "v");
  EXPECT_EQ(other.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(other.message().find("this process is rank 1"), std::string::npos) << other;
  absl::StatusOr<std::vector<std::string>> unpublished =
      rank1->Lookup("k", {0, 1}, absl::Seconds(1));
  EXPECT_EQ(unpublished.status().code(), absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(rank1->Publish("k", 1, "v").ok());
  EXPECT_TRUE(rank1->Publish("k", 1, "v").ok()) << "the same value again is fine";
  EXPECT_EQ(rank1->Publish("k", 1, "w").code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(rank1->Lookup("k", {2}, absl::Seconds(1)).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(AgentClientTest, NoAgentSocketSaysWhatToCheck) {
  absl::StatusOr<std::unique_ptr<AgentClient>> client =
      AgentClient::Connect("/tmp/weft-no-such-agent.sock");
  ASSERT_FALSE(client.ok());
  EXPECT_EQ(client.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(client.status().message(),
            "no node agent socket at /tmp/weft-no-such-agent.sock: is weft-agent running on "
            "this node, and is that its job_socket?");
}

}  // namespace
}  // namespace weft::datapath
