#include "store/sqlite.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace weft::store {
namespace {

absl::StatusCode CodeOf(int sqlite_code) {
  switch (sqlite_code & 0xff) {
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      return absl::StatusCode::kDataLoss;
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
    case SQLITE_FULL:
    case SQLITE_IOERR:
    case SQLITE_CANTOPEN:
      return absl::StatusCode::kUnavailable;
    case SQLITE_READONLY:
    case SQLITE_PERM:
    case SQLITE_AUTH:
      return absl::StatusCode::kPermissionDenied;
    case SQLITE_CONSTRAINT:
      return absl::StatusCode::kFailedPrecondition;
    default:
      return absl::StatusCode::kInternal;
  }
}

}  // namespace

bool Row::IsNull(int column) const {
  return sqlite3_column_type(stmt_, column) == SQLITE_NULL;
}

int64_t Row::Int(int column) const { return sqlite3_column_int64(stmt_, column); }

double Row::Double(int column) const { return sqlite3_column_double(stmt_, column); }

std::string Row::Text(int column) const {
  const void* data = sqlite3_column_blob(stmt_, column);
  const int size = sqlite3_column_bytes(stmt_, column);
  if (data == nullptr || size <= 0) return "";
  return std::string(static_cast<const char*>(data), static_cast<size_t>(size));
}

absl::Status Transaction::Exec(absl::string_view sql, std::initializer_list<Value> params) {
  return db_->ExecLocked(sql, std::vector<Value>(params), nullptr);
}

absl::Status Transaction::Exec(absl::string_view sql, const std::vector<Value>& params) {
  return db_->ExecLocked(sql, params, nullptr);
}

absl::Status Transaction::Query(absl::string_view sql, const std::vector<Value>& params,
                                absl::FunctionRef<void(const Row&)> row) {
  return db_->ExecLocked(sql, params, &row);
}

int64_t Transaction::changes() const { return sqlite3_changes64(db_->db_); }

absl::StatusOr<std::unique_ptr<Database>> Database::Open(
    const std::string& path, const std::vector<Migration>& migrations) {
  // Create the file ourselves so that it is private from the first byte (SQLite would
  // create it with the umask's mode). An empty file is an empty database to SQLite.
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) {
    return absl::UnavailableError(absl::StrCat("cannot open or create ", path, ": ",
                                               std::strerror(errno)));
  }
  ::close(fd);
  return OpenWith(path, SQLITE_OPEN_READWRITE, migrations);
}

absl::StatusOr<std::unique_ptr<Database>> Database::OpenInMemory(
    const std::vector<Migration>& migrations) {
  return OpenWith(":memory:", SQLITE_OPEN_READWRITE | SQLITE_OPEN_MEMORY, migrations);
}

absl::StatusOr<std::unique_ptr<Database>> Database::OpenWith(
    const std::string& path, int flags, const std::vector<Migration>& migrations) {
  sqlite3* handle = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &handle, flags | SQLITE_OPEN_NOMUTEX,
                                 nullptr);
  if (rc != SQLITE_OK) {
    std::string message = handle != nullptr ? sqlite3_errmsg(handle) : sqlite3_errstr(rc);
    sqlite3_close(handle);
    return absl::Status(CodeOf(rc), absl::StrCat("cannot open ", path, ": ", message));
  }
  std::unique_ptr<Database> db(new Database(handle, path));
  sqlite3_extended_result_codes(handle, 1);
  // A sqlite3 shell reading the file may hold a lock for a moment.
  sqlite3_busy_timeout(handle, 5000);

  absl::MutexLock lock(&db->mu_);
  // The first read parses the header: a file that is not a database fails here.
  int version = 0;
  auto read_version = [&](const Row& r) { version = static_cast<int>(r.Int(0)); };
  const absl::FunctionRef<void(const Row&)> version_row = read_version;
  absl::Status read = db->ExecLocked("PRAGMA user_version", {}, &version_row);
  if (!read.ok()) {
    return absl::DataLossError(absl::StrCat(
        path, " is not a readable weft state database (", read.message(),
        "). It was left untouched: restore it from a backup, or move it aside to start "
        "with empty state"));
  }
  const int newest = migrations.empty() ? 0 : migrations.back().version;
  if (version > newest) {
    return absl::FailedPreconditionError(absl::StrCat(
        path, " has schema version ", version, " but this binary knows versions up to ",
        newest, ": a newer weft-controller wrote it. Run that version (or newer); the "
        "file was left untouched"));
  }
  std::string check;
  auto read_check = [&](const Row& r) {
    if (check.empty()) check = r.Text(0);
  };
  const absl::FunctionRef<void(const Row&)> check_row = read_check;
  absl::Status checked = db->ExecLocked("PRAGMA quick_check", {}, &check_row);
  if (!checked.ok() || check != "ok") {
    return absl::DataLossError(absl::StrCat(
        path, " is corrupt (quick_check: ",
        checked.ok() ? check : std::string(checked.message()),
        "). It was left untouched: restore it from a backup, or move it aside to start "
        "with empty state"));
  }
  if (path != ":memory:") RETURN_IF_ERROR(db->ExecScript("PRAGMA journal_mode=WAL"));
  RETURN_IF_ERROR(db->ExecScript("PRAGMA foreign_keys=ON"));
  db->schema_version_ = version;
  RETURN_IF_ERROR(db->Migrate(migrations));
  return db;
}

Database::~Database() {
  {
    absl::MutexLock lock(&mu_);
    for (auto& [sql, stmt] : statements_) sqlite3_finalize(stmt);
    statements_.clear();
  }
  sqlite3_close(db_);
}

absl::Status Database::Migrate(const std::vector<Migration>& migrations) {
  for (const Migration& migration : migrations) {
    if (migration.version <= schema_version_) continue;
    if (migration.version != schema_version_ + 1) {
      return absl::InternalError(absl::StrCat("migration to version ", migration.version,
                                              " follows version ", schema_version_));
    }
    // The schema step and the version bump commit together or not at all.
    durability_ = Durability::kAcknowledged;
    RETURN_IF_ERROR(ExecScript("PRAGMA synchronous=FULL"));
    RETURN_IF_ERROR(RunTransaction("BEGIN IMMEDIATE", [&](Transaction&) -> absl::Status {
      RETURN_IF_ERROR(ExecScript(migration.sql));
      return ExecScript(absl::StrCat("PRAGMA user_version=", migration.version));
    }));
    schema_version_ = migration.version;
  }
  return absl::OkStatus();
}

absl::Status Database::Write(Durability durability,
                             absl::FunctionRef<absl::Status(Transaction&)> body) {
  absl::MutexLock lock(&mu_);
  if (durability != durability_) {
    RETURN_IF_ERROR(ExecScript(durability == Durability::kAcknowledged
                                   ? "PRAGMA synchronous=FULL"
                                   : "PRAGMA synchronous=NORMAL"));
    durability_ = durability;
  }
  return RunTransaction("BEGIN IMMEDIATE", body);
}

absl::Status Database::Read(absl::FunctionRef<absl::Status(Transaction&)> body) {
  absl::MutexLock lock(&mu_);
  return RunTransaction("BEGIN DEFERRED", body);
}

absl::Status Database::RunTransaction(absl::string_view begin,
                                      absl::FunctionRef<absl::Status(Transaction&)> body) {
  RETURN_IF_ERROR(ExecScript(begin));
  Transaction txn(this);
  absl::Status status = body(txn);
  if (status.ok()) status = ExecScript("COMMIT");
  if (!status.ok()) {
    // After a failed COMMIT SQLite may already have rolled back; that ROLLBACK then
    // fails harmlessly.
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  }
  return status;
}

absl::StatusOr<sqlite3_stmt*> Database::Prepare(absl::string_view sql,
                                                const std::vector<Value>& params) {
  auto it = statements_.find(sql);
  if (it == statements_.end()) {
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v3(db_, sql.data(), static_cast<int>(sql.size()),
                           SQLITE_PREPARE_PERSISTENT, &stmt, nullptr) != SQLITE_OK) {
      return Error(absl::StrCat("prepare '", sql, "'"));
    }
    it = statements_.emplace(std::string(sql), stmt).first;
  }
  sqlite3_stmt* stmt = it->second;
  sqlite3_reset(stmt);
  sqlite3_clear_bindings(stmt);
  if (static_cast<int>(params.size()) != sqlite3_bind_parameter_count(stmt)) {
    return absl::InternalError(absl::StrCat("'", sql, "' takes ",
                                            sqlite3_bind_parameter_count(stmt),
                                            " parameters, got ", params.size()));
  }
  for (size_t i = 0; i < params.size(); ++i) {
    const int index = static_cast<int>(i) + 1;
    int rc = SQLITE_OK;
    const Value& value = params[i];
    if (std::holds_alternative<std::nullptr_t>(value)) {
      rc = sqlite3_bind_null(stmt, index);
    } else if (const auto* v = std::get_if<int64_t>(&value)) {
      rc = sqlite3_bind_int64(stmt, index, *v);
    } else if (const auto* v = std::get_if<double>(&value)) {
      rc = sqlite3_bind_double(stmt, index, *v);
    } else if (const auto* v = std::get_if<std::string>(&value)) {
      rc = sqlite3_bind_text64(stmt, index, v->data(), v->size(), SQLITE_TRANSIENT,
                               SQLITE_UTF8);
    } else if (const auto* v = std::get_if<Blob>(&value)) {
      rc = sqlite3_bind_blob64(stmt, index, v->bytes.data(), v->bytes.size(),
                               SQLITE_TRANSIENT);
    }
    if (rc != SQLITE_OK) return Error(absl::StrCat("bind parameter ", index));
  }
  return stmt;
}

absl::Status Database::ExecLocked(absl::string_view sql, const std::vector<Value>& params,
                                  const absl::FunctionRef<void(const Row&)>* row) {
  ASSIGN_OR_RETURN(sqlite3_stmt * stmt, Prepare(sql, params));
  while (true) {
    const int rc = sqlite3_step(stmt);
    if (rc == SQLITE_DONE) break;
    if (rc == SQLITE_ROW) {
      if (row != nullptr) (*row)(Row(stmt));
      continue;
    }
    absl::Status error = Error(sql);
    sqlite3_reset(stmt);
    return error;
  }
  sqlite3_reset(stmt);
  return absl::OkStatus();
}

absl::Status Database::ExecScript(absl::string_view sql) {
  char* message = nullptr;
  const std::string text(sql);
  if (sqlite3_exec(db_, text.c_str(), nullptr, nullptr, &message) != SQLITE_OK) {
    absl::Status error = Error(text);
    sqlite3_free(message);
    return error;
  }
  return absl::OkStatus();
}

absl::Status Database::Error(absl::string_view what) const {
  const int code = sqlite3_extended_errcode(db_);
  return absl::Status(CodeOf(code), absl::StrCat(path_, ": ", what, ": ",
                                                 sqlite3_errmsg(db_), " (",
                                                 sqlite3_errstr(code), ")"));
}

}  // namespace weft::store
