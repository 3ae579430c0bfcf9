#include "cli/job_format.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cli/node_format.h"
#include "common/pfc_share.h"
#include "common/text_output.h"

namespace weft {
namespace {

// Up to this many nodes are listed by name; more read "first..last".
constexpr int kNodesListedByName = 3;
constexpr double kBytesPerGigabyte = 1e9;
constexpr double kMillisecondsPerSecond = 1e3;
constexpr char kNone[] = "-";

}  // namespace

std::vector<std::string> JobProgressCells(const weft::v1::JobProgress* reported) {
  if (reported == nullptr) return std::vector<std::string>(5, kNone);
  const weft::v1::JobProgress& progress = *reported;
  std::string slowdown = kNone;
  if (progress.first_iteration_s() > 0) {
    slowdown = absl::StrFormat("%.2fx", progress.iteration_s() / progress.first_iteration_s());
  }
  std::string busbw = kNone;
  if (const weft::v1::PhaseProgress* phase = HeadlinePhase(progress)) {
    busbw = absl::StrFormat("%.1f", phase->busbw_bytes_per_s() / kBytesPerGigabyte);
  }
  return {absl::StrCat(progress.iterations_done()),
          absl::StrFormat("%.1f", progress.iteration_s() * kMillisecondsPerSecond), slowdown, busbw,
          FormatRatePerS(progress.tokens_per_s())};
}

std::string CompactNodeList(const google::protobuf::RepeatedPtrField<std::string>& nodes) {
  if (nodes.empty()) return "0";
  if (nodes.size() <= kNodesListedByName) {
    return absl::StrCat(nodes.size(), " ", absl::StrJoin(nodes, ","));
  }
  return absl::StrCat(nodes.size(), " ", nodes.Get(0), "..", nodes.Get(nodes.size() - 1));
}

const weft::v1::PhaseProgress* HeadlinePhase(const weft::v1::JobProgress& progress) {
  const weft::v1::PhaseProgress* longest = nullptr;
  for (const weft::v1::PhaseProgress& phase : progress.phases()) {
    if (phase.phase() == "all-reduce") return &phase;
    if (longest == nullptr || phase.time_s() > longest->time_s()) longest = &phase;
  }
  return longest;
}

std::string FormatJobsTable(const weft::v1::ListJobsResponse& jobs) {
  if (jobs.jobs().empty()) return "no jobs: no live reservations\n";
  std::vector<std::vector<std::string>> rows = {{"JOB", "NODES", "RACKS", "ITERS", "ITER_MS",
                                                 "VS_FIRST", "BUSBW_GB/S", "TOKENS/S", "ECN/S",
                                                 "CNP/S", "PAUSE%", "FINDINGS"}};
  for (const weft::v1::JobStatus& job : jobs.jobs()) {
    const weft::v1::PlacementResponse& reservation = job.reservation();
    const weft::v1::JobCongestion& congestion = job.congestion();
    std::vector<std::string> row = {reservation.job_id(), CompactNodeList(reservation.ring_order()),
                                    absl::StrJoin(reservation.racks(), ",")};
    std::vector<std::string> progress =
        JobProgressCells(job.has_progress() ? &job.progress() : nullptr);
    row.insert(row.end(), progress.begin(), progress.end());
    row.push_back(FormatRatePerS(congestion.ecn_marked_per_s()));
    row.push_back(FormatRatePerS(congestion.cnp_sent_per_s()));
    row.push_back(FormatShare(congestion.pfc_pause_share()));
    row.push_back(congestion.findings().empty() ? kNone
                                                : absl::StrJoin(congestion.findings(), "; "));
    rows.push_back(std::move(row));
  }
  return FormatTable(rows);
}

}  // namespace weft
