#include "store/controller_store.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace weft::store {
namespace {

// Version 1. Protos are stored as BLOBs next to the columns queries filter on, so a
// new proto field needs no migration; a new column or table does (append a
// Migration, never edit a released one).
constexpr char kSchemaV1[] = R"sql(
CREATE TABLE nodes (
  name TEXT PRIMARY KEY,
  rack TEXT NOT NULL,
  pod TEXT NOT NULL,
  info BLOB NOT NULL,               -- weft.v1.NodeInfo
  epoch_ceiling INTEGER NOT NULL,   -- no session epoch above it was granted
  drained INTEGER NOT NULL,
  drained_by INTEGER NOT NULL,      -- weft.v1.DrainSource
  drain_reason TEXT NOT NULL,
  drained_who TEXT NOT NULL
);
CREATE TABLE reservations (
  id TEXT PRIMARY KEY,
  job_id TEXT NOT NULL,
  request BLOB NOT NULL,            -- weft.v1.PlacementRequest
  response BLOB NOT NULL,           -- weft.v1.PlacementResponse (nodes, ranks)
  expires_at_us INTEGER NOT NULL,
  created_seq INTEGER NOT NULL
);
CREATE TABLE meta (
  key TEXT PRIMARY KEY,
  value INTEGER NOT NULL
);
CREATE TABLE events (
  sequence INTEGER PRIMARY KEY,
  time_us INTEGER NOT NULL,
  node TEXT NOT NULL,
  event BLOB NOT NULL               -- weft.v1.Event
);
CREATE TABLE audit (
  sequence INTEGER PRIMARY KEY AUTOINCREMENT,
  at_us INTEGER NOT NULL,
  who TEXT NOT NULL,
  role TEXT NOT NULL,
  method TEXT NOT NULL,
  target TEXT NOT NULL,
  result TEXT NOT NULL
);
CREATE INDEX audit_at ON audit(at_us);
)sql";

// Version 2: rollout records (SqliteRolloutStore), one weft.v1.Rollout per row; a row
// that does not parse is moved to rollouts_unreadable by Quarantine.
constexpr char kSchemaV2[] = R"sql(
CREATE TABLE rollouts (
  id TEXT PRIMARY KEY,
  record BLOB NOT NULL              -- weft.v1.Rollout
);
CREATE TABLE rollouts_unreadable (
  id TEXT NOT NULL,
  record BLOB NOT NULL
);
)sql";

constexpr char kNextReservationKey[] = "next_reservation_sequence";

std::string Serialize(const google::protobuf::MessageLite& message) {
  std::string bytes;
  message.SerializeToString(&bytes);
  return bytes;
}

template <typename Proto>
absl::StatusOr<Proto> Parse(const std::string& bytes, absl::string_view what) {
  Proto proto;
  if (!proto.ParseFromString(bytes)) {
    return absl::DataLossError(absl::StrCat("a stored ", what, " does not parse"));
  }
  return proto;
}

absl::Status PutNodeIn(Transaction& txn, const StoredNode& node) {
  return txn.Exec(
      "INSERT OR REPLACE INTO nodes(name, rack, pod, info, epoch_ceiling, drained, "
      "drained_by, drain_reason, drained_who) VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?)",
      {node.name, node.rack, node.pod, Blob{Serialize(node.info)},
       static_cast<int64_t>(node.epoch_ceiling), int64_t{node.drained ? 1 : 0},
       static_cast<int64_t>(node.drained_by), node.drain_reason, node.drained_who});
}

// Creates `dir` (0700) when absent; FAILED_PRECONDITION when it is not a directory.
absl::Status MakeStateDir(const std::string& dir) {
  struct stat st;
  if (::stat(dir.c_str(), &st) == 0) {
    if (!S_ISDIR(st.st_mode)) {
      return absl::FailedPreconditionError(
          absl::StrCat("state_dir ", dir, " exists but is not a directory"));
    }
    return absl::OkStatus();
  }
  // Create missing parents too (e.g. /var/lib/weft on a fresh host).
  for (size_t slash = dir.find('/', 1); ; slash = dir.find('/', slash + 1)) {
    const std::string prefix = slash == std::string::npos ? dir : dir.substr(0, slash);
    if (::mkdir(prefix.c_str(), 0700) != 0 && errno != EEXIST) {
      return absl::PermissionDeniedError(absl::StrCat(
          "cannot create state_dir ", dir, " (at ", prefix, "): ", std::strerror(errno),
          "; create it or pick another with --state_dir"));
    }
    if (slash == std::string::npos) break;
  }
  return absl::OkStatus();
}

}  // namespace

const std::vector<Migration>& ControllerMigrations() {
  static const auto* migrations =
      new std::vector<Migration>{{1, kSchemaV1}, {2, kSchemaV2}};
  return *migrations;
}

absl::StatusOr<std::unique_ptr<ControllerStore>> ControllerStore::Open(
    const std::string& state_dir, Durability acknowledged) {
  if (state_dir.empty()) {
    return absl::InvalidArgumentError("state_dir is empty; give the controller one");
  }
  RETURN_IF_ERROR(MakeStateDir(state_dir));
  const std::string lock_path = absl::StrCat(state_dir, "/LOCK");
  const int lock_fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (lock_fd < 0) {
    return absl::PermissionDeniedError(
        absl::StrCat("cannot open ", lock_path, ": ", std::strerror(errno)));
  }
  if (::flock(lock_fd, LOCK_EX | LOCK_NB) != 0) {
    ::close(lock_fd);
    return absl::FailedPreconditionError(absl::StrCat(
        "state_dir ", state_dir, " is in use by another weft-controller (", lock_path,
        " is locked); stop it or give this one another --state_dir"));
  }
  absl::StatusOr<std::unique_ptr<Database>> db = Database::Open(
      absl::StrCat(state_dir, "/", kControllerDbName), ControllerMigrations());
  if (!db.ok()) {
    ::close(lock_fd);
    return db.status();
  }
  return std::unique_ptr<ControllerStore>(
      new ControllerStore(*std::move(db), lock_fd, acknowledged));
}

absl::StatusOr<std::unique_ptr<ControllerStore>> ControllerStore::OpenInMemory() {
  ASSIGN_OR_RETURN(std::unique_ptr<Database> db,
                   Database::OpenInMemory(ControllerMigrations()));
  return std::unique_ptr<ControllerStore>(
      new ControllerStore(std::move(db), -1, Durability::kAcknowledged));
}

ControllerStore::~ControllerStore() {
  db_.reset();
  if (lock_fd_ >= 0) ::close(lock_fd_);
}

absl::Status ControllerStore::PutNode(const StoredNode& node) {
  return db_->Write(acknowledged_,
                    [&](Transaction& txn) { return PutNodeIn(txn, node); });
}

absl::Status ControllerStore::PutNodes(const std::vector<StoredNode>& nodes) {
  return db_->Write(acknowledged_, [&](Transaction& txn) -> absl::Status {
    for (const StoredNode& node : nodes) RETURN_IF_ERROR(PutNodeIn(txn, node));
    return absl::OkStatus();
  });
}

absl::StatusOr<std::vector<StoredNode>> ControllerStore::LoadNodes() {
  std::vector<StoredNode> nodes;
  absl::Status parsed;
  RETURN_IF_ERROR(db_->Read([&](Transaction& txn) {
    return txn.Query(
        "SELECT name, rack, pod, info, epoch_ceiling, drained, drained_by, drain_reason, "
        "drained_who FROM nodes ORDER BY name",
        {}, [&](const Row& row) {
          StoredNode node;
          node.name = row.Text(0);
          node.rack = row.Text(1);
          node.pod = row.Text(2);
          absl::StatusOr<weft::v1::NodeInfo> info =
              Parse<weft::v1::NodeInfo>(row.Text(3), "NodeInfo of " + node.name);
          if (!info.ok()) {
            parsed.Update(info.status());
            return;
          }
          node.info = *std::move(info);
          node.epoch_ceiling = static_cast<uint64_t>(row.Int(4));
          node.drained = row.Int(5) != 0;
          node.drained_by = static_cast<weft::v1::DrainSource>(row.Int(6));
          node.drain_reason = row.Text(7);
          node.drained_who = row.Text(8);
          nodes.push_back(std::move(node));
        });
  }));
  RETURN_IF_ERROR(parsed);
  return nodes;
}

absl::Status ControllerStore::PutReservation(const StoredReservation& reservation,
                                             uint64_t next_sequence) {
  return db_->Write(acknowledged_, [&](Transaction& txn) -> absl::Status {
    RETURN_IF_ERROR(txn.Exec(
        "INSERT INTO reservations(id, job_id, request, response, expires_at_us, "
        "created_seq) VALUES(?, ?, ?, ?, ?, ?) ON CONFLICT(id) DO UPDATE SET "
        "request = excluded.request, response = excluded.response, "
        "expires_at_us = excluded.expires_at_us",
        {reservation.response.reservation_id(), reservation.response.job_id(),
         Blob{Serialize(reservation.request)}, Blob{Serialize(reservation.response)},
         reservation.expires_at_us, static_cast<int64_t>(next_sequence)}));
    return txn.Exec(
        "INSERT INTO meta(key, value) VALUES(?, ?) ON CONFLICT(key) DO UPDATE SET "
        "value = max(value, excluded.value)",
        {std::string(kNextReservationKey), static_cast<int64_t>(next_sequence)});
  });
}

absl::Status ControllerStore::UpdateReservationLease(
    const weft::v1::PlacementResponse& response, int64_t expires_at_us) {
  return db_->Write(acknowledged_, [&](Transaction& txn) -> absl::Status {
    RETURN_IF_ERROR(txn.Exec(
        "UPDATE reservations SET response = ?, expires_at_us = ? WHERE id = ?",
        {Blob{Serialize(response)}, expires_at_us, response.reservation_id()}));
    if (txn.changes() == 0) {
      return absl::NotFoundError(absl::StrCat("reservation ", response.reservation_id(),
                                              " is not in the store"));
    }
    return absl::OkStatus();
  });
}

absl::Status ControllerStore::DeleteReservation(absl::string_view reservation_id) {
  return db_->Write(acknowledged_, [&](Transaction& txn) {
    return txn.Exec("DELETE FROM reservations WHERE id = ?",
                    {std::string(reservation_id)});
  });
}

absl::StatusOr<int64_t> ControllerStore::DeleteExpiredReservations(int64_t now_us) {
  int64_t deleted = 0;
  RETURN_IF_ERROR(db_->Write(acknowledged_, [&](Transaction& txn) {
    absl::Status status =
        txn.Exec("DELETE FROM reservations WHERE expires_at_us <= ?", {now_us});
    deleted = txn.changes();
    return status;
  }));
  return deleted;
}

absl::StatusOr<std::vector<StoredReservation>> ControllerStore::LoadReservations(
    int64_t now_us) {
  std::vector<StoredReservation> out;
  absl::Status parsed;
  RETURN_IF_ERROR(db_->Read([&](Transaction& txn) {
    return txn.Query(
        "SELECT id, request, response, expires_at_us FROM reservations "
        "WHERE expires_at_us > ? ORDER BY created_seq",
        {now_us}, [&](const Row& row) {
          const std::string id = row.Text(0);
          absl::StatusOr<weft::v1::PlacementRequest> request =
              Parse<weft::v1::PlacementRequest>(row.Text(1), "request of " + id);
          absl::StatusOr<weft::v1::PlacementResponse> response =
              Parse<weft::v1::PlacementResponse>(row.Text(2), "response of " + id);
          if (!request.ok() || !response.ok()) {
            parsed.Update(request.status());
            parsed.Update(response.status());
            return;
          }
          out.push_back({*std::move(request), *std::move(response), row.Int(3)});
        });
  }));
  RETURN_IF_ERROR(parsed);
  return out;
}

absl::StatusOr<uint64_t> ControllerStore::NextReservationSequence() {
  uint64_t next = 1;
  RETURN_IF_ERROR(db_->Read([&](Transaction& txn) {
    return txn.Query("SELECT value FROM meta WHERE key = ?",
                     {std::string(kNextReservationKey)},
                     [&](const Row& row) { next = static_cast<uint64_t>(row.Int(0)); });
  }));
  return next;
}

absl::Status ControllerStore::AppendEvent(const weft::v1::Event& event) {
  return db_->Write(Durability::kBestEffort, [&](Transaction& txn) {
    return txn.Exec(
        "INSERT OR REPLACE INTO events(sequence, time_us, node, event) VALUES(?, ?, ?, ?)",
        {static_cast<int64_t>(event.sequence()), event.time_us(), event.node(),
         Blob{Serialize(event)}});
  });
}

absl::Status ControllerStore::PruneEvents(uint64_t capacity) {
  return db_->Write(Durability::kBestEffort, [&](Transaction& txn) {
    return txn.Exec(
        "DELETE FROM events WHERE sequence <= (SELECT max(sequence) FROM events) - ?",
        {static_cast<int64_t>(capacity)});
  });
}

absl::StatusOr<std::vector<weft::v1::Event>> ControllerStore::LoadEvents(uint64_t limit) {
  std::vector<weft::v1::Event> out;
  absl::Status parsed;
  RETURN_IF_ERROR(db_->Read([&](Transaction& txn) {
    return txn.Query(
        "SELECT event FROM (SELECT sequence, event FROM events ORDER BY sequence DESC "
        "LIMIT ?) ORDER BY sequence",
        {static_cast<int64_t>(limit)}, [&](const Row& row) {
          absl::StatusOr<weft::v1::Event> event =
              Parse<weft::v1::Event>(row.Text(0), "event");
          if (event.ok()) {
            out.push_back(*std::move(event));
          } else {
            parsed.Update(event.status());
          }
        });
  }));
  RETURN_IF_ERROR(parsed);
  return out;
}

absl::StatusOr<uint64_t> ControllerStore::AppendAudit(const StoredAudit& entry) {
  uint64_t sequence = 0;
  RETURN_IF_ERROR(db_->Write(acknowledged_, [&](Transaction& txn) -> absl::Status {
    RETURN_IF_ERROR(txn.Exec(
        "INSERT INTO audit(at_us, who, role, method, target, result) "
        "VALUES(?, ?, ?, ?, ?, ?)",
        {entry.at_us, entry.who, entry.role, entry.method, entry.target, entry.result}));
    return txn.Query("SELECT last_insert_rowid()", {}, [&](const Row& row) {
      sequence = static_cast<uint64_t>(row.Int(0));
    });
  }));
  return sequence;
}

absl::StatusOr<std::vector<StoredAudit>> ControllerStore::ListAudit(
    const AuditFilter& filter) {
  std::vector<StoredAudit> out;
  // ?3 = '' disables the method filter; otherwise the full name or "/<name>" suffix.
  RETURN_IF_ERROR(db_->Read([&](Transaction& txn) {
    return txn.Query(
        "SELECT sequence, at_us, who, role, method, target, result FROM ("
        "SELECT * FROM audit WHERE at_us >= ?1 AND (?2 = '' OR who = ?2) AND "
        "(?3 = '' OR method = ?3 OR substr(method, -length(?3) - 1) = '/' || ?3) "
        "ORDER BY sequence DESC LIMIT ?4) ORDER BY sequence",
        {filter.since_us, filter.who, filter.method,
         filter.limit == 0 ? int64_t{-1} : static_cast<int64_t>(filter.limit)},
        [&](const Row& row) {
          StoredAudit entry;
          entry.sequence = static_cast<uint64_t>(row.Int(0));
          entry.at_us = row.Int(1);
          entry.who = row.Text(2);
          entry.role = row.Text(3);
          entry.method = row.Text(4);
          entry.target = row.Text(5);
          entry.result = row.Text(6);
          out.push_back(std::move(entry));
        });
  }));
  return out;
}

}  // namespace weft::store
