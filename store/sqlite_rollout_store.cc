#include "store/sqlite_rollout_store.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace weft::store {

std::string SqliteRolloutStore::PathOf(const std::string& id) const {
  return absl::StrCat(store_->database().path(), "#rollouts/", id);
}

absl::Status SqliteRolloutStore::Save(const weft::v1::Rollout& rollout) {
  if (rollout.id().empty()) return absl::InvalidArgumentError("a rollout without an id");
  std::string record;
  rollout.SerializeToString(&record);
  return store_->database().Write(Durability::kAcknowledged, [&](Transaction& txn) {
    return txn.Exec("INSERT OR REPLACE INTO rollouts(id, record) VALUES(?, ?)",
                    {rollout.id(), Blob{std::move(record)}});
  });
}

absl::StatusOr<StoredRollouts> SqliteRolloutStore::LoadAll() {
  StoredRollouts out;
  RETURN_IF_ERROR(store_->database().Read([&](Transaction& txn) {
    return txn.Query("SELECT id, record FROM rollouts ORDER BY id", {}, [&](const Row& row) {
      weft::v1::Rollout rollout;
      if (rollout.ParseFromString(row.Text(1))) {
        out.rollouts.push_back(std::move(rollout));
      } else {
        out.unreadable.push_back(PathOf(row.Text(0)));
      }
    });
  }));
  return out;
}

absl::Status SqliteRolloutStore::Quarantine(const std::string& path) {
  const std::string prefix = PathOf("");
  if (!absl::StartsWith(path, prefix)) {
    return absl::NotFoundError(absl::StrCat(path, " is not a rollout record of ", prefix));
  }
  const std::string id = path.substr(prefix.size());
  return store_->database().Write(Durability::kAcknowledged, [&](Transaction& txn) -> absl::Status {
    RETURN_IF_ERROR(txn.Exec(
        "INSERT INTO rollouts_unreadable(id, record) SELECT id, record FROM rollouts "
        "WHERE id = ?",
        {id}));
    if (txn.changes() == 0) return absl::NotFoundError(absl::StrCat("no rollout record ", path));
    return txn.Exec("DELETE FROM rollouts WHERE id = ?", {id});
  });
}

}  // namespace weft::store
