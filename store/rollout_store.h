// RolloutStore: where the controller keeps every rollout record (weft.v1.Rollout) so a
// restarted controller resumes the active one and remembers the last good policy.
// RolloutManager saves a record after every step that changed it.
//
// The controller keeps them in its SQLite database (store/sqlite_rollout_store.h);
// MemoryRolloutStore is for a controller built without one (in-process tests).
//
// Thread-safety: implementations are thread-compatible; RolloutManager serializes
// calls under its mutex.
#ifndef WEFT_STORE_ROLLOUT_STORE_H_
#define WEFT_STORE_ROLLOUT_STORE_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/weft/v1/rollout.pb.h"

namespace weft::store {

// What LoadAll found: the readable records (any order) and, for each record that could
// not be read or parsed, where it is (what Quarantine takes).
struct StoredRollouts {
  std::vector<weft::v1::Rollout> rollouts;
  std::vector<std::string> unreadable;
};

class RolloutStore {
 public:
  virtual ~RolloutStore() = default;
  // Creates or replaces the record of rollout.id(). On error the previous record is
  // intact; the status says why.
  virtual absl::Status Save(const weft::v1::Rollout& rollout) = 0;
  virtual absl::StatusOr<StoredRollouts> LoadAll() = 0;
  // Moves an unreadable record (a path LoadAll reported) aside so it is not read again.
  virtual absl::Status Quarantine(const std::string& path) = 0;
};

// Keeps the records in memory only: a controller without a database (tests) forgets
// its rollouts when it stops.
class MemoryRolloutStore final : public RolloutStore {
 public:
  absl::Status Save(const weft::v1::Rollout& rollout) override;
  absl::StatusOr<StoredRollouts> LoadAll() override;
  absl::Status Quarantine(const std::string& path) override;

 private:
  std::map<std::string, weft::v1::Rollout> records_;
};

}  // namespace weft::store

#endif  // WEFT_STORE_ROLLOUT_STORE_H_
