#include "controller/rollout/rollout.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace weft::controller {
namespace {

using weft::v1::Rollout;
using weft::v1::RolloutPhase;

// The history keeps this many events; the oldest go first.
constexpr int kMaxHistory = 200;

int64_t ToUs(absl::Time t) { return absl::ToUnixMicros(t); }
absl::Time FromUs(int64_t us) { return absl::FromUnixMicros(us); }

void Note(Rollout& rollout, absl::Time now, std::string message) {
  if (rollout.history_size() >= kMaxHistory) {
    rollout.mutable_history()->DeleteSubrange(0, 1);
  }
  weft::v1::RolloutEvent* event = rollout.add_history();
  event->set_at_us(ToUs(now));
  event->set_message(std::move(message));
}

void SetPhase(Rollout& rollout, RolloutPhase phase, absl::Time now) {
  rollout.set_phase(phase);
  rollout.set_phase_since_us(ToUs(now));
}

std::string StepName(uint32_t index) {
  return index == 0 ? "canary" : absl::StrCat("wave ", index);
}

// The per-node KPI values of one node.
struct Kpis {
  double pfc_pause_share = 0;
  double ecn_marks_per_s = 0;
  double cnps_per_s = 0;
  double retransmissions_per_s = 0;
  double tx_gbps = 0;
};

Kpis KpisOf(const FleetNode& node) {
  Kpis k;
  // A share of time, 0..1: the node's most-paused NIC and priority, worse direction.
  k.pfc_pause_share =
      std::max(node.rates.pfc_rx_pause_share(), node.rates.pfc_tx_pause_share());
  k.ecn_marks_per_s = node.rates.ecn_marked_per_s();
  k.cnps_per_s = node.rates.cnp_handled_per_s();
  k.retransmissions_per_s = node.rates.retransmissions_per_s();
  k.tx_gbps = node.rates.tx_gbps();
  return k;
}

// Mean per node over `nodes`; nodes == 0 gives zeros.
Kpis Mean(const std::vector<const FleetNode*>& nodes) {
  Kpis sum;
  for (const FleetNode* n : nodes) {
    const Kpis k = KpisOf(*n);
    sum.pfc_pause_share += k.pfc_pause_share;
    sum.ecn_marks_per_s += k.ecn_marks_per_s;
    sum.cnps_per_s += k.cnps_per_s;
    sum.retransmissions_per_s += k.retransmissions_per_s;
    sum.tx_gbps += k.tx_gbps;
  }
  if (nodes.empty()) return sum;
  const double n = static_cast<double>(nodes.size());
  sum.pfc_pause_share /= n;
  sum.ecn_marks_per_s /= n;
  sum.cnps_per_s /= n;
  sum.retransmissions_per_s /= n;
  sum.tx_gbps /= n;
  return sum;
}

// Nodes of every step that has started.
absl::flat_hash_set<std::string> SentNodes(const Rollout& rollout) {
  absl::flat_hash_set<std::string> sent;
  for (const weft::v1::RolloutStep& step : rollout.steps()) {
    if (step.started_us() == 0) continue;
    sent.insert(step.nodes().begin(), step.nodes().end());
  }
  return sent;
}

RolloutActions StartStep(Rollout& rollout, absl::Time now) {
  RolloutActions actions;
  weft::v1::RolloutStep& step = *rollout.mutable_steps(rollout.current_step());
  step.set_started_us(ToUs(now));
  actions.push_new.assign(step.nodes().begin(), step.nodes().end());
  actions.changed = true;
  Note(rollout, now,
       absl::StrCat(StepName(step.index()), " started: version ", rollout.version(), " sent to ",
                    step.nodes_size(), " nodes"));
  return actions;
}

// Counts the step's answers into `step`; true when every node has answered or timed out.
bool CountAnswers(weft::v1::RolloutStep& step, uint64_t version,
                  const absl::flat_hash_map<std::string, const FleetNode*>& by_name,
                  absl::Duration waited, absl::Duration ack_timeout) {
  uint32_t acked = 0, nacked = 0, timed_out = 0;
  for (const std::string& name : step.nodes()) {
    auto it = by_name.find(name);
    const FleetNode* node = it == by_name.end() ? nullptr : it->second;
    if (node != nullptr && node->applied_version == version) {
      ++acked;
    } else if (node != nullptr && node->nacked_version == version) {
      ++nacked;
    } else if (waited >= ack_timeout) {
      ++timed_out;
    }
  }
  step.set_acked(acked);
  step.set_nacked(nacked);
  step.set_timed_out(timed_out);
  return acked + nacked + timed_out == static_cast<uint32_t>(step.nodes_size());
}

absl::flat_hash_map<std::string, const FleetNode*> ByName(const std::vector<FleetNode>& fleet) {
  absl::flat_hash_map<std::string, const FleetNode*> out;
  for (const FleetNode& n : fleet) out[n.name] = &n;
  return out;
}

std::string FormatKpi(double v) { return absl::StrFormat("%.4g", v); }

RolloutActions AdvanceStep(Rollout& rollout, const std::vector<FleetNode>& fleet,
                           absl::Time now) {
  weft::v1::RolloutStep& step = *rollout.mutable_steps(rollout.current_step());
  RolloutActions actions;
  if (step.started_us() == 0) actions = StartStep(rollout, now);
  const weft::v1::RolloutPolicy& settings = rollout.policy().rollout();
  const absl::Duration waited = now - FromUs(step.started_us());
  const bool all_answered = CountAnswers(step, rollout.version(), ByName(fleet), waited,
                                         absl::Seconds(settings.ack_timeout_s()));
  const uint32_t failed = step.nacked() + step.timed_out();
  const double allowed = settings.max_nack_share() * step.nodes_size();
  if (failed > 0 && static_cast<double>(failed) > allowed) {
    RolloutActions rollback = StartRollback(
        rollout, absl::StrCat(StepName(step.index()), ": ", step.nacked(), " of ",
                              step.nodes_size(), " nodes NACKed and ", step.timed_out(),
                              " did not answer within ", settings.ack_timeout_s(),
                              " s (allowed share ", settings.max_nack_share(), ")"),
        now);
    rollback.push_new = std::move(actions.push_new);
    return rollback;
  }
  if (all_answered) {
    step.set_applied_us(ToUs(now));
    SetPhase(rollout, weft::v1::ROLLOUT_PHASE_BAKING, now);
    rollout.set_regression_since_us(0);
    Note(rollout, now,
         absl::StrCat(StepName(step.index()), " applied (", step.acked(), " ACK, ",
                      step.nacked(), " NACK, ", step.timed_out(), " no answer); baking"));
    actions.changed = true;
  }
  return actions;
}

RolloutActions AdvanceBake(Rollout& rollout, const std::vector<FleetNode>& fleet,
                           absl::Time now) {
  RolloutActions actions;
  const weft::v1::RolloutPolicy& settings = rollout.policy().rollout();
  *rollout.mutable_last_judgement() = JudgeKpis(rollout, fleet, now);
  std::string regressed;
  for (const weft::v1::KpiValue& kpi : rollout.last_judgement().kpis()) {
    if (!kpi.regressed()) continue;
    absl::StrAppend(&regressed, regressed.empty() ? "" : ", ", kpi.name(), " ",
                    FormatKpi(kpi.changed()), " vs ", FormatKpi(kpi.control()), " (limit ",
                    FormatKpi(kpi.limit()), ")");
  }
  if (!regressed.empty()) {
    if (rollout.regression_since_us() == 0) {
      rollout.set_regression_since_us(ToUs(now));
      Note(rollout, now, absl::StrCat("KPI past its threshold: ", regressed));
      actions.changed = true;
    }
    if (now - FromUs(rollout.regression_since_us()) >= absl::Seconds(settings.kpis().sustain_s())) {
      return StartRollback(
          rollout,
          absl::StrCat("KPI regression for ", settings.kpis().sustain_s(), " s: ", regressed,
                       "; changed nodes vs ", rollout.last_judgement().control()),
          now);
    }
  } else if (rollout.regression_since_us() != 0) {
    rollout.set_regression_since_us(0);
    Note(rollout, now, "KPIs back within their thresholds");
    actions.changed = true;
  }

  weft::v1::RolloutStep& step = *rollout.mutable_steps(rollout.current_step());
  const uint32_t bake_s = step.index() == 0 ? settings.bake_s() : settings.wave_bake_s();
  if (now - FromUs(step.applied_us()) < absl::Seconds(bake_s)) return actions;
  if (rollout.regression_since_us() != 0) return actions;  // wait for it to clear or sustain
  step.set_baked_us(ToUs(now));
  Note(rollout, now, absl::StrCat(StepName(step.index()), " baked ", bake_s, " s"));
  actions.changed = true;
  if (rollout.current_step() + 1 < static_cast<uint32_t>(rollout.steps_size())) {
    rollout.set_current_step(rollout.current_step() + 1);
    SetPhase(rollout, weft::v1::ROLLOUT_PHASE_WAVE, now);
    RolloutActions started = AdvanceStep(rollout, fleet, now);
    started.changed = true;
    return started;
  }
  SetPhase(rollout, weft::v1::ROLLOUT_PHASE_COMPLETED, now);
  rollout.set_finished_us(ToUs(now));
  Note(rollout, now, absl::StrCat("completed: version ", rollout.version(), " is the last good"));
  actions.finished = true;
  return actions;
}

RolloutActions AdvanceRollback(Rollout& rollout, const std::vector<FleetNode>& fleet,
                               absl::Time now) {
  RolloutActions actions;
  const auto by_name = ByName(fleet);
  int answered = 0;
  for (const std::string& name : rollout.rollback_nodes()) {
    auto it = by_name.find(name);
    if (it == by_name.end()) continue;
    if (it->second->applied_version == rollout.rollback_version() ||
        it->second->nacked_version == rollout.rollback_version()) {
      ++answered;
    }
  }
  const int total = rollout.rollback_nodes_size();
  const bool timed_out = now - FromUs(rollout.phase_since_us()) >=
                         absl::Seconds(rollout.policy().rollout().ack_timeout_s());
  if (answered < total && !timed_out) return actions;
  const RolloutPhase end =
      rollout.aborted() ? weft::v1::ROLLOUT_PHASE_ABORTED : weft::v1::ROLLOUT_PHASE_ROLLED_BACK;
  SetPhase(rollout, end, now);
  rollout.set_finished_us(ToUs(now));
  Note(rollout, now,
       absl::StrCat(rollout.aborted() ? "aborted" : "rolled back", ": ", answered, " of ", total,
                    " nodes answered version ", rollout.rollback_version(),
                    answered < total ? " (the rest get it when their agents reconnect)" : ""));
  actions.changed = true;
  actions.finished = true;
  return actions;
}

// "by alice", or "by hand" when the caller is not known.
std::string ByWhom(absl::string_view who) {
  return who.empty() ? "by hand" : absl::StrCat("by ", who);
}

}  // namespace

bool IsTerminal(RolloutPhase phase) {
  return phase == weft::v1::ROLLOUT_PHASE_COMPLETED ||
         phase == weft::v1::ROLLOUT_PHASE_ROLLED_BACK || phase == weft::v1::ROLLOUT_PHASE_ABORTED;
}

std::string RolloutPhaseName(RolloutPhase phase) {
  std::string name = weft::v1::RolloutPhase_Name(phase);
  return name.substr(std::string("ROLLOUT_PHASE_").size());
}

weft::v1::KpiBaseline BaselineOf(const std::vector<FleetNode>& fleet) {
  std::vector<const FleetNode*> reporting;
  for (const FleetNode& n : fleet) {
    if (n.reporting) reporting.push_back(&n);
  }
  const Kpis mean = Mean(reporting);
  weft::v1::KpiBaseline baseline;
  baseline.set_nodes(reporting.size());
  baseline.set_pfc_pause_share(mean.pfc_pause_share);
  baseline.set_ecn_marks_per_s(mean.ecn_marks_per_s);
  baseline.set_cnps_per_s(mean.cnps_per_s);
  baseline.set_retransmissions_per_s(mean.retransmissions_per_s);
  baseline.set_tx_gbps(mean.tx_gbps);
  return baseline;
}

absl::StatusOr<Rollout> PlanRollout(std::string id, const weft::v1::Policy& policy,
                                    uint64_t version, const weft::v1::Policy* previous,
                                    uint64_t previous_version,
                                    const std::vector<FleetNode>& fleet, absl::Time now,
                                    std::string source) {
  if (fleet.empty()) {
    return absl::FailedPreconditionError(
        "no nodes are registered: a rollout needs agents to send the policy to");
  }
  // Racks in name order, each with its nodes in name order.
  std::map<std::string, std::vector<std::string>> racks;
  for (const FleetNode& n : fleet) racks[n.rack].push_back(n.name);
  for (auto& [rack, nodes] : racks) std::sort(nodes.begin(), nodes.end());

  const weft::v1::RolloutPolicy& settings = policy.rollout();
  std::set<std::string> canary;
  if (settings.canary_per_rack() > 0) {
    for (const auto& [rack, nodes] : racks) {
      for (size_t i = 0; i < nodes.size() && i < settings.canary_per_rack(); ++i) {
        canary.insert(nodes[i]);
      }
    }
  } else {
    const size_t want = std::max<size_t>(
        1, static_cast<size_t>(std::ceil(settings.canary_share() * fleet.size())));
    for (size_t round = 0; canary.size() < want; ++round) {
      for (const auto& [rack, nodes] : racks) {
        if (round < nodes.size() && canary.size() < want) canary.insert(nodes[round]);
      }
    }
  }

  Rollout rollout;
  rollout.set_id(std::move(id));
  *rollout.mutable_policy() = policy;
  rollout.set_version(version);
  if (previous != nullptr) *rollout.mutable_previous_policy() = *previous;
  rollout.set_previous_version(previous_version);
  rollout.set_rollback_version(version + 1);
  rollout.set_created_us(ToUs(now));
  rollout.set_source(std::move(source));
  *rollout.mutable_baseline() = BaselineOf(fleet);

  weft::v1::RolloutStep* first = rollout.add_steps();
  first->set_index(0);
  for (const auto& [rack, nodes] : racks) {
    for (const std::string& n : nodes) {
      if (canary.count(n)) first->add_nodes(n);
    }
  }
  weft::v1::RolloutStep* wave = nullptr;
  for (const auto& [rack, nodes] : racks) {
    for (const std::string& n : nodes) {
      if (canary.count(n)) continue;
      if (wave == nullptr || wave->nodes_size() >= static_cast<int>(settings.wave_size())) {
        wave = rollout.add_steps();
        wave->set_index(rollout.steps_size() - 1);
      }
      wave->add_nodes(n);
    }
  }
  SetPhase(rollout, weft::v1::ROLLOUT_PHASE_CANARY, now);
  Note(rollout, now,
       absl::StrCat("created: version ", version, " over ", fleet.size(), " nodes: canary of ",
                    first->nodes_size(), ", ", rollout.steps_size() - 1, " waves",
                    previous != nullptr ? absl::StrCat("; last good version ", previous_version)
                                        : "; no last good version (rollback: firmware defaults)"));
  return rollout;
}

RolloutActions AdvanceRollout(Rollout& rollout, const std::vector<FleetNode>& fleet,
                              absl::Time now) {
  switch (rollout.phase()) {
    case weft::v1::ROLLOUT_PHASE_CANARY:
    case weft::v1::ROLLOUT_PHASE_WAVE:
      return AdvanceStep(rollout, fleet, now);
    case weft::v1::ROLLOUT_PHASE_BAKING:
      return AdvanceBake(rollout, fleet, now);
    case weft::v1::ROLLOUT_PHASE_ROLLING_BACK:
      return AdvanceRollback(rollout, fleet, now);
    default:
      return RolloutActions();
  }
}

RolloutActions StartRollback(Rollout& rollout, absl::string_view reason, absl::Time now) {
  RolloutActions actions;
  rollout.set_reason(std::string(reason));
  SetPhase(rollout, weft::v1::ROLLOUT_PHASE_ROLLING_BACK, now);
  rollout.clear_rollback_nodes();
  for (const weft::v1::RolloutStep& step : rollout.steps()) {
    if (step.started_us() == 0) continue;
    for (const std::string& n : step.nodes()) rollout.add_rollback_nodes(n);
  }
  actions.push_rollback.assign(rollout.rollback_nodes().begin(), rollout.rollback_nodes().end());
  actions.changed = true;
  Note(rollout, now,
       absl::StrCat("rolling back ", rollout.rollback_nodes_size(), " nodes to ",
                    rollout.has_previous_policy()
                        ? absl::StrCat("last good version ", rollout.previous_version())
                        : std::string("the firmware DCQCN defaults"),
                    " as version ", rollout.rollback_version(), ": ", reason));
  return actions;
}

absl::Status PauseRollout(Rollout& rollout, absl::Time now, absl::string_view who) {
  const RolloutPhase phase = rollout.phase();
  if (phase != weft::v1::ROLLOUT_PHASE_CANARY && phase != weft::v1::ROLLOUT_PHASE_BAKING &&
      phase != weft::v1::ROLLOUT_PHASE_WAVE) {
    return absl::FailedPreconditionError(
        absl::StrCat("rollout ", rollout.id(), " is ", RolloutPhaseName(phase),
                     "; only a CANARY, BAKING or WAVE rollout can be paused"));
  }
  rollout.set_paused_phase(phase);
  SetPhase(rollout, weft::v1::ROLLOUT_PHASE_PAUSED, now);
  Note(rollout, now, absl::StrCat("paused ", ByWhom(who), " in ", RolloutPhaseName(phase)));
  return absl::OkStatus();
}

absl::Status ResumeRollout(Rollout& rollout, absl::Time now, absl::string_view who) {
  if (rollout.phase() != weft::v1::ROLLOUT_PHASE_PAUSED) {
    return absl::FailedPreconditionError(absl::StrCat(
        "rollout ", rollout.id(), " is ", RolloutPhaseName(rollout.phase()), ", not PAUSED"));
  }
  const RolloutPhase back = rollout.paused_phase();
  SetPhase(rollout, back, now);
  rollout.set_paused_phase(weft::v1::ROLLOUT_PHASE_IDLE);
  if (back == weft::v1::ROLLOUT_PHASE_BAKING) {
    // The KPIs were not watched while paused: the bake starts over.
    rollout.mutable_steps(rollout.current_step())->set_applied_us(ToUs(now));
    rollout.set_regression_since_us(0);
  }
  Note(rollout, now, absl::StrCat("resumed ", ByWhom(who), " in ", RolloutPhaseName(back)));
  return absl::OkStatus();
}

absl::StatusOr<RolloutActions> AbortRollout(Rollout& rollout, absl::string_view reason,
                                            absl::Time now, absl::string_view who) {
  if (IsTerminal(rollout.phase()) || rollout.phase() == weft::v1::ROLLOUT_PHASE_ROLLING_BACK) {
    return absl::FailedPreconditionError(
        absl::StrCat("rollout ", rollout.id(), " is ", RolloutPhaseName(rollout.phase()),
                     "; there is nothing to abort"));
  }
  rollout.set_aborted(true);
  return StartRollback(rollout,
                       absl::StrCat("aborted ", ByWhom(who), ": ",
                                    reason.empty() ? "no reason given" : reason),
                       now);
}

weft::v1::KpiJudgement JudgeKpis(const Rollout& rollout, const std::vector<FleetNode>& fleet,
                                 absl::Time now) {
  const absl::flat_hash_set<std::string> sent = SentNodes(rollout);
  std::vector<const FleetNode*> changed;
  std::vector<const FleetNode*> control;
  for (const FleetNode& n : fleet) {
    if (!n.reporting) continue;
    if (sent.contains(n.name)) {
      if (n.applied_version == rollout.version()) changed.push_back(&n);
    } else {
      control.push_back(&n);
    }
  }
  weft::v1::KpiJudgement judgement;
  judgement.set_at_us(ToUs(now));
  judgement.set_changed_nodes(changed.size());
  judgement.set_control_nodes(control.size());
  Kpis base;
  if (!control.empty()) {
    base = Mean(control);
    judgement.set_control("unchanged nodes");
  } else {
    const weft::v1::KpiBaseline& b = rollout.baseline();
    base = Kpis{b.pfc_pause_share(), b.ecn_marks_per_s(), b.cnps_per_s(),
                b.retransmissions_per_s(), b.tx_gbps()};
    judgement.set_control("cluster before the rollout");
  }
  const Kpis now_changed = Mean(changed);
  const weft::v1::KpiThresholds& t = rollout.policy().rollout().kpis();
  const bool judged = !changed.empty();
  auto add = [&](const char* name, double value, double control_value, double limit,
                 bool regressed) {
    weft::v1::KpiValue* kpi = judgement.add_kpis();
    kpi->set_name(name);
    kpi->set_changed(value);
    kpi->set_control(control_value);
    kpi->set_limit(limit);
    kpi->set_regressed(judged && regressed);
  };
  const double pfc_limit = base.pfc_pause_share + t.pfc_pause_share_increase();
  add("pfc_pause_share", now_changed.pfc_pause_share, base.pfc_pause_share, pfc_limit,
      now_changed.pfc_pause_share > pfc_limit);
  const double ecn_limit =
      std::max(t.rate_floor_per_s(), base.ecn_marks_per_s * (1 + t.ecn_marks_increase_ratio()));
  add("ecn_marks_per_s", now_changed.ecn_marks_per_s, base.ecn_marks_per_s, ecn_limit,
      now_changed.ecn_marks_per_s > ecn_limit);
  const double cnp_limit =
      std::max(t.rate_floor_per_s(), base.cnps_per_s * (1 + t.cnps_increase_ratio()));
  add("cnps_per_s", now_changed.cnps_per_s, base.cnps_per_s, cnp_limit,
      now_changed.cnps_per_s > cnp_limit);
  const double retrans_limit = base.retransmissions_per_s + t.retransmissions_increase_per_s();
  add("retransmissions_per_s", now_changed.retransmissions_per_s, base.retransmissions_per_s,
      retrans_limit, now_changed.retransmissions_per_s > retrans_limit);
  const double tx_limit = base.tx_gbps * (1 - t.throughput_drop_ratio());
  add("tx_gbps", now_changed.tx_gbps, base.tx_gbps, tx_limit,
      base.tx_gbps > 0 && now_changed.tx_gbps < tx_limit);
  return judgement;
}

}  // namespace weft::controller
