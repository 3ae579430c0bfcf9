#include "agent/fabric_backend.h"

#include <memory>
#include <string>

#include "agent/counter_math.h"
#include "agent/fake_fabric_service.h"
#include "agent/tunables/applier.h"
#include "common/fake_clock.h"
#include "common/tunable_ranges.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "gtest/gtest.h"

namespace weft::agent {
namespace {

using ::google::protobuf::util::MessageDifferencer;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kNode[] = "gpu-a01";

// A twin NIC with every expected counter but port_xmit_wait, PFC counters for
// priority 3 only, and the recipe tunables with rp_ai_rate 5.
weft::v1::FabricNic TwinNic(const std::string& device) {
  weft::v1::FabricNic nic;
  nic.mutable_nic()->set_device(device);
  nic.mutable_nic()->set_port(1);
  nic.mutable_nic()->set_state(weft::v1::PORT_STATE_ACTIVE);
  nic.mutable_nic()->set_link_layer("Ethernet");
  auto& port = *nic.mutable_counters()->mutable_port_counters();
  port["port_xmit_data"] = 1000;  // 4-octet words
  port["port_rcv_data"] = 250;
  for (const char* name : {"port_xmit_packets", "port_rcv_packets", "unicast_xmit_packets",
                           "unicast_rcv_packets", "multicast_xmit_packets",
                           "multicast_rcv_packets", "port_xmit_discards", "port_rcv_errors",
                           "link_downed", "symbol_error", "link_error_recovery"}) {
    port[name] = 7;
  }
  auto& hw = *nic.mutable_counters()->mutable_hw_counters();
  hw["np_ecn_marked_roce_packets"] = 11;
  hw["np_cnp_sent"] = 12;
  hw["rp_cnp_handled"] = 13;
  hw["rp_cnp_ignored"] = 0;
  hw["out_of_sequence"] = 4294967290u;  // 32-bit, about to wrap
  for (const char* name : {"packet_seq_err", "local_ack_timeout_err", "rnr_nak_retry_err",
                           "implied_nak_seq_err", "duplicate_request", "out_of_buffer"}) {
    hw[name] = 3;
  }
  auto& ethtool = *nic.mutable_counters()->mutable_ethtool();
  ethtool["rx_prio3_pause"] = 40;
  ethtool["tx_prio3_pause"] = 41;
  ethtool["rx_prio3_pause_duration"] = 420;
  ethtool["tx_prio3_pause_duration"] = 430;
  ethtool["rx_prio3_pause_transition"] = 9;
  weft::v1::NicTunablesReading* tunables = nic.mutable_tunables();
  tunables->set_device(device);
  *tunables->mutable_qos() = RecipeQos();
  *tunables->mutable_dcqcn() = DefaultDcqcnParams();
  return nic;
}

weft::v1::ReadNodeResponse TwinNode() {
  weft::v1::ReadNodeResponse node;
  node.set_node(kNode);
  node.set_rack("rack-a");
  node.set_pod("pod-1");
  *node.add_nics() = TwinNic("mlx5_0");
  *node.add_nics() = TwinNic("mlx5_1");
  node.add_gpus()->set_index(0);
  return node;
}

class FabricBackendTest : public ::testing::Test {
 protected:
  FabricBackendTest() { twin_.service().set_node(TwinNode()); }

  std::unique_ptr<FabricNicBackend> Backend(const std::string& node = kNode) {
    FabricBackendOptions options;
    options.address = twin_.address();
    options.node = node;
    options.rack = "rack-a";
    options.pod = "pod-1";
    auto channel = grpc::CreateChannel(twin_.address(), grpc::InsecureChannelCredentials());
    return std::make_unique<FabricNicBackend>(options, weft::v1::FabricService::NewStub(channel),
                                              &clock_);
  }

  FakeFabricServer twin_;
  FakeClock clock_;
};

TEST_F(FabricBackendTest, DiscoversTheTwinsNicsAndGpus) {
  auto backend = Backend();
  absl::StatusOr<NodeInventory> inventory = backend->Discover();
  ASSERT_TRUE(inventory.ok()) << inventory.status();
  ASSERT_EQ(inventory->nics.size(), 2u);
  EXPECT_EQ(inventory->nics[0].device(), "mlx5_0");
  EXPECT_EQ(inventory->nics[0].state(), weft::v1::PORT_STATE_ACTIVE);
  EXPECT_EQ(inventory->gpus.size(), 1u);
  EXPECT_TRUE(inventory->notes.empty()) << "rack and pod agree";
  ASSERT_EQ(backend->Tunables().size(), 2u);
  EXPECT_EQ(backend->Tunables()[1]->device(), "mlx5_1");
}

TEST_F(FabricBackendTest, GivenNicAddressesReplaceTheTwinsInTheIpv4MappedGids) {
  weft::v1::ReadNodeResponse node = TwinNode();
  for (weft::v1::FabricNic& nic : *node.mutable_nics()) {
    weft::v1::GidEntry* link_local = nic.mutable_nic()->add_gids();
    link_local->set_gid("fe80:0000:0000:0000:0000:0000:0a00:0001");
    link_local->set_type(weft::v1::GID_TYPE_ROCE_V2);
    weft::v1::GidEntry* mapped = nic.mutable_nic()->add_gids();
    mapped->set_index(1);
    mapped->set_gid("0000:0000:0000:0000:0000:ffff:0a00:0001");
    mapped->set_type(weft::v1::GID_TYPE_ROCE_V2);
  }
  twin_.service().set_node(node);
  FabricBackendOptions options;
  options.address = twin_.address();
  options.node = kNode;
  options.nic_ipv4 = {0x7f000102};  // 127.0.1.2 for mlx5_0 only
  FabricNicBackend backend(
      options,
      weft::v1::FabricService::NewStub(
          grpc::CreateChannel(twin_.address(), grpc::InsecureChannelCredentials())),
      &clock_);
  absl::StatusOr<NodeInventory> inventory = backend.Discover();
  ASSERT_TRUE(inventory.ok()) << inventory.status();
  ASSERT_EQ(inventory->nics.size(), 2u);
  EXPECT_EQ(inventory->nics[0].gids(0).gid(), "fe80:0000:0000:0000:0000:0000:0a00:0001");
  EXPECT_EQ(inventory->nics[0].gids(1).gid(), "0000:0000:0000:0000:0000:ffff:7f00:0102");
  EXPECT_EQ(inventory->nics[1].gids(1).gid(), "0000:0000:0000:0000:0000:ffff:0a00:0001")
      << "past the list: the twin's address";
}

TEST_F(FabricBackendTest, CountersMapLikeTheLinuxBackend) {
  auto backend = Backend();
  absl::StatusOr<std::vector<RawNicReading>> readings = backend->ReadCounters();
  ASSERT_TRUE(readings.ok()) << readings.status();
  ASSERT_EQ(readings->size(), 2u);
  const RawNicReading& r = (*readings)[0];
  EXPECT_EQ(r.device, "mlx5_0");
  EXPECT_EQ(r.port, 1u);
  EXPECT_EQ(r.timestamp, clock_.Now());
  EXPECT_EQ(r.port_state, weft::v1::PORT_STATE_ACTIVE);
  EXPECT_TRUE(r.error.empty());
  EXPECT_EQ(r.counters.port_xmit_bytes, 4000u) << "port_xmit_data counts 4-octet words";
  EXPECT_EQ(r.counters.port_rcv_bytes, 1000u);
  EXPECT_EQ(r.counters.port_xmit_packets, 7u);
  EXPECT_EQ(r.counters.np_cnp_sent, 12u);
  EXPECT_EQ(r.counters.rp_cnp_ignored, 0u) << "zero, present, not missing";
  EXPECT_EQ(r.counters.out_of_sequence, 4294967290u) << "32-bit Q-counter passed through raw";
  EXPECT_EQ(r.counters.packet_seq_err, 3u);
  EXPECT_FALSE(r.counters.port_xmit_wait.has_value());
  EXPECT_FALSE(r.counters.cc_rx_ce_pkts.has_value());
  EXPECT_THAT(r.missing_counters, ElementsAre("port_xmit_wait")) << "optional ones never missing";
  ASSERT_EQ(r.counters.pfc.size(), 1u) << "only priority 3 has pause counters";
  EXPECT_EQ(r.counters.pfc[0].priority, 3u);
  EXPECT_EQ(r.counters.pfc[0].rx_pause, 40u);
  EXPECT_EQ(r.counters.pfc[0].tx_pause, 41u);
  EXPECT_EQ(r.counters.pfc[0].rx_pause_duration_us, 420u);
  EXPECT_EQ(r.counters.pfc[0].tx_pause_duration_us, 430u);
}

TEST_F(FabricBackendTest, AQCounterWrapInTheTwinIsAnIncreaseForCounterMath) {
  auto backend = Backend();
  auto first = backend->ReadCounters();
  ASSERT_TRUE(first.ok()) << first.status();
  weft::v1::ReadNodeResponse later = TwinNode();
  (*later.mutable_nics(0)->mutable_counters()->mutable_hw_counters())["out_of_sequence"] = 4;
  twin_.service().set_node(later);
  clock_.Advance(absl::Seconds(1));
  auto second = backend->ReadCounters();
  ASSERT_TRUE(second.ok()) << second.status();
  NicUpdate update = ComputeNicUpdate(&(*first)[0], (*second)[0]);
  ASSERT_TRUE(update.increase.has_value());
  EXPECT_EQ(update.increase->out_of_sequence, 10u) << "4294967290 -> 2^32 + 4";
}

TEST_F(FabricBackendTest, NoHwCountersIsOneMissingEntryAndNoPfcWithoutEthtoolNames) {
  weft::v1::ReadNodeResponse node = TwinNode();
  node.mutable_nics(0)->mutable_counters()->clear_hw_counters();
  node.mutable_nics(0)->mutable_counters()->clear_ethtool();
  twin_.service().set_node(node);
  auto readings = Backend()->ReadCounters();
  ASSERT_TRUE(readings.ok()) << readings.status();
  const RawNicReading& r = (*readings)[0];
  EXPECT_THAT(r.missing_counters, ElementsAre("hw_counters/", "port_xmit_wait"));
  EXPECT_FALSE(r.counters.rp_cnp_handled.has_value());
  EXPECT_TRUE(r.counters.pfc.empty());
}

TEST_F(FabricBackendTest, ANicGoneFromTheTwinIsAReadingWithAnError) {
  auto backend = Backend();
  ASSERT_TRUE(backend->Discover().ok());
  weft::v1::ReadNodeResponse node = TwinNode();
  node.mutable_nics()->DeleteSubrange(1, 1);
  twin_.service().set_node(node);
  auto readings = backend->ReadCounters();
  ASSERT_TRUE(readings.ok()) << readings.status();
  ASSERT_EQ(readings->size(), 2u);
  EXPECT_TRUE((*readings)[0].error.empty());
  EXPECT_THAT((*readings)[1].error, HasSubstr("mlx5_1 is no longer in the fabric twin"));
}

TEST_F(FabricBackendTest, AnotherRackInTheTwinIsNoted) {
  weft::v1::ReadNodeResponse node = TwinNode();
  node.set_rack("rack-b");
  twin_.service().set_node(node);
  auto inventory = Backend()->Discover();
  ASSERT_TRUE(inventory.ok()) << inventory.status();
  ASSERT_EQ(inventory->notes.size(), 1u);
  EXPECT_THAT(inventory->notes[0], HasSubstr("rack 'rack-b'"));
  EXPECT_THAT(inventory->notes[0], HasSubstr("reports rack 'rack-a'"));
}

TEST_F(FabricBackendTest, UnknownNodeIsNotFoundNamingTheNode) {
  auto backend = Backend("gpu-z99");
  absl::Status status = backend->Discover().status();
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(status.message(), HasSubstr("node 'gpu-z99' is not in the fabric twin"));
  EXPECT_THAT(status.message(), HasSubstr(twin_.address()));
}

TEST_F(FabricBackendTest, TwinDownIsUnavailableNamingTheAddress) {
  auto backend = Backend();
  ASSERT_TRUE(backend->Discover().ok());
  twin_.Shutdown();
  absl::Status read = backend->ReadCounters().status();
  EXPECT_EQ(read.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(read.message(), HasSubstr(twin_.address()));
  EXPECT_THAT(read.message(), HasSubstr("is weft-fabric running?"));
  absl::Status discover = backend->Discover().status();
  EXPECT_EQ(discover.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(discover.message(), HasSubstr(twin_.address()));
}

TEST_F(FabricBackendTest, AWritePushesTheNicsCompleteState) {
  auto backend = Backend();
  ASSERT_TRUE(backend->Discover().ok());
  NicTunables* nic = backend->Tunables()[1];
  ASSERT_TRUE(nic->Write("rp_ai_rate", "40").ok());
  std::vector<weft::v1::SetNicTunablesRequest> pushed = twin_.service().set_requests();
  ASSERT_EQ(pushed.size(), 1u);
  EXPECT_EQ(pushed[0].node(), kNode);
  EXPECT_EQ(pushed[0].device(), "mlx5_1");
  EXPECT_EQ(pushed[0].dcqcn().rp_ai_rate(), 40u);
  // The rest of the state as the twin reported it: the complete NIC, not a delta. The
  // two parameters the reading left unset come from the simulated NIC's start state.
  weft::v1::DcqcnParams expected_dcqcn = DefaultDcqcnParams();
  expected_dcqcn.set_rp_ai_rate(40);
  expected_dcqcn.set_np_min_time_between_cnps(0);
  expected_dcqcn.set_np_cnp_prio_mode(0);
  EXPECT_TRUE(MessageDifferencer::Equals(pushed[0].dcqcn(), expected_dcqcn))
      << pushed[0].dcqcn().DebugString();
  EXPECT_TRUE(MessageDifferencer::Equals(pushed[0].qos(), RecipeQos()))
      << pushed[0].qos().DebugString();
  EXPECT_EQ(*nic->Read("rp_ai_rate"), "40");
  ASSERT_TRUE(backend->ReadCounters().ok());
  EXPECT_EQ(*nic->Read("rp_ai_rate"), "40") << "the twin's state, refreshed, has the write";
}

TEST_F(FabricBackendTest, AnOutOfRangeWriteIsRefusedWithoutAPush) {
  auto backend = Backend();
  ASSERT_TRUE(backend->Discover().ok());
  absl::Status status = backend->Tunables()[0]->Write("rp_gd", "16");
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("0..15"));
  EXPECT_TRUE(twin_.service().set_requests().empty());
  EXPECT_EQ(*backend->Tunables()[0]->Read("rp_gd"), "11");
}

TEST_F(FabricBackendTest, AFailedPushFailsTheWriteAndKeepsTheTwinsValue) {
  auto backend = Backend();
  ASSERT_TRUE(backend->Discover().ok());
  twin_.service().set_set_tunables_error(
      grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "rp_ai_rate 40: the twin refuses"));
  NicTunables* nic = backend->Tunables()[0];
  absl::Status status = nic->Write("rp_ai_rate", "40");
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("SetNicTunables of mlx5_0"));
  EXPECT_THAT(status.message(), HasSubstr("the twin refuses"));
  EXPECT_EQ(*nic->Read("rp_ai_rate"), "5") << "the twin kept 5";
}

TEST_F(FabricBackendTest, AChangeInTheTwinBehindTheAgentsBackIsDrift) {
  auto backend = Backend();
  ASSERT_TRUE(backend->Discover().ok());
  weft::v1::DesiredState state;
  state.set_version(2);
  *state.mutable_dcqcn() = DefaultDcqcnParams();
  ASSERT_TRUE(ApplyDesiredState(state, backend->Tunables(), /*dry_run=*/false).accepted);
  EXPECT_TRUE(CheckDrift(state, backend->Tunables()).empty());

  weft::v1::ReadNodeResponse changed = TwinNode();
  changed.mutable_nics(1)->mutable_tunables()->mutable_dcqcn()->set_rp_ai_rate(9);
  twin_.service().set_node(changed);
  ASSERT_TRUE(backend->ReadCounters().ok());
  EXPECT_EQ(*backend->Tunables()[1]->Read("rp_ai_rate"), "9");
  std::vector<weft::v1::TunableDrift> drift = CheckDrift(state, backend->Tunables());
  ASSERT_EQ(drift.size(), 1u);
  EXPECT_EQ(drift[0].device(), "mlx5_1");
  EXPECT_EQ(drift[0].parameter(), "rp_ai_rate");
}

TEST_F(FabricBackendTest, TheApplierRestoresWhenThePushFailsMidway) {
  auto backend = Backend();
  ASSERT_TRUE(backend->Discover().ok());
  weft::v1::DesiredState state;
  state.set_version(2);
  *state.mutable_qos() = RecipeQos();
  *state.mutable_dcqcn() = DefaultDcqcnParams();
  state.mutable_dcqcn()->set_rp_ai_rate(40);
  ApplyOutcome applied = ApplyDesiredState(state, backend->Tunables(), /*dry_run=*/false);
  ASSERT_TRUE(applied.accepted);
  EXPECT_EQ(twin_.service().set_requests().size(), 2u) << "one push per NIC written";

  twin_.Shutdown();
  state.set_version(3);
  state.mutable_dcqcn()->set_rp_ai_rate(80);
  ApplyOutcome refused = ApplyDesiredState(state, backend->Tunables(), /*dry_run=*/false);
  EXPECT_FALSE(refused.accepted);
  ASSERT_FALSE(refused.errors.empty());
  EXPECT_THAT(refused.errors[0].reason(), HasSubstr("is weft-fabric running?"));
  for (NicTunables* nic : backend->Tunables()) EXPECT_EQ(*nic->Read("rp_ai_rate"), "40");
}

}  // namespace
}  // namespace weft::agent
