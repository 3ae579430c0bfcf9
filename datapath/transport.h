// Transport: reliable, ordered byte messages between the ranks of one job, the layer
// the collectives (datapath/collectives.h) are written against. Implementations:
// TcpTransport (sockets; the fallback) and RcTransport (verbs RC QPs). Both are built
// once per communicator, after the ranks have met through a Rendezvous.
//
// Semantics every implementation keeps:
//   - Messages from rank a to rank b match b's receives from a in posting order (FIFO
//     per ordered pair of ranks). A receive must be exactly the size of the message it
//     matches; a mismatch fails the request with INTERNAL naming both sizes.
//   - PostSend/PostRecv start an operation and return at once; Wait(id) drives every
//     outstanding operation until `id` is done. A send may not finish before the peer
//     posts the matching receive, so post all sends and receives of an exchange before
//     waiting on any of them.
//   - Every request is waited exactly once. Buffers stay valid, and send buffers
//     unchanged, until then.
//   - Errors are sticky: after a failure (peer gone, no progress within the transport's
//     timeout, size mismatch, a verbs error completion) the transport is broken and
//     every outstanding or later request fails with the first error, which names the
//     peer involved.
//   - Zero-byte messages are allowed and ordered like the others.
//
// Thread-safety: not thread-safe; one thread at a time (a Communicator serializes its
// calls on its worker thread).
#ifndef WEFT_DATAPATH_TRANSPORT_H_
#define WEFT_DATAPATH_TRANSPORT_H_

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace weft::datapath {

class Transport {
 public:
  using RequestId = uint64_t;

  virtual ~Transport() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  // "tcp" or "rc".
  virtual absl::string_view name() const = 0;

  // Declares [data, data + num_bytes) as memory that will carry messages again and
  // again (a communicator's scratch space, a framework's gradient buckets), so the
  // transport may keep it registered with the NIC until UnregisterMemory(data). A
  // no-op for TCP.
  virtual absl::Status RegisterMemory(void* data, size_t num_bytes) = 0;
  virtual absl::Status UnregisterMemory(void* data) = 0;

  virtual absl::StatusOr<RequestId> PostSend(int peer, const void* data, size_t num_bytes) = 0;
  virtual absl::StatusOr<RequestId> PostRecv(int peer, void* data, size_t num_bytes) = 0;
  // Blocks until request `id` completes; returns its outcome.
  virtual absl::Status Wait(RequestId id) = 0;
  // Moves whatever can move now without blocking (completes nothing by itself). For
  // callers computing between waits, e.g. reducing one segment while others arrive,
  // so the wire keeps flowing meanwhile.
  virtual void Progress() {}

  // Waits for every request in `ids` (even after one failed, so each is waited once)
  // and returns the first error.
  absl::Status WaitAll(absl::Span<const RequestId> ids);
  // Blocking conveniences.
  absl::Status Send(int peer, const void* data, size_t num_bytes);
  absl::Status Recv(int peer, void* data, size_t num_bytes);

 protected:
  // INVALID_ARGUMENT unless `peer` is another rank of this transport's group.
  absl::Status CheckPeer(int peer) const;
};

}  // namespace weft::datapath

#endif  // WEFT_DATAPATH_TRANSPORT_H_
