// SimBackend: a simulated GPU node for demos, tests and clusters without RDMA hardware.
// It looks like a host with N single-port ConnectX NICs (mlx5_0..mlx5_{N-1}, RoCE on
// Ethernet) and G GPUs, and produces counters that relate to each other the way a real
// RoCEv2 fabric's do, so the controller's health logic can be exercised end to end.
//
// Traffic model (deterministic for a seed; seed 0 derives it from the node name):
//  - Each NIC's offered tx and rx load is `traffic_level` of line rate plus a smooth
//    variation of ±min(level, 1 − level)/2 (three sines, periods 3–90 s, per-NIC
//    phases), as a function of the injected Clock's time since construction.
//  - Counters are integrals of the rates over time (10 ms steps, left Riemann sum), so
//    they never decrease and rates computed from them match the model.
//  - Bytes and packets: MTU-sized packets (path MTU 4096 + 58 bytes of RoCEv2 headers).
//  - ECN: above 70% load a share of received packets arrives CE-marked, growing with
//    the square of the excess up to 5% at full load (np_ecn_marked_roce_packets).
//  - CNPs: the notification point sends at most one CNP per flow per 50 µs
//    (kFlowsPerNic flows), so np_cnp_sent = m / (1 + m·50µs/flows) for m marks/s:
//    proportional at low rates, never above the marks or flows/50µs. rp_cnp_handled
//    follows the same law from the marks our own transmissions cause at the peers (a
//    symmetric cluster); rp_cnp_ignored stays 0 (congestion control is on).
//  - PFC: enabled on priority 3 only, so only priority 3 is reported. Above 85% load
//    the port spends a small share of time paused (up to 2% at full load): rx pause
//    follows our tx load (the switch pauses us), tx pause our rx load; one pause frame
//    per 20 µs of pause. Pauses take their share off throughput.
//
// Faults (SimulatedBackendConfig.faults), all on NIC 0:
//  - PFC_STORM: rx and tx priority-3 pause duration 91–99% of every second, tens of
//    thousands of pause frames/s, throughput collapses to the unpaused remainder.
//  - LINK_DOWN: port DOWN (speed unknown: 0), link_downed = 1, no traffic.
//  - RETRANSMITS: packet_seq_err, local_ack_timeout_err, out_of_sequence,
//    duplicate_request (and some implied_nak_seq_err) climb at hundreds per second.
//  - DEAD is the agent's business (it stops sending telemetry); no effect here.
//  - REJECT_TUNABLES (every NIC): the tunables refuse every write (see below).
//
// Tunables: each NIC has a SimNicTunables (agent/tunables/sim_nic_tunables.h) starting
// as a node set up with the common production recipe (DSCP trust, RoCE DSCP 26 ->
// priority 3 lossless, CNPs DSCP 48 -> priority 6, ToS 106) and the firmware's DCQCN
// defaults (on for every priority). The counters follow its
// switches on the RoCE priority (3), for this NIC and, a symmetric cluster, its peers:
//  - PFC on priority 3: pauses as above, reported as priority 3's PFC counters. Off: no
//    priority-3 PFC counters (mlx5 reports a priority only while PFC is on it), no
//    pauses, and the traffic that would have been paused is dropped instead, plus a
//    base loss of 1e-6 of the packets: out_of_sequence, packet_seq_err,
//    local_ack_timeout_err and duplicate_request climb.
//  - DCQCN reaction point off on priority 3: CNPs still arrive but are ignored
//    (rp_cnp_ignored rises, rp_cnp_handled stops) and, with senders that no longer
//    slow down, twice the ECN marks. Notification point off: np_cnp_sent stops, and
//    so do the CNPs arriving here.
// Other priorities that have PFC on are reported with zero pauses.
// With `fault_delay_ms` set, PFC_STORM, LINK_DOWN and RETRANSMITS begin that long after
// the backend was created (the model's time 0, rounded to its 10 ms steps): counters
// before the onset are those of a healthy node, and Discover() shows the port ACTIVE
// until then. Create() logs the onset's wall-clock time (one info line, "simulated
// faults scheduled ... onset=..."), so a benchmark can time fault detection from it.
//
// Inventory: NUMA node 0 holds the first half of the NICs and GPUs, node 1 the rest;
// GPU i sits next to NIC i (same PCIe switch) when G == N. Netdev MTU 4200: the usual
// RoCE setting, the smallest that carries a 4096-byte path MTU plus headers. GIDs as
// mlx5 fills them for one IPv4 address: 0/1 link-local RoCE v1/v2, 2/3 IPv4-mapped
// RoCE v1/v2 (10.<nic>.x.y: one subnet per rail).
//
// Thread-compatible (see NicBackend). The Clock must outlive the backend.
#ifndef WEFT_AGENT_SIM_BACKEND_H_
#define WEFT_AGENT_SIM_BACKEND_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "agent/nic_backend.h"
#include "agent/tunables/sim_nic_tunables.h"
#include "common/clock.h"
#include "proto/weft/v1/config.pb.h"

namespace weft::agent {

class SimBackend : public NicBackend {
 public:
  // Model constants, public so tests can check the relations they promise.
  static constexpr uint32_t kRocePriority = 3;  // the lossless priority
  static constexpr uint32_t kNetdevMtu = 4200;
  static constexpr double kWireBytesPerPacket = 4096 + 58;
  static constexpr double kEcnOnsetLoad = 0.70;
  static constexpr double kMaxMarkedShare = 0.05;  // of received packets, at load 1
  static constexpr double kFlowsPerNic = 8;
  static constexpr double kCnpMinIntervalS = 50e-6;  // per flow (DCQCN N)
  static constexpr double kPfcOnsetLoad = 0.85;
  static constexpr double kMaxPausedShare = 0.02;  // of each second, at load 1
  static constexpr double kPauseUsPerFrame = 20;
  static constexpr double kLossyBaseDropShare = 1e-6;  // of packets, PFC off on priority 3

  // INVALID_ARGUMENT when `config` is out of range (nics 1..32, gpus 0..16,
  // link_speed_gbps 1..1600, traffic_level 0..1) or `node_name` is empty.
  static absl::StatusOr<std::unique_ptr<SimBackend>> Create(
      const weft::v1::SimulatedBackendConfig& config, absl::string_view node_name,
      const Clock* clock);

  ~SimBackend() override;

  absl::StatusOr<NodeInventory> Discover() override;
  absl::StatusOr<std::vector<RawNicReading>> ReadCounters() override;
  std::vector<NicTunables*> Tunables() override;

  // The traffic model's seed actually used.
  uint64_t seed() const { return seed_; }

  // When the backend's faults (PFC_STORM, LINK_DOWN, RETRANSMITS) begin, by the
  // injected Clock: creation time + fault_delay_ms. Meaningful only when one is
  // configured.
  absl::Time fault_onset() const { return start_ + fault_delay_; }

 private:
  SimBackend(const weft::v1::SimulatedBackendConfig& config, std::string node_name,
             const Clock* clock);

  struct NicModel;  // per-NIC traffic shape, faults and integrals (sim_backend.cc)

  // Integrates every NIC's counters up to whole step `step` since start.
  void AdvanceTo(int64_t step);
  // Integrates up to the clock's now (before a tunable changes the rates).
  void AdvanceToNow();
  // Whether the faults are on at model time `t_us` (µs since start).
  bool FaultsActiveAt(int64_t t_us) const;

  const weft::v1::SimulatedBackendConfig config_;
  const std::string node_name_;
  const Clock* const clock_;
  const absl::Time start_;
  const absl::Duration fault_delay_;
  const uint64_t seed_;
  std::vector<NicModel> nics_;
  std::vector<std::unique_ptr<SimNicTunables>> tunables_;  // one per NIC
  int64_t steps_done_ = 0;
};

}  // namespace weft::agent

#endif  // WEFT_AGENT_SIM_BACKEND_H_
