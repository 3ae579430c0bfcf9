// The fabric twin's live model (issue 20): time averages for a whole fabric, cheap
// enough to advance thousands of NICs at the agents' 1 s telemetry interval.
//
// Flows (source NIC, destination NIC, UDP source port, demand) take their ECMP paths
// (Fabric::EcmpPath). Solve() gives every flow its max-min fair rate by progressive
// filling over the links (a flow's demand and its NIC's line rate are caps like any
// other), and then, at every switch egress port where DCQCN flows are held back (the
// port is the bottleneck of at least one flow, and the flows' line rates or demands would
// overfill it), takes the DCQCN fluid model's fixed point (sim/dcqcn_fluid.h,
// ClosedFormFixedPoint) for the N flows bottlenecked there sharing what the other flows
// leave of the port: the time-averaged queue q*, the ECN marking probability p* and the
// rates C_residual/N. A port whose flows fit (a lone flow at line rate, flows capped by
// their NICs) holds no standing queue and marks nothing.
//
// Per flow: its rate, the probability that a packet is marked on its path (1 − Π(1 − p)
// over the ports it crosses; a mark is a bit, marked twice is marked once), marked
// packets/s = that × packets/s, and CNPs/s as the notification point sends them: at most
// one per τ per flow, the first marked packet after the τ since the last CNP, so with
// Poisson marks at rate m the CNP rate is m / (1 + m·τ) (renewal: τ, then 1/m to the next
// mark). Packets are DcqcnParams::packet_bytes long, the unit the fixed point counts in.
//
// Advance(duration) adds rate × duration to monotonic counters (bytes, packets, marked
// packets, CNPs per flow; bytes, packets, marked packets per link) so agents can read
// counters as from a NIC. Advance costs O(flows + links); Solve costs
// O(Σ path lengths · log links) plus one fixed point per distinct (N, residual capacity).
//
// What it is not: the rates are max-min, not what DCQCN gives a flow marked at two
// congested ports (it gets less); no PFC (pause share 0); a port whose fixed point needs
// p* > Pmax with a mark-all switch (AboveKmax::kMarkAll) has no equilibrium — its queue
// is reported at Kmax and `settled` is false (the fluid model oscillates there).
//
// Not thread-safe: one thread sets flows, solves, advances and reads.
//
// Example:
//   ASSIGN_OR_RETURN(Fabric fabric, BuildLeafSpine(options));
//   ASSIGN_OR_RETURN(LiveModel model, LiveModel::Create(std::move(fabric), DcqcnParams()));
//   RETURN_IF_ERROR(model.SetFlows({{.src_nic = 1, .dst_nic = 0, .udp_src_port = 49152}}));
//   model.Advance(1.0);  // one telemetry interval
//   double cnps = model.flow_counters()[0].cnps;
#ifndef WEFT_SIM_LIVE_MODEL_H_
#define WEFT_SIM_LIVE_MODEL_H_

#include <cstdint>
#include <limits>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "sim/dcqcn_fluid.h"
#include "sim/fabric.h"

namespace weft::sim {

// A flow's demand when it sends as fast as DCQCN lets it.
inline constexpr double kAsFastAsAllowed = std::numeric_limits<double>::infinity();

struct FlowSpec {
  int src_nic = 0;
  int dst_nic = 0;
  uint16_t udp_src_port = 49152;
  double demand_bps = kAsFastAsAllowed;
};

struct FlowState {
  std::vector<int> path;  // link ids
  double rate_bps = 0;
  int bottleneck_link = -1;  // where progressive filling froze it (-1: its demand)
  double mark_probability = 0;
  double marked_packets_per_s = 0;
  double cnps_per_s = 0;
};

struct PortState {  // a link's egress port (the link's `from` side)
  double rate_bps = 0;  // Σ flow rates
  double utilization = 0;
  int flows = 0;              // flows crossing it
  int bottlenecked_flows = 0;  // flows frozen here
  bool congested = false;      // DCQCN holds flows back here (a queue, marks)
  bool settled = true;         // false: the fixed point lies beyond the ramp of a mark-all switch
  double queue_bytes = 0;      // time average
  double mark_probability = 0;
  double marked_packets_per_s = 0;
};

struct FlowCounters {
  double bytes = 0;
  double packets = 0;
  double marked_packets = 0;
  double cnps = 0;
};

struct LinkCounters {
  double bytes = 0;
  double packets = 0;
  double marked_packets = 0;
};

class LiveModel {
 public:
  // `params` is the switches' ECN ramp (Kmin, Kmax, Pmax, above Kmax) and the NICs' DCQCN
  // parameters, one set for the fabric; its capacity_bps is ignored (each port has its
  // link's). Fails with ValidateParams' message.
  static absl::StatusOr<LiveModel> Create(Fabric fabric, const DcqcnParams& params);

  // Replaces the flows (counters start again from zero), routes them and solves. Refuses
  // a flow with a bad NIC (EcmpPath's message, prefixed "flows[i]") or a demand that is
  // not positive.
  absl::Status SetFlows(std::vector<FlowSpec> flows);

  // Adds duration_s of the current time averages to the counters.
  // Fails on a negative or non-finite duration.
  absl::Status Advance(double duration_s);

  const Fabric& fabric() const { return fabric_; }
  const std::vector<FlowState>& flows() const { return flow_states_; }
  const std::vector<PortState>& ports() const { return ports_; }  // by link id
  const std::vector<FlowCounters>& flow_counters() const { return flow_counters_; }
  const std::vector<LinkCounters>& link_counters() const { return link_counters_; }
  double time_s() const { return time_s_; }
  // Fixed points computed by the last Solve (distinct (N, capacity) pairs).
  int fixed_points_computed() const { return fixed_points_computed_; }

 private:
  LiveModel(Fabric fabric, const DcqcnParams& params);
  void Solve();
  void FillRates();
  void SettlePorts();

  Fabric fabric_;
  DcqcnParams params_;
  std::vector<FlowSpec> specs_;
  std::vector<FlowState> flow_states_;
  std::vector<PortState> ports_;
  std::vector<std::vector<int>> flows_on_link_;
  std::vector<FlowCounters> flow_counters_;
  std::vector<LinkCounters> link_counters_;
  double time_s_ = 0;
  int fixed_points_computed_ = 0;
};

// The notification point's CNP rate for a flow whose marked packets arrive at
// marks_per_s: m / (1 + m·τ), at most one per τ.
double CnpsPerSecond(double marks_per_s, double cnp_interval_s);

}  // namespace weft::sim

#endif  // WEFT_SIM_LIVE_MODEL_H_
