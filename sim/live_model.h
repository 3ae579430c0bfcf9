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
// O(Σ path lengths · log links) plus one fixed point per (parameter set, N, residual
// capacity) not met in an earlier solve (they are kept, up to 65,536).
//
// Faults, injected and cleared at run time (they persist across SetFlows; counters keep
// counting): a cable down (both directions at capacity 0; every flow is routed again with
// the down links left out of each switch's ECMP group and of the hop counts, so flows move
// to the remaining equal-cost next hops, and a flow with no path left has rate 0), a
// degraded cable (both directions' capacity scaled), a NIC storming PFC pauses (its receive
// side pauses its ToR's egress port toward it for a given share of the time) and a dead
// node (its NICs send and receive nothing: flows from or to it have rate 0).
//
// PFC, flow level, priority 3 only (the RoCE class; CNPs on priority 6 are not modelled).
// Derived from the switch rules in docs fabric-facts §5; no published fluid model has PFC.
// Checked against the transient model of sim/pfc_fluid.h (the same rules at 0.1 µs steps;
// docs/benchmarks.md), not yet against a packet-level run. Assumptions:
//  - A port paused for share s of the time serves at most (1 − s)·C.
//  - Rates are first solved without pauses (max-min, as above), the "offered" rates; PFC
//    then throttles them. A port whose offered arrival A exceeds (1 − s)·C is backlogged:
//    a queue fed faster than it drains grows without bound, so the ingress accounting of
//    the ports feeding it reaches the dynamic Xoff ((buffer − Σ headroom − Σ reserve −
//    shared in use) >> 3) after Xoff/(A − (1 − s)·C) seconds — microseconds to
//    milliseconds, well inside a telemetry interval — and from then on the switch pauses
//    them whenever shared use ≥ Xoff and resumes at Xoff − 3 KB (Xon): the ingress
//    counters ride at Xoff and the headroom (≈ 3 × rate × link delay) absorbs what is in
//    flight, so nothing is dropped. The time average is what this model reports, not the
//    on/off cycles nor the queue.
//  - The backlogged port serves its flows in proportion to their arrival (FIFO), so every
//    flow through it is cut to σ = (1 − s)·C / A of its offered rate, and each feeding
//    port is paused in proportion to its share of the excess: it too passes σ of what it
//    offers. A paused port holds all of its priority-3 traffic (head-of-line blocking: the
//    stuck packets sit in the same FIFO as the rest), so every flow through it — also the
//    victims whose own destination is healthy — is cut by the same σ, and its own feeding
//    ports are paused in turn, hop by hop up to the senders' NICs. A port's σ is the least
//    σ of the ports its flows enter next; a flow's rate is its offered rate × σ of its
//    first port (its NIC's uplink). Up-down routes make the ports a DAG (no PFC deadlock).
//  - Pause share of a port: a storming NIC's share on its ToR's port toward it; at a port
//    backlogged by the pauses, 1 − (its throughput)/C (a backlogged port sends at line
//    rate whenever it is not paused).
//  - A flow DCQCN does not hold back (congestion_controlled = false) and that gets less than
//    it would send, bottlenecked at a switch port, backlogs every port before that one on
//    its path the same way (PFC, not DCQCN, holds it to its max-min rate): they report
//    1 − throughput/C (an incast N → 1 at line rate: 1 − 1/N at each sender). Other flows
//    through those ports are not cut for it (a victim of such a pause keeps its max-min
//    rate), and the port's queue is reported at Kmax where PFC holds it near the dynamic
//    Xoff's level (sim/pfc_fluid.h; docs/benchmarks.md has both discrepancies).
//  - Bandwidth the throttled flows leave is not handed to the others again (DCQCN would,
//    over tens of ms), and with two storms a flow takes the smaller σ, so the throttling
//    is conservative then. DCQCN's fixed points are taken on the throttled rates.
//  - Counters: pause time in µs per direction (as mlx5's {rx,tx}_prio3_pause_duration)
//    and pause frames (as {rx,tx}_prio3_pause) at one XOFF frame per refresh: a pausing
//    port sends frames asking for kPauseQuanta quanta of 512 bit times and refreshes at
//    half that time, kPauseRefreshFraction (an assumption: roce-facts does not state the
//    refresh; the XON frame ending each episode is not counted).
//
// What it is not: the rates are max-min, not what DCQCN gives a flow marked at two
// congested ports (it gets less); a port whose fixed point needs
// p* > Pmax with a mark-all switch (AboveKmax::kMarkAll) has no equilibrium — its queue
// is reported at Kmax and `settled` is false (the fluid model oscillates there).
//
// Scheduling between traffic classes (ETS / strict priority, IEEE 802.1Qaz), at every
// egress port (switch ports and NIC uplinks alike). A flow carries an 802.1p priority
// (FlowSpec::priority, the RoCE priority 3 by default); a port's PortScheduler maps it to
// a traffic class (TC) and serves TCs as a DCB port does: strict-priority TCs first, the
// higher TC first, each taking what its flows need; the ETS TCs share what is left in
// proportion to their weights, work-conserving (a TC that needs less than its share
// leaves the rest to the other ETS TCs in proportion to their weights; zero-weight ETS TCs
// get what the weighted ones leave, equally). Within a TC the flows share max-min. It is
// part of the max-min solve: at each port where flows of two or more TCs meet, each TC
// is a further resource of progressive filling with a capacity the scheduler gives it;
// the solve is repeated, each TC's need taken from the last solve (a TC with a flow that
// has no max-min bottleneck but this port — no other full link or class share where it has
// the largest rate, not its demand — wants all it can get; otherwise it needs the sum of
// its flows' rates), until no TC's capacity moves (kMaxSchedulerPasses;
// scheduler_passes() and scheduler_settled() say how it went; each pass is one
// progressive filling). At equal levels links freeze flows before class shares, a NIC's
// link before a switch port, and then the lower id, so a tie falls the same way whatever
// else the fabric carries (a ToR's uplink, built before the spine's port toward the next
// rack, holds the flows both would). The default scheduler maps every
// priority to TC 0, which gets the whole port: the model without classes, exactly.
// What it is not: packet-level (no per-packet round robin, no queue of the non-RoCE TCs,
// no burst a strict TC takes from the others); a port's scheduler serves what reaches
// it, with no buffer sharing between TCs. Only flows on kLosslessPriority are held by
// PFC and take the DCQCN fixed points (marks, CNPs, queue); flows on other priorities get
// their max-min rate under the schedulers and are neither paused nor marked here (a
// storm's backlog counts priority-3 arrivals only; a paused port's pause share is still
// taken from its whole throughput).
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

#include <array>
#include <cstdint>
#include <limits>
#include <tuple>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/node_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "sim/dcqcn_fluid.h"
#include "sim/fabric.h"

namespace weft::sim {

// A flow's demand when it sends as fast as DCQCN lets it.
inline constexpr double kAsFastAsAllowed = std::numeric_limits<double>::infinity();

// The 802.1p priority PFC and DCQCN act on (the RoCE recipe's priority 3), and the
// number of priorities and of traffic classes of a DCB port.
inline constexpr int kLosslessPriority = 3;
inline constexpr int kNumPriorities = 8;
inline constexpr int kNumTrafficClasses = 8;

// How a traffic class is served (IEEE 802.1Qaz TSA): before the others, or sharing by weight.
enum class Tsa { kStrict, kEts };

// An egress port's scheduling between traffic classes (see the header comment). The
// default: every priority in TC 0, ETS, all the weight: no classes.
struct PortScheduler {
  std::array<int, kNumPriorities> priority_to_tc{};  // each in [0, kNumTrafficClasses)
  std::array<Tsa, kNumTrafficClasses> tsa = {Tsa::kEts, Tsa::kEts, Tsa::kEts, Tsa::kEts,
                                             Tsa::kEts, Tsa::kEts, Tsa::kEts, Tsa::kEts};
  // ETS weights (percent, as tc_bandwidth_percent; only the ratios matter); >= 0, finite.
  std::array<double, kNumTrafficClasses> weight = {100, 0, 0, 0, 0, 0, 0, 0};
};

// Solve passes at most, per Solve, before the per-TC capacities are taken as they are.
inline constexpr int kMaxSchedulerPasses = 32;

struct FlowSpec {
  int src_nic = 0;
  int dst_nic = 0;
  uint16_t udp_src_port = 49152;
  double demand_bps = kAsFastAsAllowed;
  // false: DCQCN does not hold it back (its sender's reaction point or its receiver's
  // notification point is off on its priority), so a port where it is bottlenecked keeps
  // no equilibrium (see PortState::settled).
  bool congestion_controlled = true;
  // 802.1p priority, [0, kNumPriorities): each port's scheduler maps it to a TC; only
  // kLosslessPriority is paused by PFC and held back by DCQCN.
  int priority = kLosslessPriority;
};

// PFC frames ask for this many quanta (512 bit times each) and are refreshed after this
// share of the time they ask for (see the header comment).
inline constexpr int kPauseQuanta = 0xFFFF;
inline constexpr double kPauseRefreshFraction = 0.5;

struct FlowState {
  std::vector<int> path;  // link ids; empty when no path is left (links down)
  double offered_bps = 0;  // the max-min rate before PFC throttles it
  double rate_bps = 0;
  int bottleneck_link = -1;  // where progressive filling froze it (-1: its demand)
  double mark_probability = 0;
  double marked_packets_per_s = 0;
  double cnps_per_s = 0;
};

struct PortState {  // a link's egress port (the link's `from` side)
  double rate_bps = 0;  // Σ flow rates
  double capacity_bps = 0;  // after faults
  double offered_bps = 0;   // Σ min(demand, line rate) of its flows: what they would send
  double utilization = 0;
  int flows = 0;              // flows crossing it
  int bottlenecked_flows = 0;  // flows frozen here
  bool congested = false;      // DCQCN holds flows back here (a queue, marks)
  // false: the fixed point lies beyond the ramp of a mark-all switch, or a flow
  // bottlenecked here is not congestion controlled (the queue rides at Kmax, p = 1).
  bool settled = true;
  double queue_bytes = 0;      // time average
  double mark_probability = 0;
  double marked_packets_per_s = 0;
  // Priority 3 pause shares (0..1) of this port: rx = paused by the peer (this link's
  // `to` side), tx = pausing the peer (over the reverse link). A NIC's are its uplink's.
  double pause_rx_share = 0;
  double pause_tx_share = 0;
  // Σ flow rates per traffic class of the port's scheduler.
  std::array<double, kNumTrafficClasses> class_rate_bps{};
};

struct FlowCounters {
  double bytes = 0;
  double packets = 0;
  double marked_packets = 0;
  double cnps = 0;
};

struct LinkCounters {  // of the link's egress port, the `from` side
  double bytes = 0;
  double packets = 0;
  double marked_packets = 0;
  // Priority 3 PFC, as mlx5 names them: {rx,tx}_prio3_pause_duration and _pause.
  double rx_pause_duration_us = 0;
  double tx_pause_duration_us = 0;
  double rx_pause_frames = 0;
  double tx_pause_frames = 0;
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

  // Faults. Each re-routes if needed and solves again; they persist across SetFlows and
  // leave the counters alone. A link id names its cable: both directions are affected.
  // Refuse (InvalidArgument) an unknown id or a value out of range, naming both and the
  // accepted range; the model is unchanged then.
  absl::Status SetLinkDown(int link, bool down);
  // capacity × scale for both directions, scale in (0, 1]; 1 clears.
  absl::Status SetLinkCapacityScale(int link, double scale);
  // The NIC pauses its ToR's egress port toward it for `share` of the time, [0, 1]; 0 clears.
  absl::Status SetPauseStorm(int nic, double share);
  absl::Status SetNodeDead(int node, bool dead);
  void ClearFaults();

  // Per-NIC DCQCN parameters: NIC i's reaction point runs param_sets[set_of_nic[i]]; a
  // congested port takes the fixed point of the set most of its bottlenecked flows'
  // senders run (ties: the lower index), and a flow's CNP interval τ is its sender's set's.
  // The switch side (Kmin, Kmax, Pmax, above Kmax) stays the Create params'. Empty
  // set_of_nic: every NIC runs the Create params (the default). Refuses a set_of_nic that
  // does not have one entry per NIC in range, or a set ValidateParams refuses; solves again.
  absl::Status SetNicParams(std::vector<DcqcnParams> param_sets, std::vector<int> set_of_nic);

  // Scheduling between traffic classes: link k's egress port runs per_link[k]. Empty: the
  // default PortScheduler everywhere. Refuses (InvalidArgument, naming the entry, the value
  // and the range) a size other than 0 or one per link, a TC out of range, or a weight that
  // is negative or not finite; the model is unchanged then. Solves again.
  absl::Status SetPortSchedulers(std::vector<PortScheduler> per_link);
  const PortScheduler& scheduler(int link) const;  // `link` must be valid
  // Passes of the last Solve's scheduling loop (1 when no port has two classes), and
  // whether the TCs' capacities stopped moving within kMaxSchedulerPasses.
  int scheduler_passes() const { return scheduler_passes_; }
  bool scheduler_settled() const { return scheduler_settled_; }

  // Adds duration_s of the current time averages to the counters.
  // Fails on a negative or non-finite duration.
  absl::Status Advance(double duration_s);

  const Fabric& fabric() const { return fabric_; }
  const std::vector<FlowState>& flows() const { return flow_states_; }
  const std::vector<PortState>& ports() const { return ports_; }  // by link id
  const std::vector<FlowCounters>& flow_counters() const { return flow_counters_; }
  const std::vector<LinkCounters>& link_counters() const { return link_counters_; }
  // A NIC's port and PFC counters are its uplink's (rx: paused by its ToR; tx: pausing it).
  // `nic` must be valid.
  const PortState& nic_port(int nic) const { return ports_[fabric_.nics()[nic].uplink]; }
  const LinkCounters& nic_counters(int nic) const {
    return link_counters_[fabric_.nics()[nic].uplink];
  }
  double time_s() const { return time_s_; }
  // Fixed points computed by the last Solve (distinct (N, capacity) pairs).
  int fixed_points_computed() const { return fixed_points_computed_; }

 private:
  LiveModel(Fabric fabric, const DcqcnParams& params);
  absl::Status CheckLink(int link) const;
  static uint64_t RouteKey(const FlowTuple& tuple);
  absl::StatusOr<const std::vector<int>*> CachedPath(const FlowTuple& tuple,
                                                     bool around_down_links);
  void Route();
  void IndexFlowsOnLinks();
  void Solve();
  // A traffic class at a port where two or more meet: a resource of progressive filling.
  struct ClassShare {
    int link = 0;
    int tc = 0;
    double capacity_bps = 0;
    std::vector<int> flows;
  };
  void FillRates(const std::vector<ClassShare>& shares = {});
  void FillScheduledRates();
  bool Lossless(int flow) const { return specs_[flow].priority == kLosslessPriority; }
  void ApplyPfc();
  // A flow DCQCN does not hold back keeps sending min(demand, line rate) past the port
  // where it is bottlenecked; the excess fills the ToR's ingress accounting to Xoff and PFC
  // pauses every port before that one on its path, each backlogged: paused 1 − throughput/C.
  void PauseBehindUncontrolledFlows();
  // A backlogged port sends at line rate whenever it is not paused: its pause share is at
  // least 1 − throughput/C.
  void MarkBacklogged(int link);
  void SettlePorts();
  void SettleCongestedPort(int link, absl::flat_hash_map<std::tuple<int, int, int64_t>,
                                                         FixedPoint>* cache, PortState* port);
  // ClosedFormFixedPoint of a parameter set at exactly this capacity, kept across solves
  // (jobs whose phases do not change leave most ports' shares as they were).
  const FixedPoint& MemoizedFixedPoint(const DcqcnParams& params, int set, int flows,
                                       double capacity_bps);
  const DcqcnParams& SenderParams(int flow) const;

  Fabric fabric_;
  DcqcnParams params_;
  std::vector<DcqcnParams> nic_param_sets_;  // empty: params_ for every NIC
  std::vector<int> nic_param_set_;           // per NIC, when nic_param_sets_ is not empty
  std::vector<FlowSpec> specs_;
  std::vector<FlowState> flow_states_;
  std::vector<PortState> ports_;
  // The flows crossing each link, in flow order, all links' in one array: link k's are
  // link_flows_[link_flows_begin_[k], link_flows_begin_[k + 1]).
  absl::Span<const int> flows_on_link(int k) const {
    return absl::MakeConstSpan(link_flows_.data() + link_flows_begin_[k],
                               link_flows_.data() + link_flows_begin_[k + 1]);
  }
  std::vector<int> link_flows_begin_;
  std::vector<int> link_flows_;
  std::vector<int> link_flows_fill_;  // IndexFlowsOnLinks' scratch
  // Flow f's path again, all paths in one array: [flow_links_begin_[f], ...[f + 1]).
  absl::Span<const int> flow_path(int f) const {
    return absl::MakeConstSpan(flow_links_.data() + flow_links_begin_[f],
                               flow_links_.data() + flow_links_begin_[f + 1]);
  }
  std::vector<int> flow_links_begin_;
  std::vector<int> flow_links_;
  std::vector<double> link_tie_;  // per link: its key's factor at equal levels
  std::vector<FlowCounters> flow_counters_;
  // Faults, per directed link / NIC / node.
  std::vector<bool> link_down_;
  std::vector<double> capacity_scale_;
  std::vector<double> storm_share_;  // per link: the share its `to` NIC pauses it
  std::vector<bool> node_dead_;
  std::vector<double> capacity_bps_;  // after faults
  std::vector<double> pause_share_;   // per link: rx pause share of its egress port
  std::vector<LinkCounters> link_counters_;
  // Node maps: SetFlows keeps pointers to the paths while it adds more.
  absl::node_hash_map<uint64_t, std::vector<int>> all_up_routes_;
  absl::node_hash_map<uint64_t, std::vector<int>> routes_around_down_links_;
  // Per (parameter set, N, capacity's bits); cleared with the parameter sets.
  absl::flat_hash_map<std::tuple<int, int, uint64_t>, FixedPoint> fixed_point_memo_;
  // Progressive filling's scratch, kept between solves so a solve allocates nothing.
  struct FillEvent {
    double key;  // when (in the common fill level) this saturates; the heap's order
    int id;      // resource id, or -(flow id) - 1 for a flow's demand (level = key)
  };
  std::vector<FillEvent> fill_heap_;
  std::vector<double> fill_frozen_bps_;
  std::vector<int> fill_unfrozen_;
  std::vector<char> fill_flow_frozen_;
  std::vector<double> fill_rate_;
  std::vector<int> fill_bottleneck_;
  // SettlePorts' scratch: what a port's sums read of each flow, and each port's marking.
  struct SettleFlow {
    double rate_bps;
    double offered_bps;  // min(demand, its NIC's line rate)
    int bottleneck_link;
    int priority;
  };
  std::vector<SettleFlow> settle_flows_;
  std::vector<double> port_marks_;
  double time_s_ = 0;
  int fixed_points_computed_ = 0;
  std::vector<PortScheduler> schedulers_;  // per link; empty: the default everywhere
  int scheduler_passes_ = 1;
  bool scheduler_settled_ = true;
};

// PFC pause frames per second of a port paused (or pausing) for pause_share of the time
// on a link of link_bps: one XOFF per refresh (kPauseQuanta, kPauseRefreshFraction).
double PauseFramesPerSecond(double pause_share, double link_bps);

// The notification point's CNP rate for a flow whose marked packets arrive at
// marks_per_s: m / (1 + m·τ), at most one per τ.
double CnpsPerSecond(double marks_per_s, double cnp_interval_s);

// What a port of `capacity_bps` gives each of its traffic classes `tcs` (distinct) that
// need `need_bps` (infinite: all it can get) under `scheduler`: strict TCs first (higher
// first), then ETS by weight, work-conserving. What no class needs goes to every class
// (the port's own capacity still bounds their sum in the solve).
std::vector<double> ScheduleClasses(const PortScheduler& scheduler, double capacity_bps,
                                    const std::vector<int>& tcs,
                                    const std::vector<double>& need_bps);

}  // namespace weft::sim

#endif  // WEFT_SIM_LIVE_MODEL_H_
