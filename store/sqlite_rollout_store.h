// SqliteRolloutStore: the RolloutStore (store/rollout_store.h) over the
// controller's SQLite store (the `rollouts` table of controller.db, schema version 2),
// so that all controller state lives in one database with one durability story. Save
// commits with synchronous=FULL (a record is replaced whole or not at all). A row that does not
// parse is reported by LoadAll as "<db path>#rollouts/<id>" and Quarantine moves it to
// rollouts_unreadable.
//
// Thread-compatible, like every RolloutStore (RolloutManager serializes its calls); the
// ControllerStore underneath is thread-safe.
#ifndef WEFT_STORE_SQLITE_ROLLOUT_STORE_H_
#define WEFT_STORE_SQLITE_ROLLOUT_STORE_H_

#include <string>

#include "store/rollout_store.h"
#include "store/controller_store.h"

namespace weft::store {

class SqliteRolloutStore final : public RolloutStore {
 public:
  // `store` must outlive this.
  explicit SqliteRolloutStore(ControllerStore* store) : store_(store) {}

  absl::Status Save(const weft::v1::Rollout& rollout) override;
  absl::StatusOr<StoredRollouts> LoadAll() override;
  // NOT_FOUND when `path` is not one LoadAll reported.
  absl::Status Quarantine(const std::string& path) override;

 private:
  std::string PathOf(const std::string& id) const;

  ControllerStore* const store_;
};

}  // namespace weft::store

#endif  // WEFT_STORE_SQLITE_ROLLOUT_STORE_H_
