#include "store/sqlite.h"

#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "common/testing/temp_dir.h"
#include "gtest/gtest.h"

namespace weft::store {
namespace {

const std::vector<Migration>& TwoSteps() {
  static const auto* m = new std::vector<Migration>{
      {1, "CREATE TABLE kv (k TEXT PRIMARY KEY, v INTEGER NOT NULL);"},
      {2, "ALTER TABLE kv ADD COLUMN note TEXT NOT NULL DEFAULT '';"},
  };
  return *m;
}

std::string TempFile(const std::string& name) {
  std::string path = weft::testing::TempPath(name);
  std::remove(path.c_str());
  std::remove((path + "-wal").c_str());
  std::remove((path + "-shm").c_str());
  return path;
}

int64_t Count(Database& db, const std::string& table) {
  int64_t n = -1;
  EXPECT_TRUE(db.Read([&](Transaction& txn) {
                  return txn.Query("SELECT count(*) FROM " + table, {},
                                   [&](const Row& row) { n = row.Int(0); });
                }).ok());
  return n;
}

TEST(DatabaseTest, MigratesFromEmptyToNewestVersion) {
  const std::string path = TempFile("fresh.db");
  auto db = Database::Open(path, TwoSteps());
  ASSERT_TRUE(db.ok()) << db.status();
  EXPECT_EQ((*db)->schema_version(), 2);
  // Version 2's column exists.
  EXPECT_TRUE((*db)->Write(Durability::kAcknowledged, [](Transaction& txn) {
                  return txn.Exec("INSERT INTO kv(k, v, note) VALUES(?, ?, ?)",
                                  {std::string("a"), int64_t{1}, std::string("n")});
                }).ok());
  struct stat st;
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  std::string mode;
  ASSERT_TRUE((*db)->Read([&](Transaction& txn) {
                  return txn.Query("PRAGMA journal_mode", {},
                                   [&](const Row& row) { mode = row.Text(0); });
                }).ok());
  EXPECT_EQ(mode, "wal");
}

TEST(DatabaseTest, ReopenKeepsDataAndAppliesOnlyNewMigrations) {
  const std::string path = TempFile("reopen.db");
  {
    std::vector<Migration> first = {TwoSteps()[0]};
    auto db = Database::Open(path, first);
    ASSERT_TRUE(db.ok()) << db.status();
    EXPECT_EQ((*db)->schema_version(), 1);
    ASSERT_TRUE((*db)->Write(Durability::kAcknowledged, [](Transaction& txn) {
                    return txn.Exec("INSERT INTO kv(k, v) VALUES('a', 7)");
                  }).ok());
  }
  auto db = Database::Open(path, TwoSteps());
  ASSERT_TRUE(db.ok()) << db.status();
  EXPECT_EQ((*db)->schema_version(), 2);
  int64_t v = 0;
  std::string note = "unset";
  ASSERT_TRUE((*db)->Read([&](Transaction& txn) {
                  return txn.Query("SELECT v, note FROM kv WHERE k = ?", {std::string("a")},
                                   [&](const Row& row) {
                                     v = row.Int(0);
                                     note = row.Text(1);
                                   });
                }).ok());
  EXPECT_EQ(v, 7);
  EXPECT_EQ(note, "");
}

TEST(DatabaseTest, RefusesNewerSchemaAndLeavesFileUntouched) {
  const std::string path = TempFile("newer.db");
  {
    auto db = Database::Open(path, TwoSteps());
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE((*db)->Write(Durability::kAcknowledged, [](Transaction& txn) {
                    return txn.Exec("PRAGMA user_version = 999");
                  }).ok());
  }
  auto db = Database::Open(path, TwoSteps());
  ASSERT_FALSE(db.ok());
  EXPECT_EQ(db.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(db.status().message().find(path), std::string::npos) << db.status();
  EXPECT_NE(db.status().message().find("schema version 999"), std::string::npos);
  EXPECT_NE(db.status().message().find("up to 2"), std::string::npos);
  // Still version 999 and still holding its table: nothing was migrated or wiped.
  auto raw = Database::Open(path, {});
  ASSERT_FALSE(raw.ok());  // still newer than "no migrations"
  std::vector<Migration> up_to_999;
  for (int v = 1; v <= 999; ++v) up_to_999.push_back({v, v <= 2 ? TwoSteps()[v - 1].sql : ""});
  auto reader = Database::Open(path, up_to_999);
  ASSERT_TRUE(reader.ok()) << reader.status();
  EXPECT_EQ((*reader)->schema_version(), 999);
  EXPECT_EQ(Count(**reader, "kv"), 0);
}

TEST(DatabaseTest, RefusesGarbageFileAndLeavesItUntouched) {
  const std::string path = TempFile("garbage.db");
  std::string garbage;
  for (int i = 0; i < 8192; ++i) garbage.push_back(static_cast<char>((i * 131 + 7) % 251));
  { std::ofstream(path, std::ios::binary) << garbage; }
  auto db = Database::Open(path, TwoSteps());
  ASSERT_FALSE(db.ok());
  EXPECT_EQ(db.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(db.status().message().find(path), std::string::npos) << db.status();
  EXPECT_NE(db.status().message().find("move it aside"), std::string::npos);
  std::ifstream in(path, std::ios::binary);
  std::string after((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(after, garbage);
}

TEST(DatabaseTest, RefusesDatabaseWithCorruptPages) {
  const std::string path = TempFile("corrupt.db");
  {
    auto db = Database::Open(path, TwoSteps());
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE((*db)->Write(Durability::kAcknowledged, [](Transaction& txn) -> absl::Status {
                    for (int64_t i = 0; i < 2000; ++i) {
                      absl::Status s = txn.Exec("INSERT INTO kv(k, v) VALUES(?, ?)",
                                                {std::to_string(i), i});
                      if (!s.ok()) return s;
                    }
                    return absl::OkStatus();
                  }).ok());
  }  // closing checkpoints the WAL into the file
  // Keep the 100-byte header valid, smash the rest of the first and later pages.
  std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
  file.seekp(4096 + 16);
  const std::string junk(3 * 4096, '\x5a');
  file.write(junk.data(), static_cast<std::streamsize>(junk.size()));
  file.close();
  auto db = Database::Open(path, TwoSteps());
  ASSERT_FALSE(db.ok());
  EXPECT_EQ(db.status().code(), absl::StatusCode::kDataLoss) << db.status();
  EXPECT_NE(db.status().message().find(path), std::string::npos);
}

TEST(DatabaseTest, FailedTransactionLeavesNothingVisible) {
  auto db = Database::OpenInMemory(TwoSteps());
  ASSERT_TRUE(db.ok());
  absl::Status status = (*db)->Write(Durability::kAcknowledged, [](Transaction& txn) {
    absl::Status first = txn.Exec("INSERT INTO kv(k, v) VALUES('a', 1)");
    if (!first.ok()) return first;
    // The primary key makes the second insert fail: the first must not survive.
    return txn.Exec("INSERT INTO kv(k, v) VALUES('a', 2)");
  });
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << status;
  EXPECT_EQ(Count(**db, "kv"), 0);
  // A body's own error rolls back too.
  status = (*db)->Write(Durability::kBestEffort, [](Transaction& txn) {
    absl::Status first = txn.Exec("INSERT INTO kv(k, v) VALUES('b', 1)");
    if (!first.ok()) return first;
    return absl::AbortedError("changed my mind");
  });
  EXPECT_EQ(status.code(), absl::StatusCode::kAborted);
  EXPECT_EQ(Count(**db, "kv"), 0);
}

TEST(DatabaseTest, WrongParameterCountIsAnError) {
  auto db = Database::OpenInMemory(TwoSteps());
  ASSERT_TRUE(db.ok());
  absl::Status status = (*db)->Write(Durability::kAcknowledged, [](Transaction& txn) {
    return txn.Exec("INSERT INTO kv(k, v) VALUES(?, ?)", {std::string("a")});
  });
  EXPECT_EQ(status.code(), absl::StatusCode::kInternal);
  EXPECT_NE(status.message().find("takes 2 parameters, got 1"), std::string::npos);
}

TEST(DatabaseTest, BlobsRoundTripWithZeroBytes) {
  auto db = Database::OpenInMemory(
      {{1, "CREATE TABLE b (x BLOB NOT NULL);"}});
  ASSERT_TRUE(db.ok());
  const std::string bytes("a\0b\0c", 5);
  ASSERT_TRUE((*db)->Write(Durability::kAcknowledged, [&](Transaction& txn) {
                  return txn.Exec("INSERT INTO b(x) VALUES(?)", {Blob{bytes}});
                }).ok());
  std::string read;
  ASSERT_TRUE((*db)->Read([&](Transaction& txn) {
                  return txn.Query("SELECT x FROM b", {},
                                   [&](const Row& row) { read = row.Text(0); });
                }).ok());
  EXPECT_EQ(read, bytes);
}

}  // namespace
}  // namespace weft::store
