#include "agent/linux/linux_backend.h"

#include <filesystem>
#include <map>

#include "absl/strings/str_join.h"

#include "agent/counter_math.h"
#include "agent/tunables/applier.h"
#include "agent/tunables/fake_dcb_client.h"
#include "common/tunable_ranges.h"
#include "common/fake_clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/fixture_tree.h"
#include "tests/subprocess.h"

namespace weft::agent {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

// Stands in for the SIOCETHTOOL ioctl (tested for real in ethtool_stats_test).
class FakeEthtool : public EthtoolReader {
 public:
  absl::StatusOr<EthtoolStats> ReadStats(absl::string_view ifname) override {
    auto it = stats.find(std::string(ifname));
    if (it == stats.end()) {
      return absl::NotFoundError(absl::StrCat("SIOCETHTOOL on ", ifname, ": No such device"));
    }
    return it->second;
  }
  std::map<std::string, EthtoolStats> stats;
};

class LinuxBackendTest : public ::testing::Test {
 protected:
  void Materialize(const std::string& tree) {
    root_ = weft::testing::TempPath(
        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    ASSERT_TRUE(weft::testing::MaterializeFixture("tests/fixtures/" + tree, root_).ok());
  }
  std::unique_ptr<LinuxNicBackend> Backend(LinuxBackendOptions options = {}) {
    options.root = root_;
    return std::make_unique<LinuxNicBackend>(options, &ethtool_, &clock_);
  }
  std::string PortFile(int nic, const std::string& file) {
    return absl::StrCat("sys/class/infiniband/mlx5_", nic, "/ports/1/", file);
  }

  std::string root_;
  FakeEthtool ethtool_;
  FakeClock clock_;
};

TEST_F(LinuxBackendTest, DiscoversEightNicsWithGidsAndGpusWithClosestNic) {
  Materialize("mlx5_8nic_8gpu.tree");
  auto inventory = Backend()->Discover();
  ASSERT_TRUE(inventory.ok()) << inventory.status();
  ASSERT_EQ(inventory->nics.size(), 8u);
  const weft::v1::Nic& nic = inventory->nics[5];
  EXPECT_EQ(nic.device(), "mlx5_5");
  EXPECT_EQ(nic.port(), 1u);
  EXPECT_EQ(nic.netdev(), "ens6f0np0");
  EXPECT_EQ(nic.pci_address(), "0000:69:00.0");
  EXPECT_EQ(nic.numa_node(), 1);
  EXPECT_EQ(nic.link_layer(), "Ethernet");
  EXPECT_EQ(nic.state(), weft::v1::PORT_STATE_ACTIVE);
  EXPECT_EQ(nic.speed_mbps(), 400000u);
  EXPECT_EQ(nic.mtu(), 4200u);
  // Four populated GIDs (link-local and IPv4-mapped, v1 and v2); zero slots skipped.
  ASSERT_EQ(nic.gids_size(), 4);
  EXPECT_EQ(nic.gids(3).index(), 3u);
  EXPECT_EQ(nic.gids(3).type(), weft::v1::GID_TYPE_ROCE_V2);
  EXPECT_EQ(nic.gids(3).gid(), "0000:0000:0000:0000:0000:ffff:0a00:060b");
  EXPECT_EQ(nic.gids(2).type(), weft::v1::GID_TYPE_IB_ROCE_V1);

  // Eight H100s, the host bridge / NVMe / Intel NIC / ASPEED VGA skipped; each GPU's
  // closest NIC is the one under its PCIe switch.
  ASSERT_EQ(inventory->gpus.size(), 8u);
  for (int i = 0; i < 8; ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(inventory->gpus[i].closest_nic(), absl::StrCat("mlx5_", i));
    EXPECT_EQ(inventory->gpus[i].model(), "H100 SXM5 80GB");
    EXPECT_EQ(inventory->gpus[i].numa_node(), i < 4 ? 0 : 1);
  }
}

TEST_F(LinuxBackendTest, ReadsCountersInBytesAndPfcFromEthtool) {
  Materialize("mlx5_8nic_8gpu.tree");
  ASSERT_TRUE(weft::testing::WriteFixtureFile(root_, PortFile(0, "counters/port_xmit_data"),
                                              "1000")
                  .ok());
  ASSERT_TRUE(weft::testing::WriteFixtureFile(
                  root_, PortFile(0, "hw_counters/np_ecn_marked_roce_packets"), "4242")
                  .ok());
  ethtool_.stats["ens1f0np0"] = {{"rx_packets_phy", 99},
                                 {"rx_prio3_pause", 10},
                                 {"rx_prio3_pause_duration", 2500},
                                 {"tx_prio3_pause", 7},
                                 {"tx_prio3_pause_duration", 900},
                                 {"rx_prio3_pause_transition", 5},
                                 {"rx_prio0_bytes", 1}};
  auto backend = Backend();
  auto readings = backend->ReadCounters();
  ASSERT_TRUE(readings.ok()) << readings.status();
  ASSERT_EQ(readings->size(), 8u);
  const RawNicReading& r = (*readings)[0];
  EXPECT_TRUE(r.error.empty()) << r.error;
  EXPECT_EQ(r.port_state, weft::v1::PORT_STATE_ACTIVE);
  EXPECT_EQ(r.counters.port_xmit_bytes, 4000u);  // 4-octet words
  EXPECT_EQ(r.counters.np_ecn_marked_roce_packets, 4242u);
  EXPECT_TRUE(r.missing_counters.empty()) << absl::StrJoin(r.missing_counters, ", ");
  // Optional counters are off in this fixture: unset, and not "missing".
  EXPECT_FALSE(r.counters.cc_rx_ce_pkts.has_value());
  EXPECT_FALSE(r.counters.rdma_tx_bytes.has_value());
  ASSERT_EQ(r.counters.pfc.size(), 1u) << "only priority 3 has pause counters";
  EXPECT_EQ(r.counters.pfc[0].priority, 3u);
  EXPECT_EQ(r.counters.pfc[0].rx_pause, 10u);
  EXPECT_EQ(r.counters.pfc[0].rx_pause_duration_us, 2500u);
  EXPECT_EQ(r.counters.pfc[0].tx_pause, 7u);
  EXPECT_EQ(r.counters.pfc[0].tx_pause_duration_us, 900u);
  // mlx5_1 had no ethtool statistics: a warning, its sysfs counters still read.
  EXPECT_TRUE((*readings)[1].error.empty());
  EXPECT_TRUE((*readings)[1].counters.pfc.empty());
  ASSERT_EQ((*readings)[1].warnings.size(), 1u);
  EXPECT_THAT((*readings)[1].warnings[0], HasSubstr("ens2f0np0"));
}

TEST_F(LinuxBackendTest, MissingCongestionGroupOnlyAffectsThatNic) {
  Materialize("mlx5_no_cc.tree");
  auto readings = Backend()->ReadCounters();
  ASSERT_TRUE(readings.ok()) << readings.status();
  ASSERT_EQ(readings->size(), 2u);
  EXPECT_GT((*readings)[0].counters.np_cnp_sent.value_or(0), 0u);
  EXPECT_TRUE((*readings)[0].missing_counters.empty());
  const RawNicReading& no_cc = (*readings)[1];
  EXPECT_TRUE(no_cc.error.empty()) << no_cc.error;
  EXPECT_FALSE(no_cc.counters.np_cnp_sent.has_value());
  EXPECT_FALSE(no_cc.counters.rp_cnp_ignored.has_value());
  EXPECT_TRUE(no_cc.counters.out_of_sequence.has_value());
  EXPECT_GT(no_cc.counters.port_rcv_bytes.value_or(0), 0u);
  EXPECT_THAT(no_cc.missing_counters,
              ::testing::ElementsAre("np_cnp_sent", "np_ecn_marked_roce_packets",
                                     "rp_cnp_handled", "rp_cnp_ignored"));
}

TEST_F(LinuxBackendTest, VanishedDeviceIsAnErrorAndAGarbageFileOnlyThatCounter) {
  Materialize("mlx5_8nic_8gpu.tree");
  auto backend = Backend();
  ASSERT_TRUE(backend->Discover().ok());
  // mlx5_2 disappears (driver unbind) after discovery; mlx5_4 has a garbage counter.
  fs::remove_all(fs::canonical(fs::path(root_) / "sys/class/infiniband/mlx5_2"));
  ASSERT_TRUE(
      weft::testing::WriteFixtureFile(root_, PortFile(4, "counters/port_rcv_data"), "12x")
          .ok());
  auto readings = backend->ReadCounters();
  ASSERT_TRUE(readings.ok()) << readings.status();
  ASSERT_EQ(readings->size(), 8u);
  EXPECT_THAT((*readings)[2].error, HasSubstr("mlx5_2"));
  EXPECT_FALSE((*readings)[2].counters.port_xmit_bytes.has_value());
  const RawNicReading& garbage = (*readings)[4];
  EXPECT_TRUE(garbage.error.empty()) << garbage.error;
  EXPECT_FALSE(garbage.counters.port_rcv_bytes.has_value());
  EXPECT_THAT(garbage.missing_counters, ::testing::ElementsAre("port_rcv_data: not a number: '12x'"));
  EXPECT_GT(garbage.counters.port_xmit_bytes.value_or(0), 0u);
  for (int i : {0, 1, 3, 5, 6, 7}) {
    EXPECT_TRUE((*readings)[i].error.empty()) << i << ": " << (*readings)[i].error;
    EXPECT_GT((*readings)[i].counters.port_xmit_bytes.value_or(0), 0u);
  }
}

TEST_F(LinuxBackendTest, MissingUnreadableAndTextCountersAreAbsentAndTheRestIsRead) {
  Materialize("mlx5_missing_counters.tree");
  auto backend = Backend();
  auto readings = backend->ReadCounters();
  ASSERT_TRUE(readings.ok()) << readings.status();
  ASSERT_EQ(readings->size(), 2u);
  const RawNicReading& r = (*readings)[0];
  EXPECT_TRUE(r.error.empty()) << r.error;
  EXPECT_EQ(r.port_state, weft::v1::PORT_STATE_ACTIVE);
  EXPECT_THAT(r.missing_counters,
              ::testing::ElementsAre("link_error_recovery", "np_cnp_sent: not a number: '-'",
                                     "packet_seq_err: Is a directory",
                                     "port_rcv_errors: not a number: 'garbage'", "port_xmit_wait",
                                     "rp_cnp_ignored", "symbol_error"));
  for (auto field : {&RawNicCounters::port_xmit_wait, &RawNicCounters::symbol_error,
                     &RawNicCounters::link_error_recovery, &RawNicCounters::port_rcv_errors,
                     &RawNicCounters::np_cnp_sent, &RawNicCounters::rp_cnp_ignored,
                     &RawNicCounters::packet_seq_err}) {
    EXPECT_FALSE((r.counters.*field).has_value());
  }
  // Everything else of the port is there.
  EXPECT_GT(r.counters.port_xmit_bytes.value_or(0), 0u);
  EXPECT_TRUE(r.counters.port_xmit_discards.has_value());
  EXPECT_TRUE(r.counters.np_ecn_marked_roce_packets.has_value());
  EXPECT_TRUE(r.counters.rp_cnp_handled.has_value());
  EXPECT_TRUE(r.counters.out_of_sequence.has_value());
  EXPECT_TRUE(r.counters.local_ack_timeout_err.has_value());

  // mlx5_1, a switchdev representor with the optional counters on, lacks nothing.
  const RawNicReading& vport = (*readings)[1];
  EXPECT_TRUE(vport.missing_counters.empty()) << absl::StrJoin(vport.missing_counters, ", ");
  EXPECT_TRUE(vport.counters.out_of_sequence.has_value());  // from vport_out_of_sequence
  EXPECT_TRUE(vport.counters.rp_cnp_ignored.has_value());
  for (auto field : {&RawNicCounters::cc_rx_ce_pkts, &RawNicCounters::cc_rx_cnp_pkts,
                     &RawNicCounters::cc_tx_cnp_pkts, &RawNicCounters::rdma_tx_packets,
                     &RawNicCounters::rdma_tx_bytes, &RawNicCounters::rdma_rx_packets,
                     &RawNicCounters::rdma_rx_bytes}) {
    EXPECT_TRUE((vport.counters.*field).has_value());
  }

  // A counter that comes back (the file is fixed) is read at the next probe, a minute on.
  ASSERT_TRUE(
      weft::testing::WriteFixtureFile(root_, PortFile(0, "counters/port_xmit_wait"), "77").ok());
  clock_.Advance(absl::Seconds(30));
  EXPECT_FALSE((*backend->ReadCounters())[0].counters.port_xmit_wait.has_value());
  clock_.Advance(absl::Seconds(31));
  EXPECT_EQ((*backend->ReadCounters())[0].counters.port_xmit_wait, 77u);
}

TEST_F(LinuxBackendTest, NoPmaDeviceReportsStateAndRateWithEveryCounterAbsent) {
  Materialize("i40iw_no_pma.tree");
  auto backend = Backend();
  auto inventory = backend->Discover();
  ASSERT_TRUE(inventory.ok()) << inventory.status();
  ASSERT_EQ(inventory->nics.size(), 1u);
  EXPECT_EQ(inventory->nics[0].device(), "i40iw0");
  EXPECT_EQ(inventory->nics[0].state(), weft::v1::PORT_STATE_ACTIVE);
  EXPECT_EQ(inventory->nics[0].speed_mbps(), 10000u);
  EXPECT_EQ(inventory->nics[0].netdev(), "ens3f0");
  auto readings = backend->ReadCounters();
  ASSERT_TRUE(readings.ok()) << readings.status();
  const RawNicReading& r = (*readings)[0];
  EXPECT_TRUE(r.error.empty()) << r.error;
  EXPECT_EQ(r.port_state, weft::v1::PORT_STATE_ACTIVE);
  EXPECT_FALSE(r.counters.port_xmit_bytes.has_value());
  EXPECT_FALSE(r.counters.link_downed.has_value());
  // Every port counter is "N/A (no PMA)"; there is no hw_counters/ directory at all.
  EXPECT_THAT(r.missing_counters, ::testing::Contains("hw_counters/"));
  EXPECT_THAT(r.missing_counters, ::testing::Contains("port_xmit_data: N/A (no PMA)"));
  EXPECT_EQ(r.missing_counters.size(), 15u);  // 14 port counters and hw_counters/
  NicUpdate update = ComputeNicUpdate(nullptr, r);
  EXPECT_FALSE(update.sample.has_port_counters());
  EXPECT_EQ(update.sample.missing_counters_size(), 15);
}

TEST_F(LinuxBackendTest, ValuesWithTrailingBlankLinesAreTrimmed) {
  Materialize("mlx5_trailing_blank_lines.tree");
  auto backend = Backend();
  auto inventory = backend->Discover();
  ASSERT_TRUE(inventory.ok()) << inventory.status();
  ASSERT_EQ(inventory->nics.size(), 1u);
  const weft::v1::Nic& nic = inventory->nics[0];
  EXPECT_EQ(nic.link_layer(), "Ethernet");
  EXPECT_EQ(nic.state(), weft::v1::PORT_STATE_ACTIVE);
  EXPECT_EQ(nic.speed_mbps(), 400000u);
  EXPECT_EQ(nic.netdev(), "ens1f0np0");
  EXPECT_EQ(nic.mtu(), 4200u);
  ASSERT_EQ(nic.gids_size(), 4);
  EXPECT_EQ(nic.gids(3).type(), weft::v1::GID_TYPE_ROCE_V2);
  EXPECT_EQ(nic.gids(3).gid(), "0000:0000:0000:0000:0000:ffff:0a00:010b");
  auto readings = backend->ReadCounters();
  ASSERT_TRUE(readings.ok());
  EXPECT_TRUE((*readings)[0].missing_counters.empty())
      << absl::StrJoin((*readings)[0].missing_counters, ", ");
  EXPECT_GT((*readings)[0].counters.port_xmit_bytes.value_or(0), 0u);
}

TEST_F(LinuxBackendTest, Mlx4Uses64BitCountersExtOverSaturated32BitCounters) {
  Materialize("mlx4_counters_ext.tree");
  auto backend = Backend();
  auto inventory = backend->Discover();
  ASSERT_TRUE(inventory.ok()) << inventory.status();
  ASSERT_EQ(inventory->nics.size(), 2u);
  EXPECT_EQ(inventory->nics[1].port(), 2u);
  EXPECT_EQ(inventory->nics[1].netdev(), "ens4d1");
  auto readings = backend->ReadCounters();
  ASSERT_TRUE(readings.ok());
  for (uint32_t port : {1u, 2u}) {
    SCOPED_TRACE(port);
    const RawNicCounters& c = (*readings)[port - 1].counters;
    EXPECT_EQ(c.port_xmit_bytes, (500000000000ULL + port) * 4);  // not 4294967295 × 4
    EXPECT_EQ(c.port_rcv_bytes, (400000000000ULL + port) * 4);
    EXPECT_EQ(c.port_xmit_packets, 9000000000ULL + port);
    EXPECT_EQ(c.unicast_rcv_packets, 8000000000ULL);
    EXPECT_EQ(c.multicast_xmit_packets, 1000u + port);
    EXPECT_EQ(c.port_xmit_wait, 4294967295u);
    EXPECT_EQ(c.link_downed, 0u);
    // mlx4 has no hw_counters/: the RoCE hardware groups are not there, said once.
    EXPECT_FALSE(c.out_of_sequence.has_value());
    EXPECT_THAT((*readings)[port - 1].missing_counters, ::testing::ElementsAre("hw_counters/"));
  }
}

TEST_F(LinuxBackendTest, InfiniBandPortIsReportedTruthfullyAndGetsNoTunables) {
  Materialize("mlx5_ib_and_roce.tree");
  auto backend = Backend();
  auto inventory = backend->Discover();
  ASSERT_TRUE(inventory.ok()) << inventory.status();
  ASSERT_EQ(inventory->nics.size(), 2u);
  const weft::v1::Nic& ib = inventory->nics[1];
  EXPECT_EQ(ib.device(), "mlx5_1");
  EXPECT_EQ(ib.link_layer(), "InfiniBand");  // not "InfiniBand\n"
  EXPECT_EQ(ib.speed_mbps(), 200000u);
  EXPECT_EQ(ib.state(), weft::v1::PORT_STATE_ACTIVE);
  EXPECT_EQ(ib.netdev(), "");
  ASSERT_EQ(ib.gids_size(), 1);
  EXPECT_EQ(inventory->nics[0].link_layer(), "Ethernet");
  // Tunables only for the RoCE port; one note says why.
  ASSERT_EQ(backend->Tunables().size(), 1u);
  EXPECT_EQ(backend->Tunables()[0]->device(), "mlx5_0");
  EXPECT_THAT(inventory->notes,
              ::testing::Contains(::testing::AllOf(HasSubstr("mlx5_1 port 1 (InfiniBand)"),
                                                   HasSubstr("neither read nor written"))));
  auto readings = backend->ReadCounters();
  ASSERT_TRUE(readings.ok());
  const RawNicReading& r = (*readings)[1];
  EXPECT_TRUE(r.error.empty()) << r.error;
  EXPECT_GT(r.counters.port_xmit_bytes.value_or(0), 0u);
  EXPECT_TRUE(r.counters.out_of_sequence.has_value());
  // The RoCE congestion counters are not expected on an InfiniBand port.
  EXPECT_TRUE(r.missing_counters.empty()) << absl::StrJoin(r.missing_counters, ", ");
}

TEST_F(LinuxBackendTest, DeviceWithoutAPciLinkStillReportsItsPort) {
  Materialize("mlx5_no_pci_link.tree");
  auto backend = Backend();
  auto inventory = backend->Discover();
  ASSERT_TRUE(inventory.ok()) << inventory.status();
  ASSERT_EQ(inventory->nics.size(), 1u);
  const weft::v1::Nic& nic = inventory->nics[0];
  EXPECT_EQ(nic.pci_address(), "");
  EXPECT_EQ(nic.numa_node(), -1);
  EXPECT_EQ(nic.netdev(), "ens1f0np0");
  EXPECT_EQ(nic.mtu(), 4200u);
  EXPECT_EQ(nic.state(), weft::v1::PORT_STATE_ACTIVE);
  auto readings = backend->ReadCounters();
  ASSERT_TRUE(readings.ok());
  EXPECT_TRUE((*readings)[0].error.empty());
  EXPECT_GT((*readings)[0].counters.port_rcv_bytes.value_or(0), 0u);
}

TEST_F(LinuxBackendTest, DeviceThatComesBackAfterADriverReloadIsReadAgain) {
  Materialize("mlx5_8nic_8gpu.tree");
  auto backend = Backend();
  ASSERT_TRUE(backend->ReadCounters().ok());  // counter files are now held open
  fs::remove_all(fs::canonical(fs::path(root_) / "sys/class/infiniband/mlx5_2"));
  auto gone = backend->ReadCounters();
  ASSERT_TRUE(gone.ok());
  EXPECT_THAT((*gone)[2].error, HasSubstr("mlx5_2"));
  // The driver reloads: new attribute files, new values.
  ASSERT_TRUE(
      weft::testing::MaterializeFixture("tests/fixtures/mlx5_8nic_8gpu.tree", root_).ok());
  ASSERT_TRUE(
      weft::testing::WriteFixtureFile(root_, PortFile(2, "counters/port_xmit_data"), "7").ok());
  auto back = backend->ReadCounters();
  ASSERT_TRUE(back.ok());
  EXPECT_TRUE((*back)[2].error.empty()) << (*back)[2].error;
  EXPECT_EQ((*back)[2].counters.port_xmit_bytes, 28u);
}

TEST_F(LinuxBackendTest, WrappedQCounterGivesTheRightRate) {
  Materialize("mlx5_wrap.tree");
  auto backend = Backend();
  auto first = backend->ReadCounters();
  ASSERT_TRUE(first.ok());
  EXPECT_EQ((*first)[0].counters.out_of_sequence, (1ULL << 32) - 6);
  // The 32-bit counter wraps: 6 to reach 2^32, then 4 more.
  ASSERT_TRUE(
      weft::testing::WriteFixtureFile(root_, PortFile(0, "hw_counters/out_of_sequence"), "4")
          .ok());
  clock_.Advance(absl::Seconds(2));
  auto second = backend->ReadCounters();
  ASSERT_TRUE(second.ok());
  NicUpdate update = ComputeNicUpdate(&(*first)[0], (*second)[0]);
  ASSERT_TRUE(update.sample.rates_valid());
  EXPECT_DOUBLE_EQ(update.sample.retransmission().out_of_sequence().per_second(), 5.0);
  EXPECT_EQ(update.sample.retransmission().out_of_sequence().total(), 4u);
}

TEST_F(LinuxBackendTest, IncludeAndExcludeFilters) {
  Materialize("mlx5_8nic_8gpu.tree");
  LinuxBackendOptions options;
  options.include_devices = {"mlx5_[0-3]"};
  options.exclude_netdevs = {"ens2*"};
  auto inventory = Backend(options)->Discover();
  ASSERT_TRUE(inventory.ok());
  std::vector<std::string> names;
  for (const auto& nic : inventory->nics) names.push_back(nic.device());
  EXPECT_THAT(names, ::testing::ElementsAre("mlx5_0", "mlx5_2", "mlx5_3"));
}

TEST_F(LinuxBackendTest, TunablesOfEachDiscoveredNicApplyTransactionally) {
  Materialize("mlx5_no_cc.tree");
  ASSERT_TRUE(weft::testing::MaterializeFixture("agent/tunables/testdata/cc_params.tree", root_).ok());
  auto dcb = std::make_shared<FakeDcbClient>();
  dcb->AddNetdev("ens1f0np0");
  dcb->AddNetdev("ens2f0np0");
  LinuxBackendOptions options;
  options.dcb = dcb;
  auto backend = Backend(options);
  EXPECT_TRUE(backend->Tunables().empty());  // nothing before Discover()
  ASSERT_TRUE(backend->Discover().ok());
  std::vector<NicTunables*> nics = backend->Tunables();
  ASSERT_EQ(nics.size(), 2u);
  EXPECT_EQ(nics[1]->device(), "mlx5_1");

  weft::v1::DesiredState state;
  state.set_version(3);
  state.mutable_dcqcn()->set_rp_gd(9);
  *state.mutable_qos() = RecipeQos();
  state.mutable_qos()->clear_default_roce_tos();  // no rdma_cm in this fixture
  ApplyOutcome outcome = ApplyDesiredState(state, nics, false);
  ASSERT_TRUE(outcome.accepted) << (outcome.errors.empty() ? "" : outcome.errors[0].reason());
  EXPECT_EQ(*Sysfs(root_).ReadString("sys/kernel/debug/mlx5/0000:29:00.0/cc_params/rp_gd"), "9");
  EXPECT_EQ(dcb->state("ens2f0np0").pfc.pfc_en, 0x08);
}

TEST_F(LinuxBackendTest, NoRdmaDevicesIsAClearError) {
  root_ = weft::testing::TempPath("empty_root");
  fs::create_directories(root_);
  auto inventory = Backend()->Discover();
  EXPECT_EQ(inventory.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(inventory.status().message(), HasSubstr("rdma driver"));
}

}  // namespace
}  // namespace weft::agent
