#include "agent/sim_backend.h"

#include <arpa/inet.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "agent/stable_hash.h"
#include "common/logging.h"

namespace weft::agent {
namespace {

using weft::v1::SimFault;

constexpr double kPi = 3.14159265358979323846;
constexpr int64_t kStepUs = 10'000;  // integration step
constexpr double kStepS = kStepUs / 1e6;
constexpr uint64_t k32BitRange = uint64_t{1} << 32;
constexpr char kGpuModel[] = "NVIDIA H100 80GB HBM3";

// Quantities integrated per NIC.
enum Quantity {
  kTxBytes,
  kRxBytes,
  kTxPackets,
  kRxPackets,
  kEcnMarked,
  kCnpSent,
  kCnpHandled,
  kCnpIgnored,
  kOutOfSequence,
  kPacketSeqErr,
  kLocalAckTimeoutErr,
  kImpliedNakSeqErr,
  kDuplicateRequest,
  kRxPauseFrames,
  kTxPauseFrames,
  kRxPauseUs,
  kTxPauseUs,
  kNumQuantities,
};
using Quantities = std::array<double, kNumQuantities>;

struct Harmonic {
  double period_s;
  double phase;
  double weight;
};
using Shape = std::array<Harmonic, 3>;

// Deterministic uniform numbers for one seed (splitmix64).
class SplitMix {
 public:
  explicit SplitMix(uint64_t seed) : state_(seed) {}
  uint64_t NextBits() { return MixBits(state_ += 0x9e3779b97f4a7c15ULL); }
  double Uniform(double lo, double hi) {
    return lo + (hi - lo) * static_cast<double>(NextBits() >> 11) / 9007199254740992.0;
  }

 private:
  uint64_t state_;
};

Shape RandomShape(SplitMix& rng) {
  // A slow swell, a medium wave and a quick ripple; weights sum to 1 so the
  // variation stays within ±amplitude.
  return {Harmonic{rng.Uniform(40, 90), rng.Uniform(0, 2 * kPi), 0.5},
          Harmonic{rng.Uniform(12, 25), rng.Uniform(0, 2 * kPi), 0.3},
          Harmonic{rng.Uniform(3, 7), rng.Uniform(0, 2 * kPi), 0.2}};
}

double Load(const Shape& shape, double level, double t_s) {
  double wave = 0;
  for (const Harmonic& h : shape) wave += h.weight * std::sin(2 * kPi * t_s / h.period_s + h.phase);
  const double amplitude = 0.5 * std::min(level, 1 - level);
  return std::clamp(level + amplitude * wave, 0.0, 1.0);
}

double MarkedShare(double load) {
  if (load <= SimBackend::kEcnOnsetLoad) return 0;
  const double x = (load - SimBackend::kEcnOnsetLoad) / (1 - SimBackend::kEcnOnsetLoad);
  return SimBackend::kMaxMarkedShare * x * x;
}

// CNPs/s a notification point sends for `marked_per_s` CE-marked packets/s spread over
// kFlowsPerNic flows, sending at most one CNP per flow per kCnpMinIntervalS: each flow
// waits out the interval, then for its next marked packet.
double CnpRate(double marked_per_s) {
  if (marked_per_s <= 0) return 0;
  return marked_per_s /
         (1 + marked_per_s * SimBackend::kCnpMinIntervalS / SimBackend::kFlowsPerNic);
}

double PausedShare(double load) {
  if (load <= SimBackend::kPfcOnsetLoad) return 0;
  const double x = (load - SimBackend::kPfcOnsetLoad) / (1 - SimBackend::kPfcOnsetLoad);
  return SimBackend::kMaxPausedShare * x * x;
}

bool HasFault(const weft::v1::SimulatedBackendConfig& config, SimFault fault) {
  return std::find(config.faults().begin(), config.faults().end(), fault) != config.faults().end();
}

// NUMA node of item `i` of `count`: the first half on node 0, the rest on node 1.
int32_t NumaOf(uint32_t i, uint32_t count) { return (count > 1 && 2 * i >= count) ? 1 : 0; }

// Index of `i` within its NUMA half.
uint32_t IndexInNuma(uint32_t i, uint32_t count) {
  return NumaOf(i, count) == 0 ? i : i - (count + 1) / 2;
}

std::string PciAddress(uint32_t bus) { return absl::StrFormat("0000:%02x:00.0", bus); }

uint32_t NicBus(uint32_t i, uint32_t count) {
  return (NumaOf(i, count) == 0 ? 0x10 : 0x90) + 7 * IndexInNuma(i, count);
}

// A GPU's bus sits three above its paired NIC's when there is one GPU per NIC.
uint32_t GpuBus(uint32_t i, uint32_t count) {
  return (NumaOf(i, count) == 0 ? 0x13 : 0x93) + 7 * IndexInNuma(i, count);
}

std::string Hex16(uint32_t hi, uint32_t lo) { return absl::StrFormat("%02x%02x", hi, lo); }

}  // namespace

struct SimBackend::NicModel {
  Shape tx;
  Shape rx;
  double fault_phase = 0;
  bool link_down = false;
  bool pfc_storm = false;
  bool retransmits = false;
  Quantities integral{};  // at steps_done_
  // Rates per second at `t_s` seconds after start; `faults_on` says whether the
  // faults above have begun.
  Quantities RatesAt(const weft::v1::SimulatedBackendConfig& config, double t_s,
                     bool faults_on, const SimNicTunables& tunables) const;
};

Quantities SimBackend::NicModel::RatesAt(const weft::v1::SimulatedBackendConfig& config,
                                         double t_s, bool faults_on,
                                         const SimNicTunables& tunables) const {
  const uint8_t roce_bit = 1u << kRocePriority;
  const bool pfc_on = tunables.pfc_mask() & roce_bit;
  const bool rp_on = tunables.rp_mask() & roce_bit;
  const bool np_on = tunables.np_mask() & roce_bit;
  Quantities r{};
  const bool down_now = link_down && faults_on;
  const bool storm_now = pfc_storm && faults_on;
  const bool retransmits_now = retransmits && faults_on;
  if (down_now) return r;
  const double line_bytes_per_s = config.link_speed_gbps() * 1e9 / 8;
  const double tx_offered = Load(tx, config.traffic_level(), t_s);
  const double rx_offered = Load(rx, config.traffic_level(), t_s);
  // rx pause: the switch pauses our transmissions; tx pause: we pause the switch.
  double rx_paused = pfc_on ? PausedShare(tx_offered) : 0;
  double tx_paused = pfc_on ? PausedShare(rx_offered) : 0;
  if (storm_now && pfc_on) {
    rx_paused = 0.95 + 0.04 * std::sin(2 * kPi * t_s / 7 + fault_phase);
    tx_paused = 0.95 + 0.04 * std::sin(2 * kPi * t_s / 5 + fault_phase);
  }
  const double tx_load = tx_offered * (1 - rx_paused);
  const double rx_load = rx_offered * (1 - tx_paused);

  r[kTxBytes] = tx_load * line_bytes_per_s;
  r[kRxBytes] = rx_load * line_bytes_per_s;
  r[kTxPackets] = r[kTxBytes] / kWireBytesPerPacket;
  r[kRxPackets] = r[kRxBytes] / kWireBytesPerPacket;
  // Without the reaction point, senders do not slow down: twice the marks.
  const double mark_factor = rp_on ? 1 : 2;
  r[kEcnMarked] = r[kRxPackets] * MarkedShare(rx_load) * mark_factor;
  r[kCnpSent] = np_on ? CnpRate(r[kEcnMarked]) : 0;
  const double cnps_arriving =
      np_on ? CnpRate(r[kTxPackets] * MarkedShare(tx_load) * mark_factor) : 0;
  r[kCnpHandled] = rp_on ? cnps_arriving : 0;
  r[kCnpIgnored] = rp_on ? 0 : cnps_arriving;
  r[kRxPauseUs] = rx_paused * 1e6;
  r[kTxPauseUs] = tx_paused * 1e6;
  r[kRxPauseFrames] = r[kRxPauseUs] / kPauseUsPerFrame;
  r[kTxPauseFrames] = r[kTxPauseUs] / kPauseUsPerFrame;
  if (!pfc_on) {
    // Lossy: what PFC would have paused is dropped, on top of a base loss.
    const double rx_lost = r[kRxPackets] * (kLossyBaseDropShare + PausedShare(rx_offered));
    const double tx_lost = r[kTxPackets] * (kLossyBaseDropShare + PausedShare(tx_offered));
    r[kOutOfSequence] += rx_lost;
    r[kDuplicateRequest] += rx_lost / 2;
    r[kPacketSeqErr] += tx_lost;
    r[kLocalAckTimeoutErr] += tx_lost / 20;
  }
  if (retransmits_now) {
    const double wave = 1 + 0.3 * std::sin(2 * kPi * t_s / 11 + fault_phase);
    r[kPacketSeqErr] += 300 * wave;
    r[kLocalAckTimeoutErr] += 150 * wave;
    r[kOutOfSequence] += 450 * wave;
    r[kDuplicateRequest] += 200 * wave;
    r[kImpliedNakSeqErr] += 60 * wave;
  }
  return r;
}

absl::StatusOr<std::unique_ptr<SimBackend>> SimBackend::Create(
    const weft::v1::SimulatedBackendConfig& config, absl::string_view node_name,
    const Clock* clock) {
  auto invalid = [](absl::string_view field, auto value, absl::string_view accepted) {
    return absl::InvalidArgumentError(absl::StrCat("simulated backend: field 'simulated.", field,
                                                   "': value '", value,
                                                   "' is out of range; accepted: ", accepted));
  };
  if (node_name.empty()) {
    return absl::InvalidArgumentError("simulated backend: node name must not be empty");
  }
  if (config.nics() < 1 || config.nics() > 32) {
    return invalid("nics", config.nics(), "an integer from 1 to 32");
  }
  if (config.gpus() > 16) return invalid("gpus", config.gpus(), "an integer from 0 to 16");
  if (config.link_speed_gbps() < 1 || config.link_speed_gbps() > 1600) {
    return invalid("link_speed_gbps", config.link_speed_gbps(), "an integer from 1 to 1600");
  }
  if (!(config.traffic_level() >= 0 && config.traffic_level() <= 1)) {
    return invalid("traffic_level", config.traffic_level(), "a number from 0 to 1");
  }
  auto backend =
      std::unique_ptr<SimBackend>(new SimBackend(config, std::string(node_name), clock));
  std::vector<std::string> delayed;
  for (const auto& [fault, name] : {std::pair{weft::v1::SIM_FAULT_PFC_STORM, "pfc_storm"},
                                    std::pair{weft::v1::SIM_FAULT_LINK_DOWN, "link_down"},
                                    std::pair{weft::v1::SIM_FAULT_RETRANSMITS, "retransmits"}}) {
    if (HasFault(config, fault)) delayed.push_back(name);
  }
  if (!delayed.empty()) {
    const absl::Time onset = backend->fault_onset();
    WEFT_LOG(INFO) << "simulated faults scheduled node=" << node_name
                   << " faults=" << absl::StrJoin(delayed, ",")
                   << " delay_ms=" << config.fault_delay_ms()
                   << " onset=" << absl::FormatTime("%Y-%m-%dT%H:%M:%E6SZ", onset,
                                                    absl::UTCTimeZone())
                   << " onset_unix_us=" << absl::ToUnixMicros(onset);
  }
  return backend;
}

SimBackend::SimBackend(const weft::v1::SimulatedBackendConfig& config, std::string node_name,
                       const Clock* clock)
    : config_(config),
      node_name_(std::move(node_name)),
      clock_(clock),
      start_(clock->Now()),
      fault_delay_(absl::Milliseconds(config.fault_delay_ms())),
      seed_(config.seed() != 0 ? config.seed() : StableHash(node_name_)) {
  for (uint32_t i = 0; i < config_.nics(); ++i) {
    SplitMix rng(MixBits(seed_ ^ (0x1000 + i)));
    NicModel nic;
    nic.tx = RandomShape(rng);
    nic.rx = RandomShape(rng);
    nic.fault_phase = rng.Uniform(0, 2 * kPi);
    if (i == 0) {
      nic.link_down = HasFault(config_, weft::v1::SIM_FAULT_LINK_DOWN);
      nic.pfc_storm = HasFault(config_, weft::v1::SIM_FAULT_PFC_STORM);
      nic.retransmits = HasFault(config_, weft::v1::SIM_FAULT_RETRANSMITS);
    }
    nics_.push_back(nic);
    auto tunables = std::make_unique<SimNicTunables>(absl::StrCat("mlx5_", i));
    tunables->set_reject_writes(HasFault(config_, weft::v1::SIM_FAULT_REJECT_TUNABLES));
    tunables->set_before_write([this] { AdvanceToNow(); });
    tunables_.push_back(std::move(tunables));
  }
}

std::vector<NicTunables*> SimBackend::Tunables() {
  std::vector<NicTunables*> out;
  for (const std::unique_ptr<SimNicTunables>& nic : tunables_) out.push_back(nic.get());
  return out;
}

void SimBackend::AdvanceToNow() {
  const int64_t elapsed_us =
      std::max(absl::ToInt64Microseconds(clock_->Now() - start_), steps_done_ * kStepUs);
  AdvanceTo(elapsed_us / kStepUs);
}

SimBackend::~SimBackend() = default;

absl::StatusOr<NodeInventory> SimBackend::Discover() {
  NodeInventory inventory;
  const uint64_t host = StableHash(node_name_);
  const uint32_t n = config_.nics();
  for (uint32_t i = 0; i < n; ++i) {
    weft::v1::Nic& nic = inventory.nics.emplace_back();
    nic.set_device(absl::StrCat("mlx5_", i));
    nic.set_port(1);
    nic.set_netdev(absl::StrCat("ens", i + 1, "np0"));
    nic.set_pci_address(PciAddress(NicBus(i, n)));
    nic.set_numa_node(NumaOf(i, n));
    nic.set_link_layer("Ethernet");
    const bool down = nics_[i].link_down &&
                      FaultsActiveAt(absl::ToInt64Microseconds(clock_->Now() - start_));
    nic.set_state(down ? weft::v1::PORT_STATE_DOWN : weft::v1::PORT_STATE_ACTIVE);
    nic.set_speed_mbps(down ? 0 : uint64_t{config_.link_speed_gbps()} * 1000);
    nic.set_mtu(kNetdevMtu);

    // NVIDIA's OUI b8:ce:f6, then three bytes from the node and NIC; EUI-64 flips the
    // universal/local bit of the first byte (b8 -> ba) and inserts ff:fe.
    const uint64_t mac = MixBits(host + i);
    const uint32_t m3 = mac & 0xff, m4 = (mac >> 8) & 0xff, m5 = (mac >> 16) & 0xff;
    const std::string link_local = absl::StrCat("fe80:0000:0000:0000:bace:f6ff:fe",
                                                absl::StrFormat("%02x", m3), ":", Hex16(m4, m5));
    // IPv4 10.<rail>.<a>.<b>, host part from the node name (never .0 or .255).
    const uint32_t a = (host >> 8) & 0xff;
    const uint32_t b = 1 + (host & 0xff) % 254;
    std::string ipv4_mapped =
        absl::StrCat("0000:0000:0000:0000:0000:ffff:", Hex16(10, i), ":", Hex16(a, b));
    if (static_cast<int>(i) < config_.nic_ipv4_size()) {
      // Validated as dotted IPv4 with the config (common/daemon_config.cc).
      in_addr given{};
      if (inet_pton(AF_INET, config_.nic_ipv4(i).c_str(), &given) == 1) {
        const uint32_t v = ntohl(given.s_addr);
        ipv4_mapped = absl::StrCat("0000:0000:0000:0000:0000:ffff:", Hex16(v >> 24, (v >> 16) & 0xff),
                                   ":", Hex16((v >> 8) & 0xff, v & 0xff));
      }
    }
    const std::pair<std::string, weft::v1::GidType> gids[] = {
        {link_local, weft::v1::GID_TYPE_IB_ROCE_V1},
        {link_local, weft::v1::GID_TYPE_ROCE_V2},
        {ipv4_mapped, weft::v1::GID_TYPE_IB_ROCE_V1},
        {ipv4_mapped, weft::v1::GID_TYPE_ROCE_V2},
    };
    for (uint32_t index = 0; index < 4; ++index) {
      weft::v1::GidEntry* gid = nic.add_gids();
      gid->set_index(index);
      gid->set_gid(gids[index].first);
      gid->set_type(gids[index].second);
      gid->set_netdev(nic.netdev());
    }
  }
  const uint32_t g = config_.gpus();
  for (uint32_t i = 0; i < g; ++i) {
    weft::v1::Gpu& gpu = inventory.gpus.emplace_back();
    gpu.set_index(i);
    gpu.set_pci_address(PciAddress(GpuBus(i, g)));
    gpu.set_numa_node(NumaOf(i, g));
    gpu.set_model(kGpuModel);
    // Spread GPUs over NICs in order, so each half maps onto the same NUMA node's NICs.
    gpu.set_closest_nic(absl::StrCat("mlx5_", uint64_t{i} * n / g));
  }
  return inventory;
}

bool SimBackend::FaultsActiveAt(int64_t t_us) const {
  return t_us >= absl::ToInt64Microseconds(fault_delay_);
}

void SimBackend::AdvanceTo(int64_t step) {
  for (; steps_done_ < step; ++steps_done_) {
    const double t_s = steps_done_ * kStepS;
    const bool faults_on = FaultsActiveAt(steps_done_ * kStepUs);
    for (size_t i = 0; i < nics_.size(); ++i) {
      NicModel& nic = nics_[i];
      const Quantities rates = nic.RatesAt(config_, t_s, faults_on, *tunables_[i]);
      for (int q = 0; q < kNumQuantities; ++q) nic.integral[q] += rates[q] * kStepS;
    }
  }
}

absl::StatusOr<std::vector<RawNicReading>> SimBackend::ReadCounters() {
  const absl::Time now = clock_->Now();
  // A clock that stepped back leaves the counters where they were.
  const int64_t elapsed_us =
      std::max(absl::ToInt64Microseconds(now - start_), steps_done_ * kStepUs);
  AdvanceTo(elapsed_us / kStepUs);
  const double partial_s = (elapsed_us - steps_done_ * kStepUs) / 1e6;
  const double t_s = steps_done_ * kStepS;
  const bool faults_on = FaultsActiveAt(steps_done_ * kStepUs);

  std::vector<RawNicReading> readings;
  readings.reserve(nics_.size());
  for (size_t i = 0; i < nics_.size(); ++i) {
    const NicModel& nic = nics_[i];
    const Quantities rates = nic.RatesAt(config_, t_s, faults_on, *tunables_[i]);
    const bool link_down = nic.link_down && faults_on;
    Quantities v;
    for (int q = 0; q < kNumQuantities; ++q) v[q] = nic.integral[q] + rates[q] * partial_s;
    auto whole = [&v](Quantity q) { return static_cast<uint64_t>(std::floor(v[q])); };
    // Q-counters are 32 bits wide on the NIC.
    auto q_counter = [&whole](Quantity q) { return whole(q) % k32BitRange; };

    RawNicReading& r = readings.emplace_back();
    r.device = absl::StrCat("mlx5_", i);
    r.port = 1;
    r.timestamp = now;
    r.port_state = link_down ? weft::v1::PORT_STATE_DOWN : weft::v1::PORT_STATE_ACTIVE;
    RawNicCounters& c = r.counters;
    // sysfs counts data in 4-octet units: bytes are always a multiple of 4.
    c.port_xmit_bytes = whole(kTxBytes) / 4 * 4;
    c.port_rcv_bytes = whole(kRxBytes) / 4 * 4;
    c.port_xmit_packets = whole(kTxPackets);
    c.port_rcv_packets = whole(kRxPackets);
    // A simulated ConnectX reports every counter a real one has; what is not modelled
    // stays 0.
    c.unicast_xmit_packets = c.port_xmit_packets;
    c.unicast_rcv_packets = c.port_rcv_packets;
    c.multicast_xmit_packets = 0;
    c.multicast_rcv_packets = 0;
    c.port_xmit_discards = 0;
    c.port_rcv_errors = 0;
    c.link_downed = link_down ? 1 : 0;
    c.symbol_error = 0;
    c.link_error_recovery = 0;
    c.port_xmit_wait = 0;
    c.np_ecn_marked_roce_packets = whole(kEcnMarked);
    c.np_cnp_sent = whole(kCnpSent);
    c.rp_cnp_handled = whole(kCnpHandled);
    c.rp_cnp_ignored = whole(kCnpIgnored);
    c.out_of_sequence = q_counter(kOutOfSequence);
    c.packet_seq_err = q_counter(kPacketSeqErr);
    c.local_ack_timeout_err = q_counter(kLocalAckTimeoutErr);
    c.implied_nak_seq_err = q_counter(kImpliedNakSeqErr);
    c.duplicate_request = q_counter(kDuplicateRequest);
    c.rnr_nak_retry_err = 0;
    c.out_of_buffer = 0;
    // Only priorities with PFC on have counters; pauses happen on the RoCE priority.
    for (uint32_t priority = 0; priority < 8; ++priority) {
      if (!(tunables_[i]->pfc_mask() & (1u << priority))) continue;
      RawPfcCounters pfc;
      pfc.priority = priority;
      if (priority == kRocePriority) {
        pfc.rx_pause = whole(kRxPauseFrames);
        pfc.tx_pause = whole(kTxPauseFrames);
        pfc.rx_pause_duration_us = whole(kRxPauseUs);
        pfc.tx_pause_duration_us = whole(kTxPauseUs);
      }
      c.pfc.push_back(pfc);
    }
  }
  return readings;
}

}  // namespace weft::agent
