#include "controller/tuning/tune_manager.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/logging.h"
#include "common/status_macros.h"
#include "google/protobuf/util/message_differencer.h"
#include "tuning/proposal.h"

namespace weft::controller {
namespace {

using weft::v1::TuneProposal;
using weft::v1::TuneScope;
using weft::v1::TuneState;

// The search's clock: the controller's, until the manager stops; then the infinite
// future, so the search's wall-time bound ends it at its next evaluation.
class StoppableClock final : public Clock {
 public:
  StoppableClock(const Clock* clock, const std::atomic<bool>* stopping)
      : clock_(clock), stopping_(stopping) {}
  absl::Time Now() const override {
    return stopping_->load() ? absl::InfiniteFuture() : clock_->Now();
  }
  bool AwaitWithDeadline(absl::Mutex* mu, const absl::Condition& condition,
                         absl::Time deadline) const override {
    return clock_->AwaitWithDeadline(mu, condition, deadline);
  }

 private:
  const Clock* const clock_;
  const std::atomic<bool>* const stopping_;
};

bool IsFinal(TuneState state) {
  switch (state) {
    case weft::v1::TUNE_STATE_EVALUATING:
    case weft::v1::TUNE_STATE_PROPOSED:
    case weft::v1::TUNE_STATE_ROLLING_OUT:
      return false;
    default:
      return true;
  }
}

tuning::ProposalScope ScopeOf(const TuneScope& scope) {
  return {.racks = {scope.racks().begin(), scope.racks().end()},
          .pods = {scope.pods().begin(), scope.pods().end()},
          .nodes = {scope.nodes().begin(), scope.nodes().end()}};
}

absl::Status ValidateScope(const TuneScope& scope) {
  for (const auto* names : {&scope.racks(), &scope.pods(), &scope.nodes()}) {
    for (const std::string& name : *names) {
      if (name.empty()) {
        return absl::InvalidArgumentError(
            "the scope names an empty rack, pod or node; name them (--scope rack-a,rack-b)");
      }
    }
  }
  return absl::OkStatus();
}

void CopyEvidence(const tuning::Proposal& found, TuneProposal& out) {
  *out.mutable_baseline() = found.baseline;
  *out.mutable_profile() = found.profile;
  out.set_score(found.score);
  out.set_evaluations(found.evaluations);
  out.set_wall_ms(absl::ToInt64Milliseconds(found.wall));
  out.clear_evidence();
  for (const tuning::ScenarioEvidence& scenario : found.evidence) {
    weft::v1::TuneScenario* s = out.add_evidence();
    s->set_scenario(scenario.scenario);
    s->set_seeds(scenario.seeds);
    for (const tuning::MetricEvidence& metric : scenario.metrics) {
      weft::v1::TuneMetric* m = s->add_metrics();
      m->set_metric(metric.metric);
      m->set_higher_is_better(metric.higher_is_better);
      m->set_baseline_mean(metric.baseline_mean);
      m->set_baseline_stddev(metric.baseline_stddev);
      m->set_candidate_mean(metric.candidate_mean);
      m->set_candidate_stddev(metric.candidate_stddev);
    }
  }
  for (int i = 0; i < out.evidence_size() && i < static_cast<int>(found.evidence.size()); ++i) {
    out.mutable_evidence(i)->set_weight(found.evidence[i].weight);
  }
  out.clear_not_modelled();
  for (const std::string& name : found.not_modelled) out.add_not_modelled(name);
}

weft::v1::TuneTrigger TriggerOf(tuning::TriggerReason reason) {
  switch (reason) {
    case tuning::TriggerReason::kMixShift:
      return weft::v1::TUNE_TRIGGER_MIX_SHIFT;
    case tuning::TriggerReason::kKpiRegression:
      return weft::v1::TUNE_TRIGGER_KPI_REGRESSION;
    case tuning::TriggerReason::kNone:
      break;
  }
  return weft::v1::TUNE_TRIGGER_UNSPECIFIED;
}

}  // namespace

std::string ScopeKey(const TuneScope& scope) {
  std::vector<std::string> parts;
  for (const auto& [label, names] :
       {std::pair{"racks", &scope.racks()}, std::pair{"pods", &scope.pods()},
        std::pair{"nodes", &scope.nodes()}}) {
    if (names->empty()) continue;
    std::vector<std::string> sorted(names->begin(), names->end());
    std::sort(sorted.begin(), sorted.end());
    parts.push_back(absl::StrCat(label, "=", absl::StrJoin(sorted, ",")));
  }
  return parts.empty() ? "cluster" : absl::StrJoin(parts, " ");
}

TuneManager::TuneManager(RolloutManager* rollouts, TuneMetrics* metrics, const Clock* clock,
                         TuneManagerOptions options, RunningJobsSource jobs)
    : rollouts_(rollouts),
      metrics_(metrics),
      clock_(clock),
      options_(std::move(options)),
      jobs_(std::move(jobs)) {
  absl::StatusOr<tuning::Trigger> trigger = tuning::Trigger::Create(options_.trigger);
  if (!trigger.ok()) {
    WEFT_LOG(ERROR) << "tune trigger off: " << trigger.status().message();
    return;
  }
  absl::MutexLock lock(&mu_);
  trigger_ = *std::move(trigger);
}

TuneManager::~TuneManager() {
  stopping_ = true;
  AwaitIdle();
}

void TuneManager::AwaitIdle() {
  std::thread worker;
  {
    absl::MutexLock lock(&mu_);
    worker = std::move(worker_);
  }
  if (worker.joinable()) worker.join();
}

TuneManager::Entry* TuneManager::FindLocked(const std::string& id) {
  if (entries_.empty()) return nullptr;
  if (id.empty()) return &entries_.back();
  for (Entry& entry : entries_) {
    if (entry.proposal.id() == id) return &entry;
  }
  return nullptr;
}

double TuneManager::ModelErrorLocked(const std::string& scope_key) const {
  double error = 0;
  for (const Entry& entry : entries_) {
    if (entry.scope_key == scope_key) error = std::max(error, entry.proposal.model_error());
  }
  return error;
}

absl::StatusOr<TuneProposal> TuneManager::Propose(const weft::v1::ProposeRequest& request,
                                                  const std::string& requested_by) {
  if (request.max_evaluations() > options_.max_evaluations) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_evaluations ", request.max_evaluations(), " is above this "
                     "controller's limit of ", options_.max_evaluations));
  }
  if (absl::Seconds(request.max_wall_s()) > options_.max_wall) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_wall_s ", request.max_wall_s(), " is above this controller's limit "
                     "of ", absl::ToInt64Seconds(options_.max_wall), " s"));
  }
  RETURN_IF_ERROR(ValidateScope(request.scope()));
  Origin origin;
  origin.mix = CurrentMix();
  std::thread finished;  // a search that ended: joined outside the lock
  absl::StatusOr<TuneProposal> started = StartSearch(request, requested_by, origin, &finished);
  if (finished.joinable()) finished.join();
  return started;
}

tuning::TrafficMix TuneManager::CurrentMix() const {
  if (!jobs_) return {};
  return tuning::MixOf(jobs_().traffic);
}

absl::StatusOr<TuneProposal> TuneManager::StartSearch(const weft::v1::ProposeRequest& request,
                                                        const std::string& requested_by,
                                                        const Origin& origin,
                                                        std::thread* finished) {
  absl::MutexLock lock(&mu_);
  if (searching_) {
    return absl::FailedPreconditionError(
        absl::StrCat(entries_.back().proposal.id(), " is still evaluating; one search runs at "
                     "a time (weftctl tune status)"));
  }
  ASSIGN_OR_RETURN(weft::v1::Policy policy, rollouts_->PolicyInForce());
  Entry entry;
  entry.policy = std::move(policy);
  entry.scope_key = ScopeKey(request.scope());
  entry.mix = origin.mix;
  entry.scenarios = tuning::WeighScenarios(origin.mix, options_.evaluation.scenarios);
  TuneProposal& proposal = entry.proposal;
  proposal.set_id(absl::StrCat("tune-", next_id_++));
  proposal.set_state(weft::v1::TUNE_STATE_EVALUATING);
  *proposal.mutable_scope() = request.scope();
  proposal.set_strategy(request.strategy() == weft::v1::TUNE_STRATEGY_ANNEALING
                            ? weft::v1::TUNE_STRATEGY_ANNEALING
                            : weft::v1::TUNE_STRATEGY_SURROGATE);
  proposal.set_seed(request.seed() == 0 ? 1 : request.seed());
  proposal.set_dry_run(request.dry_run());
  proposal.set_max_evaluations(request.max_evaluations() == 0 ? options_.max_evaluations
                                                              : request.max_evaluations());
  proposal.set_profile_name(proposal.id());
  proposal.set_requested_by(requested_by);
  proposal.set_trigger(origin.trigger);
  proposal.set_trigger_detail(origin.detail);
  proposal.set_traffic_mix(tuning::FormatMix(origin.mix));
  proposal.set_created_us(absl::ToUnixMicros(clock_->Now()));
  const absl::Duration max_wall =
      request.max_wall_s() == 0 ? options_.max_wall : absl::Seconds(request.max_wall_s());
  proposal.set_wall_ms(absl::ToInt64Milliseconds(max_wall));  // the bound, until it ends
  entries_.push_back(entry);
  // Forget the oldest finished proposals past the history.
  while (entries_.size() > options_.history) {
    auto oldest = std::find_if(entries_.begin(), entries_.end(),
                               [](const Entry& e) { return IsFinal(e.proposal.state()); });
    if (oldest == entries_.end()) break;
    entries_.erase(oldest);
  }
  *finished = std::move(worker_);
  searching_ = true;
  metrics_->SearchStarted();
  worker_ = std::thread(&TuneManager::RunSearch, this, entries_.back().proposal.id());
  WEFT_LOG(INFO) << "tune search started id=" << entries_.back().proposal.id()
                 << " scope=\"" << entries_.back().scope_key << "\" by=" << requested_by
                 << " trigger=" << weft::v1::TuneTrigger_Name(origin.trigger) << " mix=\""
                 << entries_.back().proposal.traffic_mix() << "\"";
  return entries_.back().proposal;
}

void TuneManager::RunSearch(std::string id) {
  tuning::TuneRequest request;
  tuning::Strategy strategy = tuning::Strategy::kSurrogate;
  {
    absl::MutexLock lock(&mu_);
    Entry* entry = FindLocked(id);
    request.policy = entry->policy;
    request.scope = ScopeOf(entry->proposal.scope());
    request.proposal_name = entry->proposal.profile_name();
    request.search.seed = entry->proposal.seed();
    request.search.max_evaluations = static_cast<int>(entry->proposal.max_evaluations());
    request.search.max_wall = absl::Milliseconds(entry->proposal.wall_ms());
    request.evaluation = options_.evaluation;
    request.evaluation.scenarios = entry->scenarios;
    if (entry->proposal.strategy() == weft::v1::TUNE_STRATEGY_ANNEALING) {
      strategy = tuning::Strategy::kSimulatedAnnealing;
    }
  }
  const StoppableClock clock(clock_, &stopping_);
  request.search.clock = &clock;
  absl::StatusOr<tuning::Proposal> found = tuning::Tune(request, strategy);

  absl::MutexLock lock(&mu_);
  searching_ = false;
  Entry* entry = FindLocked(id);
  TuneProposal& proposal = entry->proposal;
  proposal.set_finished_us(absl::ToUnixMicros(clock_->Now()));
  std::string result;
  if (!found.ok()) {
    proposal.set_state(weft::v1::TUNE_STATE_FAILED);
    proposal.set_reason(std::string(found.status().message()));
    proposal.set_wall_ms(0);
    result = "failed";
  } else {
    CopyEvidence(*found, proposal);
    const double model_error = ModelErrorLocked(entry->scope_key);
    if (found->score <= 0) {
      proposal.set_state(weft::v1::TUNE_STATE_NO_BETTER);
      proposal.set_reason("no candidate beat the profile in force in the twin");
      result = "no_better";
      TunedFor(*entry);
    } else if (found->score <= model_error) {
      proposal.set_state(weft::v1::TUNE_STATE_NO_BETTER);
      proposal.set_reason(absl::StrFormat(
          "its score %.4f is within the model's error %.4f for %s (a proposal the live "
          "fabric rolled back scored that much)",
          found->score, model_error, entry->scope_key));
      result = "no_better";
      TunedFor(*entry);
    } else if (proposal.dry_run()) {
      proposal.set_state(weft::v1::TUNE_STATE_DRY_RUN);
      result = "dry_run";
    } else {
      proposal.set_state(weft::v1::TUNE_STATE_PROPOSED);
      result = "proposed";
    }
  }
  metrics_->SearchEnded(result, static_cast<int>(proposal.evaluations()), proposal.score());
  WEFT_LOG(INFO) << "tune search ended id=" << id << " result=" << result
                 << " score=" << proposal.score() << " evaluations=" << proposal.evaluations()
                 << " wall_ms=" << proposal.wall_ms() << " reason=\"" << proposal.reason()
                 << "\"";
}

absl::StatusOr<TuneProposal> TuneManager::Get(const std::string& id) const {
  absl::MutexLock lock(&mu_);
  Entry* entry = const_cast<TuneManager*>(this)->FindLocked(id);
  if (entry == nullptr) {
    return absl::NotFoundError(id.empty() ? "no proposal yet (weftctl tune propose)"
                                          : absl::StrCat("no proposal '", id,
                                                         "' (weftctl tune history lists them)"));
  }
  return entry->proposal;
}

weft::v1::ListProposalsResponse TuneManager::List() const {
  absl::MutexLock lock(&mu_);
  weft::v1::ListProposalsResponse out;
  for (const Entry& entry : entries_) *out.add_proposals() = entry.proposal;
  return out;
}

absl::StatusOr<TuneProposal> TuneManager::Apply(const std::string& id,
                                                const std::string& applied_by) {
  absl::MutexLock lock(&mu_);
  Entry* entry = FindLocked(id);
  if (entry == nullptr || id.empty()) {
    return absl::NotFoundError(
        absl::StrCat("no proposal '", id, "' (weftctl tune history lists them)"));
  }
  TuneProposal& proposal = entry->proposal;
  if (proposal.state() != weft::v1::TUNE_STATE_PROPOSED) {
    return absl::FailedPreconditionError(absl::StrCat(
        id, " is ", weft::v1::TuneState_Name(proposal.state()),
        "; only a PROPOSED proposal can be applied",
        proposal.reason().empty() ? "" : absl::StrCat(" (", proposal.reason(), ")")));
  }
  tuning::Proposal found;
  found.name = proposal.profile_name();
  found.scope = ScopeOf(proposal.scope());
  found.baseline = proposal.baseline();
  found.profile = proposal.profile();
  found.score = proposal.score();
  ASSIGN_OR_RETURN(weft::v1::Policy policy, tuning::ApplyProposal(entry->policy, found));
  ASSIGN_OR_RETURN(weft::v1::Rollout rollout,
                   rollouts_->StartPolicy(policy, id, applied_by));
  proposal.set_state(weft::v1::TUNE_STATE_ROLLING_OUT);
  proposal.set_rollout_id(rollout.id());
  proposal.set_applied_by(applied_by);
  WEFT_LOG(INFO) << "tune proposal applied id=" << id << " rollout=" << rollout.id()
                 << " by=" << applied_by;
  return proposal;
}

void TuneManager::TunedFor(const Entry& entry) {
  // A scoped proposal's profile does not run the whole cluster; an empty mix says nothing.
  if (trigger_ && entry.scope_key == "cluster" && !entry.mix.empty()) {
    trigger_->SetReference(entry.mix);
  }
}

void TuneManager::Tick() {
  std::vector<std::string> to_apply;
  {
    absl::MutexLock lock(&mu_);
    absl::StatusOr<weft::v1::Policy> in_force = rollouts_->PolicyInForce();
    for (Entry& entry : entries_) {
      TuneProposal& proposal = entry.proposal;
      if (proposal.state() == weft::v1::TUNE_STATE_ROLLING_OUT) {
        absl::StatusOr<weft::v1::Rollout> rollout = rollouts_->Get(proposal.rollout_id());
        if (!rollout.ok()) continue;
        if (rollout->phase() == weft::v1::ROLLOUT_PHASE_COMPLETED) {
          proposal.set_state(weft::v1::TUNE_STATE_COMPLETED);
          metrics_->RolloutEnded("completed");
          TunedFor(entry);
        } else if (rollout->phase() == weft::v1::ROLLOUT_PHASE_ROLLED_BACK ||
                   rollout->phase() == weft::v1::ROLLOUT_PHASE_ABORTED) {
          proposal.set_state(weft::v1::TUNE_STATE_ROLLED_BACK);
          proposal.set_reason(rollout->reason());
          // The twin promised this much and the live fabric did not confirm it.
          proposal.set_model_error(proposal.score());
          metrics_->RolloutEnded("rolled_back");
          WEFT_LOG(WARNING) << "tune proposal rolled back id=" << proposal.id()
                            << " scope=\"" << entry.scope_key << "\" model_error="
                            << proposal.score() << " reason=\"" << rollout->reason() << "\"";
        }
      } else if (proposal.state() == weft::v1::TUNE_STATE_PROPOSED && in_force.ok() &&
                 !google::protobuf::util::MessageDifferencer::Equals(*in_force, entry.policy)) {
        proposal.set_state(weft::v1::TUNE_STATE_SUPERSEDED);
        proposal.set_reason(
            "another policy was rolled out after the search; propose again against it");
      } else if (proposal.state() == weft::v1::TUNE_STATE_PROPOSED && options_.auto_apply &&
                 proposal.trigger() != weft::v1::TUNE_TRIGGER_ON_REQUEST &&
                 !entry.auto_apply_tried) {
        entry.auto_apply_tried = true;  // once: a refusal is left to an operator
        to_apply.push_back(proposal.id());
      }
    }
  }
  for (const std::string& id : to_apply) {
    absl::StatusOr<TuneProposal> applied = Apply(id, "tuner");
    if (!applied.ok()) {
      WEFT_LOG(WARNING) << "tune automatic apply refused id=" << id << " reason=\""
                        << applied.status().message() << "\"";
    }
  }
  CheckTrigger();
}

void TuneManager::CheckTrigger() {
  if (!jobs_) return;
  const absl::Time now = clock_->Now();
  {
    absl::MutexLock lock(&mu_);
    // While a search runs a firing could not start one; the check waits for it.
    if (!trigger_ || searching_ || now < next_check_) return;
    next_check_ = now + options_.check_interval;
  }
  const RunningJobs jobs = jobs_();  // outside the lock: the placement side takes its own
  Origin origin;
  origin.mix = tuning::MixOf(jobs.traffic);
  tuning::TriggerDecision decision;
  {
    absl::MutexLock lock(&mu_);
    decision = trigger_->Check(now, origin.mix, jobs.kpis);
  }
  if (decision.divergence) metrics_->MixDivergence(*decision.divergence);
  if (decision.fired == tuning::TriggerReason::kNone) return;
  metrics_->TriggerFired(tuning::TriggerReasonName(decision.fired));
  WEFT_LOG(INFO) << "tune trigger fired reason=" << tuning::TriggerReasonName(decision.fired)
                 << " propose=" << options_.auto_propose << " detail=\"" << decision.detail
                 << "\"";
  if (!options_.auto_propose) return;
  origin.trigger = TriggerOf(decision.fired);
  origin.detail = decision.detail;
  std::thread finished;
  absl::StatusOr<TuneProposal> started =
      StartSearch(weft::v1::ProposeRequest(), "tuner", origin, &finished);
  if (finished.joinable()) finished.join();
  if (!started.ok()) {
    WEFT_LOG(WARNING) << "tune trigger could not start a search: " << started.status().message();
  }
}

}  // namespace weft::controller
