#include "controller/api/audit_log.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "store/controller_store.h"

namespace weft::controller {
namespace {

bool MethodMatches(absl::string_view method, absl::string_view filter) {
  return filter.empty() || method == filter ||
         absl::EndsWith(method, absl::StrCat("/", filter));
}

AuditEntry FromStored(store::StoredAudit stored) {
  AuditEntry entry;
  entry.sequence = stored.sequence;
  entry.at = absl::FromUnixMicros(stored.at_us);
  entry.who = std::move(stored.who);
  entry.role = std::move(stored.role);
  entry.method = std::move(stored.method);
  entry.target = std::move(stored.target);
  entry.result = std::move(stored.result);
  return entry;
}

}  // namespace

std::string AuditResult(const absl::Status& status) {
  if (status.ok()) return "OK";
  return absl::StrCat(absl::StatusCodeToString(status.code()), ": ", status.message());
}

AuditLog::AuditLog(store::ControllerStore* store) : store_(store) {}

absl::Status AuditLog::Record(const AuditEntry& entry) {
  if (entry.who.empty() || entry.method.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "audit entry needs who and method (who='", entry.who, "' method='", entry.method,
        "')"));
  }
  if (store_ != nullptr) {
    store::StoredAudit stored;
    stored.at_us = absl::ToUnixMicros(entry.at);
    stored.who = entry.who;
    stored.role = entry.role;
    stored.method = entry.method;
    stored.target = entry.target;
    stored.result = entry.result;
    return store_->AppendAudit(stored).status();
  }
  absl::MutexLock lock(&mu_);
  AuditEntry copy = entry;
  copy.sequence = entries_.size() + 1;
  entries_.push_back(std::move(copy));
  return absl::OkStatus();
}

absl::StatusOr<std::vector<AuditEntry>> AuditLog::List(const AuditQuery& query) const {
  std::vector<AuditEntry> out;
  if (store_ != nullptr) {
    store::AuditFilter filter;
    if (query.since != absl::InfinitePast()) filter.since_us = absl::ToUnixMicros(query.since);
    filter.who = query.who;
    filter.method = query.method;
    filter.limit = query.limit;
    absl::StatusOr<std::vector<store::StoredAudit>> stored = store_->ListAudit(filter);
    if (!stored.ok()) return stored.status();
    for (store::StoredAudit& entry : *stored) out.push_back(FromStored(std::move(entry)));
    return out;
  }
  absl::MutexLock lock(&mu_);
  for (const AuditEntry& entry : entries_) {
    if (entry.at < query.since) continue;
    if (!query.who.empty() && entry.who != query.who) continue;
    if (!MethodMatches(entry.method, query.method)) continue;
    out.push_back(entry);
  }
  if (query.limit > 0 && out.size() > query.limit) {
    out.erase(out.begin(), out.end() - static_cast<std::ptrdiff_t>(query.limit));
  }
  return out;
}

}  // namespace weft::controller
