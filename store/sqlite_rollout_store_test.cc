#include "store/sqlite_rollout_store.h"

#include <memory>
#include <string>

#include "common/testing/temp_dir.h"
#include "gtest/gtest.h"

namespace weft::store {
namespace {

TEST(SqliteRolloutStoreTest, SaveReplacesAndLoadAllReadsBack) {
  auto store = ControllerStore::OpenInMemory();
  ASSERT_TRUE(store.ok());
  EXPECT_EQ((*store)->database().schema_version(), 2);
  SqliteRolloutStore rollouts(store->get());
  weft::v1::Rollout r;
  r.set_id("r-1");
  r.set_version(3);
  ASSERT_TRUE(rollouts.Save(r).ok());
  r.set_version(4);
  ASSERT_TRUE(rollouts.Save(r).ok());
  weft::v1::Rollout other;
  other.set_id("r-2");
  ASSERT_TRUE(rollouts.Save(other).ok());
  auto loaded = rollouts.LoadAll();
  ASSERT_TRUE(loaded.ok());
  ASSERT_EQ(loaded->rollouts.size(), 2u);
  EXPECT_EQ(loaded->rollouts[0].version(), 4u);
  EXPECT_TRUE(loaded->unreadable.empty());
  EXPECT_EQ(rollouts.Save(weft::v1::Rollout()).code(), absl::StatusCode::kInvalidArgument);
}

TEST(SqliteRolloutStoreTest, UnparsableRowIsReportedAndQuarantined) {
  auto store = ControllerStore::OpenInMemory();
  ASSERT_TRUE(store.ok());
  ASSERT_TRUE((*store)->database().Write(Durability::kAcknowledged, [](Transaction& txn) {
    return txn.Exec("INSERT INTO rollouts(id, record) VALUES('bad', ?)",
                    {Blob{std::string("\xff\xff\xff", 3)}});
  }).ok());
  SqliteRolloutStore rollouts(store->get());
  auto loaded = rollouts.LoadAll();
  ASSERT_TRUE(loaded.ok());
  ASSERT_EQ(loaded->unreadable.size(), 1u);
  EXPECT_EQ(loaded->unreadable[0], ":memory:#rollouts/bad");
  ASSERT_TRUE(rollouts.Quarantine(loaded->unreadable[0]).ok());
  EXPECT_TRUE(rollouts.LoadAll()->unreadable.empty());
  EXPECT_EQ(rollouts.Quarantine(loaded->unreadable[0]).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(rollouts.Quarantine("/elsewhere/x.pb").code(), absl::StatusCode::kNotFound);
}

// What the controller relies on across a restart: every record saved, the newest of
// each, read back from the database on disk by a store opened afresh.
TEST(SqliteRolloutStoreTest, SavedRecordsSurviveReopeningTheDatabase) {
  const std::string dir = weft::testing::MakeTempDir("rollouts");
  ASSERT_FALSE(dir.empty());
  {
    auto store = ControllerStore::Open(dir);
    ASSERT_TRUE(store.ok()) << store.status();
    SqliteRolloutStore rollouts(store->get());
    weft::v1::Rollout r;
    r.set_phase(weft::v1::ROLLOUT_PHASE_CANARY);
    r.add_steps()->add_nodes("n1");
    for (const char* id : {"rollout-1", "rollout-3"}) {
      r.set_id(id);
      ASSERT_TRUE(rollouts.Save(r).ok());
    }
    r.set_id("rollout-1");
    r.set_phase(weft::v1::ROLLOUT_PHASE_BAKING);
    ASSERT_TRUE(rollouts.Save(r).ok());
  }
  auto store = ControllerStore::Open(dir);
  ASSERT_TRUE(store.ok()) << store.status();
  SqliteRolloutStore rollouts(store->get());
  absl::StatusOr<StoredRollouts> loaded = rollouts.LoadAll();
  ASSERT_TRUE(loaded.ok());
  ASSERT_EQ(loaded->rollouts.size(), 2u);
  EXPECT_TRUE(loaded->unreadable.empty());
  bool found = false;
  for (const auto& r : loaded->rollouts) {
    if (r.id() != "rollout-1") continue;
    found = true;
    EXPECT_EQ(r.phase(), weft::v1::ROLLOUT_PHASE_BAKING);
    EXPECT_EQ(r.steps_size(), 1);
  }
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace weft::store
