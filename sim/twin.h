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
// Counters (ReadNic) as a host shows them, cumulative from the twin's start:
//  - port_counters (ports/1/counters/): port_xmit_data, port_rcv_data (4-octet words),
//    port_xmit_packets, port_rcv_packets, unicast_{xmit,rcv}_packets, port_xmit_discards,
//    port_rcv_errors, link_downed, symbol_error, link_error_recovery, port_xmit_wait;
//  - hw_counters: np_ecn_marked_roce_packets (marked packets this NIC received),
//    np_cnp_sent (CNPs its notification point sent), rp_cnp_handled / rp_cnp_ignored (CNPs
//    its reaction point got, ignored when DCQCN is off on the RoCE priority), and the
//    32-bit Q-counters out_of_sequence, packet_seq_err, local_ack_timeout_err,
//    duplicate_request, implied_nak_seq_err, rnr_nak_retry_err, out_of_buffer, which wrap
//    modulo 2^32 as mlx5's do;
//  - ethtool: {rx,tx}_prio<p>_pause and {rx,tx}_prio<p>_pause_duration (µs) for every
//    priority the NIC has PFC on, and only those.
//
// Tunables: each NIC starts as a node set up with the common production recipe (DSCP
// trust, RoCE DSCP 26 -> priority 3 with PFC, CNPs DSCP 48 on priority 6, firmware DCQCN
// defaults on every priority) and can be rewritten whole with SetNicTunables. What the
// twin does with them, on the RoCE priority (the priority the NIC's RoCE DSCP maps to):
// PFC off -> what would have been paused is dropped and retransmitted (go-back-N), so the
// retransmission Q-counters climb and goodput falls; DCQCN's reaction point off -> CNPs
// are counted as ignored and the NIC's flows are not slowed by marks; notification point
// off -> no CNPs; DCQCN parameters -> sim/cc_params.h's MapCcParams, used for the fixed
// point at every port (the parameters most of the port's senders have).
//
// Faults (InjectFault): a cable down, gray loss on a cable, a flapping cable, a NIC storming
// PFC pauses, a degraded cable, a dead node; cleared by id. Names: nodes and racks as
// given, NICs "mlx5_<rail>", switches "tor-<rack suffix>" and "spine-<k>", cables
// "<end>--<end>" (a NIC end is "<node>/mlx5_<rail>"), "#<k>" after the second and later
// parallel cables between the same two switches.
//
// Pure logic, deterministic. Not thread-safe: weft-fabric serializes every call.
//
// Example:
//   ASSIGN_OR_RETURN(TwinTopology topology, BuildTwinTopology(DemoRacks(4, 8, 2), options));
//   ASSIGN_OR_RETURN(Twin twin, Twin::Create(std::move(topology), DcqcnParams()));
//   RETURN_IF_ERROR(twin.StartJob(job));
//   RETURN_IF_ERROR(twin.Advance(1.0));
//   ASSIGN_OR_RETURN(TwinNicReading nic, twin.ReadNic(0, 0));
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
  int cable = -1;  // the cable's first link id (even)
  double value = 0;
  double injected_at_s = 0;
};

struct TwinJobStatus {
  std::string name;
  std::vector<int> nodes;  // rank order
  int iterations_done = 0;
  std::optional<IterationReport> last;  // the newest completed iteration
  double first_iteration_s = 0;         // 0 until one completed
  // No progress possible: a flow of the phase in progress has no path or a dead end.
  bool stalled = false;
};

class Twin {
 public:
  // `params`: the switches' ECN ramp and the DCQCN parameters the NICs start with.
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

  // Faults; the model is solved again at once. InjectFault refuses an unknown id or a
  // value out of range (InvalidArgument naming both and the range) and returns the fault
  // with its id and time.
  absl::StatusOr<TwinFault> InjectFault(TwinFault fault);
  absl::Status ClearFault(int id);  // NotFound for an unknown id
  void ClearAllFaults();
  std::vector<TwinFault> faults() const;

  // Jobs: a job starts computing its first iteration now. Refuses a duplicate name, a
  // node already in a job, and what BuildJobPhases refuses.
  absl::Status StartJob(TrainingJobSpec job);
  absl::Status StopJob(absl::string_view name);  // NotFound for an unknown job
  std::vector<TwinJobStatus> jobs() const;        // in start order

  // Moves the twin forward; fails on a negative or non-finite duration.
  absl::Status Advance(double seconds);

  // The live model as last solved (ports and flows of the phases in progress).
  const LiveModel& model() const;

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
