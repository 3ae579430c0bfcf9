// A congestion episode on one bottleneck (issue 21, the tuner's evaluation model): flows of
// finite size start (each at its own time, from line rate or a cap) into one switch egress
// port, are marked by its RED ramp and react with DCQCN (the CoNEXT'16 fluid equations of
// sim/dcqcn_fluid.h, one ReactionPointStepper step per flow), each with its own control-loop
// delay; the port may lose part of its capacity to another traffic class on a schedule
// (ETS: storage on its own class), and may pause its senders with PFC. The episode ends when
// every flow has delivered its bytes. What DcqcnFluidModel does not give the tuner: flow
// completion times, transients from a line-rate start (each collective step starts one),
// flows that differ (loop delay, start, size, cap: in a fluid model identical flows stay
// identical, so fairness can only move when they differ), PFC pauses and a varying capacity.
//
// PFC is one level on the port's queue, the fluid reading of fabric-facts §5 for one
// ingress-congested port: pause every sender when the queue reaches xoff_bytes, resume at
// xon_bytes; senders see either pfc_delay_us later. A paused flow sends nothing and so sees
// no marks (its delayed rate is 0), as on a NIC; victim flows stop with it. The queue is FIFO: it serves its flows in
// proportion to their bytes in it.
//
// Not represented (beyond sim/cc_params.h's list): per-packet marking randomness, CNPs
// paced per NP port rather than per flow, multi-hop paths, PFC's per-ingress accounting and
// head-of-line victims (sim/pfc_fluid.h has those).
//
// Pure logic, no clock or I/O; RunEpisode is thread-safe (it shares nothing).
//
// Example:
//   EpisodeConfig config;
//   config.dcqcn = MapCcParams(FirmwareDefaultCcParams(), HpccFabricSide(400e9))->params;
//   for (int i = 0; i < 4; ++i) config.flows.push_back({.bytes = 4e6, .feedback_delay_us = 4});
//   ASSIGN_OR_RETURN(EpisodeResult r, RunEpisode(config));  // r.fct_us, r.pause_share, ...
#ifndef WEFT_SIM_DCQCN_EPISODE_H_
#define WEFT_SIM_DCQCN_EPISODE_H_

#include <vector>

#include "absl/status/statusor.h"
#include "sim/dcqcn_fluid.h"

namespace weft::sim {

struct EpisodeFlow {
  double bytes = 0;
  double start_us = 0;
  double feedback_delay_us = 4;  // τ* of this flow (RTTs differ across a fabric)
  // The most this flow can send: its sender NIC's share when it sends to several
  // receivers at once (an all-to-all); 0 = the port's capacity.
  double max_rate_bps = 0;
  double initial_alpha = 1;
  // A PFC victim: a flow of a sender the port pauses that goes elsewhere (its NIC's other
  // channel, on an uncongested path). It does not cross the port, is never marked and
  // sends at max_rate_bps, except while its sender is paused: PFC pauses the priority on
  // the whole link (fabric-facts §5; the sc20 PFC-victim artifact, §2). Requires
  // max_rate_bps > 0.
  bool victim = false;
};

// Another traffic class on the same port (ETS, work-conserving): while on, it takes
// `share` of the capacity; on for on_fraction of every period_us, from phase_us.
struct OtherClassLoad {
  double share = 0;
  double period_us = 1000;
  double on_fraction = 0;
  double phase_us = 0;
};

struct EpisodeConfig {
  DcqcnParams dcqcn;  // capacity_bps, the ECN ramp and the flows' DCQCN
  std::vector<EpisodeFlow> flows;
  double pfc_xoff_bytes = 0;  // 0: no PFC (a lossy class: the queue is unbounded)
  double pfc_xon_bytes = 0;
  double pfc_delay_us = 1;
  OtherClassLoad other_class;
  double step_us = 0.2;
  double max_duration_us = 100e3;
};

struct EpisodeResult {
  std::vector<double> fct_us;  // per flow, from its start; max_duration_us if unfinished
  int unfinished = 0;
  double makespan_us = 0;  // first start to last completion
  // Delivered bytes over what the port could carry for this class (its capacity minus the
  // other class's share) from the first start to the last completion; victims not counted.
  double utilization = 0;
  double mean_queue_bytes = 0;  // over the makespan
  double p99_queue_bytes = 0;   // of 1 µs samples
  double max_queue_bytes = 0;
  // Share of the makespan the senders were paused by PFC.
  double pause_share = 0;
  // Jain's index of the flows' delivered rates while all of them were sending (from the
  // last start to the first completion; the whole episode's bytes / FCT when that window
  // is empty): 1 when they share equally. Over the whole episode a FIFO that drains every
  // flow together hides who got the link while they competed.
  double jain_fairness = 0;
};

// Refuses (InvalidArgument, naming the field and the accepted range) no flows, a flow of
// no bytes or a negative start, delay or cap, xon above xoff, an other-class share outside
// [0, 1), a step outside (0, min(1 µs, τ/5, τ′/5)], or parameters ValidateParams refuses.
absl::StatusOr<EpisodeResult> RunEpisode(const EpisodeConfig& config);

}  // namespace weft::sim

#endif  // WEFT_SIM_DCQCN_EPISODE_H_
