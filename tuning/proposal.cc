#include "tuning/proposal.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "common/tunable_ranges.h"
#include "policy/policy.h"
#include "sim/cc_params.h"
#include "tuning/knobs.h"
#include "tuning/safety.h"

namespace weft::tuning {
namespace {

// A score no safe candidate reaches: an unsafe point is never the best.
constexpr double kUnusable = -1e9;

const weft::v1::DcqcnProfile* FindProfile(const weft::v1::Policy& policy, const std::string& name) {
  for (const weft::v1::DcqcnProfile& p : policy.dcqcn().profiles()) {
    if (p.name() == name) return &p;
  }
  return nullptr;
}

// `base` with the searched fields of `searched` written over it.
weft::v1::DcqcnParams Overlay(weft::v1::DcqcnParams base, const weft::v1::DcqcnParams& searched) {
  for (const Knob& k : SearchKnobs()) {
    if (uint32_t v = 0; GetDcqcnParam(searched, k.name, &v)) SetDcqcnParam(k.name, v, &base);
  }
  return base;
}

MetricEvidence Metric(const char* name, bool higher, double ScenarioMetrics::*field,
                      const ScenarioEvaluation& c, const ScenarioEvaluation& b) {
  return {name, higher, b.mean.*field, b.stddev.*field, c.mean.*field, c.stddev.*field};
}

}  // namespace

std::vector<ScenarioEvidence> Evidence(const ProfileEvaluation& candidate,
                                       const ProfileEvaluation& baseline) {
  std::vector<ScenarioEvidence> out;
  for (size_t s = 0; s < candidate.scenarios.size() && s < baseline.scenarios.size(); ++s) {
    const ScenarioEvaluation& c = candidate.scenarios[s];
    const ScenarioEvaluation& b = baseline.scenarios[s];
    ScenarioEvidence e{c.scenario, static_cast<int>(c.per_seed.size()), {}, c.weight};
    if (c.kind == ScenarioKind::kAllReduce || c.kind == ScenarioKind::kMixed) {
      e.metrics.push_back(
          Metric("all-reduce busbw (GB/s)", true, &ScenarioMetrics::busbw_gbytes_per_s, c, b));
    }
    e.metrics.push_back(Metric("completion (µs)", false, &ScenarioMetrics::completion_us, c, b));
    e.metrics.push_back(Metric("p99 FCT (µs)", false, &ScenarioMetrics::p99_fct_us, c, b));
    e.metrics.push_back(Metric("PFC pause share", false, &ScenarioMetrics::pause_share, c, b));
    e.metrics.push_back(Metric("mean queue (bytes)", false, &ScenarioMetrics::mean_queue_bytes, c, b));
    e.metrics.push_back(Metric("Jain fairness", true, &ScenarioMetrics::jain_fairness, c, b));
    out.push_back(std::move(e));
  }
  return out;
}

absl::StatusOr<Proposal> Tune(const TuneRequest& request, Strategy strategy) {
  RETURN_IF_ERROR(weft::policy::ValidatePolicy(request.policy, "policy"));
  const std::string baseline_name = !request.baseline_profile.empty()
                                        ? request.baseline_profile
                                        : (request.policy.dcqcn().default_profile().empty()
                                               ? weft::policy::kDefaultProfileName
                                               : request.policy.dcqcn().default_profile());
  weft::v1::DcqcnParams baseline;
  if (const weft::v1::DcqcnProfile* p = FindProfile(request.policy, baseline_name)) {
    baseline = p->params();
  } else if (baseline_name != weft::policy::kDefaultProfileName) {
    return absl::InvalidArgumentError(
        absl::StrCat("baseline_profile '", baseline_name, "' is not a profile of the policy"));
  }
  if (std::vector<SafetyViolation> v = CheckProfileSafety(request.policy, baseline); !v.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the baseline profile '", baseline_name, "' is unsafe: ", FormatViolations(v)));
  }
  // The model runs the profile as a node would: compiled over the firmware defaults.
  auto compiled = [&](const weft::v1::DcqcnParams& profile) {
    weft::v1::Policy with = request.policy;
    weft::v1::DcqcnProfile* added = with.mutable_dcqcn()->add_profiles();
    added->set_name("tuning-candidate");
    *added->mutable_params() = profile;
    return weft::policy::CompileDcqcn(with, "tuning-candidate");
  };
  ASSIGN_OR_RETURN(Evaluator evaluator, Evaluator::Create(request.evaluation, compiled(baseline)));

  ProfileEvaluation best = evaluator.baseline();  // the best candidate so far
  const SearchObjective objective =
      [&](const std::vector<double>& point) -> absl::StatusOr<double> {
    const weft::v1::DcqcnParams candidate = Overlay(baseline, DecodeProfile(point));
    if (!CheckProfileSafety(request.policy, candidate).empty()) return kUnusable;
    ASSIGN_OR_RETURN(ProfileEvaluation e, evaluator.Evaluate(compiled(candidate)));
    const double score = e.score;
    if (score > best.score) {
      best = std::move(e);
      best.profile = candidate;  // as the policy will hold it, not compiled
    }
    return score;
  };
  SearchOptions options = request.search;
  options.start = EncodeProfile(compiled(baseline));
  ASSIGN_OR_RETURN(SearchResult result, strategy == Strategy::kSimulatedAnnealing
                                            ? SimulatedAnnealing(objective, options)
                                            : SurrogateSearch(objective, options));

  Proposal proposal;
  proposal.name = request.proposal_name;
  proposal.scope = request.scope;
  proposal.baseline = baseline;
  const bool improved = best.score > 0;
  proposal.profile = improved ? best.profile : baseline;
  proposal.score = improved ? best.score : 0;
  proposal.evidence = Evidence(improved ? best : evaluator.baseline(), evaluator.baseline());
  if (absl::StatusOr<sim::MappedCcParams> m =
          sim::MapCcParams(compiled(proposal.profile), request.evaluation.fabric.side);
      m.ok()) {
    proposal.not_modelled = m->not_modelled;
  }
  proposal.strategy = result.strategy;
  proposal.seed = request.search.seed;
  proposal.evaluations = result.evaluations;
  proposal.wall = result.wall;
  proposal.stop = result.stop;
  proposal.best_so_far = result.best_so_far;
  // Whatever the search did, an unsafe profile does not leave the tuner.
  if (std::vector<SafetyViolation> v = CheckProfileSafety(request.policy, proposal.profile);
      !v.empty()) {
    return absl::InternalError(absl::StrCat("the tuner's choice is unsafe: ", FormatViolations(v)));
  }
  return proposal;
}

absl::StatusOr<weft::v1::Policy> ApplyProposal(const weft::v1::Policy& policy,
                                               const Proposal& proposal) {
  if (proposal.name.empty() || FindProfile(policy, proposal.name) != nullptr ||
      proposal.name == weft::policy::kDefaultProfileName) {
    return absl::InvalidArgumentError(absl::StrCat(
        "proposal name '", proposal.name, "' is empty or already a profile of the policy"));
  }
  if (std::vector<SafetyViolation> v = CheckProfileSafety(policy, proposal.profile); !v.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("proposal '", proposal.name,
                                                   "' is unsafe: ", FormatViolations(v)));
  }
  weft::v1::Policy out = policy;
  weft::v1::DcqcnProfile* profile = out.mutable_dcqcn()->add_profiles();
  profile->set_name(proposal.name);
  *profile->mutable_params() = proposal.profile;
  if (proposal.scope.whole_cluster()) {
    out.mutable_dcqcn()->set_default_profile(proposal.name);
  } else {
    // First match wins: the proposal's assignment goes first.
    weft::v1::ProfileAssignment assignment;
    assignment.set_profile(proposal.name);
    for (const std::string& r : proposal.scope.racks) assignment.add_racks(r);
    for (const std::string& p : proposal.scope.pods) assignment.add_pods(p);
    for (const std::string& n : proposal.scope.nodes) assignment.add_nodes(n);
    auto* assignments = out.mutable_dcqcn()->mutable_assignments();
    assignments->Add(std::move(assignment));
    for (int i = assignments->size() - 1; i > 0; --i) assignments->SwapElements(i, i - 1);
  }
  RETURN_IF_ERROR(weft::policy::ValidatePolicy(out, absl::StrCat("policy with proposal '", proposal.name, "'")));
  return out;
}

}  // namespace weft::tuning
