// RegistrationCache: memory registrations (ibv_reg_mr) for the RC transport, reused
// across messages. Registering is expensive (it pins pages and programs the NIC's
// translation tables), so:
//   - Persistent regions (Transport::RegisterMemory: a communicator's scratch buffers,
//     a framework's gradient buckets) stay registered until removed.
//   - Other buffers are registered on first use, page-aligned. With `cache_transient`
//     they then stay, least recently used evicted beyond max_cached_bytes; without it
//     they are deregistered once the message is done.
// Keeping registrations of memory the caller may free is unsafe: if the allocator
// unmaps the pages and later maps new ones at the same address, a cached registration
// still points at the old pages. So cache_transient is off unless the caller knows its
// allocator keeps memory mapped (a caching allocator, a memory pool), or declares
// buffers with RegisterMemory.
//
// Thread-safety: not thread-safe; owned and called by one RcTransport.
#ifndef WEFT_DATAPATH_TRANSPORT_REGISTRATION_CACHE_H_
#define WEFT_DATAPATH_TRANSPORT_REGISTRATION_CACHE_H_

#include <cstddef>
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <utility>

#include "absl/status/statusor.h"
#include "rdma/verbs.h"

namespace weft::datapath {

class RegistrationCache {
 public:
  struct Options {
    bool cache_transient = false;
    size_t max_cached_bytes = size_t{1} << 30;
    // AccessFlag bits of every registration.
    uint32_t access = rdma::kAccessLocalWrite | rdma::kAccessRemoteWrite;
  };

  struct Stats {
    uint64_t hits = 0;
    uint64_t misses = 0;  // each one an ibv_reg_mr
    uint64_t evictions = 0;
    size_t cached_bytes = 0;  // registered bytes not persistent
    size_t entries = 0;
  };

 private:
  struct Entry {
    uintptr_t start = 0;
    uintptr_t end = 0;
    std::unique_ptr<rdma::VerbsMr> mr;
    int pins = 0;
    bool persistent = false;
    bool transient = false;  // deregister when the last pin goes
    std::list<Entry*>::iterator lru;
  };

 public:
  // A pinned registration; the entry cannot be evicted while a Handle refers to it.
  class Handle {
   public:
    Handle() = default;
    Handle(Handle&& other) noexcept
        : cache_(std::exchange(other.cache_, nullptr)),
          entry_(std::exchange(other.entry_, nullptr)) {}
    Handle& operator=(Handle&& other) noexcept;
    Handle(const Handle&) = delete;
    Handle& operator=(const Handle&) = delete;
    ~Handle() { Release(); }

    bool valid() const { return entry_ != nullptr; }
    uint32_t lkey() const { return entry_->mr->lkey(); }
    uint32_t rkey() const { return entry_->mr->rkey(); }
    void Release();

   private:
    friend class RegistrationCache;
    Handle(RegistrationCache* cache, Entry* entry) : cache_(cache), entry_(entry) {}
    RegistrationCache* cache_ = nullptr;
    Entry* entry_ = nullptr;
  };

  RegistrationCache(rdma::Verbs& verbs, rdma::VerbsPd* pd, const Options& options);
  ~RegistrationCache();
  RegistrationCache(const RegistrationCache&) = delete;
  RegistrationCache& operator=(const RegistrationCache&) = delete;

  // Registers [data, data + num_bytes) until RemovePersistent(data).
  absl::Status AddPersistent(void* data, size_t num_bytes);
  // FAILED_PRECONDITION while a message still uses it; NOT_FOUND if never added.
  absl::Status RemovePersistent(void* data);

  // A registration covering [data, data + num_bytes) (num_bytes > 0): a persistent
  // region or cached entry if one covers it, else a new registration.
  absl::StatusOr<Handle> Acquire(const void* data, size_t num_bytes);

  Stats stats() const {
    Stats out = stats_;
    out.entries = entries_.size();
    return out;
  }

 private:
  using Key = std::pair<uintptr_t, uintptr_t>;  // [start, end)

  Entry* Find(uintptr_t start, uintptr_t end);
  absl::StatusOr<Entry*> Register(uintptr_t start, uintptr_t end, bool persistent);
  void Unpin(Entry* entry);
  void Erase(Entry* entry);
  void EvictIfNeeded();

  rdma::Verbs& verbs_;
  rdma::VerbsPd* const pd_;
  const Options options_;
  std::map<Key, std::unique_ptr<Entry>> entries_;
  std::map<uintptr_t, Entry*> persistent_by_address_;
  std::list<Entry*> lru_;  // unpinned cached entries, least recently used first
  Stats stats_;
};

}  // namespace weft::datapath

#endif  // WEFT_DATAPATH_TRANSPORT_REGISTRATION_CACHE_H_
