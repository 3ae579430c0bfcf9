// Health rules: pure evaluation of one NIC's recent telemetry window into findings —
// "this rule fires on this NIC, with this value against this threshold". The
// inventory keeps the window (a NicReading per received sample, oldest first) and
// re-evaluates it whenever samples arrive; HealthTracker (health_tracker.h) turns
// findings into node states with hysteresis. No clock, no locks, no I/O.
//
// The rules (names are metric label values and appear in weftctl):
//   pfc_pause_storm    pause duration of one PFC priority in one direction (rx: paused
//                      by the switch; tx: pausing it) as a share of wall time, 0..1,
//                      above pfc_pause_share (on any priority, either direction)
//   ecn_mark_ratio     np_ecn_marked_roce_packets/s ÷ port_rcv_packets/s above
//                      ecn_mark_ratio, while receiving ≥ ecn_min_rcv_packets_per_s
//   cnp_ignored        rp_cnp_ignored/s above cnp_ignored_per_s (congestion control is
//                      off on the priority the CNPs arrive for)
//   packet_seq_err     packet_seq_err/s above packet_seq_err_per_s
//   local_ack_timeout  local_ack_timeout_err/s above local_ack_timeout_err_per_s
//   out_of_sequence    out_of_sequence/s above out_of_sequence_per_s
//   link_down          port state known and neither ACTIVE nor ACTIVE_DEFER
//   link_flap          link_downed increments within the window above
//                      link_flaps_per_window
//   nic_unreadable     the agent could not read the NIC (sample error set)
//
// Rules found elsewhere, which the inventory takes as a node's external findings
// (Inventory::SetExternalFindings) rather than evaluating them over a NIC's window:
//   pingmesh_host      pingmesh blames the node's host (probes answered late or not at
//                      all while the network around it is fine)
//   pingmesh_nic       pingmesh blames one of the node's NICs
//   pingmesh_link      pingmesh blames the cable of one of the node's NICs
//
// Firing: a rate rule fires when the newest `consecutive_samples` readings of the NIC
// are all evaluable and above the threshold. Evaluable means rates_valid, no error,
// and the counter group the rule reads present: a missing group (say, a NIC without
// the congestion hw_counters) is unknown, never zero, so it neither fires nor counts
// as above. link_down reads the port state of readings without error (a level, not a
// rate, so rates_valid is not needed) and also needs `consecutive_samples` in a row;
// nic_unreadable needs that many errored readings in a row. link_flap counts
// link_downed increases between consecutive readings (the later with valid rates)
// anywhere in the window. A finding's `since` is when the first reading of the firing
// run was received (for link_flap, the reading that saw the first increase).
//
// Thread-compatible: plain values and free functions.
#ifndef WEFT_CONTROLLER_HEALTH_HEALTH_RULES_H_
#define WEFT_CONTROLLER_HEALTH_HEALTH_RULES_H_

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/pfc_share.h"
#include "controller/health/nic_rates.h"
#include "proto/weft/v1/admin.pb.h"
#include "proto/weft/v1/config.pb.h"
#include "proto/weft/v1/telemetry.pb.h"

namespace weft::controller {

enum class HealthRule {
  kPfcPauseStorm,
  kEcnMarkRatio,
  kCnpIgnored,
  kPacketSeqErr,
  kLocalAckTimeout,
  kOutOfSequence,
  kLinkDown,
  kLinkFlap,
  kNicUnreadable,
  kPingmeshHost,
  kPingmeshNic,
  kPingmeshLink,
};

// Every rule, in the order above.
inline constexpr HealthRule kAllHealthRules[] = {
    HealthRule::kPfcPauseStorm,   HealthRule::kEcnMarkRatio, HealthRule::kCnpIgnored,
    HealthRule::kPacketSeqErr,    HealthRule::kLocalAckTimeout,
    HealthRule::kOutOfSequence,   HealthRule::kLinkDown,     HealthRule::kLinkFlap,
    HealthRule::kNicUnreadable,   HealthRule::kPingmeshHost, HealthRule::kPingmeshNic,
    HealthRule::kPingmeshLink};

// "pfc_pause_storm", ...: the rule's name in findings, events and metric labels.
absl::string_view HealthRuleName(HealthRule rule);

// Thresholds of the rules; the defaults are those of DefaultControllerConfig().
struct HealthThresholds {
  int consecutive_samples = 2;
  double pfc_pause_share = 0.5;
  double ecn_mark_ratio = 0.1;
  double ecn_min_rcv_packets_per_s = 1000;
  double cnp_ignored_per_s = 0;
  double packet_seq_err_per_s = 10;
  double local_ack_timeout_err_per_s = 1;
  double out_of_sequence_per_s = 10;
  int64_t link_flaps_per_window = 0;

  // The thresholds of `config` (a validated config; see HealthConfig in config.proto).
  static HealthThresholds FromConfig(const weft::v1::HealthConfig& config);
};

// What the window keeps of one received NicSample: enough for the node's rates and
// for every rule, without the whole proto. Groups the sample lacked are marked so.
struct NicReading {
  absl::Time received_at;
  int64_t timestamp_us = 0;  // the agent's reading time
  bool rates_valid = false;
  bool has_error = false;
  std::string error;         // the agent's reason, when has_error
  NicRates rates;            // zero when has_error or !rates_valid

  uint32_t port_state = 0;   // weft.v1.PortState number; 0: not reported
  // Each counter is unset when the sample lacks it (the NIC has no such counter), so a
  // rule that needs it stays silent instead of judging a zero.
  std::optional<uint64_t> link_downed_total;
  std::optional<double> rcv_packets_per_s;
  std::optional<double> ecn_marked_per_s;
  std::optional<double> cnp_ignored_per_s;
  std::optional<double> packet_seq_err_per_s;
  std::optional<double> local_ack_timeout_err_per_s;
  std::optional<double> out_of_sequence_per_s;
  // PFC pause share of time per direction, most-paused priority (common/pfc_share.h);
  // has_pfc is false when the sample reported no priority (PFC off everywhere).
  PfcPauseShares pfc;
};

NicReading ReadingFromSample(const weft::v1::NicSample& sample, absl::Time received_at);

// One rule firing on one NIC (or, for an external finding, on what `device` names: a
// host, a NIC as "node/nic", a cable as "node/nic->switch"; port 0 then).
struct Finding {
  HealthRule rule = HealthRule::kPfcPauseStorm;
  std::string device;
  uint32_t port = 0;  // 0: no port (RDMA ports count from 1)
  double value = 0;
  double threshold = 0;
  std::string detail;  // one line for people
  absl::Time since;

  weft::v1::Finding ToProto() const;
};

// The link flaps of a window: the sum of link_downed increases between consecutive
// readings (both without error and with port counters, the later with valid rates),
// and when the reading that saw the first of them was received.
struct LinkFlaps {
  uint64_t count = 0;
  absl::Time first;  // meaningful when count > 0
};

// What the pair (before, after) adds to LinkFlaps::count; 0 when it does not qualify.
uint64_t LinkFlapIncrease(const NicReading& before, const NicReading& after);

// The link flaps of `window` (oldest reading first), reading all of it.
LinkFlaps CountLinkFlaps(const std::deque<NicReading>& window);

// The findings of one NIC's window (oldest reading first), at most one per rule, in
// kAllHealthRules order. An empty window yields none.
std::vector<Finding> EvaluateNicWindow(absl::string_view device, uint32_t port,
                                       const std::deque<NicReading>& window,
                                       const HealthThresholds& thresholds);

// The same, with the window's link flaps supplied by a caller that keeps them up to
// date as readings come and go (they must equal CountLinkFlaps(window)): the other
// rules only read the newest readings, so this never walks the whole window. The
// inventory does this; at thousands of nodes, rereading 60 readings of every NIC on
// every sample was most of the cost of health evaluation (cache misses).
std::vector<Finding> EvaluateNicWindow(absl::string_view device, uint32_t port,
                                       const std::deque<NicReading>& window,
                                       const HealthThresholds& thresholds,
                                       const LinkFlaps& flaps);

// "pfc_pause_storm on mlx5_0/1: rx pause 97.0% ..." — how a finding reads in a
// state-change reason or a drain reason ("pingmesh_nic on gpu-a01/mlx5_0: ..." without
// a port).
std::string DescribeFinding(const Finding& finding);

}  // namespace weft::controller

#endif  // WEFT_CONTROLLER_HEALTH_HEALTH_RULES_H_
