#include "sim/twin.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "google/protobuf/util/message_differencer.h"
#include "common/status_macros.h"
#include "common/tunable_ranges.h"
#include "sim/cc_params.h"

namespace weft::sim {
namespace {

using ::google::protobuf::util::MessageDifferencer;
using weft::v1::NodeQos;
using CcParams = weft::v1::DcqcnParams;

// NCCL_IB_TIMEOUT 20: a requester whose packets get no answer expires its ACK timer every
// 4.096 µs · 2^20 (roce-facts §5) and counts local_ack_timeout_err.
constexpr double kAckTimeoutS = 4.096e-6 * (1 << 20);
// The RoCE DSCP when default_roce_tos is unset: ToS 106 = DSCP 26.
constexpr uint32_t kDefaultRoceTos = 106;

// What the twin integrates per NIC: rates at the last solve times the time they held.
enum Counter {
  kXmitBytes,
  kRcvBytes,
  kXmitPackets,
  kRcvPackets,
  kRcvErrors,       // frames lost on the NIC's own cable toward it (gray loss)
  kXmitWaitUs,      // paused with data to send
  kMarkedReceived,  // np_ecn_marked_roce_packets
  kCnpSent,         // np_cnp_sent
  kCnpHandled,      // rp_cnp_handled
  kCnpIgnored,      // rp_cnp_ignored
  kOutOfSequence,   // receiver: packets arriving after a gap (go-back-N discards them)
  kPacketSeqErr,    // sender: NAK-sequence-error packets received, one per gap
  kLocalAckTimeout,
  kRxPauseFrames,  // these four go to the NIC's RoCE priority, when it has PFC there
  kTxPauseFrames,
  kRxPauseUs,
  kTxPauseUs,
  kNumCounters,
};
using Counters = std::array<double, kNumCounters>;
constexpr int kFirstPauseCounter = kRxPauseFrames;
constexpr int kNumPauseCounters = kNumCounters - kFirstPauseCounter;

std::string LetterSuffix(int index) {  // 0 → "a", 25 → "z", 26 → "aa"
  std::string suffix;
  for (int i = index + 1; i > 0; i = (i - 1) / 26) {
    suffix.insert(suffix.begin(), static_cast<char>('a' + (i - 1) % 26));
  }
  return suffix;
}

std::string TorName(const std::string& rack) {
  constexpr absl::string_view kRackPrefix = "rack-";
  return absl::StrCat("tor-", absl::string_view(rack).substr(
                                  absl::StartsWith(rack, kRackPrefix) ? kRackPrefix.size() : 0));
}

absl::Status CheckRackNames(const std::vector<RackSpec>& racks) {
  if (racks.empty()) return absl::InvalidArgumentError("racks is empty: accepted 1 or more racks");
  absl::flat_hash_map<std::string, std::string> node_rack;
  absl::flat_hash_set<std::string> rack_names;
  for (size_t r = 0; r < racks.size(); ++r) {
    const RackSpec& rack = racks[r];
    if (rack.name.empty()) return absl::InvalidArgumentError(absl::StrCat("racks[", r, "] has no name"));
    if (!rack_names.insert(rack.name).second) {
      return absl::InvalidArgumentError(absl::StrCat("racks[", r, "]: rack '", rack.name,
                                                     "' is named twice: accepted distinct names"));
    }
    if (rack.nodes.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("rack '", rack.name, "' has no nodes: accepted 1 or more"));
    }
    for (const std::string& node : rack.nodes) {
      if (node.empty()) {
        return absl::InvalidArgumentError(absl::StrCat("rack '", rack.name, "' has a node with no name"));
      }
      if (auto [it, inserted] = node_rack.try_emplace(node, rack.name); !inserted) {
        return absl::InvalidArgumentError(absl::StrCat("node '", node, "' is in rack '", it->second,
                                                       "' and again in rack '", rack.name,
                                                       "': accepted distinct node names"));
      }
    }
  }
  return absl::OkStatus();
}

// The priority a NIC puts traffic of `dscp` on: its DSCP map under DSCP trust, else (and
// for a DSCP the map leaves out) mlx5's default, DSCP >> 3.
uint32_t PriorityOfDscp(const NodeQos& qos, uint32_t dscp) {
  if (qos.trust() == weft::v1::TRUST_MODE_DSCP) {
    auto it = qos.dscp_to_priority().find(dscp);
    if (it != qos.dscp_to_priority().end()) return it->second;
  }
  return dscp >> 3;
}

uint8_t PriorityMask(const google::protobuf::RepeatedField<uint32_t>& priorities) {
  uint8_t mask = 0;
  for (uint32_t p : priorities) mask |= static_cast<uint8_t>(1u << p);
  return mask;
}

// Scalars set in `from` replace those of `to`; a non-empty priority list replaces the list.
void MergeCc(const CcParams& from, CcParams* to) {
  for (const DcqcnParamRange& range : DcqcnParamRanges()) {
    if (uint32_t value = 0; GetDcqcnParam(from, range.name, &value)) {
      SetDcqcnParam(range.name, value, to);
    }
  }
  if (from.has_np_cnp_prio() && !from.has_np_cnp_prio_mode()) to->set_np_cnp_prio_mode(0);
  if (from.rp_enabled_priorities_size() > 0) {
    *to->mutable_rp_enabled_priorities() = from.rp_enabled_priorities();
  }
  if (from.np_enabled_priorities_size() > 0) {
    *to->mutable_np_enabled_priorities() = from.np_enabled_priorities();
  }
}

// A DCB part replaces the DCB part whole (tunable_ranges.h); default_roce_tos on its own.
void MergeQos(const NodeQos& from, NodeQos* to) {
  if (HasDcbSettings(from)) {
    const std::optional<uint32_t> tos =
        to->has_default_roce_tos() ? std::optional<uint32_t>(to->default_roce_tos()) : std::nullopt;
    *to = from;
    to->clear_default_roce_tos();
    if (tos.has_value()) to->set_default_roce_tos(*tos);
  }
  if (from.has_default_roce_tos()) to->set_default_roce_tos(from.default_roce_tos());
}

// The scalars of `cc`, as a key: NICs with the same key run the same model parameters.
std::string ScalarKey(const CcParams& cc) {
  std::string key;
  for (const DcqcnParamRange& range : DcqcnParamRanges()) {
    uint32_t value = 0;
    absl::StrAppend(&key, GetDcqcnParam(cc, range.name, &value) ? absl::StrCat(value) : "-", ",");
  }
  return key;
}

}  // namespace

std::vector<RackSpec> DemoRacks(int racks, int nodes_per_rack, int racks_per_pod) {
  std::vector<RackSpec> out;
  for (int r = 0; r < racks; ++r) {
    RackSpec rack;
    const std::string suffix = LetterSuffix(r);
    rack.name = absl::StrCat("rack-", suffix);
    rack.pod = absl::StrCat("pod-", r / std::max(1, racks_per_pod) + 1);
    for (int n = 1; n <= nodes_per_rack; ++n) {
      rack.nodes.push_back(absl::StrFormat("gpu-%s%02d", suffix, n));
    }
    out.push_back(std::move(rack));
  }
  return out;
}

absl::StatusOr<TwinTopology> BuildTwinTopology(const std::vector<RackSpec>& racks,
                                               const TwinFabricOptions& options) {
  RETURN_IF_ERROR(CheckRackNames(racks));
  // BuildLeafSpine's checks, on the largest rack.
  LeafSpineOptions leaf_spine;
  leaf_spine.racks = static_cast<int>(racks.size());
  for (const RackSpec& rack : racks) {
    leaf_spine.nodes_per_rack = std::max(leaf_spine.nodes_per_rack, static_cast<int>(rack.nodes.size()));
  }
  leaf_spine.nics_per_node = options.nics_per_node;
  leaf_spine.nic_bps = options.nic_bps;
  leaf_spine.uplinks_per_tor = options.uplinks_per_tor;
  leaf_spine.spines = options.spines;
  leaf_spine.oversubscription = options.oversubscription;
  leaf_spine.nic_link_delay_s = options.nic_link_delay_s;
  leaf_spine.fabric_link_delay_s = options.fabric_link_delay_s;
  RETURN_IF_ERROR(BuildLeafSpine(leaf_spine).status());

  // The same build order as BuildLeafSpine (spines, then per rack its ToR, uplinks and
  // NICs), so a TrainingRun on a BuildLeafSpine fabric of equal racks routes the same.
  TwinTopology topology;
  Fabric& fabric = topology.fabric;
  const int spines = options.spines > 0 ? options.spines : options.uplinks_per_tor;
  std::vector<int> spine_ids;
  for (int s = 0; s < spines; ++s) {
    topology.switch_names.push_back(absl::StrCat("spine-", s));
    spine_ids.push_back(fabric.AddSwitch(SwitchTier::kSpine, topology.switch_names.back()));
  }
  for (const RackSpec& rack : racks) {
    topology.switch_names.push_back(TorName(rack.name));
    const int tor = fabric.AddSwitch(SwitchTier::kLeaf, topology.switch_names.back());
    const double uplink_bps = rack.nodes.size() * options.nics_per_node * options.nic_bps /
                              (options.oversubscription * options.uplinks_per_tor);
    for (int u = 0; u < options.uplinks_per_tor; ++u) {
      fabric.AddCable({Vertex::Kind::kSwitch, tor}, {Vertex::Kind::kSwitch, spine_ids[u % spines]},
                      uplink_bps, options.fabric_link_delay_s);
    }
    for (const std::string& name : rack.nodes) {
      const int node = fabric.AddNode();
      topology.nodes.push_back({name, rack.name, rack.pod});
      for (int i = 0; i < options.nics_per_node; ++i) {
        const int nic = fabric.AddNic(node, i, options.nic_bps);
        fabric.AddCable({Vertex::Kind::kNic, nic}, {Vertex::Kind::kSwitch, tor}, options.nic_bps,
                        options.nic_link_delay_s);
      }
    }
  }
  return topology;
}

const char* TwinFaultKindName(TwinFaultKind kind) {
  switch (kind) {
    case TwinFaultKind::kLinkDown:
      return "link_down";
    case TwinFaultKind::kGrayLoss:
      return "gray_loss";
    case TwinFaultKind::kFlappingLink:
      return "flapping_link";
    case TwinFaultKind::kPfcStorm:
      return "pfc_storm";
    case TwinFaultKind::kDegradedLink:
      return "degraded_link";
    case TwinFaultKind::kDeadNode:
      return "dead_node";
  }
  return "?";
}

uint64_t WrapQCounter(double count) {
  return static_cast<uint64_t>(std::max(0.0, std::floor(count))) % (uint64_t{1} << 32);
}

double GoBackNGoodputShare(double loss, double window_packets) {
  return (1 - loss) / (1 + loss * (std::max(1.0, window_packets) - 1));
}

// ---------------------------------------------------------------------------------------

namespace {

struct NicState {
  NodeQos qos;
  CcParams cc;
  std::string cc_key;  // "" while it runs the Create params
  DcqcnParams model_params;
  Counters totals{};
  std::array<std::array<double, kNumPauseCounters>, 8> pause_totals{};  // per priority
  double link_downed = 0;
  Counters rates{};
  int pause_priority = -1;  // where the pause rates go: the RoCE priority if PFC is on there

  // What the flows ask of its settings, kept from qos and cc (Derive after changing them):
  // solves ask per flow, and protobuf maps and lists are slow to ask.
  std::array<uint8_t, 64> priority_of_dscp{};  // PriorityOfDscp for every DSCP
  uint8_t pfc_mask = 0, rp_mask = 0, np_mask = 0;
  uint32_t roce_dscp = 0;
  uint32_t cnp_priority = 0;

  void Derive() {
    for (uint32_t d = 0; d < priority_of_dscp.size(); ++d) {
      priority_of_dscp[d] = static_cast<uint8_t>(PriorityOfDscp(qos, d));
    }
    pfc_mask = PriorityMask(qos.pfc_priorities());
    rp_mask = PriorityMask(cc.rp_enabled_priorities());
    np_mask = PriorityMask(cc.np_enabled_priorities());
    roce_dscp = (qos.has_default_roce_tos() ? qos.default_roce_tos() : kDefaultRoceTos) >> 2;
    // The priority its notification point sends CNPs on: np_cnp_prio, or with
    // np_cnp_prio_mode 1 the priority its DSCP table gives np_cnp_dscp.
    cnp_priority = cc.np_cnp_prio_mode() == 1 ? PriorityOfDscp(qos, cc.np_cnp_dscp())
                                              : cc.np_cnp_prio();
  }
  uint32_t RoceDscp() const { return roce_dscp; }
  uint32_t Priority(uint32_t dscp) const {  // DSCPs are 6 bits
    return dscp < priority_of_dscp.size() ? priority_of_dscp[dscp] : PriorityOfDscp(qos, dscp);
  }
  bool Pfc(uint32_t priority) const { return pfc_mask >> priority & 1; }
  bool Rp(uint32_t priority) const { return rp_mask >> priority & 1; }
  bool Np(uint32_t priority) const { return np_mask >> priority & 1; }
  uint32_t CnpPriority() const { return cnp_priority; }
};

// What the NICs' settings make of one flow (its DSCP is its sender's RoCE DSCP; each end
// maps it to a priority with its own table).
struct FlowClass {
  bool lossless = true;        // PFC on at both ends
  bool reaction_point = true;  // the sender acts on CNPs
  bool notification_point = true;  // the receiver sends CNPs
  // The receiver's CNPs ride the flows' own priority and it is lossy there: they queue
  // behind (and are dropped with) the lossy data on the way back.
  bool cnps_lossy = false;
};

struct JobState {
  TrainingJobSpec spec;
  std::vector<JobPhase> phases;
  JobProgress progress;
  int iterations_done = 0;
  std::optional<IterationReport> last;
  double first_iteration_s = 0;
  bool stalled = false;
  size_t flow_offset = 0;  // of its phase's flows in the model, when in a phase
  int solved_stage = 0;    // its stage when the model was last given flows
  // paths is read off the model only when asked for, or before the model changes under a
  // job that has left the phase it was solved in: pending until then.
  PathCongestion paths;
  bool paths_pending = false;
};

struct FaultState {
  TwinFault fault;
  int64_t next_edge = 1;  // flapping: edge k at injected_at_s + k · period/2 (even: down)
};

}  // namespace

struct Twin::State {
  TwinTopology topology;
  DcqcnParams params;
  LiveModel model;
  double time_s = 0;
  std::vector<NicState> nics;
  std::vector<int> cable_nic;  // per link: the NIC at one end, -1 for a switch-switch cable
  std::vector<std::vector<int>> node_nics;
  absl::flat_hash_map<std::string, int> node_by_name;
  absl::flat_hash_map<std::string, int> cable_by_name;
  std::vector<std::string> cable_names;  // per cable (link / 2)
  std::vector<double> link_delay_s;      // per link: its propagation delay
  std::vector<JobState> jobs;
  std::vector<FaultState> faults;
  int next_fault_id = 1;
  uint16_t next_port = kFirstEphemeralPort;
  // Fault effects the live model does not have.
  std::vector<double> gray_loss;  // per link
  std::vector<bool> link_down;    // per link, as last applied
  std::vector<double> link_scale;
  std::vector<bool> node_dead;
  std::vector<FlowSpec> flow_specs;     // per model flow
  std::vector<FlowClass> flow_classes;  // per model flow
  bool flows_dirty = true;
  bool rates_dirty = true;
  int solves = 0;  // model.SetFlows calls (route, max-min, fixed points)
  NodeQos switch_qos;  // every switch port's DCB (its priority_to_tc, tc_tsa, tc_bandwidth_percent)

  State(TwinTopology t, const DcqcnParams& p, LiveModel m)
      : topology(std::move(t)), params(p), model(std::move(m)) {}

  absl::Status CheckNic(int nic) const;
  FabricSide Side(int nic) const;
  absl::Status Refresh();
  absl::Status SetFlows();
  void PushNicParams();
  void PushSchedulers();
  void ComputeRates();
  void AddFlowRates(int f, double loss, double goodput_share);
  void AddPauseRates(int nic);
  void UpdateJobs(const std::vector<double>& goodput_bps);
  PathCongestion PathsOf(const JobState& job) const;  // of its solved phase's flows
  double PortDropShare(int link) const;
  double CnpDeliveredShare(const std::vector<int>& path, bool lossy) const;
  void ApplyFaults();
  // Before the model changes: the paths of jobs that left their solved phase, as it was.
  void KeepPathsOfJobsLeavingTheModel();
  double NextFlapEdgeS() const;
  bool ApplyDueFlapEdges();
  void Integrate(double dt_s);
  void StepJobs(double dt_s);
  absl::Status CheckFault(TwinFault* fault) const;
};

absl::Status Twin::State::CheckNic(int nic) const {
  const int n = static_cast<int>(nics.size());
  if (nic >= 0 && nic < n) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("nic = ", nic, " is out of range: accepted [0, ", n - 1, "]"));
}

FabricSide Twin::State::Side(int nic) const {
  FabricSide side;
  side.link_bps = topology.fabric.nics()[nic].bps;
  side.kmin_bytes = params.kmin_bytes;
  side.kmax_bytes = params.kmax_bytes;
  side.pmax = params.pmax;
  side.above_kmax = params.above_kmax;
  side.feedback_delay_us = params.feedback_delay_us;
  side.packet_bytes = params.packet_bytes;
  return side;
}

absl::StatusOr<Twin> Twin::Create(TwinTopology topology, const DcqcnParams& params) {
  if (topology.nodes.size() != static_cast<size_t>(topology.fabric.num_nodes()) ||
      topology.switch_names.size() != topology.fabric.switches().size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "topology names ", topology.nodes.size(), " nodes and ", topology.switch_names.size(),
        " switches for a fabric of ", topology.fabric.num_nodes(), " and ",
        topology.fabric.switches().size(), ": accepted one name each"));
  }
  ASSIGN_OR_RETURN(LiveModel model, LiveModel::Create(topology.fabric, params));
  auto state = std::make_unique<State>(std::move(topology), params, std::move(model));
  const Fabric& fabric = state->topology.fabric;
  const int num_links = static_cast<int>(fabric.links().size());
  state->node_nics.resize(fabric.num_nodes());
  for (int n = 0; n < fabric.num_nodes(); ++n) {
    if (!state->node_by_name.try_emplace(state->topology.nodes[n].name, n).second) {
      return absl::InvalidArgumentError(absl::StrCat("node '", state->topology.nodes[n].name,
                                                     "' is named twice: accepted distinct names"));
    }
  }
  CcParams recipe_cc = DefaultDcqcnParams();  // as agent/tunables' simulated NIC starts
  recipe_cc.set_np_min_time_between_cnps(0);
  recipe_cc.set_np_cnp_prio_mode(0);
  state->nics.resize(fabric.nics().size());
  for (int i = 0; i < static_cast<int>(fabric.nics().size()); ++i) {
    NicState& nic = state->nics[i];
    nic.qos = RecipeQos();
    nic.cc = recipe_cc;
    nic.model_params = params;
    nic.Derive();
    state->node_nics[fabric.nics()[i].node].push_back(i);
  }
  state->cable_nic.assign(num_links, -1);
  for (const Link& link : fabric.links()) state->link_delay_s.push_back(link.propagation_delay_s);
  state->gray_loss.assign(num_links, 0);
  state->link_down.assign(num_links, false);
  state->link_scale.assign(num_links, 1);
  state->node_dead.assign(fabric.num_nodes(), false);
  Twin twin(std::move(state));
  State& s = *twin.state_;
  absl::flat_hash_map<std::string, int> parallel;  // cables between the same two ends
  for (int k = 0; k < num_links; k += 2) {
    const Link& link = fabric.links()[k];
    for (const Vertex& end : {link.from, link.to}) {
      if (end.kind == Vertex::Kind::kNic) s.cable_nic[k] = s.cable_nic[k + 1] = end.id;
    }
    std::string name = absl::StrCat(twin.VertexName(link.from), "--", twin.VertexName(link.to));
    if (const int count = ++parallel[name]; count > 1) absl::StrAppend(&name, "#", count);
    s.cable_by_name[name] = k;
    s.cable_names.push_back(std::move(name));
  }
  s.switch_qos = RecipeQos();
  s.PushSchedulers();
  RETURN_IF_ERROR(s.Refresh());
  return twin;
}

Twin::Twin(std::unique_ptr<State> state) : state_(std::move(state)) {}
Twin::Twin(Twin&&) noexcept = default;
Twin& Twin::operator=(Twin&&) noexcept = default;
Twin::~Twin() = default;

const TwinTopology& Twin::topology() const { return state_->topology; }
double Twin::time_s() const { return state_->time_s; }
const LiveModel& Twin::model() const { return state_->model; }

int Twin::solves() const { return state_->solves; }

// ---------------------------------------------------------------------------------------
// Names.

absl::StatusOr<int> Twin::NodeByName(absl::string_view name) const {
  auto it = state_->node_by_name.find(name);
  if (it != state_->node_by_name.end()) return it->second;
  return absl::NotFoundError(absl::StrCat("no node '", name, "' among the twin's ",
                                          state_->topology.nodes.size(), " nodes"));
}

absl::StatusOr<int> Twin::NicByDevice(int node, absl::string_view device) const {
  const int n = static_cast<int>(state_->node_nics.size());
  if (node < 0 || node >= n) {
    return absl::NotFoundError(
        absl::StrCat("no node ", node, ": the twin has nodes 0..", n - 1));
  }
  for (int nic : state_->node_nics[node]) {
    if (device == absl::StrCat("mlx5_", state_->topology.fabric.nics()[nic].index)) return nic;
  }
  return absl::NotFoundError(absl::StrCat("node '", state_->topology.nodes[node].name,
                                          "' has no device '", device, "' (it has mlx5_0..mlx5_",
                                          state_->node_nics[node].size() - 1, ")"));
}

absl::StatusOr<int> Twin::CableByName(absl::string_view name) const {
  auto it = state_->cable_by_name.find(name);
  if (it != state_->cable_by_name.end()) return it->second;
  return absl::NotFoundError(
      absl::StrCat("no cable '", name, "' (names read like gpu-a01/mlx5_0--tor-a)"));
}

std::string Twin::CableName(int link) const {
  if (link < 0 || link / 2 >= static_cast<int>(state_->cable_names.size())) {
    return absl::StrCat("link#", link);
  }
  return state_->cable_names[link / 2];
}

std::string Twin::VertexName(const Vertex& vertex) const {
  const TwinTopology& t = state_->topology;
  if (vertex.kind == Vertex::Kind::kSwitch) return t.switch_names[vertex.id];
  const Nic& nic = t.fabric.nics()[vertex.id];
  return absl::StrCat(t.nodes[nic.node].name, "/mlx5_", nic.index);
}

// ---------------------------------------------------------------------------------------
// Solving: the flows of the phases in progress, their losses, the NICs' counter rates and
// the jobs' pace.

absl::Status Twin::State::Refresh() {
  if (flows_dirty) RETURN_IF_ERROR(SetFlows());
  if (rates_dirty) ComputeRates();
  return absl::OkStatus();
}

absl::Status Twin::State::SetFlows() {
  KeepPathsOfJobsLeavingTheModel();
  std::vector<FlowSpec> flows;
  flow_classes.clear();
  for (JobState& job : jobs) {
    job.flow_offset = flows.size();
    job.solved_stage = job.progress.stage;
    if (job.progress.stage == 0) continue;
    for (FlowSpec flow : job.phases[job.progress.stage - 1].flows) {
      const NicState& src = nics[flow.src_nic];
      const NicState& dst = nics[flow.dst_nic];
      const uint32_t dscp = job.spec.dscp >= 0 ? static_cast<uint32_t>(job.spec.dscp)
                                               : src.RoceDscp();
      const uint32_t src_priority = src.Priority(dscp);
      const uint32_t dst_priority = dst.Priority(dscp);
      const uint32_t cnp_priority = dst.CnpPriority();
      const FlowClass c{.lossless = src.Pfc(src_priority) && dst.Pfc(dst_priority),
                        .reaction_point = src.Rp(src_priority),
                        .notification_point = dst.Np(dst_priority),
                        .cnps_lossy = cnp_priority == dst_priority &&
                                      !(dst.Pfc(cnp_priority) && src.Pfc(cnp_priority))};
      flow.congestion_controlled = c.reaction_point && c.notification_point;
      flow.priority = static_cast<int>(src_priority);
      flow_classes.push_back(c);
      flows.push_back(flow);
    }
  }
  flow_specs = flows;
  RETURN_IF_ERROR(model.SetFlows(std::move(flows)));
  ++solves;
  flows_dirty = false;
  rates_dirty = true;
  return absl::OkStatus();
}

void Twin::State::PushNicParams() {
  KeepPathsOfJobsLeavingTheModel();
  std::vector<DcqcnParams> sets = {params};
  std::vector<int> set_of_nic(nics.size(), 0);
  absl::flat_hash_map<std::string, int> set_by_key = {{"", 0}};
  for (size_t i = 0; i < nics.size(); ++i) {
    auto [it, inserted] = set_by_key.try_emplace(nics[i].cc_key, static_cast<int>(sets.size()));
    if (inserted) sets.push_back(nics[i].model_params);
    set_of_nic[i] = it->second;
  }
  if (sets.size() == 1) set_of_nic.clear();  // every NIC runs the Create params
  // Valid: MapCcParams validated every set on the same switch side.
  model.SetNicParams(std::move(sets), std::move(set_of_nic)).IgnoreError();
  rates_dirty = true;
}

namespace {

// A DCB port's scheduler from its QoS: TSA_STRICT is strict, every other TSA (ETS, and
// CBS or vendor, which the model does not have) shares by tc_bandwidth_percent. Without
// the DCB part: the default scheduler (one class).
PortScheduler SchedulerOf(const NodeQos& qos) {
  PortScheduler scheduler;
  if (qos.priority_to_tc_size() != kNumPriorities || qos.tc_tsa_size() != kNumTrafficClasses ||
      qos.tc_bandwidth_percent_size() != kNumTrafficClasses) {
    return scheduler;
  }
  for (int i = 0; i < kNumPriorities; ++i) {
    scheduler.priority_to_tc[i] = static_cast<int>(qos.priority_to_tc(i));
    scheduler.tsa[i] = qos.tc_tsa(i) == weft::v1::TSA_STRICT ? Tsa::kStrict : Tsa::kEts;
    scheduler.weight[i] = qos.tc_bandwidth_percent(i);
  }
  return scheduler;
}

}  // namespace

// A NIC's uplink runs the NIC's own DCB; every switch port the fabric-wide switch DCB.
void Twin::State::PushSchedulers() {
  KeepPathsOfJobsLeavingTheModel();
  const std::vector<Link>& links = topology.fabric.links();
  const PortScheduler at_switch = SchedulerOf(switch_qos);
  std::vector<PortScheduler> per_link(links.size(), at_switch);
  for (size_t k = 0; k < links.size(); ++k) {
    if (links[k].from.kind == Vertex::Kind::kNic) per_link[k] = SchedulerOf(nics[links[k].from.id].qos);
  }
  // Valid: ValidateNodeQos checked every TC and share.
  model.SetPortSchedulers(std::move(per_link)).IgnoreError();
  rates_dirty = true;
}

// Where lossy traffic is dropped: the share of its packets PFC would have held back. A
// port paused for a share of the time drops that share; a congested port (offered load
// above capacity, DCQCN holding its flows back) drops the share of the offered load above
// its capacity, 1 − C/offered: DCQCN's time average has no bursts, so this takes the
// senders' line-rate offer as the burst PFC would have paused, an upper bound.
// CNPs go back over the flow's cables (link ^ 1 is the other direction of a cable; ECMP may
// pick other equal-cost cables back, which the twin does not route separately). Gray loss
// drops them like any packet; on a lossy priority shared with the data they are also
// dropped where that data is.
double Twin::State::CnpDeliveredShare(const std::vector<int>& path, bool lossy) const {
  double delivered = 1;
  for (int k : path) {
    delivered *= (1 - gray_loss[k ^ 1]) * (lossy ? 1 - PortDropShare(k ^ 1) : 1);
  }
  return delivered;
}

double Twin::State::PortDropShare(int link) const {
  const PortState& port = model.ports()[link];
  double share = port.pause_rx_share;
  if (port.congested && port.offered_bps > 0) {
    share = std::max(share, 1 - port.capacity_bps / port.offered_bps);
  }
  return std::clamp(share, 0.0, 1.0);
}

void Twin::State::ComputeRates() {
  for (NicState& nic : nics) nic.rates.fill(0);
  std::vector<double> goodput_bps(model.flows().size(), 0);
  for (int f = 0; f < static_cast<int>(model.flows().size()); ++f) {
    const FlowState& flow = model.flows()[f];
    double delivered = 1;
    for (int k : flow.path) {
      delivered *= (1 - gray_loss[k]) * (flow_classes[f].lossless ? 1 : 1 - PortDropShare(k));
    }
    double path_delay_s = 0;  // as Fabric::PathDelaySeconds, from a table
    for (int k : flow.path) path_delay_s += link_delay_s[k];
    const double window_packets = flow.rate_bps / 8 * 2 * path_delay_s / params.packet_bytes;
    const double goodput_share = GoBackNGoodputShare(1 - delivered, window_packets);
    goodput_bps[f] = flow.rate_bps * goodput_share;
    AddFlowRates(f, 1 - delivered, goodput_share);
  }
  for (int i = 0; i < static_cast<int>(nics.size()); ++i) AddPauseRates(i);
  UpdateJobs(goodput_bps);
  rates_dirty = false;
}

// Go-back-N (RC QPs): a lost packet is noticed when the next one arrives out of sequence;
// the responder discards what follows and NAKs once (sequence error), and the requester
// sends again from the lost packet, so every loss costs the window in flight
// (rate × round trip): goodput share G = (1 − p)/(1 + p·(W − 1)) (GoBackNGoodputShare).
// Per second, with r packets sent: r·p lost; r·p/(1 + p·(W − 1)) gaps, one NAK each;
// r·(1 − p) − r·G received and discarded, counted out of sequence (at least one per gap).
void Twin::State::AddFlowRates(int f, double loss, double goodput_share) {
  const FlowState& flow = model.flows()[f];
  const FlowSpec& spec = flow_specs[f];
  const FlowClass& flow_class = flow_classes[f];
  Counters& src = nics[spec.src_nic].rates;
  Counters& dst = nics[spec.dst_nic].rates;
  const double packets_per_s = flow.rate_bps / 8 / params.packet_bytes;
  src[kXmitBytes] += flow.rate_bps / 8;
  src[kXmitPackets] += packets_per_s;
  dst[kRcvBytes] += flow.rate_bps / 8 * (1 - loss);
  dst[kRcvPackets] += packets_per_s * (1 - loss);
  if (!flow.path.empty()) dst[kRcvErrors] += packets_per_s * gray_loss[flow.path.back()];
  const double gaps_per_s = goodput_share > 0 ? packets_per_s * loss * goodput_share / (1 - loss)
                                              : 0;
  src[kPacketSeqErr] += gaps_per_s;
  dst[kOutOfSequence] +=
      std::max(gaps_per_s, packets_per_s * (1 - loss) - packets_per_s * goodput_share);
  dst[kMarkedReceived] += flow.marked_packets_per_s * (1 - loss);
  const double cnps_per_s = flow_class.notification_point ? flow.cnps_per_s : 0;
  dst[kCnpSent] += cnps_per_s;
  src[flow_class.reaction_point ? kCnpHandled : kCnpIgnored] +=
      cnps_per_s * CnpDeliveredShare(flow.path, flow_class.cnps_lossy);
  // A live sender that gets nothing through waits out its ACK timer, again and again.
  const bool sender_alive = !node_dead[topology.fabric.nics()[spec.src_nic].node];
  if (sender_alive && !(goodput_share * flow.rate_bps > 0)) src[kLocalAckTimeout] += 1 / kAckTimeoutS;
}

// PFC counters of the NIC's port (its uplink: rx = paused by its ToR, tx = pausing it), on
// its RoCE priority when PFC is on there; with PFC off there are none.
void Twin::State::AddPauseRates(int i) {
  NicState& nic = nics[i];
  const uint32_t priority = nic.Priority(nic.RoceDscp());
  nic.pause_priority = nic.Pfc(priority) ? static_cast<int>(priority) : -1;
  if (nic.pause_priority < 0) return;
  const PortState& port = model.nic_port(i);
  if (port.pause_rx_share == 0 && port.pause_tx_share == 0) return;  // the rates stay 0
  const double link_bps = topology.fabric.nics()[i].bps;
  nic.rates[kRxPauseUs] = port.pause_rx_share * 1e6;
  nic.rates[kTxPauseUs] = port.pause_tx_share * 1e6;
  nic.rates[kRxPauseFrames] = PauseFramesPerSecond(port.pause_rx_share, link_bps);
  nic.rates[kTxPauseFrames] = PauseFramesPerSecond(port.pause_tx_share, link_bps);
  // port_xmit_wait: paused while it had data to send (one tick = 1 µs here; the tick is
  // the vendor's).
  if (nic.rates[kXmitBytes] > 0) nic.rates[kXmitWaitUs] = port.pause_rx_share * 1e6;
}

void Twin::State::KeepPathsOfJobsLeavingTheModel() {
  for (JobState& job : jobs) {
    if (job.paths_pending && job.progress.stage != job.solved_stage) {
      job.paths = PathsOf(job);
      job.paths_pending = false;
    }
  }
}

PathCongestion Twin::State::PathsOf(const JobState& job) const {
  PathCongestion paths;
  if (job.solved_stage == 0) return paths;
  const size_t flows = job.phases[job.solved_stage - 1].flows.size();
  auto worse = [](const PortState& a, const PortState& b) {
    return std::tie(a.pause_rx_share, a.queue_bytes, a.utilization) >
           std::tie(b.pause_rx_share, b.queue_bytes, b.utilization);
  };
  for (size_t f = job.flow_offset; f < job.flow_offset + flows; ++f) {
    for (int k : model.flows()[f].path) {
      const PortState& port = model.ports()[k];
      paths.max_utilization = std::max(paths.max_utilization, port.utilization);
      paths.max_queue_bytes = std::max(paths.max_queue_bytes, port.queue_bytes);
      paths.max_mark_probability = std::max(paths.max_mark_probability, port.mark_probability);
      paths.max_pause_share = std::max(paths.max_pause_share, port.pause_rx_share);
      if (paths.hottest_link < 0 || worse(port, model.ports()[paths.hottest_link])) {
        paths.hottest_link = k;
      }
    }
  }
  return paths;
}

// A job's phase goes at the pace of its slowest flow's goodput; a job with a dead node, or
// whose phase has a flow that gets nothing through, is stalled.
void Twin::State::UpdateJobs(const std::vector<double>& goodput_bps) {
  for (JobState& job : jobs) {
    job.progress.halted = false;
    for (int node : job.spec.nodes) job.progress.halted |= node_dead[node];
    job.stalled = job.progress.halted;
    if (job.progress.stage == 0) continue;
    const JobPhase& phase = job.phases[job.progress.stage - 1];
    const std::vector<double> rates(goodput_bps.begin() + job.flow_offset,
                                    goodput_bps.begin() + job.flow_offset + phase.flows.size());
    job.progress.progress_per_s = PhaseProgressPerS(phase, rates);
    job.stalled |= !(job.progress.progress_per_s > 0);
    job.paths_pending = true;  // PathsOf when asked for: most solves nobody asks
  }
}

// ---------------------------------------------------------------------------------------
// Faults.

absl::Status Twin::State::CheckFault(TwinFault* fault) const {
  const Fabric& fabric = topology.fabric;
  auto out_of_range = [&](absl::string_view field, double value, absl::string_view accepted) {
    return absl::InvalidArgumentError(absl::StrCat(TwinFaultKindName(fault->kind), ": ", field,
                                                   " = ", value, " is out of range: accepted ",
                                                   accepted));
  };
  auto check_value = [&](bool ok, absl::string_view accepted) {
    return ok && std::isfinite(fault->value) ? absl::OkStatus()
                                             : out_of_range("value", fault->value, accepted);
  };
  const int num_links = static_cast<int>(fabric.links().size());
  switch (fault->kind) {
    case TwinFaultKind::kLinkDown:
    case TwinFaultKind::kGrayLoss:
    case TwinFaultKind::kFlappingLink:
    case TwinFaultKind::kDegradedLink:
      if (fault->cable < 0 || fault->cable >= num_links) {
        return out_of_range("cable", fault->cable, absl::StrCat("[0, ", num_links - 1, "]"));
      }
      fault->cable &= ~1;  // either direction names the cable
      break;
    case TwinFaultKind::kPfcStorm:
      RETURN_IF_ERROR(CheckNic(fault->nic));
      fault->node = fabric.nics()[fault->nic].node;
      break;
    case TwinFaultKind::kDeadNode:
      if (fault->node < 0 || fault->node >= fabric.num_nodes()) {
        return out_of_range("node", fault->node, absl::StrCat("[0, ", fabric.num_nodes() - 1, "]"));
      }
      break;
  }
  const double v = fault->value;
  switch (fault->kind) {
    case TwinFaultKind::kGrayLoss:
      return check_value(v > 0 && v < 1, "(0, 1) (drop rate)");
    case TwinFaultKind::kFlappingLink:
      return check_value(v > 0, "(0, inf) (period in seconds)");
    case TwinFaultKind::kPfcStorm:
      return check_value(v > 0 && v <= 1, "(0, 1] (pause share)");
    case TwinFaultKind::kDegradedLink:
      return check_value(v > 0 && v < 1, "(0, 1) (capacity scale)");
    default:
      return absl::OkStatus();
  }
}

// Puts the active faults into the live model (from a clean slate, so clearing one
// restores exactly what the others leave) and counts link_downed on NIC cables that go down.
void Twin::State::ApplyFaults() {
  KeepPathsOfJobsLeavingTheModel();
  const int num_links = static_cast<int>(link_down.size());
  std::vector<bool> down(num_links, false);
  std::vector<double> scale(num_links, 1);
  std::vector<double> storm(nics.size(), 0);
  gray_loss.assign(num_links, 0);
  node_dead.assign(node_dead.size(), false);
  for (const FaultState& fs : faults) {
    const TwinFault& f = fs.fault;
    const int k = f.cable;
    switch (f.kind) {
      case TwinFaultKind::kLinkDown:
        down[k] = true;
        break;
      case TwinFaultKind::kFlappingLink:
        down[k] = down[k] || (fs.next_edge - 1) % 2 == 0;  // the last edge was a down edge
        break;
      case TwinFaultKind::kGrayLoss:
        gray_loss[k] = gray_loss[k + 1] = 1 - (1 - gray_loss[k]) * (1 - f.value);
        break;
      case TwinFaultKind::kDegradedLink:
        scale[k] *= f.value;
        break;
      case TwinFaultKind::kPfcStorm:
        storm[f.nic] = std::max(storm[f.nic], f.value);
        break;
      case TwinFaultKind::kDeadNode:
        node_dead[f.node] = true;
        break;
    }
  }
  model.ClearFaults();
  // Valid: CheckFault checked every id and value.
  for (int k = 0; k < num_links; k += 2) {
    if (down[k] && !link_down[k] && cable_nic[k] >= 0) nics[cable_nic[k]].link_downed += 1;
    link_down[k] = link_down[k + 1] = down[k];
    link_scale[k] = link_scale[k + 1] = scale[k];
    if (down[k]) model.SetLinkDown(k, true).IgnoreError();
    if (scale[k] < 1) model.SetLinkCapacityScale(k, scale[k]).IgnoreError();
  }
  for (size_t i = 0; i < storm.size(); ++i) {
    if (storm[i] > 0) model.SetPauseStorm(static_cast<int>(i), storm[i]).IgnoreError();
  }
  for (size_t n = 0; n < node_dead.size(); ++n) {
    if (node_dead[n]) model.SetNodeDead(static_cast<int>(n), true).IgnoreError();
  }
  rates_dirty = true;
}

double Twin::State::NextFlapEdgeS() const {
  double next = std::numeric_limits<double>::infinity();
  for (const FaultState& fs : faults) {
    if (fs.fault.kind != TwinFaultKind::kFlappingLink) continue;
    next = std::min(next, fs.fault.injected_at_s + fs.next_edge * fs.fault.value / 2);
  }
  return next;
}

bool Twin::State::ApplyDueFlapEdges() {
  bool any = false;
  for (FaultState& fs : faults) {
    if (fs.fault.kind != TwinFaultKind::kFlappingLink) continue;
    const double half_s = fs.fault.value / 2;
    // Edges due now, allowing for the rounding of the steps that led here.
    while (fs.fault.injected_at_s + fs.next_edge * half_s <= time_s + 1e-12 * (1 + time_s)) {
      ++fs.next_edge;
      any = true;
    }
  }
  if (any) ApplyFaults();
  return any;
}

absl::StatusOr<TwinFault> Twin::InjectFault(TwinFault fault) {
  RETURN_IF_ERROR(state_->CheckFault(&fault));
  fault.id = state_->next_fault_id++;
  fault.injected_at_s = state_->time_s;
  state_->faults.push_back({fault, 1});
  state_->ApplyFaults();
  RETURN_IF_ERROR(state_->Refresh());
  return fault;
}

absl::Status Twin::ClearFault(int id) {
  std::vector<FaultState>& faults = state_->faults;
  auto it = std::find_if(faults.begin(), faults.end(),
                         [id](const FaultState& fs) { return fs.fault.id == id; });
  if (it == faults.end()) return absl::NotFoundError(absl::StrCat("no fault with id ", id));
  faults.erase(it);
  state_->ApplyFaults();
  return state_->Refresh();
}

void Twin::ClearAllFaults() {
  state_->faults.clear();
  state_->ApplyFaults();
  state_->Refresh().IgnoreError();  // the flows were routed before; nothing new can fail
}

std::vector<TwinFault> Twin::faults() const {
  std::vector<TwinFault> out;
  for (const FaultState& fs : state_->faults) out.push_back(fs.fault);
  return out;
}

// ---------------------------------------------------------------------------------------
// Jobs and time.

absl::Status Twin::StartJob(TrainingJobSpec job) {
  State& s = *state_;
  for (const JobState& other : s.jobs) {
    if (other.spec.name == job.name) {
      return absl::AlreadyExistsError(absl::StrCat("job '", job.name, "' is already running"));
    }
    for (int node : job.nodes) {
      if (std::find(other.spec.nodes.begin(), other.spec.nodes.end(), node) !=
          other.spec.nodes.end()) {
        return absl::FailedPreconditionError(
            absl::StrCat("job '", job.name, "': node ", node, " is in job '", other.spec.name,
                         "'; accepted: nodes no other job holds"));
      }
    }
  }
  uint16_t next_port = s.next_port;
  ASSIGN_OR_RETURN(std::vector<JobPhase> phases,
                   BuildJobPhases(s.topology.fabric, job, &next_port));
  s.next_port = next_port;
  JobState state;
  state.progress = StartJobProgress(job.model);
  state.spec = std::move(job);
  state.phases = std::move(phases);
  s.jobs.push_back(std::move(state));
  s.rates_dirty = true;  // its pace and stall
  return s.Refresh();
}

absl::Status Twin::StopJob(absl::string_view name) {
  std::vector<JobState>& jobs = state_->jobs;
  auto it = std::find_if(jobs.begin(), jobs.end(),
                         [name](const JobState& j) { return j.spec.name == name; });
  if (it == jobs.end()) return absl::NotFoundError(absl::StrCat("no job '", name, "'"));
  state_->flows_dirty = it->progress.stage > 0;
  state_->rates_dirty = true;
  jobs.erase(it);
  return state_->Refresh();
}

std::vector<TwinJobStatus> Twin::jobs() const {
  std::vector<TwinJobStatus> out;
  for (const JobState& job : state_->jobs) {
    TwinJobStatus& status = out.emplace_back();
    status.name = job.spec.name;
    status.nodes = job.spec.nodes;
    status.iterations_done = job.iterations_done;
    status.last = job.last;
    status.first_iteration_s = job.first_iteration_s;
    status.stalled = job.stalled;
    status.paths = job.paths_pending ? state_->PathsOf(job) : job.paths;
  }
  return out;
}

void Twin::State::Integrate(double dt_s) {
  for (NicState& nic : nics) {
    for (int c = 0; c < kNumCounters; ++c) nic.totals[c] += nic.rates[c] * dt_s;
    if (nic.pause_priority < 0) continue;
    for (int c = 0; c < kNumPauseCounters; ++c) {
      nic.pause_totals[nic.pause_priority][c] += nic.rates[kFirstPauseCounter + c] * dt_s;
    }
  }
}

void Twin::State::StepJobs(double dt_s) {
  for (JobState& job : jobs) {
    const int stage = job.progress.stage;
    std::optional<IterationReport> done = StepJob(&job.progress, job.phases, job.spec.model, dt_s);
    if (job.progress.stage != stage) {
      // A new phase has new flows; compute to compute (no phases) changes nothing.
      flows_dirty |= stage > 0 || job.progress.stage > 0;
      rates_dirty = true;
    }
    if (!done.has_value()) continue;
    if (++job.iterations_done == 1) job.first_iteration_s = done->iteration_s;
    job.last = *std::move(done);
  }
}

absl::Status Twin::Advance(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("seconds = ", seconds, " is out of range: accepted [0, inf)"));
  }
  State& s = *state_;
  double left_s = seconds;
  while (left_s > 0) {
    RETURN_IF_ERROR(s.Refresh());
    // The next event: the end of the call, a flap edge, or some job's stage ending.
    double dt_s = std::min(left_s, std::max(0.0, s.NextFlapEdgeS() - s.time_s));
    for (const JobState& job : s.jobs) dt_s = std::min(dt_s, SecondsToStageEnd(job.progress));
    s.Integrate(dt_s);
    s.StepJobs(dt_s);
    left_s = dt_s == left_s ? 0 : left_s - dt_s;
    s.time_s += dt_s;
    s.ApplyDueFlapEdges();
  }
  return s.Refresh();
}

// ---------------------------------------------------------------------------------------
// Tunables.

absl::StatusOr<weft::v1::NicTunablesReading> Twin::NicTunables(int nic) const {
  RETURN_IF_ERROR(state_->CheckNic(nic));
  weft::v1::NicTunablesReading reading;
  reading.set_device(absl::StrCat("mlx5_", state_->topology.fabric.nics()[nic].index));
  *reading.mutable_qos() = state_->nics[nic].qos;
  *reading.mutable_dcqcn() = state_->nics[nic].cc;
  return reading;
}

const NodeQos& Twin::switch_qos() const { return state_->switch_qos; }

absl::Status Twin::SetSwitchQos(const NodeQos& qos) {
  if (qos.priority_to_tc_size() != kNumPriorities || qos.tc_tsa_size() != kNumTrafficClasses ||
      qos.tc_bandwidth_percent_size() != kNumTrafficClasses) {
    return absl::InvalidArgumentError(absl::StrCat(
        "switch QoS: priority_to_tc, tc_tsa, tc_bandwidth_percent have ",
        qos.priority_to_tc_size(), ", ", qos.tc_tsa_size(), ", ", qos.tc_bandwidth_percent_size(),
        " entries: accepted 8 each"));
  }
  std::vector<weft::v1::ParameterError> errors = ValidateNodeQos(qos);
  if (!errors.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "switch QoS: ", FormatParameterError(errors.front()),
        errors.size() > 1 ? absl::StrCat(" (and ", errors.size() - 1, " more)") : ""));
  }
  State& s = *state_;
  s.switch_qos = qos;
  s.PushSchedulers();
  return s.Refresh();
}

absl::Status Twin::SetNicTunables(int nic, const weft::v1::NodeQos& qos,
                                  const weft::v1::DcqcnParams& dcqcn) {
  State& s = *state_;
  RETURN_IF_ERROR(s.CheckNic(nic));
  NicState next = s.nics[nic];
  MergeQos(qos, &next.qos);
  MergeCc(dcqcn, &next.cc);
  // What the NIC itself refuses: each value out of its range. Policy checks across them
  // (the RoCE priority lossless, CNPs not) are the controller's: a NIC takes PFC off.
  std::vector<weft::v1::ParameterError> errors = ValidateNodeQos(next.qos);
  for (weft::v1::ParameterError& e : ValidateDcqcnParams(next.cc)) errors.push_back(std::move(e));
  const std::string who = VertexName({Vertex::Kind::kNic, nic});
  if (!errors.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        who, ": ", FormatParameterError(errors.front()),
        errors.size() > 1 ? absl::StrCat(" (and ", errors.size() - 1, " more)") : ""));
  }
  NicState& current = s.nics[nic];
  const bool same_qos = MessageDifferencer::Equals(next.qos, current.qos);
  if (same_qos && MessageDifferencer::Equals(next.cc, current.cc)) return absl::OkStatus();
  const std::string key = ScalarKey(next.cc);
  const bool new_params = key != ScalarKey(current.cc);  // unchanged: keep what it runs
  if (new_params) {
    absl::StatusOr<MappedCcParams> mapped = MapCcParams(next.cc, s.Side(nic));
    if (!mapped.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(who, ": ", mapped.status().message()));
    }
    next.model_params = mapped->params;
    next.cc_key = key;
  }
  const bool same_classes =
      same_qos && PriorityMask(next.cc.rp_enabled_priorities()) ==
                      PriorityMask(current.cc.rp_enabled_priorities()) &&
      PriorityMask(next.cc.np_enabled_priorities()) ==
          PriorityMask(current.cc.np_enabled_priorities());
  current = std::move(next);
  current.Derive();
  if (new_params) s.PushNicParams();
  if (!same_qos) s.PushSchedulers();
  // PFC, reaction and notification points decide the flows' classes.
  s.flows_dirty |= !same_classes;
  s.rates_dirty = true;
  return s.Refresh();
}

// ---------------------------------------------------------------------------------------
// Readings.

absl::StatusOr<TwinNicReading> Twin::ReadNic(int nic) const {
  RETURN_IF_ERROR(state_->CheckNic(nic));
  const State& s = *state_;
  const NicState& n = s.nics[nic];
  const Nic& fabric_nic = s.topology.fabric.nics()[nic];
  auto count = [&](Counter c) { return static_cast<uint64_t>(n.totals[c]); };
  TwinNicReading r;
  r.device = absl::StrCat("mlx5_", fabric_nic.index);
  r.link_up = !s.link_down[fabric_nic.uplink];
  r.speed_bps = r.link_up ? fabric_nic.bps * s.link_scale[fabric_nic.uplink] : 0;
  r.port_counters = {
      {"port_xmit_data", static_cast<uint64_t>(n.totals[kXmitBytes] / 4)},
      {"port_rcv_data", static_cast<uint64_t>(n.totals[kRcvBytes] / 4)},
      {"port_xmit_packets", count(kXmitPackets)},
      {"port_rcv_packets", count(kRcvPackets)},
      {"unicast_xmit_packets", count(kXmitPackets)},
      {"unicast_rcv_packets", count(kRcvPackets)},
      {"multicast_xmit_packets", 0},  // RoCE is unicast; the twin carries nothing else
      {"multicast_rcv_packets", 0},
      {"port_xmit_discards", 0},
      {"port_rcv_errors", count(kRcvErrors)},
      {"link_downed", static_cast<uint64_t>(n.link_downed)},
      {"symbol_error", 0},
      {"link_error_recovery", 0},
      {"port_xmit_wait", count(kXmitWaitUs)},
  };
  r.hw_counters = {
      {"np_ecn_marked_roce_packets", count(kMarkedReceived)},
      {"np_cnp_sent", count(kCnpSent)},
      {"rp_cnp_handled", count(kCnpHandled)},
      {"rp_cnp_ignored", count(kCnpIgnored)},
      {"out_of_sequence", WrapQCounter(n.totals[kOutOfSequence])},
      {"packet_seq_err", WrapQCounter(n.totals[kPacketSeqErr])},
      {"local_ack_timeout_err", WrapQCounter(n.totals[kLocalAckTimeout])},
      {"duplicate_request", 0},
      {"implied_nak_seq_err", 0},
      {"rnr_nak_retry_err", 0},
      {"out_of_buffer", 0},
  };
  for (uint32_t p : n.qos.pfc_priorities()) {
    auto pause = [&](Counter c) {
      return static_cast<uint64_t>(n.pause_totals[p][c - kFirstPauseCounter]);
    };
    r.ethtool[absl::StrCat("rx_prio", p, "_pause")] = pause(kRxPauseFrames);
    r.ethtool[absl::StrCat("tx_prio", p, "_pause")] = pause(kTxPauseFrames);
    r.ethtool[absl::StrCat("rx_prio", p, "_pause_duration")] = pause(kRxPauseUs);
    r.ethtool[absl::StrCat("tx_prio", p, "_pause_duration")] = pause(kTxPauseUs);
  }
  return r;
}

}  // namespace weft::sim
