#include "sim/live_model.h"

#include <algorithm>
#include <cmath>
#include <queue>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"

namespace weft::sim {
namespace {

// Ties between a NIC's own link (or a demand) and a switch port saturating at the same
// level go to the NIC: flows that only fill a port exactly at line rate build no queue.
constexpr double kSwitchPortTieBreak = 1 + 1e-9;

struct Event {
  double key;    // when (in the common fill level) this saturates; the heap's order
  double level;  // the fill level itself
  int id;        // link id, or -(flow id) - 1 for a flow's demand
  int version;   // a link's version when pushed; stale entries are skipped
  bool operator>(const Event& other) const { return key > other.key; }
};

}  // namespace

double CnpsPerSecond(double marks_per_s, double cnp_interval_s) {
  if (marks_per_s <= 0) return 0;
  return marks_per_s / (1 + marks_per_s * cnp_interval_s);
}

absl::StatusOr<LiveModel> LiveModel::Create(Fabric fabric, const DcqcnParams& params) {
  // capacity_bps is per port; validate the rest against a capacity that fits R_AI.
  DcqcnParams checked = params;
  checked.capacity_bps = std::max(1e9, params.rate_ai_bps);
  if (absl::Status s = ValidateParams(checked); !s.ok()) return s;
  return LiveModel(std::move(fabric), params);
}

LiveModel::LiveModel(Fabric fabric, const DcqcnParams& params)
    : fabric_(std::move(fabric)), params_(params) {
  ports_.resize(fabric_.links().size());
  link_counters_.resize(fabric_.links().size());
  flows_on_link_.resize(fabric_.links().size());
}

absl::Status LiveModel::SetFlows(std::vector<FlowSpec> flows) {
  std::vector<FlowState> states(flows.size());
  for (size_t i = 0; i < flows.size(); ++i) {
    const FlowSpec& f = flows[i];
    if (!(f.demand_bps > 0)) {  // also refuses NaN
      return absl::InvalidArgumentError(
          absl::StrCat("flows[", i, "].demand_bps = ", f.demand_bps,
                       " is out of range: accepted (0, inf] (kAsFastAsAllowed = inf)"));
    }
    absl::StatusOr<std::vector<int>> path =
        fabric_.EcmpPath({f.src_nic, f.dst_nic, f.udp_src_port});
    if (!path.ok()) {
      return absl::Status(path.status().code(),
                          absl::StrCat("flows[", i, "]: ", path.status().message()));
    }
    states[i].path = *std::move(path);
  }
  specs_ = std::move(flows);
  flow_states_ = std::move(states);
  for (std::vector<int>& on : flows_on_link_) on.clear();
  for (size_t i = 0; i < flow_states_.size(); ++i) {
    for (int k : flow_states_[i].path) flows_on_link_[k].push_back(static_cast<int>(i));
  }
  flow_counters_.assign(flow_states_.size(), FlowCounters());
  link_counters_.assign(fabric_.links().size(), LinkCounters());
  time_s_ = 0;
  Solve();
  return absl::OkStatus();
}

void LiveModel::Solve() {
  FillRates();
  SettlePorts();
}

void LiveModel::FillRates() {
  const std::vector<Link>& links = fabric_.links();
  const int num_flows = static_cast<int>(flow_states_.size());
  std::vector<double> frozen_bps(links.size(), 0);
  std::vector<int> unfrozen(links.size(), 0);
  std::vector<int> version(links.size(), 0);
  std::vector<bool> frozen(num_flows, false);
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> heap;

  auto push_link = [&](int k) {
    const double level = std::max(0.0, links[k].capacity_bps - frozen_bps[k]) / unfrozen[k];
    const bool switch_port = links[k].from.kind == Vertex::Kind::kSwitch;
    heap.push({switch_port ? level * kSwitchPortTieBreak : level, level, k, version[k]});
  };
  for (int k = 0; k < static_cast<int>(links.size()); ++k) {
    unfrozen[k] = static_cast<int>(flows_on_link_[k].size());
    if (unfrozen[k] > 0) push_link(k);
  }
  for (int f = 0; f < num_flows; ++f) {
    if (std::isfinite(specs_[f].demand_bps)) {
      heap.push({specs_[f].demand_bps, specs_[f].demand_bps, -f - 1, 0});
    }
  }
  double level = 0;
  auto freeze = [&](int f, int bottleneck) {
    frozen[f] = true;
    flow_states_[f].rate_bps = level;
    flow_states_[f].bottleneck_link = bottleneck;
    for (int k : flow_states_[f].path) {
      frozen_bps[k] += level;
      --unfrozen[k];
      ++version[k];
      if (unfrozen[k] > 0) push_link(k);
    }
  };
  while (!heap.empty()) {
    const Event e = heap.top();
    heap.pop();
    if (e.id < 0) {
      const int f = -e.id - 1;
      if (frozen[f]) continue;
      level = std::max(level, e.level);
      freeze(f, -1);
      continue;
    }
    if (e.version != version[e.id] || unfrozen[e.id] == 0) continue;
    level = std::max(level, e.level);
    for (int f : flows_on_link_[e.id]) {
      if (!frozen[f]) freeze(f, e.id);
    }
  }
}

void LiveModel::SettlePorts() {
  const std::vector<Link>& links = fabric_.links();
  const std::vector<Nic>& nics = fabric_.nics();
  const double packet_bits = params_.packet_bytes * 8;
  absl::flat_hash_map<std::pair<int, int64_t>, FixedPoint> cache;
  fixed_points_computed_ = 0;
  for (int k = 0; k < static_cast<int>(links.size()); ++k) {
    PortState port;
    double offered_bps = 0;    // what the flows would send uncontrolled
    double residual_bps = 0;   // the share of the flows bottlenecked here
    for (int f : flows_on_link_[k]) {
      const double rate = flow_states_[f].rate_bps;
      port.rate_bps += rate;
      ++port.flows;
      offered_bps += std::min(specs_[f].demand_bps, nics[specs_[f].src_nic].bps);
      if (flow_states_[f].bottleneck_link == k) {
        ++port.bottlenecked_flows;
        residual_bps += rate;
      }
    }
    port.utilization = port.rate_bps / links[k].capacity_bps;
    port.congested = links[k].from.kind == Vertex::Kind::kSwitch && port.bottlenecked_flows > 0 &&
                     offered_bps > links[k].capacity_bps * kSwitchPortTieBreak;
    if (port.congested) {
      // The fixed point depends on the flows' count and share only; R_AI must fit in it.
      const double capacity = std::max(residual_bps, params_.rate_ai_bps);
      const std::pair<int, int64_t> key = {port.bottlenecked_flows, std::llround(capacity)};
      auto it = cache.find(key);
      if (it == cache.end()) {
        DcqcnParams at_port = params_;
        at_port.capacity_bps = capacity;
        // Valid by construction: Create checked the rest, capacity ≥ R_AI > 0.
        it = cache.emplace(key, ClosedFormFixedPoint(at_port, port.bottlenecked_flows).value())
                 .first;
        ++fixed_points_computed_;
      }
      const FixedPoint& fp = it->second;
      port.mark_probability = std::min(1.0, fp.marking_probability);
      port.queue_bytes = fp.queue_bytes;
      if (fp.beyond_ramp && params_.above_kmax == AboveKmax::kMarkAll) {
        port.queue_bytes = params_.kmax_bytes;
        port.settled = false;
      }
      port.marked_packets_per_s = port.mark_probability * port.rate_bps / packet_bits;
    }
    ports_[k] = port;
  }
  const double tau_s = params_.tau_us * 1e-6;
  for (FlowState& flow : flow_states_) {
    double unmarked = 1;
    for (int k : flow.path) unmarked *= 1 - ports_[k].mark_probability;
    flow.mark_probability = 1 - unmarked;
    flow.marked_packets_per_s = flow.mark_probability * flow.rate_bps / packet_bits;
    flow.cnps_per_s = CnpsPerSecond(flow.marked_packets_per_s, tau_s);
  }
}

absl::Status LiveModel::Advance(double duration_s) {
  if (!std::isfinite(duration_s) || duration_s < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("duration_s = ", duration_s, " is out of range: accepted [0, inf)"));
  }
  const double packet_bits = params_.packet_bytes * 8;
  for (size_t i = 0; i < flow_states_.size(); ++i) {
    const FlowState& flow = flow_states_[i];
    FlowCounters& c = flow_counters_[i];
    c.bytes += flow.rate_bps / 8 * duration_s;
    c.packets += flow.rate_bps / packet_bits * duration_s;
    c.marked_packets += flow.marked_packets_per_s * duration_s;
    c.cnps += flow.cnps_per_s * duration_s;
  }
  for (size_t k = 0; k < ports_.size(); ++k) {
    const PortState& port = ports_[k];
    if (port.flows == 0) continue;
    LinkCounters& c = link_counters_[k];
    c.bytes += port.rate_bps / 8 * duration_s;
    c.packets += port.rate_bps / packet_bits * duration_s;
    c.marked_packets += port.marked_packets_per_s * duration_s;
  }
  time_s_ += duration_s;
  return absl::OkStatus();
}

}  // namespace weft::sim
