#include "cli/tune_command.h"

#include <cmath>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "common/text_output.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"

namespace weft {
namespace {

using Tune = weft::v1::TuneService::StubInterface;

constexpr char kTuneUsage[] =
    "usage: weftctl tune propose [--scope rack-a,pod:p1,node:n1] [--dry-run] "
    "[--strategy surrogate|annealing] [--seed N] [--max-evaluations N] [--wait] | "
    "status [ID] | history | apply ID";

// How often --wait asks, and for how long past the search's own wall bound.
constexpr absl::Duration kPollEvery = absl::Milliseconds(500);
constexpr absl::Duration kWaitSlack = absl::Seconds(30);

std::string State(weft::v1::TuneState state) {
  return weft::v1::TuneState_Name(state).substr(std::string("TUNE_STATE_").size());
}

std::string ScopeText(const weft::v1::TuneScope& scope) {
  std::vector<std::string> parts(scope.racks().begin(), scope.racks().end());
  for (const std::string& pod : scope.pods()) parts.push_back("pod:" + pod);
  for (const std::string& node : scope.nodes()) parts.push_back("node:" + node);
  return parts.empty() ? "cluster" : absl::StrJoin(parts, ",");
}

std::string Number(double v) { return absl::StrFormat("%.4g", v); }

// "+12.3%" from baseline to candidate; "-" when the baseline is 0.
std::string Change(double baseline, double candidate) {
  if (baseline == 0) return "-";
  return absl::StrFormat("%+.1f%%", 100.0 * (candidate - baseline) / std::fabs(baseline));
}

// The DCQCN parameters whose values differ: NAME, BASELINE, PROPOSED ("-": unset, the
// firmware's default).
std::vector<std::vector<std::string>> ChangedParameters(const weft::v1::DcqcnParams& baseline,
                                                        const weft::v1::DcqcnParams& profile) {
  std::vector<std::vector<std::string>> rows;
  const google::protobuf::Descriptor* descriptor = profile.GetDescriptor();
  const google::protobuf::Reflection* reflection = profile.GetReflection();
  auto text = [&](const weft::v1::DcqcnParams& params,
                  const google::protobuf::FieldDescriptor* field) -> std::string {
    if (field->is_repeated()) {
      std::vector<std::string> values;
      for (int i = 0; i < reflection->FieldSize(params, field); ++i) {
        values.push_back(absl::StrCat(reflection->GetRepeatedUInt32(params, field, i)));
      }
      return values.empty() ? "-" : absl::StrJoin(values, ",");
    }
    if (!reflection->HasField(params, field)) return "-";
    return absl::StrCat(reflection->GetUInt32(params, field));
  };
  for (int i = 0; i < descriptor->field_count(); ++i) {
    const google::protobuf::FieldDescriptor* field = descriptor->field(i);
    const std::string before = text(baseline, field), after = text(profile, field);
    if (before != after) rows.push_back({field->name(), before, after});
  }
  return rows;
}

int Usage(const CommandContext& context) {
  context.err << "weftctl: " << kTuneUsage << "\n";
  return kExitUsage;
}

int Print(const CommandContext& context, const weft::v1::TuneProposal& proposal) {
  context.out << (context.json() ? FormatJson(proposal) : FormatTuneProposal(proposal));
  return kExitOk;
}

int Propose(const CommandContext& context) {
  const TuneFlags& flags = context.options.tune;
  weft::v1::ProposeRequest request;
  absl::StatusOr<weft::v1::TuneScope> scope = ParseTuneScope(flags.scope);
  if (!scope.ok()) return context.Usage(scope.status().message());
  *request.mutable_scope() = *std::move(scope);
  request.set_dry_run(flags.dry_run);
  if (flags.strategy == "annealing") {
    request.set_strategy(weft::v1::TUNE_STRATEGY_ANNEALING);
  } else if (flags.strategy == "surrogate" || flags.strategy.empty()) {
    request.set_strategy(weft::v1::TUNE_STRATEGY_SURROGATE);
  } else {
    return context.Usage(absl::StrCat("--strategy '", flags.strategy,
                                      "' is not one of surrogate, annealing"));
  }
  request.set_seed(flags.seed);
  request.set_max_evaluations(flags.max_evaluations);
  weft::v1::TuneProposal proposal;
  absl::Status status = context.controller.Call(&Tune::Propose, request, &proposal);
  if (!status.ok()) return context.Failed("tune propose", status);
  if (!flags.wait) return Print(context, proposal);
  // The search is bounded by its wall time; allow that and some slack.
  const absl::Time deadline = absl::Now() + absl::Milliseconds(proposal.wall_ms()) + kWaitSlack;
  weft::v1::TuneProposalRequest get;
  get.set_id(proposal.id());
  while (proposal.state() == weft::v1::TUNE_STATE_EVALUATING && absl::Now() < deadline) {
    absl::SleepFor(kPollEvery);
    status = context.controller.Call(&Tune::GetProposal, get, &proposal);
    if (!status.ok()) return context.Failed("tune status", status);
  }
  Print(context, proposal);
  if (proposal.state() == weft::v1::TUNE_STATE_EVALUATING) {
    context.err << "weftctl: tune propose: " << proposal.id()
                << " is still evaluating; weftctl tune status " << proposal.id()
                << " follows it\n";
    return kExitFailed;
  }
  return proposal.state() == weft::v1::TUNE_STATE_FAILED ? kExitFailed : kExitOk;
}

}  // namespace

absl::StatusOr<weft::v1::TuneScope> ParseTuneScope(const std::vector<std::string>& entries) {
  weft::v1::TuneScope scope;
  for (const std::string& entry : entries) {
    absl::string_view name = entry;
    std::string* added = nullptr;
    if (absl::ConsumePrefix(&name, "pod:")) {
      added = scope.add_pods();
    } else if (absl::ConsumePrefix(&name, "node:")) {
      added = scope.add_nodes();
    } else if (absl::ConsumePrefix(&name, "rack:") || !absl::StrContains(name, ':')) {
      added = scope.add_racks();
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          "--scope entry '", entry, "': a rack, or rack:NAME, pod:NAME or node:NAME"));
    }
    if (name.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--scope entry '", entry, "' names nothing"));
    }
    *added = std::string(name);
  }
  return scope;
}

// "request", "mix shift", "KPI regression": why the search started.
std::string TriggerText(weft::v1::TuneTrigger trigger) {
  switch (trigger) {
    case weft::v1::TUNE_TRIGGER_MIX_SHIFT:
      return "mix shift";
    case weft::v1::TUNE_TRIGGER_KPI_REGRESSION:
      return "KPI regression";
    default:
      return "request";
  }
}

std::string FormatTuneProposal(const weft::v1::TuneProposal& p) {
  std::string out = absl::StrCat("proposal ", p.id(), "  ", State(p.state()), "  scope ",
                                 ScopeText(p.scope()), "\n");
  absl::StrAppend(&out, "requested by ", p.requested_by().empty() ? "-" : p.requested_by(),
                  " at ", FormatUnixMicros(p.created_us()), "; ",
                  p.strategy() == weft::v1::TUNE_STRATEGY_ANNEALING ? "simulated annealing"
                                                                    : "surrogate search",
                  ", seed ", p.seed(), ", ", p.evaluations(), " of ", p.max_evaluations(),
                  " evaluations",
                  p.state() == weft::v1::TUNE_STATE_EVALUATING
                      ? ""
                      : absl::StrCat(" in ", absl::StrFormat("%.1f", p.wall_ms() / 1000.0), " s"),
                  p.dry_run() ? " (dry run)" : "", "\n");
  absl::StrAppend(&out, "trigger: ", TriggerText(p.trigger()),
                  p.trigger_detail().empty() ? "" : absl::StrCat(" (", p.trigger_detail(), ")"),
                  "\n");
  if (!p.traffic_mix().empty()) {
    std::vector<std::string> weights;
    for (const weft::v1::TuneScenario& scenario : p.evidence()) {
      if (scenario.weight() > 0) {
        weights.push_back(absl::StrCat(scenario.scenario(), " ", Number(scenario.weight())));
      }
    }
    absl::StrAppend(&out, "traffic mix: ", p.traffic_mix(),
                    weights.empty() ? ""
                                    : absl::StrCat("; scenario weights: ",
                                                   absl::StrJoin(weights, ", ")),
                    "\n");
  }
  if (p.state() != weft::v1::TUNE_STATE_EVALUATING) {
    absl::StrAppend(&out, "score ", Number(p.score()),
                    p.score() > 0 ? " (better than the profile in force)" : "", "\n");
  }
  if (!p.reason().empty()) absl::StrAppend(&out, "reason: ", p.reason(), "\n");
  if (!p.rollout_id().empty()) {
    absl::StrAppend(&out, "rollout ", p.rollout_id(), ", applied by ", p.applied_by(),
                    " (weftctl rollout status ", p.rollout_id(), ")\n");
  }
  if (p.model_error() > 0) {
    absl::StrAppend(&out, "model error recorded for this scope: ", Number(p.model_error()),
                    "\n");
  }
  const std::vector<std::vector<std::string>> changed =
      ChangedParameters(p.baseline(), p.profile());
  if (!changed.empty()) {
    std::vector<std::vector<std::string>> rows = {{"PARAMETER", "IN FORCE", "PROPOSED"}};
    rows.insert(rows.end(), changed.begin(), changed.end());
    absl::StrAppend(&out, "\n", FormatTable(rows));
  }
  if (!p.evidence().empty()) {
    std::vector<std::vector<std::string>> rows = {
        {"SCENARIO", "METRIC", "IN FORCE", "PROPOSED", "CHANGE", "SEEDS"}};
    for (const weft::v1::TuneScenario& scenario : p.evidence()) {
      for (const weft::v1::TuneMetric& m : scenario.metrics()) {
        rows.push_back({scenario.scenario(), m.metric(),
                        absl::StrCat(Number(m.baseline_mean()), " ±", Number(m.baseline_stddev())),
                        absl::StrCat(Number(m.candidate_mean()), " ±",
                                     Number(m.candidate_stddev())),
                        Change(m.baseline_mean(), m.candidate_mean()),
                        absl::StrCat(scenario.seeds())});
      }
    }
    absl::StrAppend(&out, "\n", FormatTable(rows));
  }
  if (!p.not_modelled().empty()) {
    absl::StrAppend(&out, "\nnot modelled (left as they are): ",
                    absl::StrJoin(p.not_modelled(), ", "), "\n");
  }
  if (p.state() == weft::v1::TUNE_STATE_PROPOSED) {
    absl::StrAppend(&out, "\nweftctl tune apply ", p.id(), " rolls it out (canary, bake, waves)\n");
  }
  return out;
}

std::string FormatTuneHistory(const weft::v1::ListProposalsResponse& proposals) {
  if (proposals.proposals().empty()) return "no proposals\n";
  std::vector<std::vector<std::string>> rows = {
      {"ID", "STATE", "SCOPE", "TRIGGER", "SCORE", "EVALUATIONS", "CREATED", "ROLLOUT",
       "REASON"}};
  for (const weft::v1::TuneProposal& p : proposals.proposals()) {
    rows.push_back({p.id(), State(p.state()), ScopeText(p.scope()), TriggerText(p.trigger()),
                    p.state() == weft::v1::TUNE_STATE_EVALUATING ? "-" : Number(p.score()),
                    absl::StrCat(p.evaluations()), FormatUnixMicros(p.created_us()),
                    p.rollout_id().empty() ? "-" : p.rollout_id(),
                    p.reason().empty() ? "-" : p.reason()});
  }
  return FormatTable(rows);
}

int RunTuneCommand(const std::vector<std::string>& args, const CommandContext& context) {
  const std::string sub = args.size() >= 2 ? args[1] : "";
  if (sub == "propose") {
    if (args.size() != 2) return Usage(context);
    return Propose(context);
  }
  if (sub == "history") {
    if (args.size() != 2) return Usage(context);
    weft::v1::ListProposalsResponse list;
    absl::Status status = context.controller.Call(&Tune::ListProposals,
                                                  weft::v1::ListProposalsRequest(), &list);
    if (!status.ok()) return context.Failed("tune history", status);
    context.out << (context.json() ? FormatJson(list) : FormatTuneHistory(list));
    return kExitOk;
  }
  weft::v1::TuneProposal proposal;
  if (sub == "status") {
    if (args.size() > 3) return Usage(context);
    weft::v1::TuneProposalRequest request;
    if (args.size() == 3) request.set_id(args[2]);
    absl::Status status = context.controller.Call(&Tune::GetProposal, request, &proposal);
    if (!status.ok()) return context.Failed("tune status", status);
    return Print(context, proposal);
  }
  if (sub == "apply") {
    if (args.size() != 3) return Usage(context);
    weft::v1::ApplyProposalRequest request;
    request.set_id(args[2]);
    absl::Status status = context.controller.Call(&Tune::ApplyProposal, request, &proposal);
    if (!status.ok()) return context.Failed("tune apply", status);
    return Print(context, proposal);
  }
  return Usage(context);
}

}  // namespace weft
