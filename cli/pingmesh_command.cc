#include "cli/pingmesh_command.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "common/text_output.h"

namespace weft {
namespace {

using Pingmesh = weft::v1::PingmeshService::StubInterface;

// How long after the probing a check's answer may take: the agents' reports (probe
// timeout and a telemetry interval or two) and the judging, with room to spare.
constexpr absl::Duration kCheckSlack = absl::Seconds(60);

constexpr char kPingmeshUsage[] = "usage: weftctl pingmesh status | matrix [--rack R]";

std::string Percent(double share) { return absl::StrFormat("%.3g%%", 100 * share); }

std::string Micros(bool has, double us) { return has ? absl::StrFormat("%.1f", us) : "-"; }

}  // namespace

std::string FormatPingmeshStatus(const weft::v1::PingmeshStatus& s) {
  if (!s.enabled()) return "pingmesh is off (controller config pingmesh.enabled)\n";
  std::string out = absl::StrCat(
      "plan ", s.plan_version(), ": ", s.probed_nodes(), " nodes probed, ", s.streams(),
      " streams at ", absl::StrFormat("%.4g", s.probes_per_stream_per_s()),
      " probes/s each inside a ToR and ",
      absl::StrFormat("%.4g", s.crossing_probes_per_stream_per_s()),
      " through the spines, windows of ", s.window_ms(), " ms",
      s.meets_detection_target() ? "" : " (a budget keeps the rate below the detection target)",
      "\nlast window judged ", FormatUnixMicros(s.last_window_end_us()), "; windows accepted ",
      s.windows_accepted(), ", late ", s.windows_late(), ", unknown ", s.windows_unknown(), "\n");
  if (s.verdicts().empty()) {
    absl::StrAppend(&out, "\nno verdicts: every probed component looks healthy\n");
  } else {
    std::vector<std::vector<std::string>> rows = {
        {"KIND", "COMPONENT", "PROBLEM", "LOSS", "CONFIDENCE", "SINCE", "EVIDENCE"}};
    for (const weft::v1::PingmeshVerdict& v : s.verdicts()) {
      rows.push_back({v.kind(), v.component(), v.problem(),
                      v.kind() == "host" ? absl::StrFormat("+%.0f us", v.host_delay_us())
                                         : Percent(v.loss_rate()),
                      absl::StrFormat("%.2f", v.confidence()), FormatUnixMicros(v.since_us()),
                      v.evidence()});
    }
    absl::StrAppend(&out, "\n", FormatTable(rows));
  }
  if (!s.unprobed().empty()) {
    absl::StrAppend(&out, "\nnot probed:\n");
    for (const std::string& line : s.unprobed()) absl::StrAppend(&out, "  ", line, "\n");
  }
  return out;
}

std::string FormatPingmeshMatrix(const weft::v1::PingmeshMatrix& matrix) {
  if (matrix.cells().empty()) return "no probe windows judged yet\n";
  std::vector<std::vector<std::string>> rows = {
      {"FROM", "TO", "SENT", "LOST", "LOSS", "RTT MIN us", "RTT P50 us", "RTT P99 us"}};
  for (const weft::v1::PingmeshMatrixCell& c : matrix.cells()) {
    rows.push_back({c.source(), c.destination(), absl::StrCat(c.sent()), absl::StrCat(c.lost()),
                    Percent(c.loss_ratio()), Micros(c.has_rtt_min_us(), c.rtt_min_us()),
                    Micros(c.has_rtt_p50_us(), c.rtt_p50_us()),
                    Micros(c.has_rtt_p99_us(), c.rtt_p99_us())});
  }
  return absl::StrCat("probes from ", FormatUnixMicros(matrix.start_us()), " to ",
                      FormatUnixMicros(matrix.end_us()), "\n", FormatTable(rows));
}

std::string FormatCheck(const weft::v1::CheckResponse& check) {
  std::string out = absl::StrCat(
      check.passed() ? "PASS" : "FAIL", ": ", check.nodes_size(), " nodes, ", check.streams(),
      " probe streams at ", absl::StrFormat("%.4g", check.probes_per_stream_per_s()),
      " probes/s from ", FormatUnixMicros(check.start_us()), " to ",
      FormatUnixMicros(check.end_us()), "\n");
  std::vector<std::vector<std::string>> rows = {{"NODE", "RESULT", "SENT", "LOST", "REASON"}};
  for (const weft::v1::NodeCheck& node : check.nodes()) {
    rows.push_back({node.node(), node.passed() ? "pass" : "FAIL", absl::StrCat(node.sent()),
                    absl::StrCat(node.lost()), node.reason().empty() ? "-" : node.reason()});
  }
  absl::StrAppend(&out, FormatTable(rows));
  if (!check.verdicts().empty()) {
    absl::StrAppend(&out, "\nblamed:\n");
    for (const weft::v1::PingmeshVerdict& v : check.verdicts()) {
      absl::StrAppend(&out, "  ", v.kind(), " ", v.component(), " (", v.problem(), "): ",
                      v.evidence(), "\n");
    }
  }
  return out;
}

int RunCheckCommand(const std::vector<std::string>& args, const CommandContext& context) {
  if (args.size() != 1 || context.options.node_list.empty()) {
    return context.Usage("check needs --nodes a,b,... (and no other arguments)");
  }
  weft::v1::CheckRequest request;
  for (const std::string& node : context.options.node_list) request.add_nodes(node);
  request.set_seconds(context.options.seconds);
  weft::v1::CheckResponse response;
  // The call lasts the probing and its judging: allow for both on top of --timeout_ms.
  absl::Status called = context.controller.CallFor(
      &Pingmesh::Check, request, &response,
      absl::Seconds(context.options.seconds == 0 ? 10 : context.options.seconds) +
          kCheckSlack);
  if (!called.ok()) return context.Failed("check", called);
  context.out << (context.json() ? FormatJson(response) : FormatCheck(response));
  return response.passed() ? kExitOk : kExitFailed;
}

int RunPingmeshCommand(const std::vector<std::string>& args, const CommandContext& context) {
  const std::string sub = args.size() == 2 ? args[1] : "";
  if (sub == "status") {
    weft::v1::PingmeshStatus status;
    absl::Status called = context.controller.Call(&Pingmesh::GetStatus,
                                                  weft::v1::GetPingmeshStatusRequest(), &status);
    if (!called.ok()) return context.Failed("pingmesh status", called);
    context.out << (context.json() ? FormatJson(status) : FormatPingmeshStatus(status));
    return kExitOk;
  }
  if (sub == "matrix") {
    weft::v1::GetPingmeshMatrixRequest request;
    request.set_rack(context.options.rack);
    weft::v1::PingmeshMatrix matrix;
    absl::Status called = context.controller.Call(&Pingmesh::GetMatrix, request, &matrix);
    if (!called.ok()) return context.Failed("pingmesh matrix", called);
    context.out << (context.json() ? FormatJson(matrix) : FormatPingmeshMatrix(matrix));
    return kExitOk;
  }
  return PrintUsageError(context.err, kPingmeshUsage,
                         sub.empty() ? "pingmesh needs status or matrix"
                                     : absl::StrCat("unknown pingmesh command '", sub, "'"));
}

}  // namespace weft
