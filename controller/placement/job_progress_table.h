// JobProgressTable: the newest progress each placed job reported of itself
// (weft.v1.JobProgress), keyed by reservation id. PlacementManager checks that
// the reservation is live before Report, forgets an entry when its reservation
// is released, and calls RetainOnly with the live reservations before reading,
// so an expired lease's progress leaves with it (a Report racing a Release may
// leave an entry behind for that one read; reservation ids are never reused, so
// it can never be shown for another job).
//
// Not durable: progress lives in memory only, so after a controller restart
// every job shows none until its next report (jobs report every iteration).
//
// Thread-safe: every method may be called from any thread.
//
// Example:
//   JobProgressTable table;
//   RETURN_IF_ERROR(ValidateJobProgress(progress));
//   table.Report("r-1", progress, clock->Now());
//   std::optional<weft::v1::JobProgress> latest = table.Latest("r-1");
#ifndef WEFT_CONTROLLER_PLACEMENT_JOB_PROGRESS_TABLE_H_
#define WEFT_CONTROLLER_PLACEMENT_JOB_PROGRESS_TABLE_H_

#include <optional>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "proto/weft/v1/placement.pb.h"

namespace weft::controller {

// OK when every number of `progress` (times, rates, tokens/s, its phases') is
// finite and not negative; otherwise INVALID_ARGUMENT naming the first bad
// field and its value, e.g. "progress.phases[1].busbw_bytes_per_s is -3: must
// be a finite number >= 0".
absl::Status ValidateJobProgress(const weft::v1::JobProgress &progress);

class JobProgressTable {
 public:
  JobProgressTable() = default;
  JobProgressTable(const JobProgressTable &) = delete;
  JobProgressTable &operator=(const JobProgressTable &) = delete;

  // Keeps `progress` as the newest of `reservation_id`, with
  // reported_at_unix_ms set to `now` (whatever the reporter sent). The caller
  // validates.
  void Report(absl::string_view reservation_id, weft::v1::JobProgress progress, absl::Time now)
      ABSL_LOCKS_EXCLUDED(mu_);

  // The newest progress of `reservation_id`; nullopt before its first report.
  std::optional<weft::v1::JobProgress> Latest(absl::string_view reservation_id) const
      ABSL_LOCKS_EXCLUDED(mu_);

  // Drops the progress of `reservation_id` (nothing when it has none).
  void Forget(absl::string_view reservation_id) ABSL_LOCKS_EXCLUDED(mu_);

  // Drops the progress of every reservation not in `live`.
  void RetainOnly(const absl::flat_hash_set<std::string> &live) ABSL_LOCKS_EXCLUDED(mu_);

  size_t size() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, weft::v1::JobProgress> latest_ ABSL_GUARDED_BY(mu_);
};

}  // namespace weft::controller

#endif  // WEFT_CONTROLLER_PLACEMENT_JOB_PROGRESS_TABLE_H_
