// A transient fluid model of one ToR with PFC (issue 20): the CoNEXT'16 DCQCN fluid model
// (sim/dcqcn_fluid.h, ReactionPointStepper per flow) extended with priority-3 PFC as a switch
// runs it (fabric-facts §5, HPCC's switch-mmu.cc), integrated at sub-microsecond steps. It
// is the reference the live model's flow-level PFC (sim/live_model.h) is checked against.
//
// The chain: senders → (link delay) → the ToR's ingress ports → one egress queue per
// receiver NIC → the receivers. A sender is a NIC, or another switch's egress port into the
// ToR (an ECN-marking FIFO fed by its flows' hosts: the second hop of the sc20 PFC-victim
// topology; that switch's own PFC toward its hosts is not modelled). Per flow: a sender, a
// receiver, and either a fixed rate (where DCQCN is not the point) or DCQCN from line rate,
// marked by the RED ramps of the queues it crosses, seen τ* ago. A NIC splits its line rate
// over its flows in proportion to their rates.
//
// PFC, per (ingress port, priority 3), fluid versions of HPCC's rules:
//  - accounting: the bytes of an ingress port's flows in the egress queues fill a reserve
//    (4 KB) first, then the shared pool while the port's shared use is under Xoff, then
//    its headroom (3 × line rate × link delay); beyond the headroom they are dropped
//    (counted; the tests assert none).
//  - dynamic Xoff = (buffer − Σ headroom − Σ reserve − shared in use) >> 3.
//  - pause when the headroom holds bytes or shared use ≥ Xoff; resume when the headroom
//    is empty and shared use + 3 KB ≤ Xoff. The sender sees either one link delay later,
//    and what it sent meanwhile lands one link delay after that (the headroom's reason).
//  - an egress queue is FIFO: it serves its flows in proportion to their bytes in it, so
//    a flow stuck behind a paused receiver holds its ingress port's counter up and with
//    it every flow from that sender (head-of-line blocking of victims).
//  - a storming receiver pauses its egress queue share·period of every period (on/off).
// Bytes are fluid: no packets (a 1 KB packet lasts 0.2 µs at 40 Gb/s, two steps) and a
// pause is a level, not frames of 512-bit-time quanta. A packet-level run would show what
// that changes; none has been made (docs/benchmarks.md).
//
// Pure logic, no clock or I/O. Not thread-safe: one thread steps a model.
//
// Example:
//   PfcChainConfig config;  // 1 sender, 1 receiver, 40 Gb/s, a 4 MB buffer
//   config.flows = {{.sender = 0, .receiver = 0, .fixed_rate_bps = 40e9}};
//   config.storm_share = {0.9};
//   ASSIGN_OR_RETURN(PfcFluidChain chain, PfcFluidChain::Create(config));
//   chain.RunFor(2000);  // settle
//   chain.ResetAverages();
//   chain.RunFor(5000);
//   PfcAverages averages = chain.Averages();  // flow_rate_bps[0] ≈ 4 Gb/s
#ifndef WEFT_SIM_PFC_FLUID_H_
#define WEFT_SIM_PFC_FLUID_H_

#include <cstdint>
#include <limits>
#include <vector>

#include "absl/status/statusor.h"
#include "sim/dcqcn_fluid.h"

namespace weft::sim {

// The ToR's buffer and PFC thresholds (fabric-facts §5; HPCC's switch-mmu.cc defaults but
// the buffer, which is a shallow ToR's share for the lossless class).
struct PfcSwitchParams {
  double buffer_bytes = 4e6;
  double reserve_bytes = 4e3;         // per (ingress port, priority)
  double resume_offset_bytes = 3e3;   // Xon = Xoff − this
  int xoff_shift = 3;                 // Xoff = free buffer >> 3
  double headroom_link_delays = 3;    // headroom = this × line rate × link delay
  double link_delay_us = 1;           // NIC ↔ ToR, one way (data and PAUSE alike)
};

struct PfcFlow {
  int sender = 0;
  int receiver = 0;
  // > 0: the flow asks for this rate (its NIC shares out its line rate in proportion);
  // 0: DCQCN from line rate.
  double fixed_rate_bps = 0;
  // The flow sends in [start_us, stop_us) (a DCQCN flow keeps its state while it does not).
  double start_us = 0;
  double stop_us = std::numeric_limits<double>::infinity();
};

struct PfcChainConfig {
  int senders = 1;
  int receivers = 1;
  double link_bps = 40e9;  // every NIC and ToR port
  PfcSwitchParams pfc;
  // The egress queues' ECN ramp and the flows' DCQCN (its capacity_bps is link_bps).
  DcqcnParams dcqcn;
  std::vector<PfcFlow> flows;
  std::vector<double> storm_share;  // per receiver, [0, 1]; empty: no storm
  // Per sender; empty: every sender is a NIC. true: the sender is another switch's egress
  // port into this ToR (two switch hops): its flows arrive from their hosts at their own
  // rates (each host at line rate, never paused) into a FIFO that marks ECN on the same
  // ramp and drains at link_bps while the ToR does not pause it; a flow's marks are those
  // of both queues (1 − (1 − p₁)(1 − p₂)).
  std::vector<bool> sender_is_switch_port;
  double storm_period_us = 20;
  double step_us = 0.1;
};

// Time averages since the last ResetAverages.
struct PfcAverages {
  double duration_us = 0;
  std::vector<double> flow_rate_bps;          // delivered to the receiver
  std::vector<double> sender_pause_share;     // per sender NIC: paused by the ToR (rx)
  std::vector<double> receiver_pause_share;   // per egress port: paused by its receiver
  // Per egress port, read as each step's arrival lands, before the port serves it (a
  // lone flow at line rate shows one step's bytes).
  std::vector<double> egress_queue_bytes;
  std::vector<double> egress_mark_probability;  // per egress port, p(q) over time
  std::vector<double> sender_queue_bytes;       // per sender that is a switch port (else 0)
  std::vector<double> sender_sent_bps;          // per sender: what it put on its link
  double max_egress_queue_bytes = 0;
  double max_headroom_bytes = 0;  // the most any ingress port held in headroom
  double dropped_bytes = 0;
};

class PfcFluidChain {
 public:
  // Refuses (InvalidArgument, naming the field and the accepted range) a flow whose sender
  // or receiver is out of range, a negative rate, a start not before its stop, a storm
  // share outside [0, 1] or a storm_share / sender_is_switch_port of the wrong size, a step
  // not in (0, min(link delay, τ*)], or DCQCN parameters ValidateParams refuses.
  static absl::StatusOr<PfcFluidChain> Create(const PfcChainConfig& config);

  // Integrates duration_us (rounded down to whole steps).
  void RunFor(double duration_us);
  void ResetAverages();
  PfcAverages Averages() const;
  double time_us() const { return static_cast<double>(step_count_) * config_.step_us; }

 private:
  struct IngressPort {
    double ingress_bytes = 0;   // reserve + shared use
    double headroom_bytes = 0;
    bool paused = false;        // the switch's decision (the sender sees it later)
  };
  explicit PfcFluidChain(const PfcChainConfig& config);

  void Step();
  void SendFromNics(std::vector<double>* sent_bytes);
  // Admits bytes arriving on an ingress port; returns what was not dropped.
  double Admit(int port, double bytes);
  void Release(int port, double bytes);
  void ServeEgress(int receiver);
  void DecidePauses();
  void StepDcqcn();
  double SharedUse(const IngressPort& port) const;
  double Xoff() const;
  bool StormPauses(int receiver) const;
  double EgressQueueBytes(int receiver) const;
  double SenderQueueBytes(int sender) const;
  double AskedRateBps(int flow) const;  // 0 outside [start_us, stop_us)
  bool IsSwitchPort(int sender) const;
  // A switch-port sender's FIFO takes its flows' host rates and, unless paused, drains.
  void SendFromSwitchPort(int sender, bool paused, std::vector<double>* sent_bytes);

  PfcChainConfig config_;
  double step_s_;
  double headroom_bytes_;  // per ingress port
  int link_delay_steps_;
  int feedback_delay_steps_;
  int64_t step_count_ = 0;

  std::vector<std::vector<int>> flows_of_receiver_;
  std::vector<std::vector<int>> flows_of_sender_;
  std::vector<IngressPort> ingress_;
  double shared_used_bytes_ = 0;
  std::vector<double> queued_bytes_;                 // per flow, in its egress queue
  std::vector<std::vector<double>> in_flight_bytes_;  // [slot][flow]: sent link delay ago
  std::vector<std::vector<char>> pause_seen_;         // [slot][sender]: decided link delay ago
  std::vector<ReactionPoint> reaction_points_;        // per flow (DCQCN flows)
  ReactionPointStepper stepper_;
  std::vector<double> upstream_queued_bytes_;         // per flow, in its sender's FIFO
  std::vector<double> host_rate_pps_;                 // per flow: what its host sends now
  std::vector<std::vector<double>> p_history_;        // [slot][flow]: marks along its path
  std::vector<std::vector<double>> sent_rate_history_pps_;  // [slot][flow]

  // Integrals since ResetAverages.
  int64_t averaged_steps_ = 0;
  std::vector<double> delivered_bytes_;
  std::vector<int64_t> sender_paused_steps_;
  std::vector<int64_t> receiver_paused_steps_;
  std::vector<double> queue_integral_;
  std::vector<double> mark_integral_;
  std::vector<double> sender_queue_integral_;
  std::vector<double> sender_sent_bytes_;
  double max_egress_queue_bytes_ = 0;
  double max_headroom_bytes_ = 0;
  double dropped_bytes_ = 0;
};

}  // namespace weft::sim

#endif  // WEFT_SIM_PFC_FLUID_H_
