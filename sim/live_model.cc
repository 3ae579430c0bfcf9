#include "sim/live_model.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"

namespace weft::sim {
namespace {

// Ties between a NIC's own link (or a demand) and a switch port saturating at the same
// level go to the NIC: flows that only fill a port exactly at line rate build no queue.
constexpr double kSwitchPortTieBreak = 1 + 1e-9;
// Ties between a traffic class's share of a port and a link go to the link: a class given
// just what its flows get elsewhere is not what freezes them.
constexpr double kClassShareTieBreak = 1 + 2e-9;

// Fixed points kept across solves, at most (the memo starts again past this).
constexpr size_t kFixedPointsKept = 1 << 16;

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
  const int num_links = static_cast<int>(fabric_.links().size());
  ports_.resize(num_links);
  link_counters_.resize(num_links);
  link_flows_begin_.assign(num_links + 1, 0);
  link_tie_.resize(num_links);
  for (int k = 0; k < num_links; ++k) {
    link_tie_[k] = fabric_.links()[k].from.kind == Vertex::Kind::kSwitch ? kSwitchPortTieBreak : 1;
  }
  ClearFaults();
}

absl::Status LiveModel::CheckLink(int link) const {
  const int n = static_cast<int>(fabric_.links().size());
  if (link >= 0 && link < n) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("link = ", link, " is out of range: accepted [0, ", n - 1, "]"));
}

absl::Status LiveModel::SetLinkDown(int link, bool down) {
  if (absl::Status s = CheckLink(link); !s.ok()) return s;
  link_down_[link] = link_down_[link ^ 1] = down;  // a cable is links 2k and 2k + 1
  routes_around_down_links_.clear();
  Route();
  Solve();
  return absl::OkStatus();
}

absl::Status LiveModel::SetLinkCapacityScale(int link, double scale) {
  if (absl::Status s = CheckLink(link); !s.ok()) return s;
  if (!(scale > 0 && scale <= 1)) {
    return absl::InvalidArgumentError(absl::StrCat("link ", link, ": capacity scale = ", scale,
                                                   " is out of range: accepted (0, 1] (1 clears)"));
  }
  capacity_scale_[link] = capacity_scale_[link ^ 1] = scale;
  Solve();
  return absl::OkStatus();
}

absl::Status LiveModel::SetPauseStorm(int nic, double share) {
  const int n = static_cast<int>(fabric_.nics().size());
  if (nic < 0 || nic >= n) {
    return absl::InvalidArgumentError(
        absl::StrCat("nic = ", nic, " is out of range: accepted [0, ", n - 1, "]"));
  }
  if (!(share >= 0 && share <= 1)) {
    return absl::InvalidArgumentError(absl::StrCat("NIC ", nic, ": pause share = ", share,
                                                   " is out of range: accepted [0, 1] (0 clears)"));
  }
  const int downlink = fabric_.nics()[nic].downlink;
  if (downlink < 0) return absl::NotFoundError(absl::StrCat("NIC ", nic, " is not cabled"));
  storm_share_[downlink] = share;
  Solve();
  return absl::OkStatus();
}

absl::Status LiveModel::SetNodeDead(int node, bool dead) {
  const int n = fabric_.num_nodes();
  if (node < 0 || node >= n) {
    return absl::InvalidArgumentError(
        absl::StrCat("node = ", node, " is out of range: accepted [0, ", n - 1, "]"));
  }
  node_dead_[node] = dead;
  Solve();
  return absl::OkStatus();
}

void LiveModel::ClearFaults() {
  const size_t num_links = fabric_.links().size();
  const bool had_down = std::find(link_down_.begin(), link_down_.end(), true) != link_down_.end();
  link_down_.assign(num_links, false);
  routes_around_down_links_.clear();
  capacity_scale_.assign(num_links, 1);
  storm_share_.assign(num_links, 0);
  node_dead_.assign(fabric_.num_nodes(), false);
  if (had_down) Route();
  Solve();
}

// Routes change only with the links that are down: paths are cached per 5-tuple, the
// all-up ones for good (the fabric is immutable) and those around down links until the
// next change of the down links.
constexpr size_t kRoutesKeptAtLeast = 1 << 16;

uint64_t LiveModel::RouteKey(const FlowTuple& tuple) {
  return static_cast<uint64_t>(tuple.src_nic) << 40 ^ static_cast<uint64_t>(tuple.dst_nic) << 16 ^
         tuple.udp_src_port;
}

absl::StatusOr<const std::vector<int>*> LiveModel::CachedPath(const FlowTuple& tuple,
                                                              bool around_down_links) {
  auto& cache = around_down_links ? routes_around_down_links_ : all_up_routes_;
  const uint64_t key = RouteKey(tuple);
  auto found = cache.find(key);
  if (found == cache.end()) {
    absl::StatusOr<std::vector<int>> path =
        around_down_links ? fabric_.EcmpPath(tuple, link_down_) : fabric_.EcmpPath(tuple);
    if (!path.ok()) return path.status();
    found = cache.emplace(key, *std::move(path)).first;
  }
  return &found->second;
}

void LiveModel::Route() {
  const bool any_down = std::find(link_down_.begin(), link_down_.end(), true) != link_down_.end();
  for (size_t i = 0; i < specs_.size(); ++i) {
    const FlowSpec& f = specs_[i];
    // SetFlows checked the NICs, so a path fails only when down links leave none.
    absl::StatusOr<const std::vector<int>*> path =
        CachedPath({f.src_nic, f.dst_nic, f.udp_src_port}, any_down);
    if (path.ok()) {
      flow_states_[i].path = **path;
    } else {
      flow_states_[i].path.clear();
    }
  }
  IndexFlowsOnLinks();
}

void LiveModel::IndexFlowsOnLinks() {
  // The paths too, one after another in one array.
  flow_links_begin_.resize(flow_states_.size() + 1);
  flow_links_.clear();
  for (size_t i = 0; i < flow_states_.size(); ++i) {
    flow_links_begin_[i] = static_cast<int>(flow_links_.size());
    flow_links_.insert(flow_links_.end(), flow_states_[i].path.begin(), flow_states_[i].path.end());
  }
  flow_links_begin_.back() = static_cast<int>(flow_links_.size());
  // Counting sort into one array: a link's flows lie together, in flow order.
  std::fill(link_flows_begin_.begin(), link_flows_begin_.end(), 0);
  for (const FlowState& flow : flow_states_) {
    for (int k : flow.path) ++link_flows_begin_[k + 1];
  }
  for (size_t k = 1; k < link_flows_begin_.size(); ++k) {
    link_flows_begin_[k] += link_flows_begin_[k - 1];
  }
  link_flows_.resize(link_flows_begin_.back());
  std::vector<int>& next = link_flows_fill_;
  next.assign(link_flows_begin_.begin(), link_flows_begin_.end() - 1);
  for (size_t i = 0; i < flow_states_.size(); ++i) {
    for (int k : flow_states_[i].path) link_flows_[next[k]++] = static_cast<int>(i);
  }
}

absl::Status LiveModel::SetFlows(std::vector<FlowSpec> flows) {
  // Jobs that come and go bring new source ports: keep the cache to a few times the flows.
  if (all_up_routes_.size() > 4 * flows.size() + kRoutesKeptAtLeast) all_up_routes_.clear();
  std::vector<const std::vector<int>*> paths(flows.size());
  for (size_t i = 0; i < flows.size(); ++i) {
    const FlowSpec& f = flows[i];
    if (!(f.demand_bps > 0)) {  // also refuses NaN
      return absl::InvalidArgumentError(
          absl::StrCat("flows[", i, "].demand_bps = ", f.demand_bps,
                       " is out of range: accepted (0, inf] (kAsFastAsAllowed = inf)"));
    }
    if (f.priority < 0 || f.priority >= kNumPriorities) {
      return absl::InvalidArgumentError(absl::StrCat("flows[", i, "].priority = ", f.priority,
                                                     " is out of range: accepted [0, ",
                                                     kNumPriorities - 1, "]"));
    }
    absl::StatusOr<const std::vector<int>*> path =
        CachedPath({f.src_nic, f.dst_nic, f.udp_src_port}, /*around_down_links=*/false);
    if (!path.ok()) {
      return absl::Status(path.status().code(),
                          absl::StrCat("flows[", i, "]: ", path.status().message()));
    }
    paths[i] = *path;
  }
  specs_ = std::move(flows);
  // The old states' path vectors are reused: a solve allocates nothing per flow.
  flow_states_.resize(specs_.size());
  for (size_t i = 0; i < flow_states_.size(); ++i) {
    std::vector<int> path = std::move(flow_states_[i].path);
    flow_states_[i] = FlowState();
    path.assign(paths[i]->begin(), paths[i]->end());
    flow_states_[i].path = std::move(path);
  }
  if (std::find(link_down_.begin(), link_down_.end(), true) != link_down_.end()) {
    Route();
  } else {
    IndexFlowsOnLinks();
  }
  flow_counters_.assign(flow_states_.size(), FlowCounters());
  link_counters_.assign(fabric_.links().size(), LinkCounters());
  time_s_ = 0;
  Solve();
  return absl::OkStatus();
}

void LiveModel::Solve() {
  const std::vector<Link>& links = fabric_.links();
  capacity_bps_.resize(links.size());
  for (size_t k = 0; k < links.size(); ++k) {
    capacity_bps_[k] = link_down_[k] ? 0 : links[k].capacity_bps * capacity_scale_[k];
  }
  FillScheduledRates();
  ApplyPfc();
  SettlePorts();
}

void LiveModel::ApplyPfc() {
  const int num_links = static_cast<int>(capacity_bps_.size());
  std::vector<double> sigma(num_links, 1);
  bool throttled = false;
  for (int k = 0; k < num_links; ++k) {
    if (storm_share_[k] <= 0) continue;
    double arrival_bps = 0;
    for (int f : flows_on_link(k)) arrival_bps += Lossless(f) ? flow_states_[f].offered_bps : 0;
    const double served_bps = (1 - storm_share_[k]) * capacity_bps_[k];
    if (arrival_bps > served_bps) {
      sigma[k] = served_bps / arrival_bps;
      throttled = true;
    }
  }
  // Pauses spread upstream: a port passes the least σ of the ports its flows enter next.
  // Routes are up-down, so this settles within the longest path's length of passes.
  for (bool changed = throttled; changed;) {
    changed = false;
    for (int f = 0; f < static_cast<int>(flow_states_.size()); ++f) {
      if (!Lossless(f)) continue;  // PFC pauses priority 3 only
      const FlowState& flow = flow_states_[f];
      for (int i = static_cast<int>(flow.path.size()) - 2; i >= 0; --i) {
        const double next = sigma[flow.path[i + 1]];
        if (next < sigma[flow.path[i]]) {
          sigma[flow.path[i]] = next;
          changed = true;
        }
      }
    }
  }
  for (int f = 0; f < static_cast<int>(flow_states_.size()); ++f) {
    FlowState& flow = flow_states_[f];
    const bool paused = Lossless(f) && !flow.path.empty();
    flow.rate_bps = flow.offered_bps * (paused ? sigma[flow.path[0]] : 1);
  }
  pause_share_.assign(num_links, 0);
  for (int k = 0; k < num_links; ++k) {
    pause_share_[k] = storm_share_[k];
    if (sigma[k] < 1) MarkBacklogged(k);
  }
  PauseBehindUncontrolledFlows();
}

void LiveModel::PauseBehindUncontrolledFlows() {
  const std::vector<Nic>& nics = fabric_.nics();
  for (int f = 0; f < static_cast<int>(flow_states_.size()); ++f) {
    const FlowState& flow = flow_states_[f];
    const FlowSpec& spec = specs_[f];
    if (spec.congestion_controlled || flow.path.empty() || flow.bottleneck_link < 0) continue;
    const double wants_bps = std::min(spec.demand_bps, nics[spec.src_nic].bps);
    if (wants_bps <= flow.rate_bps * kSwitchPortTieBreak) continue;
    for (int k : flow.path) {
      if (k == flow.bottleneck_link) break;
      MarkBacklogged(k);
    }
  }
}

void LiveModel::MarkBacklogged(int link) {
  if (capacity_bps_[link] <= 0) return;
  double throughput_bps = 0;
  for (int f : flows_on_link(link)) throughput_bps += flow_states_[f].rate_bps;
  pause_share_[link] = std::max(pause_share_[link],
                                std::clamp(1 - throughput_bps / capacity_bps_[link], 0.0, 1.0));
}

void LiveModel::FillRates(const std::vector<ClassShare>& shares) {
  const std::vector<Link>& links = fabric_.links();
  const int num_flows = static_cast<int>(flow_states_.size());
  const int num_links = static_cast<int>(links.size());
  // Resources: links [0, num_links), then the class shares.
  const int num_resources = num_links + static_cast<int>(shares.size());
  std::vector<double>& frozen_bps = fill_frozen_bps_;
  std::vector<int>& unfrozen = fill_unfrozen_;
  std::vector<char>& frozen = fill_flow_frozen_;
  frozen_bps.assign(num_resources, 0);
  unfrozen.assign(num_resources, 0);
  frozen.assign(num_flows, false);
  std::vector<std::vector<int>> shares_of_flow(shares.empty() ? 0 : num_flows);
  // A min-heap on (key, id): equal keys fall to the lower id (a demand before any
  // resource), so ties resolve the same way whatever else is in the heap. A resource's
  // entry may be stale: freezing one of its flows only raises its key (the level left
  // for the others), so the entry is a lower bound, pushed again at the current key when
  // it comes up.
  std::vector<FillEvent>& heap = fill_heap_;
  heap.clear();
  auto later = [](const FillEvent& a, const FillEvent& b) {
    return a.key > b.key || (a.key == b.key && a.id > b.id);
  };
  auto members = [&](int r) -> absl::Span<const int> {
    return r < num_links ? flows_on_link(r) : absl::MakeConstSpan(shares[r - num_links].flows);
  };
  auto tie_of = [&](int k) { return k < num_links ? link_tie_[k] : kClassShareTieBreak; };
  auto level_of = [&](int k) {
    const double capacity =
        k < num_links ? capacity_bps_[k] : shares[k - num_links].capacity_bps;
    return std::max(0.0, capacity - frozen_bps[k]) / unfrozen[k];
  };
  for (int s = 0; s < static_cast<int>(shares.size()); ++s) {
    for (int f : shares[s].flows) shares_of_flow[f].push_back(num_links + s);
  }
  // A flow's first link keeps a key of at most its capacity × tie while the flow is
  // unfrozen, so a link keyed above every such bound from the start (its key only rises)
  // never comes up holding an unfrozen flow: it stays out of the heap (a NIC's downlink
  // fed by one flow at line rate, the common case).
  double first_link_bound = 0;
  for (const FlowState& flow : flow_states_) {
    if (flow.path.empty()) continue;
    const int k = flow.path.front();
    first_link_bound = std::max(first_link_bound, capacity_bps_[k] * tie_of(k));
  }
  for (int k = 0; k < num_resources; ++k) {
    unfrozen[k] = static_cast<int>(members(k).size());
    if (unfrozen[k] == 0) continue;
    const double key = level_of(k) * tie_of(k);
    if (k < num_links && key > first_link_bound) continue;
    heap.push_back({key, k});
  }
  const std::vector<Nic>& nics = fabric_.nics();
  for (int f = 0; f < num_flows; ++f) {
    const bool silent = flow_states_[f].path.empty() || node_dead_[nics[specs_[f].src_nic].node] ||
                        node_dead_[nics[specs_[f].dst_nic].node];
    const double demand = silent ? 0 : specs_[f].demand_bps;
    if (std::isfinite(demand)) heap.push_back({demand, -f - 1});
  }
  std::make_heap(heap.begin(), heap.end(), later);
  double level = 0;
  auto take = [&](int k) {
    frozen_bps[k] += level;
    --unfrozen[k];
  };
  std::vector<double>& rate = fill_rate_;
  std::vector<int>& bottleneck_of = fill_bottleneck_;
  rate.resize(num_flows);
  bottleneck_of.resize(num_flows);
  auto freeze = [&](int f, int bottleneck) {
    frozen[f] = true;
    rate[f] = level;
    bottleneck_of[f] = bottleneck;
    for (int k : flow_path(f)) take(k);
    if (!shares.empty()) {
      for (int k : shares_of_flow[f]) take(k);
    }
  };
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), later);
    const FillEvent e = heap.back();
    heap.pop_back();
    if (e.id < 0) {
      const int f = -e.id - 1;
      if (frozen[f]) continue;
      level = std::max(level, e.key);  // a demand's key is its level
      freeze(f, -1);
      continue;
    }
    if (unfrozen[e.id] == 0) continue;
    const double at = level_of(e.id);
    const double key = at * tie_of(e.id);
    if (key > e.key) {  // stale: up again at its current key
      heap.push_back({key, e.id});
      std::push_heap(heap.begin(), heap.end(), later);
      continue;
    }
    level = std::max(level, at);
    const int port = e.id < num_links ? e.id : shares[e.id - num_links].link;
    for (int f : members(e.id)) {
      if (!frozen[f]) freeze(f, port);
    }
  }
  for (int f = 0; f < num_flows; ++f) {
    flow_states_[f].offered_bps = flow_states_[f].rate_bps = rate[f];
    flow_states_[f].bottleneck_link = bottleneck_of[f];
  }
}

const DcqcnParams& LiveModel::SenderParams(int flow) const {
  if (nic_param_sets_.empty()) return params_;
  return nic_param_sets_[nic_param_set_[specs_[flow].src_nic]];
}

absl::Status LiveModel::SetNicParams(std::vector<DcqcnParams> param_sets,
                                     std::vector<int> set_of_nic) {
  const int num_nics = static_cast<int>(fabric_.nics().size());
  const int num_sets = static_cast<int>(param_sets.size());
  if (!set_of_nic.empty() && static_cast<int>(set_of_nic.size()) != num_nics) {
    return absl::InvalidArgumentError(absl::StrCat("set_of_nic has ", set_of_nic.size(),
                                                   " entries: accepted 0 or one per NIC (",
                                                   num_nics, ")"));
  }
  for (int i = 0; i < static_cast<int>(set_of_nic.size()); ++i) {
    if (set_of_nic[i] < 0 || set_of_nic[i] >= num_sets) {
      return absl::InvalidArgumentError(absl::StrCat("set_of_nic[", i, "] = ", set_of_nic[i],
                                                     " is out of range: accepted [0, ",
                                                     num_sets - 1, "]"));
    }
  }
  for (int k = 0; k < num_sets; ++k) {
    DcqcnParams& set = param_sets[k];
    // The switch's ramp is the switch's, whatever the NIC runs.
    set.kmin_bytes = params_.kmin_bytes;
    set.kmax_bytes = params_.kmax_bytes;
    set.pmax = params_.pmax;
    set.above_kmax = params_.above_kmax;
    DcqcnParams checked = set;
    checked.capacity_bps = std::max(1e9, set.rate_ai_bps);
    if (absl::Status s = ValidateParams(checked); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("param_sets[", k, "]: ", s.message()));
    }
  }
  if (set_of_nic.empty()) param_sets.clear();
  nic_param_sets_ = std::move(param_sets);
  nic_param_set_ = std::move(set_of_nic);
  fixed_point_memo_.clear();  // a set index may name other parameters now
  Solve();
  return absl::OkStatus();
}

void LiveModel::SettlePorts() {
  const std::vector<Link>& links = fabric_.links();
  const std::vector<Nic>& nics = fabric_.nics();
  absl::flat_hash_map<std::tuple<int, int, int64_t>, FixedPoint> cache;
  fixed_points_computed_ = 0;
  // What the ports' sums read of a flow, packed: each flow is read once per port it crosses.
  std::vector<SettleFlow>& packed = settle_flows_;
  packed.resize(flow_states_.size());
  for (size_t f = 0; f < packed.size(); ++f) {
    packed[f] = {flow_states_[f].rate_bps,
                 std::min(specs_[f].demand_bps, nics[specs_[f].src_nic].bps),
                 flow_states_[f].bottleneck_link, specs_[f].priority};
  }
  port_marks_.assign(links.size(), 0);
  for (int k = 0; k < static_cast<int>(links.size()); ++k) {
    if (flows_on_link(k).empty() && ports_[k].flows == 0) {
      // Idle before and now: only what faults change can differ from an idle port's.
      ports_[k].capacity_bps = capacity_bps_[k];
      ports_[k].pause_rx_share = pause_share_[k];
      ports_[k].pause_tx_share = pause_share_[k ^ 1];
      continue;
    }
    PortState port;
    const std::array<int, kNumPriorities>& tc_of = scheduler(k).priority_to_tc;
    for (int f : flows_on_link(k)) {
      const SettleFlow& flow = packed[f];
      port.rate_bps += flow.rate_bps;
      ++port.flows;
      port.offered_bps += flow.offered_bps;
      if (flow.bottleneck_link == k) ++port.bottlenecked_flows;
      port.class_rate_bps[tc_of[flow.priority]] += flow.rate_bps;
    }
    port.capacity_bps = capacity_bps_[k];
    port.utilization = port.capacity_bps > 0 ? port.rate_bps / port.capacity_bps : 0;
    port.pause_rx_share = pause_share_[k];
    port.pause_tx_share = pause_share_[k ^ 1];
    port.congested = links[k].from.kind == Vertex::Kind::kSwitch && port.bottlenecked_flows > 0 &&
                     port.offered_bps > port.capacity_bps * kSwitchPortTieBreak;
    if (port.congested) SettleCongestedPort(k, &cache, &port);
    port_marks_[k] = port.mark_probability;
    ports_[k] = port;
  }
  const double packet_bits = params_.packet_bytes * 8;
  for (int f = 0; f < static_cast<int>(flow_states_.size()); ++f) {
    FlowState& flow = flow_states_[f];
    double unmarked = 1;
    // Only the lossless priority's queue is modelled (and marks).
    if (Lossless(f)) {
      for (int k : flow_path(f)) unmarked *= 1 - port_marks_[k];
    }
    flow.mark_probability = 1 - unmarked;
    flow.marked_packets_per_s = flow.mark_probability * flow.rate_bps / packet_bits;
    flow.cnps_per_s = CnpsPerSecond(flow.marked_packets_per_s, SenderParams(f).tau_us * 1e-6);
  }
}

void LiveModel::SettleCongestedPort(
    int link, absl::flat_hash_map<std::tuple<int, int, int64_t>, FixedPoint>* cache,
    PortState* port) {
  double residual_bps = 0;  // the share of the flows bottlenecked here
  bool uncontrolled = false;
  std::vector<int> senders_per_set(std::max<size_t>(1, nic_param_sets_.size()), 0);
  int held_flows = 0;       // of the lossless priority: DCQCN's N here
  double lossless_bps = 0;  // what the marking queue carries
  for (int f : flows_on_link(link)) {
    if (!Lossless(f)) continue;
    lossless_bps += flow_states_[f].rate_bps;
    if (flow_states_[f].bottleneck_link != link) continue;
    ++held_flows;
    residual_bps += flow_states_[f].rate_bps;
    uncontrolled |= !specs_[f].congestion_controlled;
    if (!nic_param_sets_.empty()) ++senders_per_set[nic_param_set_[specs_[f].src_nic]];
  }
  const double packet_bits = params_.packet_bytes * 8;
  if (held_flows == 0) return;  // other classes' queues are not modelled: no marks
  if (uncontrolled) {
    // Senders that do not back off keep the queue above Kmax, where every packet is marked.
    port->mark_probability = 1;
    port->queue_bytes = params_.kmax_bytes;
    port->settled = false;
    port->marked_packets_per_s = lossless_bps / packet_bits;
    return;
  }
  const int set = static_cast<int>(
      std::max_element(senders_per_set.begin(), senders_per_set.end()) - senders_per_set.begin());
  const DcqcnParams& params = nic_param_sets_.empty() ? params_ : nic_param_sets_[set];
  // The fixed point depends on the flows' count and share only; R_AI must fit in it.
  const double capacity = std::max(residual_bps, params.rate_ai_bps);
  const std::tuple<int, int, int64_t> key = {set, held_flows, std::llround(capacity)};
  auto it = cache->find(key);
  if (it == cache->end()) {
    it = cache->emplace(key, MemoizedFixedPoint(params, set, held_flows, capacity)).first;
    ++fixed_points_computed_;
  }
  const FixedPoint& fp = it->second;
  port->mark_probability = std::min(1.0, fp.marking_probability);
  port->queue_bytes = fp.queue_bytes;
  if (fp.beyond_ramp && params_.above_kmax == AboveKmax::kMarkAll) {
    port->queue_bytes = params_.kmax_bytes;
    port->settled = false;
  }
  port->marked_packets_per_s = port->mark_probability * lossless_bps / packet_bits;
}

const FixedPoint& LiveModel::MemoizedFixedPoint(const DcqcnParams& params, int set, int flows,
                                                double capacity_bps) {
  uint64_t bits = 0;
  std::memcpy(&bits, &capacity_bps, sizeof bits);
  if (fixed_point_memo_.size() >= kFixedPointsKept) fixed_point_memo_.clear();
  auto [it, inserted] = fixed_point_memo_.try_emplace({set, flows, bits});
  if (inserted) {
    DcqcnParams at_port = params;
    at_port.capacity_bps = capacity_bps;
    // Valid by construction: Create / SetNicParams checked the rest, capacity ≥ R_AI > 0.
    it->second = ClosedFormFixedPoint(at_port, flows).value();
  }
  return it->second;
}

double PauseFramesPerSecond(double pause_share, double link_bps) {
  // One XOFF per refresh: frames ask for kPauseQuanta × 512 bit times at line rate.
  const double refresh_s = kPauseQuanta * 512.0 / link_bps * kPauseRefreshFraction;
  return pause_share / refresh_s;
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
  const std::vector<Link>& links = fabric_.links();
  for (size_t k = 0; k < ports_.size(); ++k) {
    const PortState& port = ports_[k];
    LinkCounters& c = link_counters_[k];
    if (port.pause_rx_share > 0 || port.pause_tx_share > 0) {
      c.rx_pause_duration_us += port.pause_rx_share * duration_s * 1e6;
      c.tx_pause_duration_us += port.pause_tx_share * duration_s * 1e6;
      c.rx_pause_frames +=
          PauseFramesPerSecond(port.pause_rx_share, links[k].capacity_bps) * duration_s;
      c.tx_pause_frames +=
          PauseFramesPerSecond(port.pause_tx_share, links[k].capacity_bps) * duration_s;
    }
    if (port.flows == 0) continue;
    c.bytes += port.rate_bps / 8 * duration_s;
    c.packets += port.rate_bps / packet_bits * duration_s;
    c.marked_packets += port.marked_packets_per_s * duration_s;
  }
  time_s_ += duration_s;
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------------------
// Scheduling between traffic classes (ETS / strict priority; see the header comment).

std::vector<double> ScheduleClasses(const PortScheduler& scheduler, double capacity_bps,
                                    const std::vector<int>& tcs,
                                    const std::vector<double>& need_bps) {
  const int n = static_cast<int>(tcs.size());
  std::vector<double> give(n, 0);
  double left = std::max(0.0, capacity_bps);
  std::vector<int> strict;
  for (int i = 0; i < n; ++i) {
    if (scheduler.tsa[tcs[i]] == Tsa::kStrict) strict.push_back(i);
  }
  std::sort(strict.begin(), strict.end(), [&](int a, int b) { return tcs[a] > tcs[b]; });
  for (int i : strict) {
    give[i] = std::min(need_bps[i], left);
    left -= give[i];
  }
  // Water-filling by weight: the weighted ETS classes, then the zero-weight ones equally.
  for (const bool weighted : {true, false}) {
    std::vector<int> active;
    for (int i = 0; i < n; ++i) {
      if (scheduler.tsa[tcs[i]] == Tsa::kEts && (scheduler.weight[tcs[i]] > 0) == weighted) {
        active.push_back(i);
      }
    }
    auto weight = [&](int i) { return weighted ? scheduler.weight[tcs[i]] : 1.0; };
    while (left > 0 && !active.empty()) {
      double total_weight = 0;
      for (int i : active) total_weight += weight(i);
      std::vector<int> hungry;
      double satisfied_bps = 0;
      for (int i : active) {
        if (need_bps[i] - give[i] <= left * weight(i) / total_weight) {
          satisfied_bps += need_bps[i] - give[i];
          give[i] = need_bps[i];
        } else {
          hungry.push_back(i);
        }
      }
      if (hungry.size() == active.size()) {  // every one wants more than its share
        for (int i : active) give[i] += left * weight(i) / total_weight;
        left = 0;
      } else {
        left -= satisfied_bps;
      }
      active = std::move(hungry);
    }
  }
  // Nobody is held back: any class may use what the others leave (the port's capacity
  // still bounds their sum in progressive filling).
  if (left > 0) {
    for (double& g : give) g += left;
  }
  return give;
}

const PortScheduler& LiveModel::scheduler(int link) const {
  static const PortScheduler kDefault;
  return schedulers_.empty() ? kDefault : schedulers_[link];
}

absl::Status LiveModel::SetPortSchedulers(std::vector<PortScheduler> per_link) {
  const size_t num_links = fabric_.links().size();
  if (!per_link.empty() && per_link.size() != num_links) {
    return absl::InvalidArgumentError(absl::StrCat("per_link has ", per_link.size(),
                                                   " schedulers: accepted 0 or one per link (",
                                                   num_links, ")"));
  }
  for (size_t k = 0; k < per_link.size(); ++k) {
    const PortScheduler& s = per_link[k];
    for (int p = 0; p < kNumPriorities; ++p) {
      if (s.priority_to_tc[p] < 0 || s.priority_to_tc[p] >= kNumTrafficClasses) {
        return absl::InvalidArgumentError(
            absl::StrCat("per_link[", k, "].priority_to_tc[", p, "] = ", s.priority_to_tc[p],
                         " is out of range: accepted [0, ", kNumTrafficClasses - 1, "]"));
      }
    }
    for (int tc = 0; tc < kNumTrafficClasses; ++tc) {
      if (!(s.weight[tc] >= 0 && std::isfinite(s.weight[tc]))) {
        return absl::InvalidArgumentError(absl::StrCat("per_link[", k, "].weight[", tc, "] = ",
                                                       s.weight[tc],
                                                       " is out of range: accepted [0, inf)"));
      }
    }
  }
  schedulers_ = std::move(per_link);
  Solve();
  return absl::OkStatus();
}

// Progressive filling with a resource per (port, TC) where two or more TCs meet, their
// capacities from ScheduleClasses on the needs the previous pass showed, until they stop
// moving. The first pass takes every TC to want all it can get.
void LiveModel::FillScheduledRates() {
  std::vector<ClassShare> shares;
  // Flows all on one priority (every job on RoCE, the common case) meet in one class.
  const bool one_priority =
      std::all_of(specs_.begin(), specs_.end(),
                  [&](const FlowSpec& f) { return f.priority == specs_.front().priority; });
  for (int k = 0; k < static_cast<int>(fabric_.links().size()) && !one_priority; ++k) {
    if (flows_on_link(k).empty()) continue;
    const PortScheduler& s = scheduler(k);
    auto tc_of = [&](int f) { return s.priority_to_tc[specs_[f].priority]; };
    const int first_tc = tc_of(flows_on_link(k).front());
    if (std::all_of(flows_on_link(k).begin(), flows_on_link(k).end(),
                    [&](int f) { return tc_of(f) == first_tc; })) {
      continue;  // one class: the link is its resource
    }
    std::array<std::vector<int>, kNumTrafficClasses> by_tc;
    for (int f : flows_on_link(k)) by_tc[tc_of(f)].push_back(f);
    for (int tc = 0; tc < kNumTrafficClasses; ++tc) {
      if (!by_tc[tc].empty()) shares.push_back({k, tc, 0, std::move(by_tc[tc])});
    }
  }
  scheduler_passes_ = 1;
  scheduler_settled_ = true;
  if (shares.empty()) {
    FillRates();
    return;
  }
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> need(shares.size(), inf);
  const int num_links = static_cast<int>(fabric_.links().size());
  std::vector<std::vector<int>> shares_of_flow(flow_states_.size());
  for (size_t i = 0; i < shares.size(); ++i) {
    for (int f : shares[i].flows) shares_of_flow[f].push_back(static_cast<int>(i));
  }
  // Shares of a port are contiguous: [begin, end).
  auto schedule = [&]() {
    bool moved = false;
    for (size_t begin = 0, end = 0; begin < shares.size(); begin = end) {
      const int k = shares[begin].link;
      std::vector<int> tcs;
      std::vector<double> port_need;
      for (end = begin; end < shares.size() && shares[end].link == k; ++end) {
        tcs.push_back(shares[end].tc);
        port_need.push_back(need[end]);
      }
      const std::vector<double> give = ScheduleClasses(scheduler(k), capacity_bps_[k], tcs,
                                                       port_need);
      for (size_t i = begin; i < end; ++i) {
        const double tolerance = 1e-9 * std::max(1.0, capacity_bps_[k]);
        moved |= std::abs(give[i - begin] - shares[i].capacity_bps) > tolerance;
        shares[i].capacity_bps = give[i - begin];
      }
    }
    return moved;
  };
  schedule();
  for (scheduler_passes_ = 1;; ++scheduler_passes_) {
    FillRates(shares);
    // A resource limits a flow when it is full and the flow has its largest rate (the
    // max-min bottleneck); a class needs more than it got when one of its flows has no
    // limit but this port (whichever resource progressive filling froze it at: ties).
    std::vector<double> sum_bps(num_links + shares.size(), 0);
    std::vector<double> max_bps(num_links + shares.size(), 0);
    auto add = [&](int r, double rate) {
      sum_bps[r] += rate;
      max_bps[r] = std::max(max_bps[r], rate);
    };
    for (int f = 0; f < static_cast<int>(flow_states_.size()); ++f) {
      for (int k : flow_states_[f].path) add(k, flow_states_[f].rate_bps);
    }
    for (size_t i = 0; i < shares.size(); ++i) {
      for (int f : shares[i].flows) add(num_links + i, flow_states_[f].rate_bps);
    }
    auto limits = [&](int r, double capacity, int f) {
      const double rate = flow_states_[f].rate_bps;
      const double slack = 1e-9 * std::max(1.0, capacity);
      return sum_bps[r] >= capacity - slack && rate >= max_bps[r] - slack;
    };
    auto limited_elsewhere = [&](int f, int port) {
      if (flow_states_[f].bottleneck_link == -1) return true;  // its demand, or silent
      for (int k : flow_states_[f].path) {
        if (k != port && limits(k, capacity_bps_[k], f)) return true;
      }
      for (int i : shares_of_flow[f]) {
        if (shares[i].link != port && limits(num_links + i, shares[i].capacity_bps, f)) {
          return true;
        }
      }
      return false;
    };
    for (size_t i = 0; i < shares.size(); ++i) {
      double rate_bps = 0;
      bool held_here = false;
      for (int f : shares[i].flows) {
        rate_bps += flow_states_[f].rate_bps;
        held_here |= !limited_elsewhere(f, shares[i].link);
      }
      need[i] = held_here ? inf : rate_bps;
    }
    if (!schedule()) break;
    if (scheduler_passes_ == kMaxSchedulerPasses) {
      scheduler_settled_ = false;
      FillRates(shares);
      break;
    }
  }
}

}  // namespace weft::sim
