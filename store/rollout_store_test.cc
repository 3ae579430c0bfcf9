#include "store/rollout_store.h"

#include <string>

#include "gtest/gtest.h"

namespace weft::store {
namespace {

weft::v1::Rollout Record(const std::string& id, weft::v1::RolloutPhase phase) {
  weft::v1::Rollout rollout;
  rollout.set_id(id);
  rollout.set_version(3);
  rollout.set_phase(phase);
  rollout.add_steps()->add_nodes("n1");
  return rollout;
}

TEST(MemoryRolloutStoreTest, KeepsTheNewestRecordPerId) {
  MemoryRolloutStore store;
  ASSERT_TRUE(store.Save(Record("rollout-1", weft::v1::ROLLOUT_PHASE_CANARY)).ok());
  ASSERT_TRUE(store.Save(Record("rollout-1", weft::v1::ROLLOUT_PHASE_WAVE)).ok());
  absl::StatusOr<StoredRollouts> loaded = store.LoadAll();
  ASSERT_EQ(loaded->rollouts.size(), 1u);
  EXPECT_EQ(loaded->rollouts[0].phase(), weft::v1::ROLLOUT_PHASE_WAVE);
}

}  // namespace
}  // namespace weft::store
