#include "datapath/collectives.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "common/status_macros.h"
#include "datapath/collectives/all_to_all.h"
#include "datapath/collectives/barrier.h"
#include "datapath/collectives/broadcast.h"
#include "datapath/collectives/context.h"
#include "datapath/collectives/direct.h"
#include "datapath/collectives/recursive.h"
#include "datapath/collectives/ring.h"

namespace weft::datapath {

struct WorkHandle::State {
  absl::Notification done;
  absl::Status status;
};

absl::Status WorkHandle::Wait() const {
  if (state_ == nullptr) return absl::FailedPreconditionError("empty WorkHandle");
  state_->done.WaitForNotification();
  return state_->status;
}

bool WorkHandle::done() const { return state_ != nullptr && state_->done.HasBeenNotified(); }

namespace {

using collectives_internal::ScopedRegistration;

absl::Status Annotate(const absl::Status& status, const std::string& what, int rank, int size) {
  if (status.ok()) return status;
  return absl::Status(status.code(),
                      absl::StrCat(what, " on rank ", rank, " of ", size, ": ", status.message()));
}

}  // namespace

absl::StatusOr<std::unique_ptr<Communicator>> Communicator::Create(
    std::unique_ptr<Transport> transport, const CommunicatorOptions& options) {
  if (transport == nullptr) return absl::InvalidArgumentError("no transport");
  if (options.segment_bytes < 64) {
    return absl::InvalidArgumentError(
        absl::StrCat("segment_bytes ", options.segment_bytes, " is below 64"));
  }
  return std::unique_ptr<Communicator>(new Communicator(std::move(transport), options));
}

Communicator::Communicator(std::unique_ptr<Transport> transport, const CommunicatorOptions& options)
    : rank_(transport->rank()),
      size_(transport->size()),
      options_(options),
      transport_(std::move(transport)),
      context_(std::make_unique<collectives_internal::Context>(*transport_, options.segment_bytes,
                                                               options.ring_window,
                                                               options.alltoall_bytes_in_flight)) {
  worker_ = std::thread([this] { WorkerLoop(); });
}

Communicator::~Communicator() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  worker_.join();
}

void Communicator::WorkerLoop() {
  while (true) {
    Job job;
    {
      absl::MutexLock lock(&mu_);
      auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return (!queue_.empty() && !busy_) || (stopping_ && queue_.empty() && !busy_);
      };
      mu_.Await(absl::Condition(&ready));
      if (queue_.empty()) return;
      job = std::move(queue_.front());
      queue_.pop_front();
      busy_ = true;
    }
    job.state->status = Execute(job.op);
    {
      absl::MutexLock lock(&mu_);
      busy_ = false;
    }
    job.state->done.Notify();
  }
}

absl::Status Communicator::Execute(const Op& op) {
  {
    absl::MutexLock lock(&mu_);
    if (!aborted_.ok()) {
      return absl::FailedPreconditionError(
          absl::StrCat("communicator aborted after an earlier failure: ", aborted_.message()));
    }
  }
  absl::Status status = op();
  if (!status.ok() && status.code() != absl::StatusCode::kInvalidArgument) {
    absl::MutexLock lock(&mu_);
    if (aborted_.ok()) aborted_ = status;
  }
  return status;
}

absl::Status Communicator::Run(Op op) {
  bool inline_run = false;
  {
    absl::MutexLock lock(&mu_);
    if (queue_.empty() && !busy_) {
      busy_ = true;
      inline_run = true;
    }
  }
  if (!inline_run) return Enqueue(std::move(op)).Wait();
  absl::Status status = Execute(op);
  absl::MutexLock lock(&mu_);
  busy_ = false;
  return status;
}

WorkHandle Communicator::Enqueue(Op op) {
  auto state = std::make_shared<WorkHandle::State>();
  absl::MutexLock lock(&mu_);
  queue_.push_back(Job{std::move(op), state});
  return WorkHandle(state);
}

// ---------------------------------------------------------------------------
// Argument checks.

absl::Status Communicator::CheckAllReduce(DataType type, const AllReduceOptions& options) const {
  if (options.bf16_compression && type != DataType::kFloat32) {
    return absl::InvalidArgumentError(
        absl::StrCat("bf16 compression applies to float32 payloads, not ", DataTypeName(type)));
  }
  return absl::OkStatus();
}

absl::Status Communicator::CheckAllToAllV(absl::Span<const size_t> send_counts,
                                          absl::Span<const size_t> recv_counts) const {
  if (send_counts.size() != static_cast<size_t>(size_) ||
      recv_counts.size() != static_cast<size_t>(size_)) {
    return absl::InvalidArgumentError(
        absl::StrCat("all_to_allv needs one send and one receive count per rank (", size_,
                     "); got ", send_counts.size(), " and ", recv_counts.size()));
  }
  if (send_counts[rank_] != recv_counts[rank_]) {
    return absl::InvalidArgumentError(absl::StrCat("all_to_allv: rank ", rank_, " sends itself ",
                                                   send_counts[rank_], " elements but expects ",
                                                   recv_counts[rank_]));
  }
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------
// Public entry points.

std::map<std::string, uint64_t> Communicator::AlgorithmsRun() const {
  absl::MutexLock lock(&algorithms_mu_);
  return algorithms_run_;
}

void Communicator::CountAlgorithm(const char* name) {
  absl::MutexLock lock(&algorithms_mu_);
  ++algorithms_run_[name];
}

absl::Status Communicator::RegisterBuffer(void* data, size_t num_bytes) {
  return Run([=] { return transport_->RegisterMemory(data, num_bytes); });
}

absl::Status Communicator::UnregisterBuffer(void* data) {
  return Run([=] { return transport_->UnregisterMemory(data); });
}

absl::Status Communicator::AllReduce(void* data, size_t count, DataType type, ReduceOp op,
                                     const AllReduceOptions& options) {
  RETURN_IF_ERROR(CheckAllReduce(type, options));
  return Run([=] {
    return DoAllReduce(static_cast<char*>(data), count, type, op, options.bf16_compression);
  });
}

absl::Status Communicator::AllReduceCoalesced(absl::Span<const TensorRef> tensors, DataType type,
                                              ReduceOp op, const AllReduceOptions& options) {
  RETURN_IF_ERROR(CheckAllReduce(type, options));
  return Run([=] { return DoAllReduceCoalesced(tensors, type, op, options.bf16_compression); });
}

absl::Status Communicator::CheckReduceScatter(const void* input, const void* output,
                                              size_t count, DataType type) const {
  return CheckBlockInPlace("reduce_scatter", input, "input", output, "output",
                           count * DataTypeBytes(type), count);
}

absl::Status Communicator::ReduceScatter(const void* input, void* output, size_t count,
                                         DataType type, ReduceOp op) {
  RETURN_IF_ERROR(CheckReduceScatter(input, output, count, type));
  return Run([=] {
    return DoReduceScatter(static_cast<const char*>(input), static_cast<char*>(output), count, type,
                           op);
  });
}

absl::Status Communicator::CheckAllGather(const void* input, const void* output, size_t count,
                                          DataType type) const {
  return CheckBlockInPlace("all_gather", output, "output", input, "input",
                           count * DataTypeBytes(type), count);
}

absl::Status Communicator::CheckBlockInPlace(absl::string_view op, const void* whole,
                                             absl::string_view whole_name, const void* block,
                                             absl::string_view block_name, size_t block_bytes,
                                             size_t count) const {
  const char* all = static_cast<const char*>(whole);
  const char* one = static_cast<const char*>(block);
  const char* own = all + static_cast<size_t>(rank_) * block_bytes;
  const bool overlap = one < all + block_bytes * size_ && all < one + block_bytes;
  if (block_bytes == 0 || !overlap || one == own) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      op, ": ", block_name, " overlaps ", whole_name, " but is not this rank's block; in place, ",
      block_name, " must be ", whole_name, " + ", rank_, " × ", count, " elements (rank ", rank_,
      " of ", size_, ")"));
}

absl::Status Communicator::AllGather(const void* input, void* output, size_t count, DataType type) {
  RETURN_IF_ERROR(CheckAllGather(input, output, count, type));
  return Run([=] {
    return DoAllGather(static_cast<const char*>(input), static_cast<char*>(output), count, type);
  });
}

absl::Status Communicator::Broadcast(void* data, size_t count, DataType type, int root) {
  if (root < 0 || root >= size_) {
    return absl::InvalidArgumentError(
        absl::StrCat("broadcast root ", root, " is not a rank of ", size_));
  }
  return Run([=] { return DoBroadcast(static_cast<char*>(data), count, type, root); });
}

absl::Status Communicator::AllToAll(const void* input, void* output, size_t count, DataType type) {
  std::vector<size_t> counts(size_, count);
  return Run([=] {
    return DoAllToAllV(static_cast<const char*>(input), counts, static_cast<char*>(output), counts,
                       type);
  });
}

absl::Status Communicator::AllToAllV(const void* input, absl::Span<const size_t> send_counts,
                                     void* output, absl::Span<const size_t> recv_counts,
                                     DataType type) {
  RETURN_IF_ERROR(CheckAllToAllV(send_counts, recv_counts));
  return Run([=] {
    return DoAllToAllV(static_cast<const char*>(input), send_counts, static_cast<char*>(output),
                       recv_counts, type);
  });
}

absl::Status Communicator::Barrier() {
  return Run([=] { return DoBarrier(); });
}

WorkHandle Communicator::AllReduceAsync(void* data, size_t count, DataType type, ReduceOp op,
                                        const AllReduceOptions& options) {
  absl::Status check = CheckAllReduce(type, options);
  return Enqueue([=] {
    RETURN_IF_ERROR(check);
    return DoAllReduce(static_cast<char*>(data), count, type, op, options.bf16_compression);
  });
}

WorkHandle Communicator::AllReduceCoalescedAsync(std::vector<TensorRef> tensors, DataType type,
                                                 ReduceOp op, const AllReduceOptions& options) {
  absl::Status check = CheckAllReduce(type, options);
  return Enqueue([=, tensors = std::move(tensors)] {
    RETURN_IF_ERROR(check);
    return DoAllReduceCoalesced(tensors, type, op, options.bf16_compression);
  });
}

WorkHandle Communicator::ReduceScatterAsync(const void* input, void* output, size_t count,
                                            DataType type, ReduceOp op) {
  absl::Status check = CheckReduceScatter(input, output, count, type);
  return Enqueue([=] {
    RETURN_IF_ERROR(check);
    return DoReduceScatter(static_cast<const char*>(input), static_cast<char*>(output), count, type,
                           op);
  });
}

WorkHandle Communicator::AllGatherAsync(const void* input, void* output, size_t count,
                                        DataType type) {
  absl::Status check = CheckAllGather(input, output, count, type);
  return Enqueue([=] {
    RETURN_IF_ERROR(check);
    return DoAllGather(static_cast<const char*>(input), static_cast<char*>(output), count, type);
  });
}

WorkHandle Communicator::BroadcastAsync(void* data, size_t count, DataType type, int root) {
  const int size = size_;
  return Enqueue([=] {
    if (root < 0 || root >= size) {
      return absl::InvalidArgumentError(
          absl::StrCat("broadcast root ", root, " is not a rank of ", size));
    }
    return DoBroadcast(static_cast<char*>(data), count, type, root);
  });
}

WorkHandle Communicator::AllToAllAsync(const void* input, void* output, size_t count,
                                       DataType type) {
  std::vector<size_t> counts(size_, count);
  return Enqueue([=] {
    return DoAllToAllV(static_cast<const char*>(input), counts, static_cast<char*>(output), counts,
                       type);
  });
}

WorkHandle Communicator::AllToAllVAsync(const void* input, std::vector<size_t> send_counts,
                                        void* output, std::vector<size_t> recv_counts,
                                        DataType type) {
  absl::Status check = CheckAllToAllV(send_counts, recv_counts);
  return Enqueue([=, send_counts = std::move(send_counts), recv_counts = std::move(recv_counts)] {
    RETURN_IF_ERROR(check);
    return DoAllToAllV(static_cast<const char*>(input), send_counts, static_cast<char*>(output),
                       recv_counts, type);
  });
}

WorkHandle Communicator::BarrierAsync() {
  return Enqueue([=] { return DoBarrier(); });
}

// ---------------------------------------------------------------------------
// All-reduce.

absl::Status Communicator::DoAllReduce(char* data, size_t count, DataType type, ReduceOp op,
                                       bool compress) {
  if (size_ == 1 || count == 0) return absl::OkStatus();
  const size_t num_bytes = count * DataTypeBytes(type);
  ScopedRegistration registration(*transport_, data, num_bytes);
  // With two ranks the ring is one exchange per phase already, so neither applies.
  const bool power_of_two = (size_ & (size_ - 1)) == 0;
  const bool halving = size_ > 2 && power_of_two && !compress &&
                       num_bytes <= options_.halving_allreduce_bytes;
  const bool direct = size_ > 2 && !compress && num_bytes <= options_.direct_allreduce_bytes;
  const bool small = num_bytes <= options_.small_allreduce_bytes;
  CountAlgorithm(small     ? "all_reduce/recursive_doubling"
                 : halving ? "all_reduce/halving"
                 : direct  ? "all_reduce/direct"
                           : "all_reduce/ring");
  collectives_internal::Context& ctx = *context_;
  absl::Status status =
      small     ? collectives_internal::AllReduceRecursiveDoubling(ctx, data, count, type, op,
                                                                   compress)
      : halving ? collectives_internal::AllReduceHalving(ctx, data, count, type, op)
      : direct  ? collectives_internal::AllReduceDirect(ctx, data, count, type, op)
                : collectives_internal::AllReduceRing(ctx, data, count, type, op, compress);
  if (status.ok()) return status;
  return Annotate(
      status,
      absl::StrCat("all_reduce of ", count, " ", DataTypeName(type), " (", ReduceOpName(op), ")"),
      rank_, size_);
}

absl::Status Communicator::DoAllReduceCoalesced(absl::Span<const TensorRef> tensors, DataType type,
                                                ReduceOp op, bool compress) {
  const size_t element_bytes = DataTypeBytes(type);
  size_t i = 0;
  while (i < tensors.size()) {
    // A tensor as large as a bucket goes alone, in place.
    if (tensors[i].count * element_bytes >= options_.bucket_bytes) {
      RETURN_IF_ERROR(
          DoAllReduce(static_cast<char*>(tensors[i].data), tensors[i].count, type, op, compress));
      ++i;
      continue;
    }
    // Pack consecutive small tensors into one bucket.
    size_t end = i;
    size_t bucket_count = 0;
    while (end < tensors.size() &&
           (bucket_count + tensors[end].count) * element_bytes <= options_.bucket_bytes) {
      bucket_count += tensors[end].count;
      ++end;
    }
    ASSIGN_OR_RETURN(char* bucket, context_->fusion_scratch.Get(bucket_count * element_bytes));
    size_t offset = 0;
    for (size_t t = i; t < end; ++t) {
      // An empty tensor may have no buffer at all (memcpy from null is undefined).
      if (tensors[t].count == 0) continue;
      std::memcpy(bucket + offset, tensors[t].data, tensors[t].count * element_bytes);
      offset += tensors[t].count * element_bytes;
    }
    RETURN_IF_ERROR(DoAllReduce(bucket, bucket_count, type, op, compress));
    offset = 0;
    for (size_t t = i; t < end; ++t) {
      if (tensors[t].count == 0) continue;
      std::memcpy(tensors[t].data, bucket + offset, tensors[t].count * element_bytes);
      offset += tensors[t].count * element_bytes;
    }
    i = end;
  }
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------
// Reduce-scatter, all-gather, broadcast, all-to-all, barrier.

absl::Status Communicator::DoReduceScatter(const char* input, char* output, size_t count,
                                           DataType type, ReduceOp op) {
  const size_t block_bytes = count * DataTypeBytes(type);
  if (size_ == 1) {
    if (block_bytes > 0 && output != input) std::memmove(output, input, block_bytes);
    return absl::OkStatus();
  }
  if (count == 0) return absl::OkStatus();
  ScopedRegistration input_registration(*transport_, input, block_bytes * size_);
  ScopedRegistration output_registration(*transport_, output, block_bytes);
  // With two ranks the ring is one exchange already, and its segments overlap the
  // reduction with the transfer; with more, it is n - 1 dependent steps.
  const bool direct = size_ > 2 && block_bytes * size_ <= options_.small_reduce_scatter_bytes;
  CountAlgorithm(direct ? "reduce_scatter/direct" : "reduce_scatter/ring");
  const absl::Status status =
      direct ? collectives_internal::ReduceScatterDirect(*context_, input, output, count, type, op)
             : collectives_internal::ReduceScatterRing(*context_, input, output, count, type, op);
  return Annotate(status,
                  absl::StrCat("reduce_scatter of ", count, " ", DataTypeName(type), " per rank (",
                               ReduceOpName(op), ")"),
                  rank_, size_);
}

absl::Status Communicator::DoAllGather(const char* input, char* output, size_t count,
                                       DataType type) {
  const size_t block_bytes = count * DataTypeBytes(type);
  char* own = output + static_cast<size_t>(rank_) * block_bytes;
  if (size_ == 1 || block_bytes == 0) {
    if (block_bytes > 0 && own != input) std::memmove(own, input, block_bytes);
    return absl::OkStatus();
  }
  const int n = size_;
  ScopedRegistration registration(*transport_, output, block_bytes * n);
  // In place the input is part of the output, registered above.
  ScopedRegistration input_registration(*transport_, input == own ? nullptr : input,
                                        block_bytes);
  const bool direct = block_bytes * n <= options_.small_allgather_bytes;
  CountAlgorithm(direct ? "all_gather/direct" : "all_gather/ring");
  const absl::Status status =
      direct ? collectives_internal::AllGatherDirect(*context_, input, output, block_bytes)
             : collectives_internal::AllGatherRing(*context_, input, output, block_bytes);
  return Annotate(status,
                  absl::StrCat("all_gather of ", count, " ", DataTypeName(type), " per rank"),
                  rank_, size_);
}

absl::Status Communicator::DoBroadcast(char* data, size_t count, DataType type, int root) {
  const size_t num_bytes = count * DataTypeBytes(type);
  if (size_ == 1 || num_bytes == 0) return absl::OkStatus();
  ScopedRegistration registration(*transport_, data, num_bytes);
  const bool tree = num_bytes <= options_.small_broadcast_bytes;
  CountAlgorithm(tree ? "broadcast/tree" : "broadcast/chain");
  const absl::Status status =
      tree ? collectives_internal::BroadcastTree(*context_, data, num_bytes, root)
           : collectives_internal::BroadcastChain(*context_, data, num_bytes, root);
  return Annotate(
      status, absl::StrCat("broadcast of ", count, " ", DataTypeName(type), " from rank ", root),
      rank_, size_);
}

absl::Status Communicator::DoAllToAllV(const char* input, absl::Span<const size_t> send_counts,
                                       char* output, absl::Span<const size_t> recv_counts,
                                       DataType type) {
  const size_t element_bytes = DataTypeBytes(type);
  if (size_ > 1) CountAlgorithm("all_to_all/pairwise");
  const size_t send_count = std::accumulate(send_counts.begin(), send_counts.end(), size_t{0});
  const size_t recv_count = std::accumulate(recv_counts.begin(), recv_counts.end(), size_t{0});
  ScopedRegistration input_registration(*transport_, input, send_count * element_bytes);
  ScopedRegistration output_registration(*transport_, output, recv_count * element_bytes);
  return Annotate(collectives_internal::AllToAllPairwise(*context_, input, send_counts, output,
                                                         recv_counts, type),
                  absl::StrCat("all_to_all of ", send_count, " ", DataTypeName(type)), rank_,
                  size_);
}

absl::Status Communicator::DoBarrier() {
  if (size_ > 1) CountAlgorithm("barrier/dissemination");
  return Annotate(collectives_internal::BarrierDissemination(*context_), "barrier", rank_, size_);
}

}  // namespace weft::datapath
