#include "cli/rollout_command.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/policy_command.h"
#include "common/text_output.h"

namespace weft {
namespace {

constexpr char kRolloutUsage[] =
    "usage: weftctl rollout start FILE | status [ID] | pause [ID] | resume [ID] | "
    "abort [ID] [--reason R] | history";

// Events `status` shows, the newest.
constexpr int kRecentEvents = 8;

std::string Phase(weft::v1::RolloutPhase phase) {
  return weft::v1::RolloutPhase_Name(phase).substr(std::string("ROLLOUT_PHASE_").size());
}

std::string StepName(uint32_t index) {
  return index == 0 ? "canary" : absl::StrCat("wave ", index);
}

std::string StepState(const weft::v1::Rollout& rollout, const weft::v1::RolloutStep& step,
                      absl::Time now) {
  if (step.baked_us() != 0) return "baked";
  if (step.applied_us() != 0) {
    if (rollout.phase() != weft::v1::ROLLOUT_PHASE_BAKING ||
        step.index() != rollout.current_step()) {
      return "applied";
    }
    const weft::v1::RolloutPolicy& settings = rollout.policy().rollout();
    const int64_t bake_s = step.index() == 0 ? settings.bake_s() : settings.wave_bake_s();
    const int64_t baked_s = absl::ToInt64Seconds(now - absl::FromUnixMicros(step.applied_us()));
    return absl::StrCat("baking ", std::min(baked_s, bake_s), "/", bake_s, " s");
  }
  if (step.started_us() != 0) return "waiting for answers";
  return "not started";
}

std::string Number(double v) { return absl::StrFormat("%.4g", v); }

}  // namespace

std::string FormatRolloutStatus(const weft::v1::Rollout& rollout, absl::Time now) {
  std::string out = absl::StrCat("rollout ", rollout.id(), "  version ", rollout.version(),
                                 "  phase ", Phase(rollout.phase()), " since ",
                                 FormatUnixMicros(rollout.phase_since_us()), "\n");
  if (rollout.phase() == weft::v1::ROLLOUT_PHASE_PAUSED) {
    absl::StrAppend(&out, "paused in ", Phase(rollout.paused_phase()),
                    "; weftctl rollout resume continues\n");
  }
  absl::StrAppend(&out, "source ", rollout.source().empty() ? "-" : rollout.source(),
                  rollout.started_by().empty() ? "" : ", started by ", rollout.started_by(),
                  "; last good version ",
                  rollout.has_previous_policy() ? absl::StrCat(rollout.previous_version())
                                                : std::string("none (firmware defaults)"),
                  "; a rollback sends version ", rollout.rollback_version(), "\n");
  if (!rollout.reason().empty()) absl::StrAppend(&out, "reason: ", rollout.reason(), "\n");
  out += "\n";
  std::vector<std::vector<std::string>> steps = {
      {"STEP", "NODES", "ACKED", "NACKED", "NO ANSWER", "STATE"}};
  for (const weft::v1::RolloutStep& step : rollout.steps()) {
    std::string name = StepName(step.index());
    if (step.index() == rollout.current_step()) name += " *";
    steps.push_back({name, absl::StrCat(step.nodes_size()), absl::StrCat(step.acked()),
                     absl::StrCat(step.nacked()), absl::StrCat(step.timed_out()),
                     StepState(rollout, step, now)});
  }
  absl::StrAppend(&out, FormatTable(steps));
  const weft::v1::KpiJudgement& judgement = rollout.last_judgement();
  if (judgement.kpis_size() > 0) {
    absl::StrAppend(&out, "\nKPIs at ", FormatUnixMicros(judgement.at_us()), ": ",
                    judgement.changed_nodes(), " changed nodes against ", judgement.control(),
                    judgement.control() == "unchanged nodes"
                        ? absl::StrCat(" (", judgement.control_nodes(), ")")
                        : std::string(),
                    "\n");
    std::vector<std::vector<std::string>> kpis = {
        {"KPI", "CHANGED", "CONTROL", "LIMIT", "VERDICT"}};
    for (const weft::v1::KpiValue& kpi : judgement.kpis()) {
      kpis.push_back({kpi.name(), Number(kpi.changed()), Number(kpi.control()),
                      Number(kpi.limit()), kpi.regressed() ? "REGRESSED" : "ok"});
    }
    absl::StrAppend(&out, FormatTable(kpis));
  }
  if (!rollout.history().empty()) {
    out += "\nrecent events:\n";
    const int first = std::max(0, rollout.history_size() - kRecentEvents);
    for (int i = first; i < rollout.history_size(); ++i) {
      absl::StrAppend(&out, "  ", FormatUnixMicros(rollout.history(i).at_us()), "  ",
                      rollout.history(i).message(), "\n");
    }
  }
  return out;
}

std::string FormatRolloutHistory(const weft::v1::ListRolloutsResponse& rollouts) {
  if (rollouts.rollouts().empty()) return "no rollouts\n";
  std::vector<std::vector<std::string>> rows = {
      {"ID", "VERSION", "PHASE", "CREATED", "FINISHED", "SOURCE", "REASON"}};
  for (const weft::v1::Rollout& r : rollouts.rollouts()) {
    rows.push_back({r.id(), absl::StrCat(r.version()), Phase(r.phase()),
                    FormatUnixMicros(r.created_us()), FormatUnixMicros(r.finished_us()),
                    r.source().empty() ? "-" : r.source(),
                    r.reason().empty() ? "-" : r.reason()});
  }
  return FormatTable(rows);
}

int RunRolloutCommand(const std::vector<std::string>& args, const CommandContext& context) {
  using Rollouts = weft::v1::RolloutService::StubInterface;
  const std::string sub = args.size() >= 2 ? args[1] : "";
  auto usage = [&] {
    context.err << "weftctl: " << kRolloutUsage << "\n";
    return kExitUsage;
  };
  auto print = [&](const weft::v1::RolloutResponse& response) {
    context.out << (context.json() ? FormatJson(response.rollout())
                                   : FormatRolloutStatus(response.rollout(), absl::Now()));
    return kExitOk;
  };
  weft::v1::RolloutResponse response;
  if (sub == "start") {
    if (args.size() != 3) return usage();
    absl::StatusOr<weft::v1::PolicyRequest> request = ReadPolicyRequest(args[2]);
    if (!request.ok()) return context.Failed("rollout start", request.status());
    absl::Status status = context.controller.Call(&Rollouts::StartRollout, *request, &response);
    if (!status.ok()) return context.Failed("rollout start", status);
    return print(response);
  }
  if (sub == "history") {
    if (args.size() != 2) return usage();
    weft::v1::ListRolloutsResponse list;
    absl::Status status = context.controller.Call(&Rollouts::ListRollouts,
                                                  weft::v1::ListRolloutsRequest(), &list);
    if (!status.ok()) return context.Failed("rollout history", status);
    context.out << (context.json() ? FormatJson(list) : FormatRolloutHistory(list));
    return kExitOk;
  }
  if (sub != "status" && sub != "pause" && sub != "resume" && sub != "abort") return usage();
  if (args.size() > 3) return usage();
  weft::v1::RolloutRequest request;
  if (args.size() == 3) request.set_id(args[2]);
  request.set_reason(context.options.reason);
  auto method = sub == "status"   ? &Rollouts::GetRollout
                : sub == "pause"  ? &Rollouts::PauseRollout
                : sub == "resume" ? &Rollouts::ResumeRollout
                                  : &Rollouts::AbortRollout;
  absl::Status status = context.controller.Call(method, request, &response);
  if (!status.ok()) return context.Failed(absl::StrCat("rollout ", sub), status);
  return print(response);
}

}  // namespace weft
