// The tuner's entry point and its output (issue 21): Tune searches DCQCN profiles for a
// scope of the fabric, evaluating each candidate on the scenarios (tuning/objective.h)
// against the profile in force, and returns a Proposal: the profile, the evidence
// (baseline against candidate per scenario and metric, mean and spread over the seeds) and
// the search's cost. ApplyProposal turns it into a policy (a new profile and an assignment
// for the scope) that policy/ compiles and the controller rolls out like any policy change:
// canary, bake on live KPIs, waves, rollback. The controller's adapter (weftctl tune ...,
// audit, metrics) sits on top and is not here.
//
// Safety (tuning/safety.h): the search moves only inside the knobs' bounds
// (tuning/knobs.h), scores an unsafe candidate as unusable, and Tune and ApplyProposal
// refuse to return an unsafe profile or policy, whatever the search did.
//
// Pure logic apart from the injected clock; a call shares nothing with another.
//
// Example:
//   TuneRequest request{.policy = policy, .scope = {.racks = {"rack-a"}}};
//   request.search.clock = &clock;
//   ASSIGN_OR_RETURN(Proposal proposal, Tune(request, Strategy::kSurrogate));
//   if (proposal.score > 0) ASSIGN_OR_RETURN(weft::v1::Policy next, ApplyProposal(policy, proposal));
#ifndef WEFT_TUNING_PROPOSAL_H_
#define WEFT_TUNING_PROPOSAL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "proto/weft/v1/desired_state.pb.h"
#include "proto/weft/v1/policy.pb.h"
#include "tuning/objective.h"
#include "tuning/search.h"

namespace weft::tuning {

enum class Strategy { kSimulatedAnnealing, kSurrogate };

// Where a proposal applies: the nodes of these racks, pods or names; all empty = the
// whole cluster (the policy's default profile).
struct ProposalScope {
  std::vector<std::string> racks;
  std::vector<std::string> pods;
  std::vector<std::string> nodes;
  bool whole_cluster() const { return racks.empty() && pods.empty() && nodes.empty(); }
};

struct TuneRequest {
  weft::v1::Policy policy;
  // The profile the scope runs now; empty: the policy's default profile.
  std::string baseline_profile;
  ProposalScope scope;
  EvaluatorOptions evaluation;
  SearchOptions search;  // seed, budget and clock; `start` is set from the baseline
  std::string proposal_name = "tuned";
};

struct MetricEvidence {
  std::string metric;  // "all-reduce busbw (GB/s)", ...
  bool higher_is_better = false;
  double baseline_mean = 0, baseline_stddev = 0;
  double candidate_mean = 0, candidate_stddev = 0;
};

struct ScenarioEvidence {
  std::string scenario;
  int seeds = 0;
  std::vector<MetricEvidence> metrics;
  double weight = 1;  // in the score (Scenario::weight)
};

struct Proposal {
  std::string name;
  ProposalScope scope;
  weft::v1::DcqcnParams baseline;  // the profile in force, as the policy has it
  weft::v1::DcqcnParams profile;   // the baseline with the searched parameters replaced
  double score = 0;                // > 0: better than the baseline on the scenarios
  std::vector<ScenarioEvidence> evidence;
  std::vector<std::string> not_modelled;  // what the model ignored in the profile
  std::string strategy;
  uint64_t seed = 0;
  int evaluations = 0;
  absl::Duration wall;
  StopReason stop = StopReason::kEvaluations;
  std::vector<double> best_so_far;  // per evaluation, for convergence plots
};

// Runs the search. InvalidArgument when the policy is invalid, the baseline profile is
// unknown or unsafe (tuning/safety.h), or the search options are; the evaluator's and the
// objective's errors otherwise. The proposal is never unsafe: an unsafe candidate scores as
// unusable and cannot be the best; should the final check fail anyway, Tune returns
// Internal instead of the profile. When nothing beat the baseline, the proposal is the
// baseline with score 0.
absl::StatusOr<Proposal> Tune(const TuneRequest& request, Strategy strategy);

// The evidence of `candidate` against `baseline` (same evaluator).
std::vector<ScenarioEvidence> Evidence(const ProfileEvaluation& candidate,
                                       const ProfileEvaluation& baseline);

// `policy` with the proposal's profile added under proposal.name and assigned to its
// scope (the default profile for the whole cluster). InvalidArgument when the name is
// taken, the profile breaks a safety rule, or the result fails policy::ValidatePolicy.
absl::StatusOr<weft::v1::Policy> ApplyProposal(const weft::v1::Policy& policy,
                                               const Proposal& proposal);

}  // namespace weft::tuning

#endif  // WEFT_TUNING_PROPOSAL_H_
