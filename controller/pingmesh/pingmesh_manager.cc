#include "controller/pingmesh/pingmesh_manager.h"

#include <algorithm>
#include <limits>
#include <set>

#include "absl/hash/hash.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/logging.h"

namespace weft::controller {
namespace {

// The most probe flows an agent takes in one pinglist (agent/probe/prober.h).
constexpr size_t kMaxCheckStreamsPerNode = 4096;

int64_t ToMicros(absl::Time t) { return absl::ToUnixMicros(t); }

// The stream a window or a trace from `node` is of (ProbeWindow and ProbePathTrace name
// the flow with the same fields); a port beyond 16 bits becomes 0, which no plan holds.
template <typename FlowProto>
pingmesh::ProbeKey KeyOf(const std::string& node, const FlowProto& w) {
  pingmesh::ProbeKey key;
  key.src_node = node;
  key.src_nic = w.source_nic();
  key.dst_node = w.peer_node();
  key.dst_nic = w.peer_nic();
  key.udp_src_port = w.source_port() <= 65535 ? static_cast<uint16_t>(w.source_port()) : 0;
  key.traffic_class = static_cast<uint8_t>(w.dscp());
  return key;
}

pingmesh::ProbeWindow FromProto(const std::string& node, const weft::v1::ProbeWindow& w) {
  pingmesh::ProbeWindow window;
  window.key = KeyOf(node, w);
  window.start = absl::FromUnixMicros(w.window_start_us());
  window.end = absl::FromUnixMicros(w.window_end_us());
  window.sent = static_cast<int64_t>(w.sent());
  window.lost = static_cast<int64_t>(w.lost());
  window.rtt_min_us = w.rtt_min_us();
  window.rtt_p50_us = w.rtt_p50_us();
  window.rtt_p99_us = w.rtt_p99_us();
  window.sender_host_delay_us = w.sender_host_delay_us();
  window.responder_host_delay_us = w.responder_host_delay_us();
  return window;
}

}  // namespace

PingmeshManagerOptions PingmeshManagerOptions::FromConfig(const weft::v1::PingmeshConfig& config,
                                                          absl::Duration telemetry_interval) {
  PingmeshManagerOptions options;
  options.enabled = config.enabled();
  if (config.window_ms() > 0) options.window = absl::Milliseconds(config.window_ms());
  if (config.timeout_ms() > 0) options.timeout = absl::Milliseconds(config.timeout_ms());
  // The agent hands a window out once its probes are resolved (its end plus the
  // timeout) and sends it at once, or with its next telemetry batch when its stream is
  // behind (or it predates sending them at once); half an interval more for the trip.
  // Only a node that has not sent a window makes its judgement wait this long.
  options.lateness = options.timeout + telemetry_interval + telemetry_interval / 2;
  if (config.tor_uplinks() > 0) options.tor_uplinks = static_cast<int>(config.tor_uplinks());
  options.degrade_blamed_nodes = config.degrade_blamed_nodes();
  options.pinglist.traffic_class = static_cast<uint8_t>(config.dscp());
  if (config.gray_loss_rate() > 0) options.pinglist.gray_loss_rate = config.gray_loss_rate();
  if (config.gray_detect_s() > 0) options.pinglist.gray_detect_s = config.gray_detect_s();
  if (config.max_probes_per_node_per_s() > 0) {
    options.pinglist.max_probes_per_node_per_s = config.max_probes_per_node_per_s();
  }
  if (config.max_nic_capacity_share() > 0) {
    options.pinglist.max_nic_capacity_share = config.max_nic_capacity_share();
  }
  for (const weft::v1::PingmeshSwitch& s : config.switches()) {
    options.switches.push_back(
        pingmesh::SwitchAddresses{s.name(), {s.addresses().begin(), s.addresses().end()}});
  }
  options.localiser.window = options.window;
  // The localiser's horizon spans the detection time the rates are sized for, twice.
  options.localiser.horizon_windows = std::max<int>(
      4, static_cast<int>(2 * options.pinglist.gray_detect_s / absl::ToDoubleSeconds(options.window)));
  return options;
}

absl::Status PingmeshManager::ValidateOptions(const PingmeshManagerOptions& options) {
  if (absl::Status valid = pingmesh::Localiser::ValidateOptions(options.localiser); !valid.ok()) {
    return valid;
  }
  if (options.window <= absl::ZeroDuration() || options.matrix_period < options.window ||
      options.tor_uplinks < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "pingmesh: window (", absl::FormatDuration(options.window),
        ") must be positive, matrix_period (", absl::FormatDuration(options.matrix_period),
        ") at least one window, tor_uplinks (", options.tor_uplinks, ") at least 1"));
  }
  return pingmesh::TracedResolver().SetSwitches(options.switches);
}

PingmeshManager::PingmeshManager(const Clock* clock, FleetSource fleet, Sender send,
                                 EventLog* events, PingmeshMetrics* metrics,
                                 PingmeshManagerOptions options, FindingsSink findings)
    : clock_(clock),
      fleet_source_(std::move(fleet)),
      send_(std::move(send)),
      events_(events),
      metrics_(metrics),
      options_(std::move(options)),
      findings_sink_(std::move(findings)),
      localiser_(&resolver_, options_.localiser) {
  // ValidateOptions checked them.
  resolver_.SetSwitches(options_.switches).IgnoreError();
}

void PingmeshManager::PairSums::Add(const pingmesh::ProbeWindow& window) {
  sent += static_cast<uint64_t>(window.sent);
  lost += static_cast<uint64_t>(window.lost);
  if (window.sent > window.lost && window.rtt_p50_us > 0) {
    rtt_min_us = answered_windows == 0 ? window.rtt_min_us : std::min(rtt_min_us, window.rtt_min_us);
    rtt_p50_sum_us += window.rtt_p50_us;
    rtt_p99_us = std::max(rtt_p99_us, window.rtt_p99_us);
    ++answered_windows;
  }
}

void PingmeshManager::PairSums::Merge(const PairSums& other) {
  sent += other.sent;
  lost += other.lost;
  if (other.answered_windows > 0) {
    rtt_min_us = answered_windows == 0 ? other.rtt_min_us : std::min(rtt_min_us, other.rtt_min_us);
    rtt_p50_sum_us += other.rtt_p50_sum_us;
    rtt_p99_us = std::max(rtt_p99_us, other.rtt_p99_us);
    answered_windows += other.answered_windows;
  }
}

void PingmeshManager::OnStreamAttached(const std::string& node) {
  weft::v1::ControllerMessage message;
  {
    absl::MutexLock lock(&mu_);
    // A node in a pre-job check keeps the check's list; its routine one follows the check.
    if (!options_.enabled || checking_.contains(node)) return;
    auto it = lists_.find(node);
    if (it == lists_.end()) return;
    *message.mutable_pinglist() = it->second;
  }
  if (absl::Status sent = send_(node, std::move(message)); sent.ok()) {
    metrics_->PinglistSent();
  } else {
    WEFT_LOG(WARNING) << "pinglist not sent node=" << node << " error=\"" << sent.message() << "\"";
  }
}

void PingmeshManager::OnProbeWindows(
    const std::string& node,
    const google::protobuf::RepeatedPtrField<weft::v1::ProbeWindow>& windows,
    int64_t windows_through_us) {
  if ((windows.empty() && windows_through_us == 0) || !options_.enabled) return;
  // A window from the future (an agent's clock ahead) would wait in the inbox until the
  // controller's clock reached it: counted late instead.
  const int64_t horizon_us = ToMicros(clock_->Now() + options_.lateness);
  uint64_t late = 0;
  {
    absl::MutexLock lock(&inbox_mu_);
    for (const weft::v1::ProbeWindow& w : windows) {
      if (w.window_end_us() <= judged_through_us_ || w.window_start_us() > horizon_us ||
          !w.error().empty()) {
        // A window with an error carries no probes: the agent could not send them.
        if (w.error().empty()) ++late;
        continue;
      }
      inbox_[w.window_start_us()].push_back(FromProto(node, w));
    }
    windows_late_ += late;
    if (windows_through_us > 0) {
      int64_t& through_us = reported_through_us_[node];
      through_us = std::max(through_us, windows_through_us);
    }
  }
  metrics_->WindowsReceived("late", late);
}

int64_t PingmeshManager::ReportedThroughLocked() const {
  int64_t through_us = std::numeric_limits<int64_t>::max();
  bool any = false;
  auto expect = [&](const std::string& node) {
    auto it = reported_through_us_.find(node);
    through_us = std::min(through_us, it == reported_through_us_.end() ? 0 : it->second);
    any = true;
  };
  // A node in a check probes the check's list, not its routine one.
  for (const auto& [node, list] : lists_) {
    if (list.peers_size() > 0 && !checking_.contains(node)) expect(node);
  }
  for (const std::unique_ptr<Check>& check : checks_) {
    for (const pingmesh::Pinglist& list : check->plan.pinglists) {
      if (!list.entries.empty()) expect(list.node);
    }
  }
  return any ? through_us : 0;
}

void PingmeshManager::OnProbeTraces(
    const std::string& node,
    const google::protobuf::RepeatedPtrField<weft::v1::ProbePathTrace>& traces) {
  if (traces.empty() || !options_.enabled) return;
  uint64_t dropped = 0;
  {
    absl::MutexLock lock(&traces_mu_);
    for (const weft::v1::ProbePathTrace& t : traces) {
      if (traces_inbox_.size() >= kMaxQueuedTraces) {
        ++dropped;
        continue;
      }
      traces_inbox_.push_back(
          pingmesh::PathTrace{KeyOf(node, t), {t.hops().begin(), t.hops().end()}, t.reached()});
    }
  }
  metrics_->TracesReceived("dropped", dropped);
}

void PingmeshManager::ApplyTracesLocked() {
  std::vector<pingmesh::PathTrace> traces;
  {
    absl::MutexLock lock(&traces_mu_);
    traces.swap(traces_inbox_);
  }
  uint64_t refused = 0, changed = 0;
  std::string first_error;
  auto probed_now = [this](const pingmesh::ProbeKey& key) ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    if (planned_.contains(key)) return true;
    for (const std::unique_ptr<Check>& check : checks_) {
      if (check->streams.contains(key)) return true;
    }
    return false;
  };
  for (const pingmesh::PathTrace& trace : traces) {
    // Only a stream the plan or a running check has: anything else would grow the
    // resolver without bound and could teach it a wrong ToR for a hop address.
    if (!probed_now(trace.key)) {
      if (refused++ == 0) first_error = "a trace of a stream no pinglist holds";
      continue;
    }
    absl::StatusOr<bool> added = resolver_.AddTrace(trace);
    if (!added.ok()) {
      if (refused++ == 0) first_error = std::string(added.status().message());
      continue;
    }
    if (!*added) continue;
    ++changed;
    // Not judged yet: its first window resolves the traced path.
    if (planned_.contains(trace.key)) localiser_.ResolveAgain(trace.key).IgnoreError();
  }
  if (refused > 0) {
    WEFT_LOG(WARNING) << "pingmesh: traces refused count=" << refused << " first=\""
                      << first_error << "\"";
  }
  metrics_->TracesReceived("refused", refused);
  metrics_->TracesReceived("path_changed", changed);
  metrics_->TracesReceived("accepted", traces.size() - refused);
}

PingmeshManager::Messages PingmeshManager::ReplanLocked(
    absl::Time now) {
  Messages out;
  Fleet fleet = FleetFromNodes(fleet_source_(), options_.tor_uplinks);
  if (plan_version_ > 0 && fleet.fingerprint == fleet_.fingerprint) return out;
  absl::StatusOr<pingmesh::PinglistPlan> plan = pingmesh::BuildPinglists(fleet.inventory, options_.pinglist);
  if (!plan.ok()) {
    WEFT_LOG(WARNING) << "pingmesh: no new pinglists error=\"" << plan.status().message() << "\"";
    return out;
  }
  ++plan_version_;
  for (const pingmesh::NodeSpec& node : fleet.inventory.nodes) {
    for (const pingmesh::NicSpec& nic : node.nics) resolver_.SetNicTor(node.name, nic.name, nic.tor);
    node_rack_[node.name] = node.rack;
  }
  absl::flat_hash_set<pingmesh::ProbeKey> planned;
  for (const pingmesh::Pinglist& list : plan->pinglists) {
    for (const pingmesh::PinglistEntry& entry : list.entries) planned.insert(entry.key);
  }
  for (const pingmesh::ProbeKey& key : planned_) {
    if (!planned.contains(key)) localiser_.RemoveStream(key).IgnoreError();  // never added: fine
  }
  planned_ = std::move(planned);

  PinglistWire wire;
  wire.window_ms = static_cast<uint32_t>(absl::ToInt64Milliseconds(options_.window));
  wire.timeout_ms = static_cast<uint32_t>(absl::ToInt64Milliseconds(options_.timeout));
  std::map<std::string, weft::v1::Pinglist> lists;
  for (auto& [node, list] : PinglistProtos(*plan, fleet, wire)) lists[node] = std::move(list);
  // A node that left the plan gets an empty list, which stops its probing.
  for (const auto& [node, old] : lists_) {
    if (lists.count(node) == 0 && old.peers_size() > 0) {
      weft::v1::Pinglist empty;
      empty.set_window_ms(wire.window_ms);
      empty.set_timeout_ms(wire.timeout_ms);
      lists[node] = std::move(empty);
    }
  }
  for (auto& [node, list] : lists) {
    auto old = lists_.find(node);
    if (old != lists_.end()) {
      weft::v1::Pinglist unstamped = old->second;
      unstamped.set_version(0);
      if (unstamped.SerializeAsString() == list.SerializeAsString()) {
        list.set_version(old->second.version());
        continue;
      }
    }
    weft::v1::ControllerMessage message = StampLocked(list, now);
    list.set_version(message.pinglist().version());
    // A node in a pre-job check gets its routine list when the check ends.
    if (!checking_.contains(node)) out.emplace_back(node, std::move(message));
  }
  lists_ = std::move(lists);
  fleet_ = std::move(fleet);
  plan_ = std::move(*plan);
  metrics_->Planned(plan_.streams, plan_.pinglists.size());
  WEFT_LOG(INFO) << "pingmesh plan version=" << plan_version_ << " nodes=" << plan_.pinglists.size()
                 << " streams=" << plan_.streams
                 << " probes_per_s_local=" << plan_.local_probes_per_s
                 << " probes_per_s_crossing=" << plan_.crossing_probes_per_s
                 << " meets_detection_target=" << plan_.meets_detection_target
                 << " unprobed=" << fleet_.unprobed.size() << " lists_to_send=" << out.size();
  return out;
}

void PingmeshManager::Tick() {
  if (!options_.enabled) return;
  const absl::Time now = clock_->Now();
  Messages to_send;
  std::vector<std::unique_ptr<Check>> finished;
  NodeFindings findings;
  {
    absl::MutexLock lock(&mu_);
    if (now >= next_replan_) {
      to_send = ReplanLocked(now);
      next_replan_ = now + options_.replan_interval;
    }
    ApplyTracesLocked();
    // Every window that every probing node has sent in full, or that ended `lateness`
    // ago, is judged, in order; the first tick only sets where judging starts.
    const int64_t window_us = absl::ToInt64Microseconds(options_.window);
    auto on_grid = [window_us](int64_t t_us) {
      return t_us - ((t_us % window_us) + window_us) % window_us;
    };
    const int64_t deadline_through_us = on_grid(ToMicros(now - options_.lateness));
    std::vector<std::pair<int64_t, std::vector<pingmesh::ProbeWindow>>> due;
    {
      absl::MutexLock inbox(&inbox_mu_);
      // Never past the controller's now (an agent's clock ahead).
      const int64_t reported_through_us =
          on_grid(std::min(ReportedThroughLocked(), ToMicros(now)));
      const int64_t through_us = std::max(deadline_through_us, reported_through_us);
      int64_t from_us = judged_through_us_;
      // After a long pause, judge no more than the localiser's horizon.
      const int64_t horizon_us = window_us * options_.localiser.horizon_windows;
      if (from_us == 0 || through_us - from_us > horizon_us) {
        from_us = std::max(from_us, through_us - horizon_us);
        if (judged_through_us_ == 0) from_us = through_us;
      }
      for (int64_t start = from_us; start + window_us <= through_us; start += window_us) {
        metrics_->WindowJudged(start + window_us <= reported_through_us ? "reported" : "deadline");
        auto it = inbox_.find(start);
        due.emplace_back(start, std::vector<pingmesh::ProbeWindow>());
        if (it != inbox_.end()) due.back().second = std::move(it->second);
      }
      // Reports that fall off the grid or before it are dropped as late.
      while (!inbox_.empty() && inbox_.begin()->first < through_us) {
        windows_late_ += inbox_.begin()->second.size();
        metrics_->WindowsReceived("late", inbox_.begin()->second.size());
        inbox_.erase(inbox_.begin());
      }
      if (through_us > judged_through_us_) judged_through_us_ = through_us;
    }
    for (auto& [start, windows] : due) {
      JudgeWindowLocked(start, std::move(windows), &finished, &to_send);
    }
    // Verdicts change only when a window is judged (the ticker runs more often).
    if (!due.empty()) findings = FindingChangesLocked();
  }
  Send(std::move(to_send));
  std::vector<std::string> refused;
  for (auto& [node, node_findings] : findings) {
    if (!findings_sink_(node, std::move(node_findings)).ok()) refused.push_back(node);
  }
  if (!refused.empty()) {
    // Not taken: forget them as published, so the next judged window offers them again.
    absl::MutexLock lock(&mu_);
    for (const std::string& node : refused) published_findings_.erase(node);
  }
  for (std::unique_ptr<Check>& check : finished) check->done(std::move(check->answer));
}

void PingmeshManager::Send(Messages messages) {
  for (auto& [node, message] : messages) {
    if (absl::Status sent = send_(node, std::move(message)); sent.ok()) {
      metrics_->PinglistSent();
    } else {
      // The node gets it when its stream attaches (OnStreamAttached).
      WEFT_LOG(DEBUG) << "pinglist not sent node=" << node << " error=\"" << sent.message() << "\"";
    }
  }
}

PingmeshManager::NodeFindings PingmeshManager::FindingChangesLocked() {
  NodeFindings changes;
  if (!options_.degrade_blamed_nodes || !findings_sink_) return changes;
  std::vector<weft::v1::PingmeshVerdict> verdicts;
  for (const pingmesh::Verdict& verdict : localiser_.ActiveVerdicts()) {
    verdicts.push_back(ToProto(verdict));
  }
  std::map<std::string, std::vector<Finding>> current = FindingsByNode(verdicts);
  for (const auto& [node, findings] : published_findings_) {
    if (current.count(node) == 0) changes.emplace_back(node, std::vector<Finding>());
  }
  for (const auto& [node, findings] : current) {
    auto it = published_findings_.find(node);
    if (it == published_findings_.end() || !SameFindings(it->second, findings)) {
      changes.emplace_back(node, findings);
    }
  }
  published_findings_ = std::move(current);
  return changes;
}

weft::v1::ControllerMessage PingmeshManager::StampLocked(weft::v1::Pinglist list, absl::Time now) {
  // Versions grow across restarts too: never below the clock's microseconds.
  const uint64_t now_us = static_cast<uint64_t>(std::max<int64_t>(0, ToMicros(now)));
  last_list_version_ = std::max(last_list_version_ + 1, now_us);
  list.set_version(last_list_version_);
  weft::v1::ControllerMessage message;
  *message.mutable_pinglist() = std::move(list);
  return message;
}

void PingmeshManager::JudgeWindowLocked(int64_t start_us,
                                        std::vector<pingmesh::ProbeWindow> windows,
                                        std::vector<std::unique_ptr<Check>>* finished,
                                        Messages* to_send) {
  const int64_t end_us = start_us + absl::ToInt64Microseconds(options_.window);
  const absl::Time end = absl::FromUnixMicros(end_us);
  uint64_t accepted = 0, unknown = 0;
  for (const pingmesh::ProbeWindow& window : windows) {
    // A stream of a check the prober is in belongs to that check.
    auto checked = checking_.find(window.key.src_node);
    if (checked != checking_.end() && checked->second->streams.contains(window.key)) {
      Check& check = *checked->second;
      if (window.end <= check.start) continue;  // probed before the check's first window
      if (check.localiser->Add(window).ok()) {
        ++accepted;
        auto& [sent, lost] = check.sent_lost[window.key.src_node];
        sent += static_cast<uint64_t>(window.sent);
        lost += static_cast<uint64_t>(window.lost);
      } else {
        ++unknown;
      }
      continue;
    }
    if (!planned_.contains(window.key)) {
      ++unknown;
      continue;
    }
    if (absl::Status added = localiser_.Add(window); !added.ok()) {
      ++unknown;
      WEFT_LOG(DEBUG) << "probe window refused error=\"" << added.message() << "\"";
      continue;
    }
    ++accepted;
    period_pairs_[{window.key.src_node, window.key.dst_node}].Add(window);
  }
  windows_accepted_ += accepted;
  windows_unknown_ += unknown;
  metrics_->WindowsReceived("accepted", accepted);
  metrics_->WindowsReceived("unknown", unknown);

  pingmesh::VerdictChanges changes = localiser_.EndWindow(end);
  for (const pingmesh::Verdict& verdict : changes.raised) RecordVerdict(ToProto(verdict), true, end);
  for (const pingmesh::Verdict& verdict : changes.cleared) RecordVerdict(ToProto(verdict), false, end);
  last_window_end_us_ = end_us;

  for (auto it = checks_.begin(); it != checks_.end();) {
    Check& check = **it;
    if (end <= check.start) {
      ++it;
      continue;
    }
    for (const pingmesh::Verdict& verdict : check.localiser->EndWindow(end).raised) {
      weft::v1::PingmeshVerdict proto = ToProto(verdict);
      check.verdicts[absl::StrCat(proto.kind(), " ", proto.component())] = std::move(proto);
    }
    if (end < check.end) {
      ++it;
      continue;
    }
    check.answer = CheckAnswerLocked(check);
    for (const std::string& node : check.nodes) {
      if (checking_.erase(node) == 0 || check.not_probed.contains(node)) continue;
      // Back to its routine list (an empty one when it has none).
      auto routine = lists_.find(node);
      weft::v1::Pinglist list;
      if (routine != lists_.end()) {
        list = routine->second;
      } else {
        list.set_window_ms(static_cast<uint32_t>(absl::ToInt64Milliseconds(options_.window)));
        list.set_timeout_ms(static_cast<uint32_t>(absl::ToInt64Milliseconds(options_.timeout)));
      }
      weft::v1::ControllerMessage message = StampLocked(std::move(list), end);
      if (routine != lists_.end()) routine->second.set_version(message.pinglist().version());
      to_send->emplace_back(node, std::move(message));
    }
    finished->push_back(std::move(*it));
    it = checks_.erase(it);
  }

  if (period_start_us_ == 0) period_start_us_ = start_us;
  if (end_us - period_start_us_ >= absl::ToInt64Microseconds(options_.matrix_period)) {
    last_period_pairs_ = std::move(period_pairs_);
    period_pairs_.clear();
    last_period_start_us_ = period_start_us_;
    last_period_end_us_ = end_us;
    period_start_us_ = end_us;
    metrics_->SetRackMatrix(MatrixOf(last_period_pairs_, ""));
  }
}

absl::Status PingmeshManager::StartCheck(const weft::v1::CheckRequest& request, CheckDone done) {
  if (!options_.enabled) {
    return absl::FailedPreconditionError(
        "pingmesh is off on this controller (config pingmesh.enabled): no pre-job check");
  }
  if (request.nodes().empty()) {
    return absl::InvalidArgumentError("check: name the nodes to check (--nodes a,b,...)");
  }
  if (request.seconds() > 300) {
    return absl::InvalidArgumentError(absl::StrCat(
        "check: seconds ", request.seconds(), " is out of range; accepted: 1 to 300 (0: 10)"));
  }
  const absl::Duration length = absl::Seconds(request.seconds() == 0 ? 10 : request.seconds());
  Messages to_send;
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) {
      return absl::UnavailableError(
          "the controller is shutting down; run the check again once it is back");
    }
    std::set<std::string> seen;
    for (const std::string& node : request.nodes()) {
      if (!seen.insert(node).second) {
        return absl::InvalidArgumentError(absl::StrCat("check: node ", node, " is named twice"));
      }
      if (checking_.contains(node)) {
        return absl::FailedPreconditionError(absl::StrCat(
            "check: node ", node, " is already in a running check; try again in ",
            absl::FormatDuration(options_.lateness + length)));
      }
    }
    auto check = std::make_unique<Check>();
    check->nodes.assign(request.nodes().begin(), request.nodes().end());
    absl::flat_hash_set<std::string> probed;
    for (const pingmesh::NodeSpec& node : fleet_.inventory.nodes) probed.insert(node.name);
    for (const std::string& node : check->nodes) {
      if (probed.contains(node)) continue;
      std::string why = "not known to the controller";
      for (const std::string& line : fleet_.unprobed) {
        if (absl::StartsWith(line, absl::StrCat(node, ":"))) why = line.substr(node.size() + 2);
      }
      check->not_probed[node] = why;
    }
    check->plan = CheckPlanLocked(check->nodes);
    for (const pingmesh::Pinglist& list : check->plan.pinglists) {
      const size_t flows = list.entries.size();  // a flow per stream and source port
      if (flows > kMaxCheckStreamsPerNode) {
        return absl::InvalidArgumentError(absl::StrCat(
            "check: node ", list.node, " would probe ", flows, " streams, more than an agent "
            "takes (", kMaxCheckStreamsPerNode, "); check fewer nodes at a time"));
      }
    }
    const absl::Time now = clock_->Now();
    // Probing starts once the lists are out; judging from the next whole window.
    const int64_t window_us = absl::ToInt64Microseconds(options_.window);
    const int64_t next_us = (ToMicros(now) / window_us + 1) * window_us;
    check->start = absl::FromUnixMicros(next_us);
    check->end = check->start + length;
    pingmesh::LocaliserOptions localiser = options_.localiser;
    // Verdicts raised on the way are kept (Check::verdicts): the usual horizon will do.
    localiser.horizon_windows =
        std::min(options_.localiser.horizon_windows,
                 static_cast<int>(length / options_.window) + 1);
    check->localiser = std::make_unique<pingmesh::Localiser>(&resolver_, localiser);
    for (const pingmesh::Pinglist& list : check->plan.pinglists) {
      for (const pingmesh::PinglistEntry& entry : list.entries) check->streams.insert(entry.key);
    }
    check->done = std::move(done);
    PinglistWire wire;
    wire.window_ms = static_cast<uint32_t>(absl::ToInt64Milliseconds(options_.window));
    wire.timeout_ms = static_cast<uint32_t>(absl::ToInt64Milliseconds(options_.timeout));
    for (auto& [node, list] : PinglistProtos(check->plan, fleet_, wire)) {
      to_send.emplace_back(node, StampLocked(std::move(list), now));
    }
    for (const std::string& node : check->nodes) checking_[node] = check.get();
    WEFT_LOG(INFO) << "pingmesh check nodes=" << check->nodes.size()
                   << " streams=" << check->plan.streams
                   << " probes_per_stream_per_s=" << check->plan.local_probes_per_s
                   << " not_probed=" << check->not_probed.size()
                   << " ends=" << absl::FormatTime(check->end);
    checks_.push_back(std::move(check));
  }
  Send(std::move(to_send));
  return absl::OkStatus();
}

void PingmeshManager::CancelChecks(const absl::Status& status) {
  std::vector<std::unique_ptr<Check>> cancelled;
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    cancelled = std::move(checks_);
    checks_.clear();
    checking_.clear();
  }
  for (std::unique_ptr<Check>& check : cancelled) check->done(status);
}

pingmesh::PinglistPlan PingmeshManager::CheckPlanLocked(
    const std::vector<std::string>& nodes) const {
  absl::flat_hash_set<std::string> wanted(nodes.begin(), nodes.end());
  std::vector<const pingmesh::NodeSpec*> members;
  for (const pingmesh::NodeSpec& node : fleet_.inventory.nodes) {
    if (wanted.contains(node.name)) members.push_back(&node);
  }
  // Streams: every ordered pair of same-rail NICs of two nodes (ports enough to cover
  // the uplinks when their ToRs differ), and every ordered pair of NICs inside a node.
  const int cross_tor_ports = std::min(4, options_.tor_uplinks);
  std::map<std::string, std::vector<pingmesh::PinglistEntry>> by_node;
  auto add = [&](const pingmesh::NodeSpec& src, const pingmesh::NicSpec& a,
                 const pingmesh::NodeSpec& dst, const pingmesh::NicSpec& b,
                 pingmesh::StreamKind kind) {
    const int ports = a.tor == b.tor ? 1 : cross_tor_ports;
    for (int p = 0; p < ports; ++p) {
      pingmesh::PinglistEntry entry;
      entry.key = pingmesh::ProbeKey{src.name, a.name, dst.name, b.name, 0,
                                     options_.pinglist.traffic_class};
      // A port of its own for the check (49152 + 16384 ports), stable for the pair.
      entry.key.udp_src_port = static_cast<uint16_t>(
          pingmesh::kMinProbeUdpSourcePort +
          absl::HashOf(std::string("check"), src.name, a.name, dst.name, b.name, p) % 16384);
      entry.kind = kind;
      by_node[src.name].push_back(entry);
    }
  };
  for (const pingmesh::NodeSpec* src : members) {
    for (const pingmesh::NicSpec& a : src->nics) {
      for (const pingmesh::NodeSpec* dst : members) {
        for (const pingmesh::NicSpec& b : dst->nics) {
          if (dst == src) {
            if (a.name != b.name) add(*src, a, *dst, b, pingmesh::StreamKind::kCrossRail);
          } else if (a.rail == b.rail) {
            add(*src, a, *dst, b, a.tor == b.tor ? pingmesh::StreamKind::kTorMesh
                                                 : pingmesh::StreamKind::kRackToRack);
          }
        }
      }
    }
  }
  pingmesh::PinglistPlan plan;
  size_t busiest = 0;
  for (const auto& [node, entries] : by_node) busiest = std::max(busiest, entries.size());
  if (busiest == 0) return plan;
  // The per-node budget over the busiest node's streams, at most what a peer accepts.
  const double rate = std::min(1000.0, options_.pinglist.max_probes_per_node_per_s / busiest);
  plan.local_probes_per_s = rate;
  plan.crossing_probes_per_s = rate;
  for (auto& [node, entries] : by_node) {
    pingmesh::Pinglist list;
    list.node = node;
    for (pingmesh::PinglistEntry& entry : entries) entry.probes_per_s = rate;
    std::sort(entries.begin(), entries.end(),
              [](const auto& a, const auto& b) { return a.key < b.key; });
    plan.streams += entries.size();
    list.entries = std::move(entries);
    plan.pinglists.push_back(std::move(list));
  }
  return plan;
}

weft::v1::CheckResponse PingmeshManager::CheckAnswerLocked(Check& check) const {
  weft::v1::CheckResponse answer;
  answer.set_streams(check.plan.streams);
  answer.set_probes_per_stream_per_s(check.plan.local_probes_per_s);
  answer.set_start_us(ToMicros(check.start));
  answer.set_end_us(ToMicros(check.end));
  // What is still blamed at the end, and anything blamed on the way.
  for (const pingmesh::Verdict& verdict : check.localiser->ActiveVerdicts()) {
    weft::v1::PingmeshVerdict proto = ToProto(verdict);
    check.verdicts[absl::StrCat(proto.kind(), " ", proto.component())] = std::move(proto);
  }
  std::map<std::string, std::vector<std::string>> blamed;  // node → components
  for (const auto& [key, verdict] : check.verdicts) {
    *answer.add_verdicts() = verdict;
    for (const std::string& node : verdict.nodes()) {
      blamed[node].push_back(absl::StrCat(verdict.kind(), " ", verdict.component(), " (",
                                          verdict.problem(), ")"));
    }
  }
  absl::flat_hash_set<std::string> probing;  // nodes the check gave streams to
  for (const pingmesh::Pinglist& list : check.plan.pinglists) probing.insert(list.node);
  bool passed = answer.verdicts().empty() && check.plan.streams > 0;
  for (const std::string& node : check.nodes) {
    weft::v1::NodeCheck* result = answer.add_nodes();
    result->set_node(node);
    auto [sent, lost] = check.sent_lost[node];
    result->set_sent(sent);
    result->set_lost(lost);
    std::string reason;
    if (auto it = check.not_probed.find(node); it != check.not_probed.end()) {
      reason = absl::StrCat("not probed: ", it->second);
    } else if (auto it = blamed.find(node); it != blamed.end()) {
      reason = absl::StrCat("blamed: ", absl::StrJoin(it->second, "; "));
    } else if (check.plan.streams == 0) {
      reason = "nothing to probe: no other NIC of these nodes shares a rail with its NICs";
    } else if (probing.contains(node) && sent == 0) {
      reason = "sent no probes: its agent did not report the check's windows";
    }
    result->set_passed(reason.empty());
    result->set_reason(reason);
    passed = passed && reason.empty();
  }
  answer.set_passed(passed);
  return answer;
}

weft::v1::PingmeshVerdict PingmeshManager::ToProto(const pingmesh::Verdict& verdict) const {
  weft::v1::PingmeshVerdict out;
  out.set_kind(pingmesh::ComponentKindName(verdict.kind));
  out.set_component(verdict.component);
  out.set_problem(pingmesh::ProblemName(verdict.problem));
  out.set_loss_rate(verdict.loss_rate);
  out.set_host_delay_us(verdict.host_delay_us);
  out.set_confidence(verdict.confidence);
  out.set_since_us(ToMicros(verdict.since));
  out.set_evidence(verdict.evidence);
  // The nodes: a host's name, or the node of each NIC the component names or ends at.
  std::set<std::string> nodes;
  if (verdict.kind == pingmesh::ComponentKind::kHost) nodes.insert(verdict.component);
  for (absl::string_view link : absl::StrSplit(verdict.component, " + ")) {
    for (absl::string_view end : absl::StrSplit(link, "->")) {
      if (fleet_.nics.contains(end)) nodes.insert(std::string(end.substr(0, end.find('/'))));
    }
  }
  for (const std::string& node : nodes) out.add_nodes(node);
  return out;
}

void PingmeshManager::RecordVerdict(const weft::v1::PingmeshVerdict& verdict, bool raised,
                                    absl::Time now) {
  if (raised) {
    metrics_->VerdictRaised(verdict);
  } else {
    metrics_->VerdictCleared(verdict);
  }
  const std::string what = absl::StrCat("pingmesh ", raised ? "blames " : "clears ",
                                        verdict.kind(), " ", verdict.component(), " (",
                                        verdict.problem(), ")");
  WEFT_LOG(WARNING) << what << " loss_rate=" << verdict.loss_rate()
                    << " confidence=" << verdict.confidence() << " evidence=\""
                    << verdict.evidence() << "\"";
  // One event per node it concerns (none: one event without a node).
  std::vector<std::string> nodes(verdict.nodes().begin(), verdict.nodes().end());
  if (nodes.empty()) nodes.push_back("");
  for (const std::string& node : nodes) {
    weft::v1::Event event;
    event.set_time_us(ToMicros(now));
    event.set_node(node);
    event.set_kind(raised ? weft::v1::EVENT_KIND_RULE_FIRED : weft::v1::EVENT_KIND_RULE_CLEARED);
    weft::v1::Finding* finding = event.mutable_finding();
    finding->set_rule(absl::StrCat("pingmesh_", verdict.kind()));
    finding->set_device(verdict.component());
    finding->set_value(verdict.kind() == "host" ? verdict.host_delay_us() : verdict.loss_rate());
    finding->set_detail(verdict.evidence());
    finding->set_since_us(verdict.since_us());
    event.set_message(what);
    events_->Append(std::move(event));
  }
}

weft::v1::PingmeshMatrix PingmeshManager::MatrixOf(const PairMap& pairs,
                                                   const std::string& rack) const {
  auto rack_of = [this](const std::string& node) {
    auto it = node_rack_.find(node);
    return it == node_rack_.end() || it->second.empty() ? std::string("(no rack)") : it->second;
  };
  PairMap cells;
  for (const auto& [pair, sums] : pairs) {
    if (rack.empty()) {
      cells[{rack_of(pair.first), rack_of(pair.second)}].Merge(sums);
    } else if (rack_of(pair.first) == rack) {
      cells[pair].Merge(sums);
    }
  }
  weft::v1::PingmeshMatrix matrix;
  for (const auto& [pair, sums] : cells) {
    weft::v1::PingmeshMatrixCell* cell = matrix.add_cells();
    cell->set_source(pair.first);
    cell->set_destination(pair.second);
    cell->set_sent(sums.sent);
    cell->set_lost(sums.lost);
    cell->set_loss_ratio(sums.sent == 0 ? 0 : static_cast<double>(sums.lost) / sums.sent);
    if (sums.answered_windows > 0) {
      cell->set_rtt_min_us(sums.rtt_min_us);
      cell->set_rtt_p50_us(sums.rtt_p50_sum_us / sums.answered_windows);
      cell->set_rtt_p99_us(sums.rtt_p99_us);
    }
  }
  return matrix;
}

weft::v1::PingmeshStatus PingmeshManager::Status() const {
  weft::v1::PingmeshStatus status;
  absl::MutexLock lock(&mu_);
  status.set_enabled(options_.enabled);
  status.set_window_ms(static_cast<uint32_t>(absl::ToInt64Milliseconds(options_.window)));
  status.set_plan_version(plan_version_);
  status.set_probed_nodes(static_cast<uint32_t>(plan_.pinglists.size()));
  status.set_streams(plan_.streams);
  status.set_probes_per_stream_per_s(plan_.local_probes_per_s);
  status.set_crossing_probes_per_stream_per_s(plan_.crossing_probes_per_s);
  status.set_meets_detection_target(plan_.meets_detection_target);
  status.set_last_window_end_us(last_window_end_us_);
  status.set_windows_accepted(windows_accepted_);
  status.set_windows_unknown(windows_unknown_);
  {
    absl::MutexLock inbox(&inbox_mu_);
    status.set_windows_late(windows_late_);
  }
  for (const pingmesh::Verdict& verdict : localiser_.ActiveVerdicts()) {
    *status.add_verdicts() = ToProto(verdict);
  }
  for (const std::string& line : fleet_.unprobed) status.add_unprobed(line);
  return status;
}

absl::StatusOr<weft::v1::PingmeshMatrix> PingmeshManager::Matrix(const std::string& rack) const {
  absl::MutexLock lock(&mu_);
  if (!rack.empty()) {
    const bool known = std::any_of(node_rack_.begin(), node_rack_.end(),
                                   [&rack](const auto& entry) { return entry.second == rack; });
    if (!known) {
      return absl::NotFoundError(absl::StrCat("pingmesh: no probed node is in rack '", rack,
                                              "' (weftctl racks lists the racks)"));
    }
  }
  // The last complete period and the one in progress.
  PairMap pairs = last_period_pairs_;
  for (const auto& [pair, sums] : period_pairs_) pairs[pair].Merge(sums);
  weft::v1::PingmeshMatrix matrix = MatrixOf(pairs, rack);
  matrix.set_start_us(last_period_start_us_ != 0 ? last_period_start_us_ : period_start_us_);
  matrix.set_end_us(last_window_end_us_);
  return matrix;
}

}  // namespace weft::controller
