#include "controller/placement/job_progress_table.h"

#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"

namespace weft::controller {
namespace {

absl::Status CheckNonNegativeFinite(absl::string_view field, double value) {
  if (std::isfinite(value) && value >= 0) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("progress.", field, " is ", value, ": must be a finite number >= 0"));
}

}  // namespace

absl::Status ValidateJobProgress(const weft::v1::JobProgress &progress) {
  const std::pair<absl::string_view, double> fields[] = {
      {"iteration_s", progress.iteration_s()},
      {"compute_s", progress.compute_s()},
      {"communication_s", progress.communication_s()},
      {"tokens_per_s", progress.tokens_per_s()},
      {"first_iteration_s", progress.first_iteration_s()},
  };
  for (const auto &[field, value] : fields) {
    if (absl::Status s = CheckNonNegativeFinite(field, value); !s.ok()) return s;
  }
  for (int i = 0; i < progress.phases_size(); ++i) {
    const weft::v1::PhaseProgress &phase = progress.phases(i);
    const std::string prefix = absl::StrCat("phases[", i, "].");
    const std::pair<absl::string_view, double> phase_fields[] = {
        {"time_s", phase.time_s()},
        {"algbw_bytes_per_s", phase.algbw_bytes_per_s()},
        {"busbw_bytes_per_s", phase.busbw_bytes_per_s()},
    };
    for (const auto &[field, value] : phase_fields) {
      absl::Status s = CheckNonNegativeFinite(absl::StrCat(prefix, field), value);
      if (!s.ok()) return s;
    }
  }
  return absl::OkStatus();
}

void JobProgressTable::Report(absl::string_view reservation_id, weft::v1::JobProgress progress,
                              absl::Time now) {
  // The controller's clock, not the reporter's: ages shown to operators compare
  // alike.
  progress.set_reported_at_unix_ms(absl::ToUnixMillis(now));
  absl::MutexLock lock(&mu_);
  latest_[reservation_id] = std::move(progress);
}

std::optional<weft::v1::JobProgress> JobProgressTable::Latest(
    absl::string_view reservation_id) const {
  absl::MutexLock lock(&mu_);
  auto it = latest_.find(reservation_id);
  if (it == latest_.end()) return std::nullopt;
  return it->second;
}

void JobProgressTable::Forget(absl::string_view reservation_id) {
  absl::MutexLock lock(&mu_);
  latest_.erase(reservation_id);
}

void JobProgressTable::RetainOnly(const absl::flat_hash_set<std::string> &live) {
  absl::MutexLock lock(&mu_);
  absl::erase_if(latest_, [&](const auto &entry) { return !live.contains(entry.first); });
}

size_t JobProgressTable::size() const {
  absl::MutexLock lock(&mu_);
  return latest_.size();
}

}  // namespace weft::controller
