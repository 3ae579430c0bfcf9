#include "agent/sim_backend.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "agent/counter_math.h"
#include "agent/tunables/applier.h"
#include "common/tunable_ranges.h"
#include "agent/stable_hash.h"
#include "common/fake_clock.h"
#include "gtest/gtest.h"

namespace weft::agent {
namespace {

using weft::v1::NicSample;
using weft::v1::SimulatedBackendConfig;

constexpr double kLineBytesPerS = 400e9 / 8;  // 400 Gb/s

SimulatedBackendConfig Config(double traffic_level, uint32_t nics = 8, uint32_t gpus = 8) {
  SimulatedBackendConfig config;
  config.set_nics(nics);
  config.set_gpus(gpus);
  config.set_link_speed_gbps(400);
  config.set_traffic_level(traffic_level);
  config.set_seed(42);
  return config;
}

std::unique_ptr<SimBackend> MustCreate(const SimulatedBackendConfig& config, const Clock* clock,
                                       const std::string& node = "gpu-node-1") {
  absl::StatusOr<std::unique_ptr<SimBackend>> backend = SimBackend::Create(config, node, clock);
  EXPECT_TRUE(backend.ok()) << backend.status();
  return std::move(backend).value();
}

std::vector<RawNicReading> MustRead(SimBackend& backend) {
  absl::StatusOr<std::vector<RawNicReading>> readings = backend.ReadCounters();
  EXPECT_TRUE(readings.ok()) << readings.status();
  return std::move(readings).value();
}

// Reads the backend every `step` for `count` intervals (after a first reading) and
// returns, per interval, the samples of every NIC as counter_math computes them.
std::vector<std::vector<NicSample>> Sample(SimBackend& backend, FakeClock& clock,
                                           absl::Duration step, int count) {
  std::vector<RawNicReading> previous = MustRead(backend);
  std::vector<std::vector<NicSample>> out;
  for (int i = 0; i < count; ++i) {
    clock.Advance(step);
    std::vector<RawNicReading> current = MustRead(backend);
    std::vector<NicSample>& samples = out.emplace_back();
    for (size_t n = 0; n < current.size(); ++n) {
      NicUpdate update = ComputeNicUpdate(&previous[n], current[n]);
      // Any counter going backwards would make the rates invalid.
      EXPECT_TRUE(update.sample.rates_valid()) << current[n].device << " interval " << i;
      samples.push_back(std::move(update.sample));
    }
    previous = std::move(current);
  }
  return out;
}

TEST(SimBackendTest, GivenNicAddressesAreTheRoceV2Gids) {
  FakeClock clock;
  SimulatedBackendConfig config = Config(0.6, /*nics=*/3);
  config.add_nic_ipv4("127.0.1.1");
  config.add_nic_ipv4("192.168.10.254");
  auto backend = MustCreate(config, &clock);
  absl::StatusOr<NodeInventory> inventory = backend->Discover();
  ASSERT_TRUE(inventory.ok()) << inventory.status();
  EXPECT_EQ(inventory->nics[0].gids(3).gid(), "0000:0000:0000:0000:0000:ffff:7f00:0101");
  EXPECT_EQ(inventory->nics[1].gids(3).gid(), "0000:0000:0000:0000:0000:ffff:c0a8:0afe");
  // Past the list: the address derived from the node name, on 10.<NIC>.
  EXPECT_TRUE(absl::StartsWith(inventory->nics[2].gids(3).gid(),
                               "0000:0000:0000:0000:0000:ffff:0a02:"));
}

TEST(SimBackendTest, InventoryLooksLikeAnMlx5Node) {
  FakeClock clock;
  auto backend = MustCreate(Config(0.6), &clock);
  absl::StatusOr<NodeInventory> inventory = backend->Discover();
  ASSERT_TRUE(inventory.ok()) << inventory.status();
  ASSERT_EQ(inventory->nics.size(), 8u);
  ASSERT_EQ(inventory->gpus.size(), 8u);
  std::set<std::string> pci;
  for (int i = 0; i < 8; ++i) {
    const weft::v1::Nic& nic = inventory->nics[i];
    EXPECT_EQ(nic.device(), "mlx5_" + std::to_string(i));
    EXPECT_EQ(nic.port(), 1u);
    EXPECT_TRUE(absl::StartsWith(nic.netdev(), "ens")) << nic.netdev();
    EXPECT_TRUE(absl::EndsWith(nic.netdev(), "np0")) << nic.netdev();
    EXPECT_EQ(nic.numa_node(), i < 4 ? 0 : 1);
    EXPECT_EQ(nic.link_layer(), "Ethernet");
    EXPECT_EQ(nic.state(), weft::v1::PORT_STATE_ACTIVE);
    EXPECT_EQ(nic.speed_mbps(), 400000u);
    EXPECT_EQ(nic.mtu(), 4200u);
    pci.insert(nic.pci_address());
    ASSERT_GE(nic.gids_size(), 4);
    // Like mlx5 with one IPv4 address: index 2 RoCE v1, index 3 RoCE v2, IPv4-mapped.
    EXPECT_EQ(nic.gids(2).index(), 2u);
    EXPECT_EQ(nic.gids(2).type(), weft::v1::GID_TYPE_IB_ROCE_V1);
    EXPECT_EQ(nic.gids(3).index(), 3u);
    EXPECT_EQ(nic.gids(3).type(), weft::v1::GID_TYPE_ROCE_V2);
    EXPECT_EQ(nic.gids(2).gid(), nic.gids(3).gid());
    EXPECT_TRUE(absl::StartsWith(nic.gids(3).gid(), "0000:0000:0000:0000:0000:ffff:0a"))
        << nic.gids(3).gid();
    EXPECT_EQ(nic.gids(3).gid().size(), 39u);
    EXPECT_EQ(nic.gids(3).netdev(), nic.netdev());
    EXPECT_TRUE(absl::StartsWith(nic.gids(0).gid(), "fe80:")) << nic.gids(0).gid();

    const weft::v1::Gpu& gpu = inventory->gpus[i];
    EXPECT_EQ(gpu.index(), static_cast<uint32_t>(i));
    EXPECT_EQ(gpu.closest_nic(), nic.device());
    EXPECT_EQ(gpu.numa_node(), nic.numa_node());
    EXPECT_FALSE(gpu.model().empty());
    pci.insert(gpu.pci_address());
  }
  EXPECT_EQ(pci.size(), 16u) << "PCI addresses must be unique";
}

TEST(SimBackendTest, GpusSpreadOverFewerNicsOnTheirNumaNode) {
  FakeClock clock;
  auto backend = MustCreate(Config(0.6, /*nics=*/2, /*gpus=*/8), &clock);
  const NodeInventory inventory = backend->Discover().value();
  for (const weft::v1::Gpu& gpu : inventory.gpus) {
    EXPECT_EQ(gpu.closest_nic(), gpu.index() < 4 ? "mlx5_0" : "mlx5_1");
    const int nic = gpu.index() < 4 ? 0 : 1;
    EXPECT_EQ(gpu.numa_node(), inventory.nics[nic].numa_node());
  }
}

TEST(SimBackendTest, RatesFollowTheTrafficLevelAndVarySmoothly) {
  FakeClock clock;
  auto backend = MustCreate(Config(0.6), &clock);
  const auto intervals = Sample(*backend, clock, absl::Seconds(1), 240);
  std::map<std::string, std::pair<double, double>> min_max;
  for (const auto& samples : intervals) {
    for (const NicSample& s : samples) {
      const double tx = s.port_counters().xmit_bytes().per_second() / kLineBytesPerS;
      const double rx = s.port_counters().rcv_bytes().per_second() / kLineBytesPerS;
      // 0.6 ± 0.2 of line rate, less a sliver of PFC pause at the peaks.
      EXPECT_GE(tx, 0.39);
      EXPECT_LE(tx, 0.81);
      EXPECT_GE(rx, 0.39);
      EXPECT_LE(rx, 0.81);
      // MTU-sized packets.
      EXPECT_NEAR(s.port_counters().xmit_packets().per_second(),
                  s.port_counters().xmit_bytes().per_second() / SimBackend::kWireBytesPerPacket,
                  0.01 * s.port_counters().xmit_packets().per_second() + 1);
      EXPECT_EQ(s.port_counters().xmit_bytes().total() % 4, 0u);
      EXPECT_EQ(s.congestion().rp_cnp_ignored().total(), 0u);
      auto& [lo, hi] = min_max.try_emplace(s.device(), 1e9, -1e9).first->second;
      lo = std::min(lo, tx);
      hi = std::max(hi, tx);
    }
  }
  for (const auto& [device, range] : min_max) {
    EXPECT_GT(range.second - range.first, 0.05) << device << " load never varies";
  }
  // Consecutive seconds differ by little: the load is smooth, not noise.
  for (size_t i = 1; i < intervals.size(); ++i) {
    const double a = intervals[i - 1][0].port_counters().xmit_bytes().per_second();
    const double b = intervals[i][0].port_counters().xmit_bytes().per_second();
    EXPECT_LT(std::abs(a - b), 0.1 * kLineBytesPerS) << "second " << i;
  }
}

TEST(SimBackendTest, LowLoadHasNoCongestionSignals) {
  FakeClock clock;
  auto backend = MustCreate(Config(0.3), &clock);
  for (const auto& samples : Sample(*backend, clock, absl::Seconds(1), 120)) {
    for (const NicSample& s : samples) {
      EXPECT_EQ(s.congestion().np_ecn_marked_roce_packets().total(), 0u);
      EXPECT_EQ(s.congestion().np_cnp_sent().total(), 0u);
      EXPECT_EQ(s.congestion().rp_cnp_handled().total(), 0u);
      ASSERT_EQ(s.pfc_size(), 1);
      EXPECT_EQ(s.pfc(0).rx_pause_duration_us().total(), 0u);
      EXPECT_EQ(s.pfc(0).tx_pause().total(), 0u);
      EXPECT_EQ(s.retransmission().packet_seq_err().total(), 0u);
    }
  }
}

TEST(SimBackendTest, HighLoadMarksEcnAndSendsBoundedProportionalCnps) {
  FakeClock clock;
  auto backend = MustCreate(Config(0.95), &clock);
  const double max_cnp_per_s = SimBackend::kFlowsPerNic / SimBackend::kCnpMinIntervalS;
  double cnp_sent = 0, cnp_handled = 0;
  for (const auto& samples : Sample(*backend, clock, absl::Milliseconds(200), 150)) {
    for (const NicSample& s : samples) {
      const double rx_pps = s.port_counters().rcv_packets().per_second();
      const double marks = s.congestion().np_ecn_marked_roce_packets().per_second();
      const double sent = s.congestion().np_cnp_sent().per_second();
      const double handled = s.congestion().rp_cnp_handled().per_second();
      EXPECT_GT(marks, 0.005 * rx_pps) << s.device();
      EXPECT_LE(marks, SimBackend::kMaxMarkedShare * rx_pps * 1.01) << s.device();
      EXPECT_GT(sent, 0.2 * marks) << s.device();
      EXPECT_LE(sent, marks + 1) << s.device();
      EXPECT_LE(sent, max_cnp_per_s * 1.01) << s.device();
      EXPECT_LE(handled, max_cnp_per_s * 1.01) << s.device();
      // One CNP per flow per 50 µs at most: m / (1 + m·50µs/flows).
      EXPECT_NEAR(sent,
                  marks / (1 + marks * SimBackend::kCnpMinIntervalS / SimBackend::kFlowsPerNic),
                  0.03 * sent + 10)
          << s.device();
      EXPECT_EQ(s.congestion().rp_cnp_ignored().per_second(), 0.0);
      // PFC on priority 3 only, pausing a small share of each second.
      ASSERT_EQ(s.pfc_size(), 1);
      EXPECT_EQ(s.pfc(0).priority(), SimBackend::kRocePriority);
      for (const auto* c : {&s.pfc(0).rx_pause_duration_us(), &s.pfc(0).tx_pause_duration_us()}) {
        EXPECT_GT(c->per_second(), 0) << s.device();
        EXPECT_LE(c->per_second(), SimBackend::kMaxPausedShare * 1e6 + 1) << s.device();
      }
      EXPECT_NEAR(s.pfc(0).rx_pause().per_second(),
                  s.pfc(0).rx_pause_duration_us().per_second() / SimBackend::kPauseUsPerFrame,
                  10);  // whole frames over 200 ms intervals
      cnp_sent += sent;
      cnp_handled += handled;
    }
  }
  // Symmetric cluster: the CNPs this node handles are of the same magnitude as it sends.
  EXPECT_GT(cnp_handled, 0.5 * cnp_sent);
  EXPECT_LT(cnp_handled, 2.0 * cnp_sent);
}

TEST(SimBackendTest, EcnMarksGrowWithLoad) {
  auto marked_share = [](double level) {
    FakeClock clock;
    auto backend = MustCreate(Config(level), &clock);
    double marks = 0, packets = 0;
    for (const auto& samples : Sample(*backend, clock, absl::Seconds(1), 30)) {
      for (const NicSample& s : samples) {
        marks += s.congestion().np_ecn_marked_roce_packets().per_second();
        packets += s.port_counters().rcv_packets().per_second();
      }
    }
    return marks / packets;
  };
  const double at_85 = marked_share(0.85);
  const double at_95 = marked_share(0.95);
  EXPECT_GT(at_85, 0);
  EXPECT_GT(at_95, 1.5 * at_85);
}

TEST(SimBackendTest, PfcStormPausesNic0AndCollapsesItsThroughput) {
  SimulatedBackendConfig config = Config(0.6);
  config.add_faults(weft::v1::SIM_FAULT_PFC_STORM);
  FakeClock clock;
  auto backend = MustCreate(config, &clock);
  for (const auto& samples : Sample(*backend, clock, absl::Seconds(1), 30)) {
    const NicSample& nic0 = samples[0];
    ASSERT_EQ(nic0.pfc_size(), 1);
    EXPECT_EQ(nic0.pfc(0).priority(), 3u);
    EXPECT_GE(nic0.pfc(0).rx_pause_duration_us().per_second(), 0.9e6);
    EXPECT_LE(nic0.pfc(0).rx_pause_duration_us().per_second(), 1e6);
    EXPECT_GE(nic0.pfc(0).tx_pause_duration_us().per_second(), 0.9e6);
    EXPECT_LE(nic0.pfc(0).tx_pause_duration_us().per_second(), 1e6);
    EXPECT_GT(nic0.pfc(0).rx_pause().per_second(), 40000);
    EXPECT_GT(nic0.pfc(0).tx_pause().per_second(), 40000);
    EXPECT_LT(nic0.port_counters().xmit_bytes().per_second(), 0.1 * kLineBytesPerS);
    EXPECT_LT(nic0.port_counters().rcv_bytes().per_second(), 0.1 * kLineBytesPerS);
    // The other NICs carry on.
    const NicSample& nic1 = samples[1];
    EXPECT_GT(nic1.port_counters().xmit_bytes().per_second(), 0.35 * kLineBytesPerS);
    EXPECT_LT(nic1.pfc(0).rx_pause_duration_us().per_second(), 0.02e6 + 1);
  }
}

TEST(SimBackendTest, LinkDownTakesNic0DownAndStopsItsTraffic) {
  SimulatedBackendConfig config = Config(0.6);
  config.add_faults(weft::v1::SIM_FAULT_LINK_DOWN);
  FakeClock clock;
  auto backend = MustCreate(config, &clock);
  const NodeInventory inventory = backend->Discover().value();
  EXPECT_EQ(inventory.nics[0].state(), weft::v1::PORT_STATE_DOWN);
  EXPECT_EQ(inventory.nics[1].state(), weft::v1::PORT_STATE_ACTIVE);
  for (const auto& samples : Sample(*backend, clock, absl::Seconds(1), 10)) {
    EXPECT_EQ(samples[0].port_state(), static_cast<uint32_t>(weft::v1::PORT_STATE_DOWN));
    EXPECT_EQ(samples[0].port_counters().link_downed().total(), 1u);
    EXPECT_EQ(samples[0].port_counters().xmit_bytes().total(), 0u);
    EXPECT_EQ(samples[0].port_counters().rcv_bytes().per_second(), 0.0);
    EXPECT_EQ(samples[1].port_state(), static_cast<uint32_t>(weft::v1::PORT_STATE_ACTIVE));
    EXPECT_EQ(samples[1].port_counters().link_downed().total(), 0u);
    EXPECT_GT(samples[1].port_counters().xmit_bytes().per_second(), 0.35 * kLineBytesPerS);
  }
}

TEST(SimBackendTest, RetransmitsClimbOnNic0AtHundredsPerSecond) {
  SimulatedBackendConfig config = Config(0.6);
  config.add_faults(weft::v1::SIM_FAULT_RETRANSMITS);
  FakeClock clock;
  auto backend = MustCreate(config, &clock);
  for (const auto& samples : Sample(*backend, clock, absl::Seconds(1), 20)) {
    const weft::v1::RetransmissionCounters& r0 = samples[0].retransmission();
    for (const auto* c : {&r0.packet_seq_err(), &r0.local_ack_timeout_err(), &r0.out_of_sequence(),
                          &r0.duplicate_request()}) {
      EXPECT_GE(c->per_second(), 100);
      EXPECT_LE(c->per_second(), 1000);
    }
    EXPECT_EQ(samples[1].retransmission().packet_seq_err().total(), 0u);
    EXPECT_EQ(samples[1].retransmission().out_of_sequence().total(), 0u);
  }
}

TEST(SimBackendTest, FaultDelayStartsThePfcStormAtTheOnset) {
  SimulatedBackendConfig config = Config(0.6);
  config.add_faults(weft::v1::SIM_FAULT_PFC_STORM);
  config.set_fault_delay_ms(5000);
  FakeClock clock;
  const absl::Time start = clock.Now();
  auto backend = MustCreate(config, &clock);
  EXPECT_EQ(backend->fault_onset(), start + absl::Seconds(5));
  const auto intervals = Sample(*backend, clock, absl::Seconds(1), 10);
  for (int i = 0; i < 10; ++i) {
    // Interval i covers (i, i+1] seconds after start; the storm begins at 5 s.
    const double paused_us_per_s = intervals[i][0].pfc(0).rx_pause_duration_us().per_second();
    if (i < 5) {
      EXPECT_LT(paused_us_per_s, 0.02e6 + 1) << "interval " << i;
    } else {
      EXPECT_GE(paused_us_per_s, 0.9e6) << "interval " << i;
    }
  }
  // A reading straddling the onset pauses for the part after it: 4.5 s .. 5.5 s.
  SimulatedBackendConfig straddle = config;
  FakeClock clock2;
  auto backend2 = MustCreate(straddle, &clock2);
  clock2.Advance(absl::Milliseconds(4500));
  std::vector<RawNicReading> before = MustRead(*backend2);
  clock2.Advance(absl::Seconds(1));
  const NicSample half = ComputeNicUpdate(&before[0], MustRead(*backend2)[0]).sample;
  EXPECT_GT(half.pfc(0).rx_pause_duration_us().per_second(), 0.45e6);
  EXPECT_LT(half.pfc(0).rx_pause_duration_us().per_second(), 0.5e6 + 0.01e6);
}

TEST(SimBackendTest, FaultDelayKeepsTheLinkUpUntilTheOnset) {
  SimulatedBackendConfig config = Config(0.6);
  config.add_faults(weft::v1::SIM_FAULT_LINK_DOWN);
  config.set_fault_delay_ms(3000);
  FakeClock clock;
  auto backend = MustCreate(config, &clock);
  EXPECT_EQ(backend->Discover().value().nics[0].state(), weft::v1::PORT_STATE_ACTIVE);
  const auto intervals = Sample(*backend, clock, absl::Seconds(1), 6);
  for (int i = 0; i < 6; ++i) {
    // Port state is a level read at the end of the interval, (i + 1) s after start.
    const NicSample& nic0 = intervals[i][0];
    if (i + 1 < 3) {
      EXPECT_EQ(nic0.port_state(), static_cast<uint32_t>(weft::v1::PORT_STATE_ACTIVE));
      EXPECT_EQ(nic0.port_counters().link_downed().total(), 0u);
    } else {
      EXPECT_EQ(nic0.port_state(), static_cast<uint32_t>(weft::v1::PORT_STATE_DOWN));
      EXPECT_EQ(nic0.port_counters().link_downed().total(), 1u);
    }
  }
  EXPECT_EQ(backend->Discover().value().nics[0].state(), weft::v1::PORT_STATE_DOWN);
}

// Everything a reading carries, for comparing two backends.
std::string Fingerprint(const std::vector<RawNicReading>& readings) {
  std::string out;
  for (const RawNicReading& r : readings) {
    out += ComputeNicUpdate(nullptr, r).sample.SerializeAsString();
  }
  return out;
}

TEST(SimBackendTest, DeadFaultLeavesTheCountersAlone) {
  SimulatedBackendConfig dead = Config(0.6);
  dead.add_faults(weft::v1::SIM_FAULT_DEAD);
  FakeClock clock;
  auto healthy_backend = MustCreate(Config(0.6), &clock);
  auto dead_backend = MustCreate(dead, &clock);
  clock.Advance(absl::Seconds(30));
  EXPECT_EQ(Fingerprint(MustRead(*healthy_backend)), Fingerprint(MustRead(*dead_backend)));
}

TEST(SimBackendTest, SameSeedSameCountersDifferentSeedDifferent) {
  FakeClock clock;
  auto a = MustCreate(Config(0.6), &clock);
  auto b = MustCreate(Config(0.6), &clock);
  SimulatedBackendConfig other = Config(0.6);
  other.set_seed(43);
  auto c = MustCreate(other, &clock);
  for (int i = 0; i < 5; ++i) {
    clock.Advance(absl::Milliseconds(1234));
    const std::string fa = Fingerprint(MustRead(*a));
    EXPECT_EQ(fa, Fingerprint(MustRead(*b)));
    EXPECT_NE(fa, Fingerprint(MustRead(*c)));
  }
}

TEST(SimBackendTest, SeedZeroIsDerivedFromTheNodeName) {
  SimulatedBackendConfig config = Config(0.6);
  config.set_seed(0);
  FakeClock clock;
  auto a1 = MustCreate(config, &clock, "node-a");
  auto a2 = MustCreate(config, &clock, "node-a");
  auto b = MustCreate(config, &clock, "node-b");
  EXPECT_EQ(a1->seed(), StableHash("node-a"));
  EXPECT_NE(a1->seed(), b->seed());
  clock.Advance(absl::Seconds(10));
  const std::string fa = Fingerprint(MustRead(*a1));
  EXPECT_EQ(fa, Fingerprint(MustRead(*a2)));
  EXPECT_NE(fa, Fingerprint(MustRead(*b)));
}

TEST(SimBackendTest, CountersDependOnTimeNotOnHowOftenTheyAreRead) {
  FakeClock clock;
  auto often = MustCreate(Config(0.9), &clock);
  auto once = MustCreate(Config(0.9), &clock);
  for (int i = 0; i < 100; ++i) {
    clock.Advance(absl::Milliseconds(137));
    MustRead(*often);
  }
  EXPECT_EQ(Fingerprint(MustRead(*often)), Fingerprint(MustRead(*once)));
}

TEST(SimBackendTest, ClockSteppingBackNeverLowersCounters) {
  FakeClock clock;
  auto backend = MustCreate(Config(0.6), &clock);
  clock.Advance(absl::Seconds(5));
  const std::vector<RawNicReading> before = MustRead(*backend);
  clock.Advance(absl::Seconds(-3));
  const std::vector<RawNicReading> after = MustRead(*backend);
  EXPECT_GE(after[0].counters.port_xmit_bytes, before[0].counters.port_xmit_bytes);
  EXPECT_GE(after[0].counters.port_rcv_packets, before[0].counters.port_rcv_packets);
}

// Applies `state` to every simulated NIC and checks it was ACKed.
void MustApply(SimBackend& backend, const weft::v1::DesiredState& state) {
  ApplyOutcome outcome = ApplyDesiredState(state, backend.Tunables(), /*dry_run=*/false);
  for (const auto& e : outcome.errors) ADD_FAILURE() << e.parameter() << ": " << e.reason();
  ASSERT_TRUE(outcome.accepted);
}

TEST(SimBackendTest, DcqcnOffOnTheRocePriorityIgnoresCnps) {
  FakeClock clock;
  auto backend = MustCreate(Config(0.95, 2, 0), &clock);
  ASSERT_EQ(backend->Tunables().size(), 2u);
  const auto samples1 = Sample(*backend, clock, absl::Seconds(1), 3);
  for (const NicSample& s : samples1.back()) {
    EXPECT_GT(s.congestion().rp_cnp_handled().per_second(), 0) << s.device();
    EXPECT_EQ(s.congestion().rp_cnp_ignored().per_second(), 0) << s.device();
  }
  weft::v1::DesiredState state;
  state.set_version(2);
  for (uint32_t p : {0, 1, 2, 4, 5, 6, 7}) state.mutable_dcqcn()->add_rp_enabled_priorities(p);
  MustApply(*backend, state);
  const auto samples2 = Sample(*backend, clock, absl::Seconds(1), 3);
  for (const NicSample& s : samples2.back()) {
    EXPECT_EQ(s.congestion().rp_cnp_handled().per_second(), 0) << s.device();
    EXPECT_GT(s.congestion().rp_cnp_ignored().per_second(), 100) << s.device();
  }
}

TEST(SimBackendTest, PfcOffOnTheRocePriorityStopsPausesAndDropsInstead) {
  FakeClock clock;
  auto backend = MustCreate(Config(0.6, 1, 0), &clock);
  const auto samples3 = Sample(*backend, clock, absl::Seconds(1), 2);
  for (const NicSample& s : samples3.back()) {
    ASSERT_EQ(s.pfc_size(), 1);
    EXPECT_EQ(s.retransmission().out_of_sequence().per_second(), 0);
  }
  // The recipe with PFC moved from priority 3 to 4 (and no RoCE ToS, so it validates).
  weft::v1::DesiredState state;
  state.set_version(3);
  *state.mutable_qos() = RecipeQos();
  state.mutable_qos()->clear_default_roce_tos();
  state.mutable_qos()->set_pfc_priorities(0, 4);
  MustApply(*backend, state);
  const auto samples4 = Sample(*backend, clock, absl::Seconds(1), 2);
  for (const NicSample& s : samples4.back()) {
    ASSERT_EQ(s.pfc_size(), 1);  // priority 4 only, never paused
    EXPECT_EQ(s.pfc(0).priority(), 4u);
    EXPECT_EQ(s.pfc(0).rx_pause_duration_us().per_second(), 0);
    // ~1e-6 of some 7 million packets/s.
    EXPECT_GT(s.retransmission().out_of_sequence().per_second(), 1) << s.device();
    EXPECT_GT(s.retransmission().packet_seq_err().per_second(), 1) << s.device();
  }
}

TEST(SimBackendTest, RejectTunablesFaultNacksAndLeavesTheModelAlone) {
  FakeClock clock;
  SimulatedBackendConfig config = Config(0.6, 2, 0);
  config.add_faults(weft::v1::SIM_FAULT_REJECT_TUNABLES);
  auto backend = MustCreate(config, &clock);
  weft::v1::DesiredState state;
  state.set_version(2);
  state.mutable_dcqcn()->set_rp_ai_rate(40);
  ApplyOutcome outcome = ApplyDesiredState(state, backend->Tunables(), false);
  EXPECT_FALSE(outcome.accepted);
  ASSERT_FALSE(outcome.errors.empty());
  EXPECT_EQ(outcome.errors[0].parameter(), "rp_ai_rate");
  EXPECT_EQ(*backend->Tunables()[0]->Read("rp_ai_rate"), "5");
}

TEST(SimBackendTest, CreateRejectsOutOfRangeConfig) {
  FakeClock clock;
  SimulatedBackendConfig config = Config(0.6);
  config.set_nics(0);
  absl::Status status = SimBackend::Create(config, "n", &clock).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(status.message(), "simulated.nics")) << status;
  config = Config(1.5);
  EXPECT_EQ(SimBackend::Create(config, "n", &clock).status().code(),
            absl::StatusCode::kInvalidArgument);
  config = Config(0.5);
  config.set_link_speed_gbps(0);
  EXPECT_EQ(SimBackend::Create(config, "n", &clock).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(SimBackend::Create(Config(0.5), "", &clock).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace weft::agent
