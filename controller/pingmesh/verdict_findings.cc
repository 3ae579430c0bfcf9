#include "controller/pingmesh/verdict_findings.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"

namespace weft::controller {
namespace {

HealthRule RuleOf(const weft::v1::PingmeshVerdict& verdict) {
  if (verdict.kind() == "host") return HealthRule::kPingmeshHost;
  if (verdict.kind() == "nic") return HealthRule::kPingmeshNic;
  return HealthRule::kPingmeshLink;
}

std::string DetailOf(const weft::v1::PingmeshVerdict& verdict) {
  const std::string measure =
      verdict.kind() == "host"
          ? absl::StrFormat("%s, host delay %.0f us", verdict.problem(), verdict.host_delay_us())
          : absl::StrFormat("%s, %.3g%% of probes lost", verdict.problem(),
                            100 * verdict.loss_rate());
  return absl::StrFormat("%s (confidence %.2f): %s", measure, verdict.confidence(),
                         verdict.evidence());
}

}  // namespace

std::map<std::string, std::vector<Finding>> FindingsByNode(
    const std::vector<weft::v1::PingmeshVerdict>& verdicts) {
  std::map<std::string, std::vector<Finding>> by_node;
  for (const weft::v1::PingmeshVerdict& verdict : verdicts) {
    // A switch concerns no node; a component the localiser could not split (links of
    // several nodes joined by " + ") would degrade, and maybe drain, an innocent node.
    if (verdict.kind() == "switch" || verdict.nodes_size() != 1) continue;
    Finding finding;
    finding.rule = RuleOf(verdict);
    finding.device = verdict.component();
    finding.value = verdict.kind() == "host" ? verdict.host_delay_us() : verdict.loss_rate();
    finding.detail = DetailOf(verdict);
    finding.since = absl::FromUnixMicros(verdict.since_us());
    by_node[verdict.nodes(0)].push_back(finding);
  }
  return by_node;
}

bool SameFindings(const std::vector<Finding>& a, const std::vector<Finding>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(),
                    [](const Finding& x, const Finding& y) {
                      return x.rule == y.rule && x.device == y.device && x.since == y.since;
                    });
}

}  // namespace weft::controller
