#include "datapath/transport/registration_cache.h"

#include "absl/strings/str_cat.h"

namespace weft::datapath {

using rdma::Verbs;
using rdma::VerbsMr;
using rdma::VerbsPd;

namespace {

constexpr uintptr_t kPageBytes = 4096;
// Candidates checked per lookup: entries are sorted by start, and an older, larger
// registration that covers the range may sit a few entries back.
constexpr int kMaxProbes = 16;

}  // namespace

RegistrationCache::Handle& RegistrationCache::Handle::operator=(Handle&& other) noexcept {
  if (this != &other) {
    Release();
    cache_ = std::exchange(other.cache_, nullptr);
    entry_ = std::exchange(other.entry_, nullptr);
  }
  return *this;
}

void RegistrationCache::Handle::Release() {
  if (entry_ != nullptr) cache_->Unpin(entry_);
  cache_ = nullptr;
  entry_ = nullptr;
}

RegistrationCache::RegistrationCache(Verbs& verbs, VerbsPd* pd, const Options& options)
    : verbs_(verbs), pd_(pd), options_(options) {}

RegistrationCache::~RegistrationCache() = default;

RegistrationCache::Entry* RegistrationCache::Find(uintptr_t start, uintptr_t end) {
  auto it = entries_.upper_bound(Key(start, UINTPTR_MAX));
  for (int probes = 0; probes < kMaxProbes && it != entries_.begin(); ++probes) {
    --it;
    Entry* entry = it->second.get();
    if (entry->start <= start && entry->end >= end) return entry;
  }
  return nullptr;
}

absl::StatusOr<RegistrationCache::Entry*> RegistrationCache::Register(uintptr_t start,
                                                                      uintptr_t end,
                                                                      bool persistent) {
  absl::StatusOr<std::unique_ptr<VerbsMr>> mr =
      verbs_.RegisterMr(pd_, reinterpret_cast<void*>(start), end - start, options_.access);
  if (!mr.ok()) return mr.status();
  ++stats_.misses;
  auto entry = std::make_unique<Entry>();
  entry->start = start;
  entry->end = end;
  entry->mr = std::move(*mr);
  entry->persistent = persistent;
  entry->lru = lru_.end();
  Entry* raw = entry.get();
  entries_[Key(start, end)] = std::move(entry);
  if (!persistent) stats_.cached_bytes += end - start;
  return raw;
}

absl::Status RegistrationCache::AddPersistent(void* data, size_t num_bytes) {
  if (num_bytes == 0) return absl::OkStatus();
  const uintptr_t start = reinterpret_cast<uintptr_t>(data);
  if (persistent_by_address_.count(start) != 0) {
    return absl::AlreadyExistsError(
        absl::StrCat("memory at 0x", absl::Hex(start), " is already registered"));
  }
  const uintptr_t end = start + num_bytes;
  auto existing = entries_.find(Key(start, end));
  if (existing != entries_.end()) {
    // Already registered on first use: promote it instead of registering twice.
    Entry* entry = existing->second.get();
    if (entry->lru != lru_.end()) {
      lru_.erase(entry->lru);
      entry->lru = lru_.end();
    }
    stats_.cached_bytes -= end - start;
    entry->persistent = true;
    entry->transient = false;
    persistent_by_address_[start] = entry;
    return absl::OkStatus();
  }
  absl::StatusOr<Entry*> entry = Register(start, end, /*persistent=*/true);
  if (!entry.ok()) return entry.status();
  persistent_by_address_[start] = *entry;
  return absl::OkStatus();
}

absl::Status RegistrationCache::RemovePersistent(void* data) {
  const uintptr_t start = reinterpret_cast<uintptr_t>(data);
  auto it = persistent_by_address_.find(start);
  if (it == persistent_by_address_.end()) {
    return absl::NotFoundError(
        absl::StrCat("memory at 0x", absl::Hex(start), " was never registered"));
  }
  Entry* entry = it->second;
  if (entry->pins > 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "memory at 0x", absl::Hex(start), " is still in use by ", entry->pins, " message(s)"));
  }
  persistent_by_address_.erase(it);
  Erase(entry);
  return absl::OkStatus();
}

absl::StatusOr<RegistrationCache::Handle> RegistrationCache::Acquire(const void* data,
                                                                     size_t num_bytes) {
  const uintptr_t start = reinterpret_cast<uintptr_t>(data);
  const uintptr_t end = start + num_bytes;
  Entry* entry = Find(start, end);
  if (entry != nullptr) {
    ++stats_.hits;
  } else {
    const uintptr_t page_start = start & ~(kPageBytes - 1);
    const uintptr_t page_end = (end + kPageBytes - 1) & ~(kPageBytes - 1);
    absl::StatusOr<Entry*> added = Register(page_start, page_end, /*persistent=*/false);
    if (!added.ok()) return added.status();
    entry = *added;
    if (!options_.cache_transient) entry->transient = true;
  }
  if (entry->lru != lru_.end()) {
    lru_.erase(entry->lru);
    entry->lru = lru_.end();
  }
  ++entry->pins;
  return Handle(this, entry);
}

void RegistrationCache::Unpin(Entry* entry) {
  if (--entry->pins > 0 || entry->persistent) return;
  if (entry->transient) {
    Erase(entry);
    return;
  }
  entry->lru = lru_.insert(lru_.end(), entry);
  EvictIfNeeded();
}

void RegistrationCache::Erase(Entry* entry) {
  if (entry->lru != lru_.end()) lru_.erase(entry->lru);
  if (!entry->persistent) stats_.cached_bytes -= entry->end - entry->start;
  entries_.erase(Key(entry->start, entry->end));
}

void RegistrationCache::EvictIfNeeded() {
  while (stats_.cached_bytes > options_.max_cached_bytes && !lru_.empty()) {
    Entry* victim = lru_.front();
    ++stats_.evictions;
    Erase(victim);
  }
}

}  // namespace weft::datapath
