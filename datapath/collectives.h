// Communicator: the collective operations of one group of ranks, over any Transport
// (datapath/transport.h): all-reduce (also of many small tensors at once, and with
// optional bfloat16 compression of float32 payloads), reduce-scatter, all-gather,
// broadcast, all-to-all, all-to-allv and barrier. Every rank of the group calls the
// same operations in the same order with matching arguments.
//
// Algorithms:
//   all-reduce      recursive doubling (log2 n exchanges of the whole buffer; ranks
//                   beyond a power of two fold in first) up to small_allreduce_bytes;
//                   with 4, 8, 16... ranks, up to halving_allreduce_bytes, recursive
//                   halving (log2 n exchanges of half, then a quarter... of the buffer,
//                   each rank reducing the half it keeps, until it holds its chunk
//                   reduced) then recursive doubling of the reduced chunks back in
//                   place (Rabenseifner's algorithm: the ring's bytes in 2 log2 n
//                   steps, not with bf16 compression);
//                   with more than two ranks, up to direct_allreduce_bytes, two
//                   everyone-to-everyone rounds: each rank sends every other rank that
//                   rank's chunk and reduces its own from what lands, then sends its
//                   reduced chunk to every other rank (the ring's bytes in two rounds
//                   instead of 2(n - 1) steps; not with bf16 compression); above, ring
//                   reduce-scatter then ring all-gather, streamed: every step is cut
//                   into segments, each reduced as it lands and forwarded to the next
//                   rank at once, so consecutive steps (and the two phases)
//                   overlap instead of waiting for each other. Reduce-scatter segments
//                   land in a small ring of ring_window scratch slots, which stays in
//                   cache whatever the buffer size.
//   reduce-scatter  with more than two ranks, everyone-to-everyone up to
//                   small_reduce_scatter_bytes (one round: each rank sends every other
//                   rank its block, then reduces what it got); else a ring streamed like
//                   all-reduce's first phase: each segment is reduced as it lands and
//                   forwarded at once.
//   all-gather      everyone-to-everyone up to small_allgather_bytes, else ring; this
//                   rank's block leaves from the input while it is copied into place.
//   broadcast       binomial tree up to small_broadcast_bytes, else a pipelined chain.
//   all-to-all(v)   pairwise rounds (rank r sends to r + k and receives from r - k in
//                   round k), as many in flight as alltoall_bytes_in_flight allows
//                   (all of them when small); the rank's own block is copied locally
//                   while they move.
//   barrier         dissemination (ceil(log2 n) rounds of empty messages).
// Results are identical on every rank (bit for bit, for floating point too; NaN aside
// for max and min): each element's reduction order is fixed by the algorithm, not by
// timing, and where two ranks combine the same pair of operands they do it in the
// same commutative operation.
//
// bf16 compression (AllReduceOptions::bf16_compression, float32 only): values travel
// as bfloat16 and are reduced in float32; every partial sum is rounded to bfloat16
// before it is sent, and the result is rounded to bfloat16 precision on every rank.
//
// Asynchronous calls (…Async) queue the operation for the communicator's worker thread
// and return a WorkHandle at once, so communication overlaps the caller's computation;
// buffers must stay untouched until Wait() returns. Synchronous calls run on the
// caller's thread when nothing is queued (no hand-off on the latency path), else they
// queue behind the pending work. Operations run one at a time in call order.
//
// Failure: a transport failure (a peer died, a timeout, an RDMA error) fails the
// operation with the transport's error, annotated with the operation, and aborts the
// communicator: every later operation fails with FAILED_PRECONDITION naming the first
// error. Invalid arguments fail that call only.
//
// Thread-safety: thread-safe; calls from several threads are serialized in an order
// the caller must keep identical on every rank.
//
// Example:
//   ASSIGN_OR_RETURN(std::unique_ptr<Communicator> comm,
//                    Communicator::Create(std::move(transport)));
//   WorkHandle grads = comm->AllReduceAsync(grad.data(), grad.size(), DataType::kFloat32,
//                                           ReduceOp::kSum);
//   ... compute ...
//   RETURN_IF_ERROR(grads.Wait());
#ifndef WEFT_DATAPATH_COLLECTIVES_H_
#define WEFT_DATAPATH_COLLECTIVES_H_

#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "datapath/reduce.h"
#include "datapath/transport.h"

namespace weft::datapath {

namespace collectives_internal {
struct Context;
}  // namespace collectives_internal

struct CommunicatorOptions {
  // All-reduce: recursive doubling up to this many bytes per rank; two rounds or the
  // ring above (direct_allreduce_bytes).
  size_t small_allreduce_bytes = 64 << 10;
  // All-reduce with more than two ranks: two everyone-to-everyone rounds (reduce-scatter,
  // then all-gather) above small_allreduce_bytes and up to this many bytes, ring above.
  // Fewer dependent steps than the ring, for the same bytes (docs/benchmarks.md).
  size_t direct_allreduce_bytes = 4 << 20;
  // All-reduce with 4, 8, 16... ranks: recursive halving then recursive doubling above
  // small_allreduce_bytes and up to this many bytes; two rounds (direct_allreduce_bytes)
  // or the ring above: pairwise exchanges only, where the two rounds lost from 4 MiB
  // (docs/benchmarks.md has the A/B that set the bounds).
  size_t halving_allreduce_bytes = 1 << 20;
  // All-gather: everyone-to-everyone up to this many output bytes, ring above: one
  // round instead of n - 1 dependent ring steps (docs/benchmarks.md, the A/B).
  size_t small_allgather_bytes = 4 << 20;
  // Reduce-scatter: everyone-to-everyone up to this many input bytes (with more than
  // two ranks), ring above: one round instead of n - 1 ring steps (docs/benchmarks.md,
  // the A/B).
  size_t small_reduce_scatter_bytes = 4 << 20;
  // All-to-all(v): the next pairwise round is posted only while the rounds in flight
  // send (and receive) at most this many bytes; one round is always in flight. Fewer
  // bytes queued in the network stack keep the copies in cache (docs/benchmarks.md has
  // the CPU it saves against every round at once).
  size_t alltoall_bytes_in_flight = 1 << 20;
  // Broadcast: binomial tree up to this many bytes, pipelined chain above.
  size_t small_broadcast_bytes = 64 << 10;
  // Ring and chain steps move their data in messages of at most this size.
  size_t segment_bytes = 256 << 10;
  // All-reduce and reduce-scatter rings: segments in flight towards this rank at once.
  size_t ring_window = 4;
  // AllReduceCoalesced packs tensors into buckets of up to this many bytes.
  size_t bucket_bytes = 4 << 20;
};

struct AllReduceOptions {
  // float32 only: move bfloat16 on the wire (half the bytes, ~3 significant digits).
  bool bf16_compression = false;
};

// One tensor of an AllReduceCoalesced call: `count` elements at `data`.
struct TensorRef {
  void* data = nullptr;
  size_t count = 0;
};

// The outcome of an asynchronous operation. Copyable; all copies see the same result.
class WorkHandle {
 public:
  WorkHandle() = default;
  // Blocks until the operation has run; returns its status. A default-constructed
  // handle returns FAILED_PRECONDITION.
  absl::Status Wait() const;
  bool done() const;

 private:
  friend class Communicator;
  struct State;
  explicit WorkHandle(std::shared_ptr<State> state) : state_(std::move(state)) {}
  std::shared_ptr<State> state_;
};

class Communicator {
 public:
  static absl::StatusOr<std::unique_ptr<Communicator>> Create(
      std::unique_ptr<Transport> transport, const CommunicatorOptions& options = {});
  // Runs what is queued, then stops the worker.
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  // "tcp" or "rc".
  absl::string_view transport_name() const { return transport_->name(); }

  // Keeps [data, data + num_bytes) registered with the NIC for repeated use (RC; a
  // no-op over TCP). For buffers passed to many operations, e.g. gradient buckets.
  absl::Status RegisterBuffer(void* data, size_t num_bytes);
  absl::Status UnregisterBuffer(void* data);

  // In place: data[i] = op over ranks of data[i], for i < count.
  absl::Status AllReduce(void* data, size_t count, DataType type, ReduceOp op,
                         const AllReduceOptions& options = {});
  // Every tensor all-reduced in place; small tensors travel together in buckets.
  absl::Status AllReduceCoalesced(absl::Span<const TensorRef> tensors, DataType type, ReduceOp op,
                                  const AllReduceOptions& options = {});
  // input holds size() blocks of count elements; output gets this rank's block,
  // reduced over ranks. In place, output is input's block rank(); any other overlap
  // is INVALID_ARGUMENT.
  absl::Status ReduceScatter(const void* input, void* output, size_t count, DataType type,
                             ReduceOp op);
  // output gets size() blocks of count elements, block r from rank r's input. In place,
  // input is output's block rank(); any other overlap is INVALID_ARGUMENT.
  absl::Status AllGather(const void* input, void* output, size_t count, DataType type);
  // Every rank's data becomes root's.
  absl::Status Broadcast(void* data, size_t count, DataType type, int root);
  // input and output hold size() blocks of count elements; output block r comes from
  // rank r's input block rank(). input and output must not overlap.
  absl::Status AllToAll(const void* input, void* output, size_t count, DataType type);
  // As AllToAll with per-rank element counts; blocks are packed in rank order.
  // send_counts[j] on this rank must equal recv_counts[this rank] on rank j.
  absl::Status AllToAllV(const void* input, absl::Span<const size_t> send_counts, void* output,
                         absl::Span<const size_t> recv_counts, DataType type);
  absl::Status Barrier();

  WorkHandle AllReduceAsync(void* data, size_t count, DataType type, ReduceOp op,
                            const AllReduceOptions& options = {});
  WorkHandle AllReduceCoalescedAsync(std::vector<TensorRef> tensors, DataType type, ReduceOp op,
                                     const AllReduceOptions& options = {});
  WorkHandle ReduceScatterAsync(const void* input, void* output, size_t count, DataType type,
                                ReduceOp op);
  WorkHandle AllGatherAsync(const void* input, void* output, size_t count, DataType type);
  WorkHandle BroadcastAsync(void* data, size_t count, DataType type, int root);
  WorkHandle AllToAllAsync(const void* input, void* output, size_t count, DataType type);
  WorkHandle AllToAllVAsync(const void* input, std::vector<size_t> send_counts, void* output,
                            std::vector<size_t> recv_counts, DataType type);
  WorkHandle BarrierAsync();

  // How many times each algorithm has run on this communicator, by "op/algorithm":
  // all_reduce/{recursive_doubling,halving,direct,ring}, reduce_scatter/{direct,ring},
  // all_gather/{direct,ring}, broadcast/{tree,chain}, all_to_all/pairwise,
  // barrier/dissemination. What needs no transfer (one rank, zero bytes) counts none.
  // Thread-safe; an operation has counted by the time its call (or Wait) returns, so a
  // test or weft-perf can tell which algorithm ran.
  std::map<std::string, uint64_t> AlgorithmsRun() const ABSL_LOCKS_EXCLUDED(algorithms_mu_);

 private:
  void CountAlgorithm(const char* name) ABSL_LOCKS_EXCLUDED(algorithms_mu_);

  using Op = std::function<absl::Status()>;

  Communicator(std::unique_ptr<Transport> transport, const CommunicatorOptions& options);
  absl::Status Run(Op op);
  WorkHandle Enqueue(Op op);
  absl::Status Execute(const Op& op);
  void WorkerLoop();

  absl::Status CheckAllReduce(DataType type, const AllReduceOptions& options) const;
  absl::Status CheckAllGather(const void* input, const void* output, size_t count,
                              DataType type) const;
  absl::Status CheckReduceScatter(const void* input, const void* output, size_t count,
                                  DataType type) const;
  // `block` (one block) may overlap `whole` (size() blocks) only as whole's block rank().
  absl::Status CheckBlockInPlace(absl::string_view op, const void* whole,
                                 absl::string_view whole_name, const void* block,
                                 absl::string_view block_name, size_t block_bytes,
                                 size_t count) const;
  absl::Status CheckAllToAllV(absl::Span<const size_t> send_counts,
                              absl::Span<const size_t> recv_counts) const;

  // Each chooses the algorithm (datapath/collectives/*.h runs it), counts it and
  // annotates its error.
  absl::Status DoAllReduce(char* data, size_t count, DataType type, ReduceOp op, bool compress);
  absl::Status DoAllReduceCoalesced(absl::Span<const TensorRef> tensors, DataType type, ReduceOp op,
                                    bool compress);
  absl::Status DoReduceScatter(const char* input, char* output, size_t count, DataType type,
                               ReduceOp op);
  absl::Status DoAllGather(const char* input, char* output, size_t count, DataType type);
  absl::Status DoBroadcast(char* data, size_t count, DataType type, int root);
  absl::Status DoAllToAllV(const char* input, absl::Span<const size_t> send_counts, char* output,
                           absl::Span<const size_t> recv_counts, DataType type);
  absl::Status DoBarrier();

  const int rank_;
  const int size_;
  const CommunicatorOptions options_;
  std::unique_ptr<Transport> transport_;
  // After transport_: its scratch memory is unregistered from the transport first.
  std::unique_ptr<collectives_internal::Context> context_;

  struct Job {
    Op op;
    std::shared_ptr<WorkHandle::State> state;
  };
  absl::Mutex mu_;
  std::deque<Job> queue_ ABSL_GUARDED_BY(mu_);
  bool busy_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status aborted_ ABSL_GUARDED_BY(mu_);
  std::thread worker_;

  mutable absl::Mutex algorithms_mu_;
  std::map<std::string, uint64_t> algorithms_run_ ABSL_GUARDED_BY(algorithms_mu_);
};

}  // namespace weft::datapath

#endif  // WEFT_DATAPATH_COLLECTIVES_H_
