#include "bench/pingmesh/evaluation.h"

#include <time.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/status_macros.h"

namespace weft::bench {
namespace {

// CPU time of this thread: the machine running the bench may be shared, and wall time
// would count the others' work.
absl::Duration ThreadCpuTime() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return absl::DurationFromTimespec(ts);
}

}  // namespace

const char* FaultKindName(FaultKind kind) {
  switch (kind) {
    case FaultKind::kGrayLink: return "gray link 1e-4..1e-2";
    case FaultKind::kGrayTarget: return "gray link 1e-3";
    case FaultKind::kBlackHole: return "black-holed link";
    case FaultKind::kDeadNic: return "dead NIC";
    case FaultKind::kSlowHost: return "slow host";
  }
  return "?";
}

Evaluation::Evaluation(const EvaluationSpec& spec) : spec_(spec) {}

absl::StatusOr<std::unique_ptr<Evaluation>> Evaluation::Create(const EvaluationSpec& spec) {
  RETURN_IF_ERROR(pingmesh::Localiser::ValidateOptions(spec.localiser));
  std::unique_ptr<Evaluation> e(new Evaluation(spec));
  ASSIGN_OR_RETURN(e->fabric_, sim::BuildRailOptimized(spec.fabric));
  e->resolver_ = std::make_unique<TwinResolver>(&e->fabric_);
  ASSIGN_OR_RETURN(e->plan_, pingmesh::BuildPinglists(
                                 TwinInventory(e->fabric_, spec.fabric.nodes_per_group),
                                 spec.pinglist));
  for (const pingmesh::Pinglist& list : e->plan_.pinglists) {
    for (const pingmesh::PinglistEntry& entry : list.entries) {
      const pingmesh::ProbeKey& key = entry.key;
      ASSIGN_OR_RETURN(int src, e->resolver_->NicId(key.src_node, key.src_nic));
      ASSIGN_OR_RETURN(int dst, e->resolver_->NicId(key.dst_node, key.dst_nic));
      e->keys_.push_back(key);
      e->streams_.push_back({src, dst, key.udp_src_port});
      e->probes_per_s_.push_back(entry.probes_per_s);
    }
  }
  return e;
}

absl::StatusOr<TrialResult> Evaluation::RunTrial(uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto uniform = [&](double lo, double hi) {
    return std::uniform_real_distribution<double>(lo, hi)(rng);
  };
  auto pick = [&](int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng); };
  const int num_links = links(), num_nics = nics();

  sim::ProbeFaults healthy;
  healthy.link_drop.resize(num_links);
  for (double& d : healthy.link_drop) d = uniform(0, spec_.healthy_drop_max);
  sim::ProbeFaults faulty = healthy;
  faulty.nic_dead.assign(num_nics, false);
  faulty.node_extra_host_delay_us.assign(nodes(), 0);

  TrialResult result;
  absl::flat_hash_map<std::string, int> fault_of;  // link, NIC or host name → fault
  auto add_fault = [&](FaultKind kind, const std::string& name, double drop) {
    fault_of[name] = static_cast<int>(result.faults.size());
    result.faults.push_back({kind, name, drop});
  };
  int dead = std::uniform_int_distribution<int>(0, spec_.max_dead_nics)(rng);
  for (int i = 0; i < dead; ++i) {
    int nic = pick(num_nics);
    if (faulty.nic_dead[nic]) continue;
    faulty.nic_dead[nic] = true;
    add_fault(FaultKind::kDeadNic,
              resolver_->DeviceName({sim::Vertex::Kind::kNic, nic}), 1.0);
  }
  if (uniform(0, 1) < spec_.slow_host_probability) {
    int node = pick(nodes());
    faulty.node_extra_host_delay_us[node] = spec_.slow_host_extra_us;
    add_fault(FaultKind::kSlowHost, TwinNodeName(node), 0);
  }
  std::set<int> faulty_links;
  auto pick_link = [&](bool between_switches) {
    for (;;) {
      int l = pick(num_links);
      const sim::Link& link = fabric_.links()[l];
      bool nic_end = link.from.kind == sim::Vertex::Kind::kNic ||
                     link.to.kind == sim::Vertex::Kind::kNic;
      if (between_switches && nic_end) continue;
      // A link at a dead NIC: the NIC explains its losses, nothing left to find.
      if ((link.from.kind == sim::Vertex::Kind::kNic && faulty.nic_dead[link.from.id]) ||
          (link.to.kind == sim::Vertex::Kind::kNic && faulty.nic_dead[link.to.id])) {
        continue;
      }
      if (faulty_links.insert(l).second) return l;
    }
  };
  int gray = std::uniform_int_distribution<int>(spec_.min_link_faults, spec_.max_link_faults)(rng);
  for (int i = 0; i < gray; ++i) {
    int l = pick_link(false);
    faulty.link_drop[l] = uniform(spec_.min_drop, spec_.max_drop);
    add_fault(FaultKind::kGrayLink, resolver_->Link(l).name, faulty.link_drop[l]);
  }
  if (spec_.gray_target_drop > 0) {
    int l = pick_link(false);
    faulty.link_drop[l] = spec_.gray_target_drop;
    add_fault(FaultKind::kGrayTarget, resolver_->Link(l).name, faulty.link_drop[l]);
  }
  if (uniform(0, 1) < spec_.black_hole_probability) {
    int l = pick_link(true);
    faulty.link_drop[l] = 1.0;
    add_fault(FaultKind::kBlackHole, resolver_->Link(l).name, 1.0);
  }

  // The faults a verdict names (none: a wrong verdict).
  auto matches = [&](const pingmesh::Verdict& v) {
    std::vector<int> found;
    if (v.kind == pingmesh::ComponentKind::kLink) {
      for (absl::string_view name : absl::StrSplit(v.component, " + ")) {
        auto it = fault_of.find(std::string(name));
        if (it != fault_of.end()) found.push_back(it->second);
      }
    } else if (v.kind == pingmesh::ComponentKind::kNic ||
               (v.kind == pingmesh::ComponentKind::kHost && v.problem == pingmesh::Problem::kSlow)) {
      auto it = fault_of.find(v.component);
      if (it != fault_of.end()) {
        FaultKind kind = result.faults[it->second].kind;
        if ((v.kind == pingmesh::ComponentKind::kNic) == (kind == FaultKind::kDeadNic)) {
          found.push_back(it->second);
        }
      }
    }
    return found;
  };

  const double window_s = absl::ToDoubleSeconds(spec_.localiser.window);
  const int onset = static_cast<int>(std::lround(spec_.warmup_s / window_s));
  const int total = onset + static_cast<int>(std::lround(spec_.run_s / window_s));

  sim::ProbeModel model(&fabric_, spec_.noise);
  pingmesh::Localiser localiser(resolver_.get(), spec_.localiser);
  std::vector<pingmesh::ProbeWindow> windows(keys_.size());
  std::vector<int> handles(keys_.size());
  absl::Duration setup_start = ThreadCpuTime();
  for (size_t i = 0; i < keys_.size(); ++i) {
    windows[i].key = keys_[i];
    ASSIGN_OR_RETURN(handles[i], localiser.Register(keys_[i]));
  }
  const absl::Duration registration = ThreadCpuTime() - setup_start;
  for (sim::ProbeStream& stream : streams_) RETURN_IF_ERROR(model.Prepare(healthy, &stream));
  const sim::ProbeFaults* now_faults = &healthy;

  absl::Time now = absl::FromUnixSeconds(1'800'000'000);
  absl::Duration localiser_time, probe_time;
  for (int w = 0; w < total; ++w) {
    if (w == onset) {
      for (sim::ProbeStream& stream : streams_) RETURN_IF_ERROR(model.Prepare(faulty, &stream));
      now_faults = &faulty;
    }
    absl::Time start = now;
    now += spec_.localiser.window;
    absl::Duration t0 = ThreadCpuTime();
    for (size_t i = 0; i < streams_.size(); ++i) {
      // Whole probes per window, spread so the rate holds on average.
      double phase = std::fmod(i * 0.6180339887, 1.0);
      const double per_window = probes_per_s_[i] * window_s;
      int count = static_cast<int>(std::floor((w + 1) * per_window + phase) -
                                   std::floor(w * per_window + phase));
      sim::ProbeWindowOutcome out = model.Send(streams_[i], count, *now_faults, &rng);
      pingmesh::ProbeWindow& window = windows[i];
      window.start = start;
      window.end = now;
      window.sent = out.sent;
      window.lost = out.lost;
      window.rtt_min_us = out.rtt_min_us;
      window.rtt_p50_us = out.rtt_p50_us;
      window.rtt_p99_us = out.rtt_p99_us;
      window.sender_host_delay_us = out.sender_host_delay_us;
      window.responder_host_delay_us = out.responder_host_delay_us;
    }
    absl::Duration t1 = ThreadCpuTime();
    for (size_t i = 0; i < windows.size(); ++i) {
      RETURN_IF_ERROR(localiser.AddTo(handles[i], windows[i]));
    }
    pingmesh::VerdictChanges changes = localiser.EndWindow(now);
    absl::Duration t2 = ThreadCpuTime();
    probe_time += t1 - t0;
    // The first window also groups the links (once per set of streams): setup.
    if (w == 0) {
      result.localiser_setup_ms = absl::ToDoubleMilliseconds(t2 - t1 + registration);
    } else {
      localiser_time += t2 - t1;
    }
    for (const pingmesh::Verdict& v : changes.raised) {
      std::vector<int> found = w >= onset ? matches(v) : std::vector<int>{};
      if (found.empty()) {
        ++result.wrong_raises;
        result.wrongly_raised.push_back(absl::StrCat(
            pingmesh::ComponentKindName(v.kind), " ", v.component, " at ",
            (w + 1 - onset) * window_s, " s (", v.evidence, ")"));
      }
      for (int f : found) {
        if (result.faults[f].detect_s < 0) result.faults[f].detect_s = (w + 1 - onset) * window_s;
      }
    }
  }
  for (const pingmesh::Verdict& v : localiser.ActiveVerdicts()) {
    ++result.verdicts;
    std::vector<int> found = matches(v);
    if (found.empty()) {
      result.wrong.push_back(absl::StrCat(pingmesh::ComponentKindName(v.kind), " ",
                                          v.component, " (", v.evidence, ")"));
    } else {
      ++result.right_verdicts;
    }
    for (int f : found) result.faults[f].detected = true;
  }
  result.localiser_ms_per_window = absl::ToDoubleMilliseconds(localiser_time) / (total - 1);
  result.probe_ms_per_window = absl::ToDoubleMilliseconds(probe_time) / total;
  return result;
}

Summary Summarise(const std::vector<TrialResult>& trials) {
  Summary s;
  s.trials = static_cast<int>(trials.size());
  int verdicts = 0, right = 0, detected = 0, wrong_raises = 0;
  std::map<FaultKind, std::vector<double>> times;  // +inf: never raised
  std::map<FaultKind, std::pair<int, int>> found;  // detected, total
  for (const TrialResult& t : trials) {
    verdicts += t.verdicts;
    right += t.right_verdicts;
    wrong_raises += t.wrong_raises;
    s.localiser_ms_per_window += t.localiser_ms_per_window / trials.size();
    s.localiser_setup_ms += t.localiser_setup_ms / trials.size();
    for (const FaultOutcome& f : t.faults) {
      ++s.faults;
      detected += f.detected ? 1 : 0;
      ++found[f.kind].second;
      found[f.kind].first += f.detected ? 1 : 0;
      times[f.kind].push_back(f.detect_s >= 0 ? f.detect_s
                                              : std::numeric_limits<double>::infinity());
    }
  }
  s.precision = verdicts == 0 ? 1 : static_cast<double>(right) / verdicts;
  s.recall = s.faults == 0 ? 1 : static_cast<double>(detected) / s.faults;
  s.f1 = s.precision + s.recall == 0 ? 0 : 2 * s.precision * s.recall / (s.precision + s.recall);
  s.wrong_raises_per_trial = trials.empty() ? 0 : static_cast<double>(wrong_raises) / trials.size();
  for (auto& [kind, values] : times) {
    std::sort(values.begin(), values.end());
    size_t index = static_cast<size_t>(std::ceil(0.95 * values.size())) - 1;
    double p95 = values[index];
    double max = values.back();
    s.recall_by_kind.push_back({kind, static_cast<double>(found[kind].first) / found[kind].second});
    s.p95_detect_s_by_kind.push_back({kind, std::isinf(p95) ? -1 : p95});
    s.max_detect_s_by_kind.push_back({kind, std::isinf(max) ? -1 : max});
  }
  return s;
}

}  // namespace weft::bench
