// The fabric twin (issue 20): one named cluster on a simulated RoCE fabric that runs on
// by itself. It joins the live model (sim/live_model.h), the training jobs
// (sim/training_job.h) and the NICs' own QoS and DCQCN tunables into the thing weft-fabric
// serves: agents read each NIC's counters from it by their real names and write their
// tunables into it; operators inject faults; jobs placed through the controller run on
// it, iteration after iteration, and slow down when the fabric does.
//
// Time: Advance(seconds) moves the twin forward. Inside, jobs go phase by phase as in
// TrainingRun (compute, then each communication phase at the pace of its slowest flow);
// the live model is solved again whenever the set of phases in progress, the faults or
// the tunables change, and its time averages are integrated into every NIC's counters.
//
// Counters (ReadNic) as a host shows them, cumulative from the twin's start (the twin
// integrates each NIC's rates itself, so they never go back when the live model's
// SetFlows starts its own again; packets are DcqcnParams::packet_bytes long):
//  - port_counters (ports/1/counters/): port_xmit_data, port_rcv_data (4-octet words),
//    port_xmit_packets, port_rcv_packets, unicast_{xmit,rcv}_packets (all RoCE traffic is
//    unicast), port_rcv_errors (frames lost to gray loss on the NIC's own cable toward it),
//    link_downed (each time the NIC's cable goes down), port_xmit_wait (µs its uplink was
//    paused while it had data to send: a tick of 1 µs here, the vendor's elsewhere), and
//    port_xmit_discards, symbol_error, link_error_recovery (always 0);
//  - hw_counters: np_ecn_marked_roce_packets (marked packets this NIC received),
//    np_cnp_sent (CNPs its notification point sent), rp_cnp_handled / rp_cnp_ignored (CNPs
//    its reaction point got, ignored when DCQCN is off on the RoCE priority), and the
//    32-bit Q-counters out_of_sequence, packet_seq_err, local_ack_timeout_err,
//    duplicate_request, implied_nak_seq_err, rnr_nak_retry_err, out_of_buffer, which wrap
//    modulo 2^32 as mlx5's do (WrapQCounter); the last four stay 0;
//  - ethtool: {rx,tx}_prio<p>_pause and {rx,tx}_prio<p>_pause_duration (µs) for every
//    priority the NIC has PFC on, and only those; the model pauses the RoCE priority only.
//
// Loss (go-back-N, as RC QPs recover): a flow loses p = 1 − Π(1 − d) of its packets over
// the ports it crosses, d = a gray-loss fault's drop rate on the cable, and — only for a
// flow without PFC at both ends on its priority — the share PFC would have held back at a
// port: its pause share, or at a congested port the share of the offered line-rate load
// above capacity, 1 − C/offered (an upper bound: the fluid averages have no bursts). Every
// loss costs the window in flight (W = rate × round-trip propagation, in packets), so
// goodput is rate × (1 − p)/(1 + p·(W − 1)) (GoBackNGoodputShare), and jobs go at their
// flows' goodput. Per loss gap the receiver counts out_of_sequence for the packets it
// discards (at least one) and the sender one packet_seq_err (the NAK); a live sender whose
// flow gets nothing through (no path, a dead peer, total loss) counts local_ack_timeout_err
// once per ACK timeout (4.096 µs · 2^20, NCCL_IB_TIMEOUT 20).
//
// Tunables: each NIC starts as a node set up with the common production recipe (DSCP
// trust, RoCE DSCP 26 -> priority 3 with PFC, CNPs DSCP 48 on priority 6 (np_cnp_prio 6,
// np_cnp_prio_mode 0), ETS 50/50 on TC 0 and 3, default_roce_tos 106, firmware DCQCN
// defaults with np_min_time_between_cnps 0, DCQCN on every priority: agent/tunables'
// simulated NIC) and running the Create params in the model. SetNicTunables merges as a
// DesiredState does (a DCB part replaces the DCB part, default_roce_tos on its own, set
// DCQCN scalars replace, a non-empty priority list replaces the list) and refuses what the
// NIC would (common/tunable_ranges' ranges), or what the model cannot run (MapCcParams: rp_gd
// other than 11); policy checks across the fields (PFC on the RoCE priority) are the
// controller's, so PFC can be turned off. What the twin does with them, per flow: its DSCP
// is the sender's default_roce_tos >> 2, mapped to a priority by each end (DSCP trust: the
// NIC's map; otherwise, or unmapped, DSCP >> 3).
// PFC off at either end -> the loss above, and no pause counters; the sender's reaction
// point off -> CNPs are counted as ignored; the receiver's notification point off -> no
// CNPs; either off -> DCQCN does not hold the flow back, so a port where it is bottlenecked
// rides at Kmax marking every packet (LiveModel: unsettled); DCQCN scalars changed ->
// the NIC runs MapCcParams of them (the switch side from the Create params), and each
// congested port takes the fixed point of the parameters most of its senders run. CNPs
// sent on the flows' own priority while it is lossy (np_cnp_prio, or with np_cnp_prio_mode
// 1 the priority np_cnp_dscp maps to) are dropped with the lossy data on their way back
// over the flow's cables, and gray loss drops CNPs like any packet: rp_cnp_handled falls
// below the peer's np_cnp_sent (the rates do not feel the lost CNPs).
//
// Traffic classes (LiveModel's schedulers): a job's flows carry its dscp
// (TrainingJobSpec::dscp; by default the sender's RoCE DSCP), which the sender maps to a
// priority by its DSCP table as above; the flow keeps that priority across the fabric (the
// switches are taken to classify as the sender does: the recipe's tables agree). Each
// NIC's uplink schedules by the NIC's own DCB (priority_to_tc, tc_tsa,
// tc_bandwidth_percent), every switch port by the fabric-wide switch DCB (SetSwitchQos;
// the recipe's at Create), so a storage job on its own class and a training job share an
// oversubscribed port by the switch's ETS weights. Only the RoCE priority 3 is modelled
// with DCQCN and PFC; a job on another priority without PFC gets the loss above where its
// port is congested (the port's whole offered load counts: classes are not separated
// there yet).
//
// Faults (InjectFault): a cable down, gray loss on a cable (both directions), a flapping
// cable (down for the first half of each period from its injection; Advance stops at every
// edge), a NIC storming PFC pauses, a degraded cable, a dead node (its flows get rate 0, its
// jobs stall; ReadNic still answers); cleared by id, the model rebuilt from the faults left,
// so clearing restores the rates exactly. Names: nodes and racks as
// given, NICs "mlx5_<rail>", switches "tor-<rack suffix>" and "spine-<k>", cables
// "<end>--<end>" (a NIC end is "<node>/mlx5_<rail>"), "#<k>" after the second and later
// parallel cables between the same two switches (k = 2, 3, ...).
//
// Cost: Advance integrates NIC rates between events (a phase ending, a flap edge) and
// solves only when the phases in progress, the faults or the tunables changed; the demo
// (32 nodes × 8 NICs, 5 jobs) takes ~1.5 ms per Advance(0.1) unoptimized (twin_test); 1,024
// nodes × 8 NICs with 50 jobs solve 130-160 times per simulated second at 3-9 ms each
// (bench/sim:twin_bench). A job's path congestion is read off the model when jobs() asks.
//
// Pure logic, deterministic. Not thread-safe: weft-fabric serializes every call.
//
// Example:
//   ASSIGN_OR_RETURN(TwinTopology topology, BuildTwinTopology(DemoRacks(4, 8, 2), options));
//   ASSIGN_OR_RETURN(Twin twin, Twin::Create(std::move(topology), DcqcnParams()));
//   RETURN_IF_ERROR(twin.StartJob(job));
//   RETURN_IF_ERROR(twin.Advance(1.0));
//   ASSIGN_OR_RETURN(TwinNicReading nic, twin.ReadNic(/*nic=*/0));
#ifndef WEFT_SIM_TWIN_H_
#define WEFT_SIM_TWIN_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/weft/v1/desired_state.pb.h"
#include "sim/dcqcn_fluid.h"
#include "sim/fabric.h"
#include "sim/live_model.h"
#include "sim/training_job.h"

namespace weft::sim {

struct RackSpec {
  std::string name;  // "rack-a"
  std::string pod;   // "pod-1"
  std::vector<std::string> nodes;
};

// Racks rack-a, rack-b, ... (rack-aa after rack-z) of nodes gpu-<suffix><NN> (01..), in
// pods pod-1, pod-2, ... of racks_per_pod racks each: the demo's cluster.
std::vector<RackSpec> DemoRacks(int racks, int nodes_per_rack, int racks_per_pod);

struct TwinFabricOptions {
  int nics_per_node = 8;
  double nic_bps = 400e9;
  int uplinks_per_tor = 8;
  int spines = 0;  // 0: uplinks_per_tor
  double oversubscription = 1;
  double nic_link_delay_s = 1e-7;
  double fabric_link_delay_s = 5e-7;
};

struct TwinNode {
  std::string name;
  std::string rack;
  std::string pod;
};

// A named cluster on a fabric: node i of `nodes` is the fabric's node i.
struct TwinTopology {
  Fabric fabric;
  std::vector<TwinNode> nodes;
  std::vector<std::string> switch_names;  // by switch id
};

// A leaf-spine with one ToR per rack (racks may differ in size; a ToR's uplinks are sized
// for its rack as in BuildLeafSpine). Fails on an empty or duplicate rack or node name,
// an empty rack, or options BuildLeafSpine would refuse.
absl::StatusOr<TwinTopology> BuildTwinTopology(const std::vector<RackSpec>& racks,
                                               const TwinFabricOptions& options);

struct TwinNicReading {
  std::string device;  // "mlx5_<rail>"
  bool link_up = true;
  double speed_bps = 0;  // 0 while the link is down
  std::map<std::string, uint64_t> port_counters;
  std::map<std::string, uint64_t> hw_counters;
  std::map<std::string, uint64_t> ethtool;
};

// What a 32-bit mlx5 Q-counter reads after `count` events: count modulo 2^32.
uint64_t WrapQCounter(double count);

// The share of a go-back-N sender's packets that carry new data at packet loss `loss`
// with `window_packets` in flight (at least 1): (1 − p)/(1 + p·(W − 1)).
double GoBackNGoodputShare(double loss, double window_packets);

enum class TwinFaultKind {
  kLinkDown,       // cable
  kGrayLoss,       // cable, value = drop rate in (0, 1)
  kFlappingLink,   // cable, value = period in seconds (down for the first half of each)
  kPfcStorm,       // nic, value = pause share in (0, 1]
  kDegradedLink,   // cable, value = capacity scale in (0, 1)
  kDeadNode,       // node
};
const char* TwinFaultKindName(TwinFaultKind kind);  // "link_down", "pfc_storm", ...

struct TwinFault {
  int id = 0;  // assigned by InjectFault (1, 2, ...)
  TwinFaultKind kind = TwinFaultKind::kLinkDown;
  int node = -1;
  int nic = -1;    // fabric NIC id
  int cable = -1;  // the cable's first link id (even; InjectFault takes either direction's)
  double value = 0;
  double injected_at_s = 0;
};

// The congestion on the ports a job's flows cross, as the live model last solved them while
// the job communicated (its newest communication phase).
struct PathCongestion {
  double max_utilization = 0;
  double max_queue_bytes = 0;
  double max_mark_probability = 0;
  double max_pause_share = 0;  // RoCE-priority rx pause share of a port on its paths
  // The port that limits the job most: the most paused, then the fullest queue, then the
  // busiest; -1 before the job first communicated.
  int hottest_link = -1;
};

struct TwinJobStatus {
  std::string name;
  std::vector<int> nodes;  // rank order
  int iterations_done = 0;
  std::optional<IterationReport> last;  // the newest completed iteration
  double first_iteration_s = 0;         // 0 until one completed
  // No progress possible: a flow of the phase in progress gets nothing through (no path,
  // a dead end) or one of its nodes is dead (it computes nothing either).
  bool stalled = false;
  PathCongestion paths;
};

class Twin {
 public:
  // `params`: the switches' ECN ramp and the DCQCN parameters the NICs start with.
  // Refuses params LiveModel refuses and a topology whose names do not match its fabric.
  static absl::StatusOr<Twin> Create(TwinTopology topology, const DcqcnParams& params);

  const TwinTopology& topology() const;
  double time_s() const;

  // Names to ids; NotFound naming what was asked for (and, for a node, how many exist).
  absl::StatusOr<int> NodeByName(absl::string_view name) const;
  absl::StatusOr<int> NicByDevice(int node, absl::string_view device) const;
  absl::StatusOr<int> CableByName(absl::string_view name) const;
  std::string CableName(int link) const;   // either direction's id
  std::string VertexName(const Vertex& vertex) const;

  // A NIC's counters now. `nic` is a fabric NIC id; InvalidArgument when out of range.
  absl::StatusOr<TwinNicReading> ReadNic(int nic) const;

  // A NIC's tunables (the complete QoS and DCQCN state), and a rewrite of them. Refuses
  // (InvalidArgument naming the parameter, its value and the range) what a NIC would
  // refuse; the NIC keeps its old tunables then.
  absl::StatusOr<weft::v1::NicTunablesReading> NicTunables(int nic) const;
  absl::Status SetNicTunables(int nic, const weft::v1::NodeQos& qos,
                              const weft::v1::DcqcnParams& dcqcn);

  // The DCB every switch egress port schedules by (priority_to_tc, tc_tsa,
  // tc_bandwidth_percent; the rest is not used): the recipe's at Create (TC 3 and TC 0 ETS
  // 50 % each, TC 6 strict). Refuses (InvalidArgument naming the field and the range) a
  // QoS ValidateNodeQos refuses or one without those three lists; solves again.
  absl::Status SetSwitchQos(const weft::v1::NodeQos& qos);
  const weft::v1::NodeQos& switch_qos() const;

  // Faults; the model is solved again at once. InjectFault refuses an unknown id or a
  // value out of range (InvalidArgument naming both and the range) and returns the fault
  // with its id and time.
  absl::StatusOr<TwinFault> InjectFault(TwinFault fault);
  absl::Status ClearFault(int id);  // NotFound for an unknown id
  void ClearAllFaults();
  std::vector<TwinFault> faults() const;

  // Jobs: a job starts computing its first iteration now. Refuses a duplicate name
  // (AlreadyExists), a node already in a job (FailedPrecondition), and what
  // BuildJobPhases refuses (InvalidArgument). Flows take UDP source ports in start order
  // from kFirstEphemeralPort, as TrainingRun's jobs do.
  absl::Status StartJob(TrainingJobSpec job);
  absl::Status StopJob(absl::string_view name);  // NotFound for an unknown job
  std::vector<TwinJobStatus> jobs() const;        // in start order

  // Moves the twin forward; fails on a negative or non-finite duration.
  absl::Status Advance(double seconds);

  // The live model as last solved (ports and flows of the phases in progress).
  const LiveModel& model() const;

  // How many times the live model was solved with new flows (LiveModel::SetFlows: route,
  // max-min, fixed points) since Create: the cost bench/sim:twin_bench counts.
  int solves() const;

  Twin(Twin&&) noexcept;
  Twin& operator=(Twin&&) noexcept;
  ~Twin();

 private:
  struct State;
  explicit Twin(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace weft::sim

#endif  // WEFT_SIM_TWIN_H_
