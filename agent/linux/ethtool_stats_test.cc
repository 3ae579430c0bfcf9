#include "agent/linux/ethtool_stats.h"

#include <linux/ethtool.h>
#include <net/if.h>
#include <sched.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace weft {
namespace {

using ::testing::HasSubstr;

std::string Table(const std::vector<std::string>& names) {
  std::string out(names.size() * ETH_GSTRING_LEN, '\0');
  for (size_t i = 0; i < names.size(); ++i) {
    std::memcpy(&out[i * ETH_GSTRING_LEN], names[i].data(), names[i].size());
  }
  return out;
}

TEST(ParseEthtoolStringTableTest, SplitsNulPaddedNames) {
  auto names = ParseEthtoolStringTable(
      Table({"rx_prio3_pause", "rx_prio3_pause_duration", "tx_pause_storm_warning_events"}), 3);
  ASSERT_TRUE(names.ok()) << names.status();
  EXPECT_THAT(*names, ::testing::ElementsAre("rx_prio3_pause", "rx_prio3_pause_duration",
                                             "tx_pause_storm_warning_events"));
}

TEST(ParseEthtoolStringTableTest, RejectsShortBufferEmptyAndUnterminatedNames) {
  EXPECT_THAT(ParseEthtoolStringTable(Table({"a"}), 2).status().message(),
              HasSubstr("need 2 x 32"));
  EXPECT_THAT(ParseEthtoolStringTable(Table({"a", ""}), 2).status().message(),
              HasSubstr("string 1 is empty"));
  std::string unterminated(ETH_GSTRING_LEN, 'x');
  EXPECT_THAT(ParseEthtoolStringTable(unterminated, 1).status().message(),
              HasSubstr("not NUL-terminated"));
}

// The real ioctl path, on a veth pair in a network namespace of this test's own.
class EthtoolIoctlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (unshare(CLONE_NEWNET) != 0) {
      GTEST_SKIP() << "skipped: cannot create a network namespace (unshare(CLONE_NEWNET): "
                   << std::strerror(errno) << "); the ioctl path needs root";
    }
    if (std::system("ip link add weftv0 type veth peer name weftv1 && ip link set weftv0 up "
                    "&& ip link set weftv1 up") != 0) {
      GTEST_SKIP() << "skipped: 'ip link add ... type veth' failed (no iproute2 or no veth "
                      "support in this kernel)";
    }
  }
};

TEST_F(EthtoolIoctlTest, ReadsVethStatisticsIncludingPeerIfindex) {
  IoctlEthtoolReader reader;
  auto stats = reader.ReadStats("weftv0");
  ASSERT_TRUE(stats.ok()) << stats.status();
  ASSERT_FALSE(stats->empty());
  bool found = false;
  for (const auto& [name, value] : *stats) {
    if (name == "peer_ifindex") {
      found = true;
      EXPECT_EQ(value, if_nametoindex("weftv1"));
    }
  }
  EXPECT_TRUE(found) << "veth reports peer_ifindex";
}

TEST_F(EthtoolIoctlTest, MissingInterfaceIsNotFoundAndNamesIt) {
  IoctlEthtoolReader reader;
  auto stats = reader.ReadStats("nosuchnic0");
  ASSERT_FALSE(stats.ok());
  EXPECT_EQ(stats.status().code(), absl::StatusCode::kNotFound) << stats.status();
  EXPECT_THAT(stats.status().message(), HasSubstr("nosuchnic0"));
}

TEST_F(EthtoolIoctlTest, LoopbackHasNoStatistics) {
  IoctlEthtoolReader reader;
  auto stats = reader.ReadStats("lo");
  ASSERT_FALSE(stats.ok());
  EXPECT_EQ(stats.status().code(), absl::StatusCode::kUnimplemented) << stats.status();
}

TEST(EthtoolReaderTest, RejectsBadNames) {
  IoctlEthtoolReader reader;
  EXPECT_EQ(reader.ReadStats("").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(reader.ReadStats("a-name-much-longer-than-ifnamsiz").status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace weft
