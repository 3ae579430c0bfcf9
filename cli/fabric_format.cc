#include "cli/fabric_format.h"

#include <limits>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cli/job_format.h"
#include "common/pfc_share.h"
#include "common/text_output.h"

namespace weft {
namespace {

using weft::v1::FabricFault;
using weft::v1::FabricFaultKind;

// What --value means for a kind, and the values it accepts.
enum class ValueRange { kNotTaken, kOpenUnit, kUnitClosedAbove, kPositive };

struct FaultKindRule {
  FabricFaultKind kind;
  bool takes_link;
  bool takes_node;
  bool takes_nic;
  ValueRange value_range;
  const char* value_meaning;
};

constexpr FaultKindRule kFaultKindRules[] = {
    {weft::v1::FABRIC_FAULT_LINK_DOWN, true, false, false, ValueRange::kNotTaken, ""},
    {weft::v1::FABRIC_FAULT_GRAY_LOSS, true, false, false, ValueRange::kOpenUnit,
     "the share of packets dropped"},
    {weft::v1::FABRIC_FAULT_FLAPPING_LINK, true, false, false, ValueRange::kPositive,
     "the flap period in seconds"},
    {weft::v1::FABRIC_FAULT_PFC_STORM, false, true, true, ValueRange::kUnitClosedAbove,
     "the share of time the NIC pauses its ToR"},
    {weft::v1::FABRIC_FAULT_DEGRADED_LINK, true, false, false, ValueRange::kOpenUnit,
     "the share of the cable's capacity left"},
    {weft::v1::FABRIC_FAULT_DEAD_NODE, false, true, false, ValueRange::kNotTaken, ""},
};

const char* RangeText(ValueRange range) {
  switch (range) {
    case ValueRange::kOpenUnit:
      return "0 < X < 1";
    case ValueRange::kUnitClosedAbove:
      return "0 < X <= 1";
    case ValueRange::kPositive:
      return "X > 0";
    case ValueRange::kNotTaken:
      break;
  }
  return "";
}

bool InRange(ValueRange range, double value) {
  switch (range) {
    case ValueRange::kOpenUnit:
      return value > 0 && value < 1;
    case ValueRange::kUnitClosedAbove:
      return value > 0 && value <= 1;
    case ValueRange::kPositive:
      return value > 0 && value < std::numeric_limits<double>::infinity();
    case ValueRange::kNotTaken:
      break;
  }
  return false;
}

// A flag is either needed (and must be set) or not taken (and must be empty).
absl::Status CheckFlag(absl::string_view kind, absl::string_view flag, bool taken, bool set,
                       absl::string_view what) {
  if (taken && !set) {
    return absl::InvalidArgumentError(
        absl::StrCat("fabric inject ", kind, " needs --", flag, " ", what));
  }
  if (!taken && set) {
    return absl::InvalidArgumentError(
        absl::StrCat("fabric inject ", kind, " does not take --", flag));
  }
  return absl::OkStatus();
}

absl::Status CheckValue(absl::string_view kind, const FaultKindRule& rule,
                        const std::optional<double>& value) {
  const bool taken = rule.value_range != ValueRange::kNotTaken;
  const absl::Status given =
      CheckFlag(kind, "value", taken, value.has_value(),
                absl::StrCat("X: ", rule.value_meaning, ", ", RangeText(rule.value_range)));
  if (!given.ok() || !taken) return given;
  if (InRange(rule.value_range, *value)) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("fabric inject ", kind, ": --value ", *value,
                                                 " is out of range: ", rule.value_meaning, ", ",
                                                 RangeText(rule.value_range)));
}

std::string FaultTarget(const FabricFault& fault) {
  if (!fault.link().empty()) return fault.link();
  if (!fault.device().empty()) return absl::StrCat(fault.node(), "/", fault.device());
  return fault.node();
}

}  // namespace

std::string FaultKindName(FabricFaultKind kind) {
  constexpr absl::string_view kPrefix = "FABRIC_FAULT_";
  std::string name = weft::v1::FabricFaultKind_Name(kind);
  if (absl::string_view(name).substr(0, kPrefix.size()) == kPrefix) name.erase(0, kPrefix.size());
  return absl::AsciiStrToLower(name);
}

std::string FaultKindNames() {
  std::vector<std::string> names;
  for (const FaultKindRule& rule : kFaultKindRules) names.push_back(FaultKindName(rule.kind));
  return absl::StrJoin(names, ", ");
}

absl::StatusOr<FabricFault> MakeFabricFault(absl::string_view kind, const std::string& node,
                                            const FabricFlags& flags) {
  for (const FaultKindRule& rule : kFaultKindRules) {
    if (FaultKindName(rule.kind) != kind) continue;
    const absl::Status checks[] = {
        CheckFlag(kind, "link", rule.takes_link, !flags.link.empty(),
                  "NAME (a cable as `weftctl fabric links` names it)"),
        CheckFlag(kind, "node", rule.takes_node, !node.empty(), "N (the node's name)"),
        CheckFlag(kind, "nic", rule.takes_nic, !flags.nic.empty(), "DEVICE (e.g. mlx5_0)"),
        CheckValue(kind, rule, flags.value),
    };
    for (const absl::Status& check : checks) {
      if (!check.ok()) return check;
    }
    FabricFault fault;
    fault.set_kind(rule.kind);
    fault.set_link(flags.link);
    fault.set_node(node);
    fault.set_device(flags.nic);
    fault.set_value(flags.value.value_or(0));
    return fault;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("fabric inject: unknown fault kind '", kind, "'; one of: ", FaultKindNames()));
}

std::string FormatFaultsTable(const weft::v1::ListFaultsResponse& faults) {
  if (faults.faults().empty()) return "no faults\n";
  std::vector<std::vector<std::string>> rows = {{"ID", "KIND", "TARGET", "VALUE", "INJECTED_AT_S"}};
  for (const FabricFault& fault : faults.faults()) {
    rows.push_back({fault.id(), FaultKindName(fault.kind()), FaultTarget(fault),
                    fault.value() == 0 ? "-" : absl::StrFormat("%g", fault.value()),
                    absl::StrFormat("%.1f", fault.injected_at_s())});
  }
  return FormatTable(rows);
}

std::string FormatLinksTable(const weft::v1::ListLinksResponse& links) {
  if (links.links().empty()) return "no links match\n";
  std::vector<std::vector<std::string>> rows = {
      {"LINK", "FROM->TO", "GBPS", "UTIL%", "QUEUE_KB", "MARK%", "PAUSE%", "FLOWS", "DOWN"}};
  for (const weft::v1::FabricLink& link : links.links()) {
    rows.push_back(
        {link.name(), absl::StrCat(link.from(), "->", link.to()),
         absl::StrFormat("%.0f", link.capacity_bps() / 1e9), FormatShare(link.utilization()),
         absl::StrFormat("%.1f", link.queue_bytes() / 1e3), FormatShare(link.mark_probability()),
         FormatShare(link.pause_share()), absl::StrCat(link.flows()), link.down() ? "down" : "-"});
  }
  return FormatTable(rows);
}

std::string FormatFabricJobsTable(const weft::v1::ListFabricJobsResponse& jobs) {
  if (jobs.jobs().empty()) return "no jobs in the fabric twin\n";
  std::vector<std::vector<std::string>> rows = {{"JOB", "RESERVATION", "NODES", "RACKS", "PATTERN",
                                                 "PLACEMENTS", "ITERS", "ITER_MS", "VS_FIRST",
                                                 "BUSBW_GB/S", "TOKENS/S", "PATH_UTIL%",
                                                 "PATH_QUEUE_KB", "PATH_MARK%", "PATH_PAUSE%",
                                                 "HOTTEST_PORT"}};
  for (const weft::v1::FabricJob& job : jobs.jobs()) {
    std::vector<std::string> row = {job.name(),
                                    job.reservation_id().empty() ? "-" : job.reservation_id(),
                                    CompactNodeList(job.nodes()),
                                    absl::StrJoin(job.racks(), ","),
                                    job.pattern(),
                                    absl::StrCat(job.placements())};
    std::vector<std::string> progress =
        JobProgressCells(job.has_progress() ? &job.progress() : nullptr);
    row.insert(row.end(), progress.begin(), progress.end());
    const bool communicated = !job.hottest_link().empty();
    row.push_back(communicated ? FormatShare(job.max_utilization()) : "-");
    row.push_back(communicated ? absl::StrFormat("%.1f", job.max_queue_bytes() / 1e3) : "-");
    row.push_back(communicated ? FormatShare(job.max_mark_probability()) : "-");
    row.push_back(communicated ? FormatShare(job.max_pause_share()) : "-");
    row.push_back(communicated ? job.hottest_link() : "-");
    rows.push_back(std::move(row));
  }
  return FormatTable(rows);
}

}  // namespace weft
