// Database: a narrow wrapper over one SQLite connection (Debian's libsqlite3), for the
// controller's durable state. It opens or creates the file in WAL mode, applies the
// caller's versioned schema migrations (PRAGMA user_version), and runs reads and
// write transactions over cached prepared statements. Every SQLite error becomes an
// absl::Status that names the file.
//
// Refusals on Open, never overwriting the file:
//   * a file that is not a SQLite database or fails PRAGMA quick_check: DATA_LOSS;
//   * a schema version above the newest migration this binary knows:
//     FAILED_PRECONDITION (a newer weft wrote it).
//
// Durability: a write transaction says how durable its COMMIT must be. kAcknowledged
// (synchronous=FULL) is for anything a client is told succeeded: the WAL is fsynced
// before Write returns. kBestEffort (synchronous=NORMAL) survives a crash of the
// process (kill -9) but not of the machine; it is for the event log.
//
// Thread-safe: one mutex serializes every transaction on the connection, so callers
// on any thread may share a Database. A transaction body must not call back into the
// same Database (it would deadlock).
//
// Example:
//   ASSIGN_OR_RETURN(std::unique_ptr<Database> db,
//                    Database::Open("/var/lib/weft/controller/state.db", kMigrations));
//   RETURN_IF_ERROR(db->Write(Durability::kAcknowledged, [&](Transaction& txn) {
//     return txn.Exec("INSERT INTO drains(node, reason) VALUES(?, ?)", {node, reason});
//   }));
#ifndef WEFT_STORE_SQLITE_H_
#define WEFT_STORE_SQLITE_H_

#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"

struct sqlite3;
struct sqlite3_stmt;

namespace weft::store {

// Bytes stored as a BLOB (a serialized proto), as opposed to TEXT.
struct Blob {
  std::string bytes;
};

// A statement parameter: NULL, INTEGER, REAL, TEXT or BLOB.
using Value = std::variant<std::nullptr_t, int64_t, double, std::string, Blob>;

// One schema step: `sql` (one or more statements) takes the schema from version - 1
// to `version`. Versions start at 1 and grow by one.
struct Migration {
  int version = 0;
  std::string sql;
};

enum class Durability {
  kAcknowledged,  // synchronous=FULL
  kBestEffort,    // synchronous=NORMAL
};

// The current row of a query; valid only inside the row callback.
class Row {
 public:
  explicit Row(sqlite3_stmt* stmt) : stmt_(stmt) {}
  bool IsNull(int column) const;
  int64_t Int(int column) const;
  double Double(int column) const;
  // TEXT or BLOB bytes.
  std::string Text(int column) const;

 private:
  sqlite3_stmt* stmt_;
};

// The inside of one transaction. Only Database creates it.
class Transaction {
 public:
  // Runs `sql` with `params` bound to its ?s, discarding rows.
  absl::Status Exec(absl::string_view sql, std::initializer_list<Value> params = {});
  absl::Status Exec(absl::string_view sql, const std::vector<Value>& params);
  // Runs `sql`, calling `row` for each result row.
  absl::Status Query(absl::string_view sql, const std::vector<Value>& params,
                     absl::FunctionRef<void(const Row&)> row);
  // Rows changed by the last Exec.
  int64_t changes() const;

 private:
  friend class Database;
  explicit Transaction(class Database* db) : db_(db) {}
  class Database* db_;
};

class Database {
 public:
  // Opens `path` (creating it, mode 0600, when absent), checks it, enables WAL and
  // applies the migrations above its user_version in one transaction each. The
  // parent directory must exist. Errors name `path` and say what to do.
  static absl::StatusOr<std::unique_ptr<Database>> Open(
      const std::string& path, const std::vector<Migration>& migrations);
  // A private in-memory database with the same schema (tests, --state_dir "").
  static absl::StatusOr<std::unique_ptr<Database>> OpenInMemory(
      const std::vector<Migration>& migrations);

  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  // BEGIN IMMEDIATE; body; COMMIT with `durability`. When body or COMMIT fails the
  // transaction is rolled back and the error returned: nothing of it is visible.
  absl::Status Write(Durability durability,
                     absl::FunctionRef<absl::Status(Transaction&)> body);
  // A read-only transaction (a consistent snapshot).
  absl::Status Read(absl::FunctionRef<absl::Status(Transaction&)> body);

  // The schema version after Open.
  int schema_version() const { return schema_version_; }
  const std::string& path() const { return path_; }

 private:
  friend class Transaction;
  Database(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  static absl::StatusOr<std::unique_ptr<Database>> OpenWith(
      const std::string& path, int flags, const std::vector<Migration>& migrations);
  absl::Status Migrate(const std::vector<Migration>& migrations);
  // A cached statement for `sql`, reset and with `params` bound.
  absl::StatusOr<sqlite3_stmt*> Prepare(absl::string_view sql,
                                        const std::vector<Value>& params)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status ExecLocked(absl::string_view sql, const std::vector<Value>& params,
                          const absl::FunctionRef<void(const Row&)>* row)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status ExecScript(absl::string_view sql) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // `what` failed with SQLite's current error: a status naming the file.
  absl::Status Error(absl::string_view what) const;
  absl::Status RunTransaction(absl::string_view begin,
                              absl::FunctionRef<absl::Status(Transaction&)> body)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  sqlite3* const db_;
  const std::string path_;
  int schema_version_ = 0;
  absl::Mutex mu_;
  std::map<std::string, sqlite3_stmt*, std::less<>> statements_ ABSL_GUARDED_BY(mu_);
  Durability durability_ ABSL_GUARDED_BY(mu_) = Durability::kAcknowledged;
};

}  // namespace weft::store

#endif  // WEFT_STORE_SQLITE_H_
