#include "store/rollout_store.h"

#include "absl/strings/str_cat.h"

namespace weft::store {

absl::Status MemoryRolloutStore::Save(const weft::v1::Rollout& rollout) {
  records_[rollout.id()] = rollout;
  return absl::OkStatus();
}

absl::StatusOr<StoredRollouts> MemoryRolloutStore::LoadAll() {
  StoredRollouts out;
  for (const auto& [id, rollout] : records_) out.rollouts.push_back(rollout);
  return out;
}

absl::Status MemoryRolloutStore::Quarantine(const std::string& path) {
  return absl::NotFoundError(absl::StrCat("no record ", path, " in memory"));
}

}  // namespace weft::store
