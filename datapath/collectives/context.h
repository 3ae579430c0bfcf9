// What every collective algorithm runs over (internal to //datapath; the API is
// datapath/collectives.h): the communicator's transport, rank and size, the tunables
// the algorithms read, its registered scratch memory, and the helpers the algorithm
// families share (posted requests, chunking). The communicator owns one Context and
// chooses the algorithm; each family (ring.h, recursive.h, direct.h, broadcast.h,
// all_to_all.h, barrier.h) is free functions over it.
//
// Thread-safety: not thread-safe; the communicator runs one operation at a time.
#ifndef WEFT_DATAPATH_COLLECTIVES_CONTEXT_H_
#define WEFT_DATAPATH_COLLECTIVES_CONTEXT_H_

#include <algorithm>
#include <cstddef>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "datapath/transport.h"

namespace weft::datapath::collectives_internal {

// Growable scratch memory, registered with the transport.
class Scratch {
 public:
  explicit Scratch(Transport* transport) : transport_(transport) {}
  ~Scratch();
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  absl::StatusOr<char*> Get(size_t num_bytes);

 private:
  Transport* transport_;
  char* data_ = nullptr;
  size_t capacity_ = 0;
};

struct Context {
  // The tunables are CommunicatorOptions' fields of the same names.
  Context(Transport& transport, size_t segment_bytes, size_t ring_window,
          size_t alltoall_bytes_in_flight);

  // memcpy of non-overlapping buffers that keeps the transport moving meanwhile.
  void CopyWhileProgressing(char* dst, const char* src, size_t num_bytes);

  Transport& transport;
  const int rank;
  const int size;
  const size_t segment_bytes;
  const size_t ring_window;
  const size_t alltoall_bytes_in_flight;
  Scratch recv_scratch;
  Scratch send_scratch;
  Scratch accumulate_scratch;
  // AllReduceCoalesced's buckets.
  Scratch fusion_scratch;
};

// Posted requests of one step; waits for all of them even after a failure, so each is
// waited exactly once.
class Requests {
 public:
  explicit Requests(Transport& transport) : transport_(transport) {}
  ~Requests() { (void)WaitAll(); }

  // Both return the request's index for WaitOne.
  size_t Send(int peer, const void* data, size_t num_bytes) {
    Add(transport_.PostSend(peer, data, num_bytes));
    return ids_.size() - 1;
  }
  size_t Recv(int peer, void* data, size_t num_bytes) {
    Add(transport_.PostRecv(peer, data, num_bytes));
    return ids_.size() - 1;
  }
  // Index of the next request Add will record (for WaitOne).
  size_t next_index() const { return ids_.size(); }
  // Waits for request `index` alone.
  absl::Status WaitOne(size_t index) {
    if (!first_.ok()) return first_;
    if (index >= ids_.size() || waited_[index]) return absl::OkStatus();
    waited_[index] = true;
    Note(transport_.Wait(ids_[index]));
    return first_;
  }
  absl::Status WaitAll() {
    for (size_t i = 0; i < ids_.size(); ++i) {
      if (!waited_[i]) {
        waited_[i] = true;
        Note(transport_.Wait(ids_[i]));
      }
    }
    ids_.clear();
    waited_.clear();
    return first_;
  }
  const absl::Status& status() const { return first_; }

 private:
  void Add(absl::StatusOr<Transport::RequestId> id) {
    if (!id.ok()) {
      Note(id.status());
      // Keep indices aligned with posting order.
      ids_.push_back(0);
      waited_.push_back(true);
      return;
    }
    ids_.push_back(*id);
    waited_.push_back(false);
  }
  void Note(const absl::Status& status) {
    if (first_.ok() && !status.ok()) first_ = status;
  }

  Transport& transport_;
  std::vector<Transport::RequestId> ids_;
  std::vector<bool> waited_;
  absl::Status first_;
};

// Element range [offset, offset + count) of chunk i when `total` elements are split
// into n nearly equal chunks (the first total % n get one more).
struct Range {
  size_t offset;
  size_t count;
};
inline Range Chunk(size_t total, int n, int i) {
  const size_t base = total / n;
  const size_t extra = total % n;
  const size_t index = static_cast<size_t>(i);
  return Range{index * base + std::min(index, extra), base + (index < extra ? 1 : 0)};
}

// a mod n in [0, n), for a negative a too (ring neighbours).
inline int Mod(int a, int n) { return ((a % n) + n) % n; }

// Registers a caller's buffer with the transport for the length of one operation, so
// an RDMA transport pins it once rather than once per message (TCP ignores it). Small
// buffers travel through the transport's own registered slots and are left alone; a
// buffer the caller registered already (RegisterBuffer) is left as it is.
class ScopedRegistration {
 public:
  ScopedRegistration(Transport& transport, const void* data, size_t num_bytes)
      : transport_(transport), data_(const_cast<void*>(data)) {
    if (data_ == nullptr || num_bytes < kMinBytes) return;
    registered_ = transport_.RegisterMemory(data_, num_bytes).ok();
  }
  ~ScopedRegistration() {
    if (registered_) (void)transport_.UnregisterMemory(data_);
  }
  ScopedRegistration(const ScopedRegistration&) = delete;
  ScopedRegistration& operator=(const ScopedRegistration&) = delete;

 private:
  static constexpr size_t kMinBytes = 64 << 10;
  Transport& transport_;
  void* data_;
  bool registered_ = false;
};

}  // namespace weft::datapath::collectives_internal

#endif  // WEFT_DATAPATH_COLLECTIVES_CONTEXT_H_
