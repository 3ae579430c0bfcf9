#include "store/rollout_store.h"

#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace weft::store {
namespace {

using ::testing::HasSubstr;

std::string TestDir(const std::string& name) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  return absl::StrCat(tmp != nullptr ? tmp : "/tmp", "/", name);
}

weft::v1::Rollout Record(const std::string& id, weft::v1::RolloutPhase phase) {
  weft::v1::Rollout rollout;
  rollout.set_id(id);
  rollout.set_version(3);
  rollout.set_phase(phase);
  rollout.add_steps()->add_nodes("n1");
  return rollout;
}

TEST(FileRolloutStoreTest, SavesReplacesAndLoadsEveryRecord) {
  absl::StatusOr<std::unique_ptr<FileRolloutStore>> store =
      FileRolloutStore::Open(TestDir("a/b/rollouts"));
  ASSERT_TRUE(store.ok()) << store.status();
  ASSERT_TRUE((*store)->Save(Record("rollout-1", weft::v1::ROLLOUT_PHASE_CANARY)).ok());
  ASSERT_TRUE((*store)->Save(Record("rollout-3", weft::v1::ROLLOUT_PHASE_CANARY)).ok());
  ASSERT_TRUE((*store)->Save(Record("rollout-1", weft::v1::ROLLOUT_PHASE_BAKING)).ok());
  absl::StatusOr<StoredRollouts> loaded = (*store)->LoadAll();
  ASSERT_TRUE(loaded.ok());
  ASSERT_EQ(loaded->rollouts.size(), 2u);
  EXPECT_TRUE(loaded->unreadable.empty());
  for (const auto& r : loaded->rollouts) {
    if (r.id() == "rollout-1") {
      EXPECT_EQ(r.phase(), weft::v1::ROLLOUT_PHASE_BAKING);
    }
  }
  // No temporary is left behind.
  struct stat st;
  EXPECT_NE(stat((TestDir("a/b/rollouts") + "/rollout-1.pb.tmp").c_str(), &st), 0);
}

TEST(FileRolloutStoreTest, ReportsAndQuarantinesAnUnreadableRecord) {
  const std::string dir = TestDir("corrupt");
  absl::StatusOr<std::unique_ptr<FileRolloutStore>> store = FileRolloutStore::Open(dir);
  ASSERT_TRUE(store.ok());
  ASSERT_TRUE((*store)->Save(Record("rollout-1", weft::v1::ROLLOUT_PHASE_COMPLETED)).ok());
  std::ofstream(dir + "/rollout-3.pb") << "\xff\xff garbage";
  absl::StatusOr<StoredRollouts> loaded = (*store)->LoadAll();
  ASSERT_TRUE(loaded.ok());
  EXPECT_EQ(loaded->rollouts.size(), 1u);
  ASSERT_EQ(loaded->unreadable.size(), 1u);
  EXPECT_THAT(loaded->unreadable[0], HasSubstr("rollout-3.pb"));
  ASSERT_TRUE((*store)->Quarantine(loaded->unreadable[0]).ok());
  loaded = (*store)->LoadAll();
  EXPECT_TRUE(loaded->unreadable.empty());
}

TEST(FileRolloutStoreTest, RefusesAnIdThatIsNotAFileName) {
  absl::StatusOr<std::unique_ptr<FileRolloutStore>> store = FileRolloutStore::Open(TestDir("ids"));
  ASSERT_TRUE(store.ok());
  EXPECT_EQ((*store)->Save(Record("../x", weft::v1::ROLLOUT_PHASE_CANARY)).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(FileRolloutStoreTest, SaveIntoAMissingDirectoryNamesThePath) {
  const std::string dir = TestDir("gone");
  absl::StatusOr<std::unique_ptr<FileRolloutStore>> store = FileRolloutStore::Open(dir);
  ASSERT_TRUE(store.ok());
  ASSERT_EQ(rmdir(dir.c_str()), 0);
  absl::Status saved = (*store)->Save(Record("rollout-1", weft::v1::ROLLOUT_PHASE_CANARY));
  EXPECT_EQ(saved.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(saved.message(), HasSubstr(dir));
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
