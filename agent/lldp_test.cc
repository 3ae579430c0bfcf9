#include "agent/lldp.h"

#include <sys/stat.h>

#include <cstdlib>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "agent/sim_backend.h"
#include "common/fake_clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/subprocess.h"

namespace weft::agent {
namespace {

using ::testing::HasSubstr;

constexpr char kSwitchOutput[] = R"(lldp.ens1np0.via=LLDP
lldp.ens1np0.rid=1
lldp.ens1np0.chassis.mac=0c:42:a1:00:00:01
lldp.ens1np0.chassis.name=leaf-a01
lldp.ens1np0.port.ifname=Ethernet12
lldp.ens1np0.port.descr=rail 0 to gpu-a01
lldp.ens2np0.chassis.mac=0c:42:a1:00:00:02
lldp.ens2np0.chassis.name=leaf-a02
lldp.ens2np0.port.mac=0c:42:a1:00:10:02
)";

TEST(ParseLldpKeyValueTest, NeighborPerInterfaceWithBestPortId) {
  auto neighbors = ParseLldpKeyValue(kSwitchOutput);
  ASSERT_TRUE(neighbors.ok()) << neighbors.status();
  ASSERT_EQ(neighbors->size(), 2u);
  const auto& a = neighbors->at("ens1np0");
  EXPECT_EQ(a.chassis_name(), "leaf-a01");
  EXPECT_EQ(a.chassis_id(), "0c:42:a1:00:00:01");
  EXPECT_EQ(a.port_id(), "Ethernet12");  // ifname beats descr
  EXPECT_EQ(a.port_description(), "rail 0 to gpu-a01");
  EXPECT_EQ(neighbors->at("ens2np0").port_id(), "0c:42:a1:00:10:02");  // only a MAC
}

// A switch that sends Latin-1 (or garbage) in its system name must not make the
// node's Register unparseable: proto3 strings are UTF-8.
TEST(ParseLldpKeyValueTest, BytesThatAreNotUtf8BecomeQuestionMarks) {
  auto neighbors = ParseLldpKeyValue(
      "lldp.ens1np0.chassis.name=leaf-\xe9t\xe9-01\n"
      "lldp.ens1np0.port.ifname=swp1\xff\n"
      "lldp.ens2np0.chassis.name=leaf-\xc3\xa9t\xc3\xa9\n"  // valid UTF-8 stays
      "lldp.ens3np0.chassis.name=\xed\xa0\x80-\xc0\xaf\n");   // surrogate, overlong
  ASSERT_TRUE(neighbors.ok()) << neighbors.status();
  EXPECT_EQ(neighbors->at("ens1np0").chassis_name(), "leaf-?t?-01");
  EXPECT_EQ(neighbors->at("ens1np0").port_id(), "swp1?");
  EXPECT_EQ(neighbors->at("ens2np0").chassis_name(), "leaf-\xc3\xa9t\xc3\xa9");
  EXPECT_EQ(neighbors->at("ens3np0").chassis_name(), "???-??");
  // What the agent registers with now survives the trip through the wire format.
  weft::v1::Nic nic;
  *nic.mutable_lldp_neighbor() = neighbors->at("ens1np0");
  weft::v1::Nic parsed;
  ASSERT_TRUE(parsed.ParseFromString(nic.SerializeAsString()));
  EXPECT_EQ(parsed.lldp_neighbor().chassis_name(), "leaf-?t?-01");
}

TEST(ParseLldpKeyValueTest, EmptyAndMalformed) {
  EXPECT_TRUE(ParseLldpKeyValue("").value().empty());
  EXPECT_THAT(ParseLldpKeyValue("lldp.eth0.chassis.name\n").status().message(),
              HasSubstr("line 1 has no '='"));
}

class FakeLldp : public LldpReader {
 public:
  explicit FakeLldp(absl::StatusOr<std::map<std::string, weft::v1::LldpNeighbor>> answer)
      : answer_(std::move(answer)) {}
  absl::StatusOr<std::map<std::string, weft::v1::LldpNeighbor>> Neighbors() override {
    return answer_;
  }

 private:
  absl::StatusOr<std::map<std::string, weft::v1::LldpNeighbor>> answer_;
};

std::unique_ptr<NicBackend> Sim(const Clock* clock) {
  weft::v1::SimulatedBackendConfig config;
  config.set_nics(2);
  config.set_gpus(0);
  config.set_link_speed_gbps(400);
  return *SimBackend::Create(config, "gpu-a01", clock);
}

TEST(LldpNicBackendTest, FillsNeighborsByNetdev) {
  FakeClock clock;
  LldpNicBackend backend(Sim(&clock), std::make_unique<FakeLldp>(ParseLldpKeyValue(kSwitchOutput)));
  auto inventory = backend.Discover();
  ASSERT_TRUE(inventory.ok());
  ASSERT_EQ(inventory->nics.size(), 2u);
  EXPECT_EQ(inventory->nics[0].netdev(), "ens1np0");
  EXPECT_EQ(inventory->nics[0].lldp_neighbor().chassis_name(), "leaf-a01");
  EXPECT_EQ(inventory->nics[1].lldp_neighbor().chassis_name(), "leaf-a02");
}

TEST(LldpNicBackendTest, LldpFailureNeverFailsDiscovery) {
  FakeClock clock;
  LldpNicBackend backend(Sim(&clock),
                         std::make_unique<FakeLldp>(absl::UnavailableError("lldpd down")));
  auto inventory = backend.Discover();
  ASSERT_TRUE(inventory.ok());
  EXPECT_FALSE(inventory->nics[0].has_lldp_neighbor());
}

TEST(LldpcliReaderTest, MissingDaemonIsUnavailableWithAHint) {
  LldpcliReader reader(weft::testing::TempPath("no-such-lldpd.socket"), absl::Seconds(5));
  auto neighbors = reader.Neighbors();
  ASSERT_FALSE(neighbors.ok());
  EXPECT_EQ(neighbors.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(neighbors.status().message(),
              ::testing::AnyOf(HasSubstr("is lldpd running?"), HasSubstr("lldpd package")));
}

// Debian's real lldpd: a "switch" namespace and a "host" namespace joined by a veth
// pair, an lldpd in each; the host's lldpd hears the switch, and LldpcliReader reads it.
class RealLldpdTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::system("command -v lldpd >/dev/null && command -v lldpcli >/dev/null") != 0) {
      GTEST_SKIP() << "skipped: Debian's lldpd is not installed (apt-get install lldpd)";
    }
    suffix_ = absl::StrCat(getpid());
    sw_ = "weftsw" + suffix_;
    host_ = "wefth" + suffix_;
    if (Sh(absl::StrCat("ip netns add ", sw_, " && ip netns add ", host_)) != 0) {
      GTEST_SKIP() << "skipped: cannot create network namespaces (needs root and iproute2)";
    }
    ASSERT_EQ(Sh(absl::StrCat("ip link add ens9np0 netns ", host_, " type veth peer name swp12 netns ",
                              sw_, " && ip -n ", host_, " link set ens9np0 up && ip -n ", sw_,
                              " link set swp12 up")),
              0);
    mkdir("/run/lldpd", 0755);  // lldpd's chroot
    // Unix socket paths must fit in 108 bytes; TEST_TMPDIR is too deep for that.
    sock_dir_ = absl::StrCat("/tmp/weft-lldp-", suffix_);
    mkdir(sock_dir_.c_str(), 0755);  // lldpd checks it as its unprivileged user
    sw_sock_ = sock_dir_ + "/sw.sock";
    host_sock_ = sock_dir_ + "/host.sock";
    sw_lldpd_ = std::make_unique<weft::testing::Subprocess>(
        std::vector<std::string>{"/usr/sbin/ip", "netns", "exec", sw_, "/usr/sbin/lldpd", "-d",
                                 "-u", sw_sock_, "-I", "swp12"},
        weft::testing::TempPath("sw-lldpd.log"));
    host_lldpd_ = std::make_unique<weft::testing::Subprocess>(
        std::vector<std::string>{"/usr/sbin/ip", "netns", "exec", host_, "/usr/sbin/lldpd",
                                 "-d", "-u", host_sock_, "-I", "ens9np0"},
        weft::testing::TempPath("host-lldpd.log"));
    // The switch names itself and identifies ports by name, as switches do.
    for (int i = 0; i < 50; ++i) {
      if (Sh(absl::StrCat("lldpcli -u ", sw_sock_, " configure system hostname leaf-b07 >/dev/null 2>&1")) == 0) break;
      absl::SleepFor(absl::Milliseconds(100));
    }
    Sh(absl::StrCat("lldpcli -u ", sw_sock_, " configure lldp portidsubtype ifname >/dev/null"));
    Sh(absl::StrCat("lldpcli -u ", sw_sock_, " configure lldp tx-interval 1 >/dev/null"));
  }
  void TearDown() override {
    sw_lldpd_.reset();
    host_lldpd_.reset();
    if (!sw_.empty()) Sh(absl::StrCat("ip netns del ", sw_, " 2>/dev/null; ip netns del ", host_, " 2>/dev/null"));
    if (!sock_dir_.empty()) Sh("rm -rf " + sock_dir_);
  }
  static int Sh(const std::string& command) { return std::system(command.c_str()); }

  std::string suffix_, sw_, host_, sock_dir_, sw_sock_, host_sock_;
  std::unique_ptr<weft::testing::Subprocess> sw_lldpd_, host_lldpd_;
};

TEST_F(RealLldpdTest, HostHearsTheSwitchChassisAndPort) {
  LldpcliReader reader(host_sock_);
  weft::v1::LldpNeighbor neighbor;
  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  while (absl::Now() < deadline) {
    auto neighbors = reader.Neighbors();
    if (neighbors.ok() && neighbors->count("ens9np0") &&
        neighbors->at("ens9np0").chassis_name() == "leaf-b07" &&
        neighbors->at("ens9np0").port_id() == "swp12") {
      neighbor = neighbors->at("ens9np0");
      break;
    }
    absl::SleepFor(absl::Milliseconds(250));
  }
  EXPECT_EQ(neighbor.chassis_name(), "leaf-b07") << sw_lldpd_->Log() << host_lldpd_->Log();
  EXPECT_EQ(neighbor.port_id(), "swp12");
  EXPECT_FALSE(neighbor.chassis_id().empty());
}

}  // namespace
}  // namespace weft::agent
