#include "datapath/collectives.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "common/status_macros.h"

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
Range Chunk(size_t total, int n, int i) {
  const size_t base = total / n;
  const size_t extra = total % n;
  const size_t index = static_cast<size_t>(i);
  return Range{index * base + std::min(index, extra), base + (index < extra ? 1 : 0)};
}

int Mod(int a, int n) { return ((a % n) + n) % n; }

absl::Status Annotate(const absl::Status& status, const std::string& what, int rank, int size) {
  if (status.ok()) return status;
  return absl::Status(status.code(),
                      absl::StrCat(what, " on rank ", rank, " of ", size, ": ", status.message()));
}

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

}  // namespace

Communicator::Scratch::~Scratch() {
  if (data_ != nullptr) {
    (void)transport_->UnregisterMemory(data_);
    std::free(data_);
  }
}

absl::StatusOr<char*> Communicator::Scratch::Get(size_t num_bytes) {
  if (num_bytes <= capacity_) return data_;
  size_t capacity = std::max<size_t>({num_bytes, capacity_ * 2, 64 << 10});
  capacity = (capacity + 4095) & ~size_t{4095};
  if (data_ != nullptr) {
    RETURN_IF_ERROR(transport_->UnregisterMemory(data_));
    std::free(data_);
    data_ = nullptr;
    capacity_ = 0;
  }
  char* data = static_cast<char*>(std::aligned_alloc(4096, capacity));
  if (data == nullptr) {
    return absl::ResourceExhaustedError(
        absl::StrCat("cannot allocate ", capacity, " bytes of collective scratch space"));
  }
  absl::Status registered = transport_->RegisterMemory(data, capacity);
  if (!registered.ok()) {
    std::free(data);
    return registered;
  }
  data_ = data;
  capacity_ = capacity;
  return data_;
}

void Communicator::CopyWhileProgressing(char* dst, const char* src, size_t num_bytes) {
  // A piece at a time, so the sockets keep being served between pieces.
  constexpr size_t kPiece = 256 << 10;
  for (size_t done = 0; done < num_bytes; done += kPiece) {
    std::memcpy(dst + done, src + done, std::min(kPiece, num_bytes - done));
    transport_->Progress();
  }
}

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
      recv_scratch_(transport_.get()),
      send_scratch_(transport_.get()),
      accumulate_scratch_(transport_.get()),
      fusion_scratch_(transport_.get()) {
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
  absl::Status status = small     ? AllReduceRecursiveDoubling(data, count, type, op, compress)
                        : halving ? AllReduceHalving(data, count, type, op)
                        : direct  ? AllReduceDirect(data, count, type, op)
                                  : AllReduceRing(data, count, type, op, compress);
  if (status.ok()) return status;
  return Annotate(
      status,
      absl::StrCat("all_reduce of ", count, " ", DataTypeName(type), " (", ReduceOpName(op), ")"),
      rank_, size_);
}

absl::Status Communicator::AllReduceRecursiveDoubling(char* data, size_t count, DataType type,
                                                      ReduceOp op, bool compress) {
  const size_t element_bytes = DataTypeBytes(type);
  const size_t wire_bytes = count * (compress ? 2 : element_bytes);
  ASSIGN_OR_RETURN(char* recv, recv_scratch_.Get(wire_bytes));
  char* send = data;
  if (compress) {
    ASSIGN_OR_RETURN(send, send_scratch_.Get(wire_bytes));
  }
  float* values = reinterpret_cast<float*>(data);
  auto prepare_send = [&] {
    if (!compress) return;
    RoundToBf16(values, count);
    CompressBf16(values, reinterpret_cast<uint16_t*>(send), count);
  };
  auto reduce_received = [&] {
    if (compress) {
      ReduceBf16Into(op, values, reinterpret_cast<const uint16_t*>(recv), count);
    } else {
      ReduceInto(type, op, data, recv, count);
    }
  };

  int pof2 = 1;
  while (pof2 * 2 <= size_) pof2 *= 2;
  const int rem = size_ - pof2;
  int new_rank;
  // Fold the ranks beyond a power of two into their neighbours.
  if (rank_ < 2 * rem) {
    if (rank_ % 2 == 0) {
      prepare_send();
      RETURN_IF_ERROR(transport_->Send(rank_ + 1, send, wire_bytes));
      new_rank = -1;
    } else {
      RETURN_IF_ERROR(transport_->Recv(rank_ - 1, recv, wire_bytes));
      reduce_received();
      new_rank = rank_ / 2;
    }
  } else {
    new_rank = rank_ - rem;
  }
  if (new_rank >= 0) {
    for (int mask = 1; mask < pof2; mask <<= 1) {
      const int new_peer = new_rank ^ mask;
      const int peer = new_peer < rem ? new_peer * 2 + 1 : new_peer + rem;
      prepare_send();
      Requests requests(*transport_);
      requests.Recv(peer, recv, wire_bytes);
      requests.Send(peer, send, wire_bytes);
      RETURN_IF_ERROR(requests.WaitAll());
      // Both partners reduce the same two operands: a op b == b op a exactly, so the
      // results agree bit for bit.
      reduce_received();
    }
  }
  if (compress) RoundToBf16(values, count);
  if (rank_ < 2 * rem) {
    if (rank_ % 2 == 1) {
      if (compress) CompressBf16(values, reinterpret_cast<uint16_t*>(send), count);
      RETURN_IF_ERROR(transport_->Send(rank_ - 1, send, wire_bytes));
    } else if (compress) {
      RETURN_IF_ERROR(transport_->Recv(rank_ + 1, recv, wire_bytes));
      DecompressBf16(reinterpret_cast<const uint16_t*>(recv), values, count);
    } else {
      RETURN_IF_ERROR(transport_->Recv(rank_ + 1, data, wire_bytes));
    }
  }
  return absl::OkStatus();
}

absl::Status Communicator::AllReduceDirect(char* data, size_t count, DataType type,
                                           ReduceOp op) {
  const int n = size_;
  const size_t element_bytes = DataTypeBytes(type);
  auto chunk_data = [&](int rank) { return data + Chunk(count, n, rank).offset * element_bytes; };
  auto chunk_count = [&](int rank) { return Chunk(count, n, rank).count; };
  // Returns once its sends are out, so the all-gather may land on the chunks they left from.
  RETURN_IF_ERROR(ReduceScatterRound(chunk_data, chunk_count, chunk_data(rank_),
                                     chunk_data(rank_), type, op));
  // All-gather: every rank's reduced chunk lands in place.
  Requests requests(*transport_);
  for (int k = 1; k < n; ++k) {
    const int from = Mod(rank_ - k, n);
    requests.Recv(from, chunk_data(from), chunk_count(from) * element_bytes);
  }
  for (int k = 1; k < n; ++k) {
    requests.Send(Mod(rank_ + k, n), chunk_data(rank_), chunk_count(rank_) * element_bytes);
  }
  return requests.WaitAll();
}

absl::Status Communicator::AllReduceHalving(char* data, size_t count, DataType type,
                                            ReduceOp op) {
  const int n = size_;  // a power of two
  const size_t element_bytes = DataTypeBytes(type);
  // Element offset where chunk `chunk` starts (n: the end); ranges of chunks are contiguous.
  auto begin = [&](int chunk) { return chunk == n ? count : Chunk(count, n, chunk).offset; };
  auto bytes = [&](int first, int last) { return (begin(last) - begin(first)) * element_bytes; };
  auto at = [&](int chunk) { return data + begin(chunk) * element_bytes; };
  ASSIGN_OR_RETURN(char* recv, recv_scratch_.Get(bytes(0, n / 2)));  // the larger half
  // Reduce-scatter by recursive halving: partners rank ^ mask swap halves of the chunks
  // they still hold, and each reduces the half it keeps, so this rank ends holding chunk
  // rank reduced over all ranks. One rank reduces each chunk: every rank ends with the
  // same bits once the chunks are gathered.
  int first = 0;
  int last = n;
  for (int mask = n / 2; mask >= 1; mask /= 2) {
    const int peer = rank_ ^ mask;
    const int middle = first + (last - first) / 2;
    const bool keep_low = (rank_ & mask) == 0;
    const int keep_first = keep_low ? first : middle;
    const int keep_last = keep_low ? middle : last;
    const int give_first = keep_low ? middle : first;
    const int give_last = keep_low ? last : middle;
    Requests requests(*transport_);
    requests.Recv(peer, recv, bytes(keep_first, keep_last));
    requests.Send(peer, at(give_first), bytes(give_first, give_last));
    RETURN_IF_ERROR(requests.WaitAll());
    ReduceInto(type, op, at(keep_first), recv, bytes(keep_first, keep_last) / element_bytes);
    first = keep_first;
    last = keep_last;
  }
  // All-gather by recursive doubling: partners swap the reduced chunks they hold, in place.
  for (int mask = 1; mask < n; mask *= 2) {
    const int peer = rank_ ^ mask;
    const int span = last - first;
    const int peer_first = (rank_ & mask) == 0 ? last : first - span;
    Requests requests(*transport_);
    requests.Recv(peer, at(peer_first), bytes(peer_first, peer_first + span));
    requests.Send(peer, at(first), bytes(first, last));
    RETURN_IF_ERROR(requests.WaitAll());
    first = std::min(first, peer_first);
    last = first + 2 * span;
  }
  return absl::OkStatus();
}

absl::Status Communicator::AllReduceRing(char* data, size_t count, DataType type, ReduceOp op,
                                         bool compress) {
  if (!compress) return AllReduceRingStreamed(data, count, type, op);
  const int n = size_;
  const size_t element_bytes = DataTypeBytes(type);
  const size_t wire_element = compress ? 2 : element_bytes;
  const size_t max_chunk = Chunk(count, n, 0).count;
  const size_t segment = std::max<size_t>(1, options_.segment_bytes / wire_element);
  ASSIGN_OR_RETURN(char* recv, recv_scratch_.Get(max_chunk * wire_element));
  char* send = nullptr;
  if (compress) {
    ASSIGN_OR_RETURN(send, send_scratch_.Get(max_chunk * wire_element));
  }
  const int next = Mod(rank_ + 1, n);
  const int prev = Mod(rank_ - 1, n);
  auto element = [&](size_t index) { return data + index * element_bytes; };

  // Reduce-scatter: after step s, chunk (rank - s - 1) holds s + 2 ranks' values.
  for (int step = 0; step < n - 1; ++step) {
    const Range out = Chunk(count, n, Mod(rank_ - step, n));
    const Range in = Chunk(count, n, Mod(rank_ - step - 1, n));
    const char* source = element(out.offset);
    if (compress) {
      CompressBf16(reinterpret_cast<const float*>(source), reinterpret_cast<uint16_t*>(send),
                   out.count);
      source = send;
    }
    Requests requests(*transport_);
    const size_t first_recv = requests.next_index();
    for (size_t done = 0; done < in.count; done += segment) {
      const size_t len = std::min(segment, in.count - done);
      requests.Recv(prev, recv + done * wire_element, len * wire_element);
    }
    for (size_t done = 0; done < out.count; done += segment) {
      const size_t len = std::min(segment, out.count - done);
      requests.Send(next, source + done * wire_element, len * wire_element);
    }
    // Reduce each segment as soon as it lands, while the rest are still moving.
    size_t index = first_recv;
    for (size_t done = 0; done < in.count; done += segment, ++index) {
      const size_t len = std::min(segment, in.count - done);
      RETURN_IF_ERROR(requests.WaitOne(index));
      if (compress) {
        ReduceBf16Into(op, reinterpret_cast<float*>(element(in.offset + done)),
                       reinterpret_cast<const uint16_t*>(recv + done * wire_element), len);
      } else {
        ReduceInto(type, op, element(in.offset + done), recv + done * wire_element, len);
      }
    }
    RETURN_IF_ERROR(requests.WaitAll());
  }

  // This rank now owns chunk rank + 1; with compression everyone gets its bf16 form.
  if (compress) {
    const Range own = Chunk(count, n, Mod(rank_ + 1, n));
    RoundToBf16(reinterpret_cast<float*>(element(own.offset)), own.count);
  }

  // All-gather: pass the reduced chunks around the ring.
  for (int step = 0; step < n - 1; ++step) {
    const Range out = Chunk(count, n, Mod(rank_ + 1 - step, n));
    const Range in = Chunk(count, n, Mod(rank_ - step, n));
    Requests requests(*transport_);
    if (!compress) {
      requests.Recv(prev, element(in.offset), in.count * element_bytes);
      requests.Send(next, element(out.offset), out.count * element_bytes);
      RETURN_IF_ERROR(requests.WaitAll());
      continue;
    }
    CompressBf16(reinterpret_cast<const float*>(element(out.offset)),
                 reinterpret_cast<uint16_t*>(send), out.count);
    const size_t first_recv = requests.next_index();
    for (size_t done = 0; done < in.count; done += segment) {
      const size_t len = std::min(segment, in.count - done);
      requests.Recv(prev, recv + done * 2, len * 2);
    }
    for (size_t done = 0; done < out.count; done += segment) {
      requests.Send(next, send + done * 2, std::min(segment, out.count - done) * 2);
    }
    size_t index = first_recv;
    for (size_t done = 0; done < in.count; done += segment, ++index) {
      const size_t len = std::min(segment, in.count - done);
      RETURN_IF_ERROR(requests.WaitOne(index));
      DecompressBf16(reinterpret_cast<const uint16_t*>(recv + done * 2),
                     reinterpret_cast<float*>(element(in.offset + done)), len);
    }
    RETURN_IF_ERROR(requests.WaitAll());
  }
  return absl::OkStatus();
}

absl::Status Communicator::AllReduceRingStreamed(char* data, size_t count, DataType type,
                                                 ReduceOp op) {
  const int n = size_;
  const size_t element_bytes = DataTypeBytes(type);
  const size_t segment = std::max<size_t>(1, options_.segment_bytes / element_bytes);
  const size_t window = std::max<size_t>(2, options_.ring_window);
  // Reduce in blocks small enough to keep the wire moving between them.
  const size_t reduce_block = std::max<size_t>(1, (64 << 10) / element_bytes);
  ASSIGN_OR_RETURN(char* scratch, recv_scratch_.Get(window * segment * element_bytes));
  const int next = Mod(rank_ + 1, n);
  const int prev = Mod(rank_ - 1, n);
  const int stages = 2 * (n - 1);
  auto element = [&](size_t index) { return data + index * element_bytes; };
  // Stage t < n-1 is reduce-scatter step t, the rest all-gather steps. Each stage sends
  // the chunk the previous stage received (the first sends this rank's own chunk).
  auto is_reduce = [&](int t) { return t < n - 1; };
  auto recv_chunk = [&](int t) {
    return Chunk(count, n, is_reduce(t) ? Mod(rank_ - t - 1, n) : Mod(rank_ - (t - n + 1), n));
  };
  auto send_chunk = [&](int t) { return t == 0 ? Chunk(count, n, rank_) : recv_chunk(t - 1); };

  Requests requests(*transport_);
  std::vector<std::vector<size_t>> sends(stages), recvs(stages);
  // Reduce-scatter receives land in a ring of `window` segment slots, posted in stage
  // order as slots free up: a small, cache-warm landing zone however large the buffer.
  struct Pending {
    int stage;
    size_t offset;  // elements into the stage's chunk
    size_t len;
  };
  std::vector<Pending> reduce_recvs;
  for (int t = 0; t < n - 1; ++t) {
    const Range chunk = recv_chunk(t);
    for (size_t done = 0; done < chunk.count; done += segment) {
      reduce_recvs.push_back(Pending{t, done, std::min(segment, chunk.count - done)});
    }
  }
  size_t posted = 0;
  size_t reduced = 0;
  auto post_reduce_recvs = [&] {
    for (; posted < reduce_recvs.size() && posted < reduced + window; ++posted) {
      const Pending& p = reduce_recvs[posted];
      recvs[p.stage].push_back(requests.Recv(
          prev, scratch + (posted % window) * segment * element_bytes, p.len * element_bytes));
    }
  };
  auto post_send = [&](int t, size_t done) {
    const Range chunk = send_chunk(t);
    const size_t len = std::min(segment, chunk.count - done);
    sends[t].push_back(requests.Send(next, element(chunk.offset + done), len * element_bytes));
  };

  post_reduce_recvs();
  for (size_t done = 0; done < send_chunk(0).count; done += segment) post_send(0, done);
  for (int t = 0; t < stages; ++t) {
    const Range chunk = recv_chunk(t);
    if (!is_reduce(t)) {
      // The all-gather lands in place: the chunk's reduce-scatter send must be out first.
      for (size_t index : sends[t - (n - 1)]) RETURN_IF_ERROR(requests.WaitOne(index));
      for (size_t done = 0; done < chunk.count; done += segment) {
        recvs[t].push_back(requests.Recv(prev, element(chunk.offset + done),
                                         std::min(segment, chunk.count - done) * element_bytes));
      }
    }
    size_t k = 0;
    for (size_t done = 0; done < chunk.count; done += segment, ++k) {
      const size_t len = std::min(segment, chunk.count - done);
      RETURN_IF_ERROR(requests.WaitOne(recvs[t][k]));
      if (is_reduce(t)) {
        const char* received = scratch + (reduced % window) * segment * element_bytes;
        for (size_t b = 0; b < len; b += reduce_block) {
          const size_t block = std::min(reduce_block, len - b);
          ReduceInto(type, op, element(chunk.offset + done + b), received + b * element_bytes,
                     block);
          transport_->Progress();
        }
        ++reduced;
        post_reduce_recvs();
      }
      // Forward the segment at once: the next stage streams behind this one.
      if (t + 1 < stages) post_send(t + 1, done);
    }
  }
  return requests.WaitAll();
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
    ASSIGN_OR_RETURN(char* bucket, fusion_scratch_.Get(bucket_count * element_bytes));
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
  const absl::Status status = direct ? ReduceScatterDirect(input, output, count, type, op)
                                     : ReduceScatterRing(input, output, count, type, op);
  return Annotate(status,
                  absl::StrCat("reduce_scatter of ", count, " ", DataTypeName(type), " per rank (",
                               ReduceOpName(op), ")"),
                  rank_, size_);
}

absl::Status Communicator::ReduceScatterDirect(const char* input, char* output, size_t count,
                                               DataType type, ReduceOp op) {
  const size_t block_bytes = count * DataTypeBytes(type);
  auto block = [&](int rank) { return input + static_cast<size_t>(rank) * block_bytes; };
  return ReduceScatterRound(block, [&](int) { return count; }, block(rank_), output, type, op);
}

absl::Status Communicator::ReduceScatterRound(absl::FunctionRef<const char*(int)> block,
                                              absl::FunctionRef<size_t(int)> block_count,
                                              const char* own_part, char* own, DataType type,
                                              ReduceOp op) {
  const int n = size_;
  const size_t element_bytes = DataTypeBytes(type);
  const size_t own_count = block_count(rank_);
  const size_t own_bytes = own_count * element_bytes;
  ASSIGN_OR_RETURN(char* recv, recv_scratch_.Get((n - 1) * own_bytes));
  Requests requests(*transport_);
  // recv slot k - 1 holds rank (rank - k)'s contribution.
  std::vector<size_t> recvs;
  for (int k = 1; k < n; ++k) {
    recvs.push_back(requests.Recv(Mod(rank_ - k, n), recv + (k - 1) * own_bytes, own_bytes));
  }
  for (int k = 1; k < n; ++k) {
    const int to = Mod(rank_ + k, n);
    requests.Send(to, block(to), block_count(to) * element_bytes);
  }
  if (own != own_part) std::memcpy(own, own_part, own_bytes);
  // A fixed order (own part, then rank - 1, rank - 2, ...) whatever lands first; only
  // this rank reduces its block, so where it is shared every rank gets the same bits.
  for (int k = 1; k < n; ++k) {
    RETURN_IF_ERROR(requests.WaitOne(recvs[k - 1]));
    ReduceInto(type, op, own, recv + (k - 1) * own_bytes, own_count);
  }
  return requests.WaitAll();
}

absl::Status Communicator::ReduceScatterRing(const char* input, char* output, size_t count,
                                             DataType type, ReduceOp op) {
  const int n = size_;
  const int steps = n - 1;
  const size_t element_bytes = DataTypeBytes(type);
  const size_t block_bytes = count * element_bytes;
  const size_t segment = std::max<size_t>(1, options_.segment_bytes / element_bytes);
  const size_t segments = (count + segment - 1) / segment;
  const size_t window = std::max<size_t>(2, options_.ring_window);
  const size_t reduce_block = std::max<size_t>(1, (64 << 10) / element_bytes);
  const int next = Mod(rank_ + 1, n);
  const int prev = Mod(rank_ - 1, n);
  ASSIGN_OR_RETURN(char* scratch, recv_scratch_.Get(window * segment * element_bytes));
  char* accumulate = nullptr;
  if (steps > 1) {
    ASSIGN_OR_RETURN(accumulate, accumulate_scratch_.Get(2 * block_bytes));
  }
  // Step t sends the partial of block (rank - t - 1) and receives the partial of block
  // (rank - t - 2), to which it adds this rank's input: into an accumulator (two,
  // alternating) or, at the last step, the output.
  auto target = [&](int t) {
    return t == steps - 1 ? output : accumulate + static_cast<size_t>(t % 2) * block_bytes;
  };
  auto source = [&](int t) -> const char* {
    return t == 0 ? input + static_cast<size_t>(Mod(rank_ - 1, n)) * block_bytes : target(t - 1);
  };
  auto length = [&](size_t d) { return std::min(segment, count - d * segment); };

  Requests requests(*transport_);
  std::vector<std::vector<size_t>> sends(steps);
  // Receives land in a ring of `window` segment slots, posted in (step, segment) order
  // as slots free up.
  std::vector<size_t> recvs(steps * segments);
  size_t posted = 0;
  size_t reduced = 0;
  auto post_recvs = [&] {
    for (; posted < recvs.size() && posted < reduced + window; ++posted) {
      recvs[posted] = requests.Recv(prev, scratch + (posted % window) * segment * element_bytes,
                                    length(posted % segments) * element_bytes);
    }
  };
  auto post_send = [&](int t, size_t d) {
    sends[t].push_back(requests.Send(next, source(t) + d * segment * element_bytes,
                                     length(d) * element_bytes));
  };

  post_recvs();
  for (size_t d = 0; d < segments; ++d) post_send(0, d);
  for (int t = 0; t < steps; ++t) {
    const char* mine = input + static_cast<size_t>(Mod(rank_ - t - 2, n)) * block_bytes;
    char* out = target(t);
    for (size_t d = 0; d < segments; ++d) {
      RETURN_IF_ERROR(requests.WaitOne(recvs[t * segments + d]));
      // The accumulator this step writes is the one step t - 1 sends from.
      if (t >= 2 && t < steps - 1) RETURN_IF_ERROR(requests.WaitOne(sends[t - 1][d]));
      const char* received = scratch + (reduced % window) * segment * element_bytes;
      const size_t offset = d * segment;
      for (size_t b = 0; b < length(d); b += reduce_block) {
        const size_t len = std::min(reduce_block, length(d) - b);
        char* dst = out + (offset + b) * element_bytes;
        const char* mine_part = mine + (offset + b) * element_bytes;
        if (dst != mine_part) std::memcpy(dst, mine_part, len * element_bytes);
        ReduceInto(type, op, dst, received + b * element_bytes, len);
        transport_->Progress();
      }
      ++reduced;
      post_recvs();
      // Forward the segment at once: the next step streams behind this one.
      if (t + 1 < steps) post_send(t + 1, d);
    }
  }
  return requests.WaitAll();
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
  Requests requests(*transport_);
  // This rank's block goes out from the input, so the network starts at once and the
  // copy into the output's own block overlaps it.
  const bool direct = block_bytes * n <= options_.small_allgather_bytes;
  CountAlgorithm(direct ? "all_gather/direct" : "all_gather/ring");
  if (direct) {
    for (int k = 1; k < n; ++k) {
      const int from = Mod(rank_ - k, n);
      requests.Recv(from, output + static_cast<size_t>(from) * block_bytes, block_bytes);
    }
    for (int k = 1; k < n; ++k) requests.Send(Mod(rank_ + k, n), input, block_bytes);
    if (own != input) CopyWhileProgressing(own, input, block_bytes);
  } else {
    const int next = Mod(rank_ + 1, n);
    const int prev = Mod(rank_ - 1, n);
    for (int step = 0; step < n - 1 && requests.status().ok(); ++step) {
      const int out_block = Mod(rank_ - step, n);
      const int in_block = Mod(rank_ - step - 1, n);
      requests.Recv(prev, output + static_cast<size_t>(in_block) * block_bytes, block_bytes);
      requests.Send(next, step == 0 ? input : output + static_cast<size_t>(out_block) * block_bytes,
                    block_bytes);
      if (step == 0 && own != input) CopyWhileProgressing(own, input, block_bytes);
      (void)requests.WaitAll();
    }
  }
  return Annotate(requests.WaitAll(),
                  absl::StrCat("all_gather of ", count, " ", DataTypeName(type), " per rank"),
                  rank_, size_);
}

absl::Status Communicator::DoBroadcast(char* data, size_t count, DataType type, int root) {
  const size_t num_bytes = count * DataTypeBytes(type);
  if (size_ == 1 || num_bytes == 0) return absl::OkStatus();
  const int n = size_;
  ScopedRegistration registration(*transport_, data, num_bytes);
  const int relative = Mod(rank_ - root, n);
  auto actual = [&](int relative_rank) { return Mod(relative_rank + root, n); };
  absl::Status status;
  const bool tree = num_bytes <= options_.small_broadcast_bytes;
  CountAlgorithm(tree ? "broadcast/tree" : "broadcast/chain");
  if (tree) {
    // Binomial tree: receive from the parent, then send to the children.
    int mask = 1;
    while (mask < n) {
      if (relative & mask) {
        status = transport_->Recv(actual(relative - mask), data, num_bytes);
        break;
      }
      mask <<= 1;
    }
    Requests requests(*transport_);
    for (mask >>= 1; mask > 0 && status.ok(); mask >>= 1) {
      if (relative + mask < n) requests.Send(actual(relative + mask), data, num_bytes);
    }
    absl::Status sent = requests.WaitAll();
    if (status.ok()) status = sent;
  } else {
    // Chain root -> root+1 -> ...: each segment is forwarded as soon as it arrives.
    const size_t segment = options_.segment_bytes;
    Requests requests(*transport_);
    std::vector<size_t> recv_index;
    if (relative > 0) {
      for (size_t done = 0; done < num_bytes; done += segment) {
        recv_index.push_back(requests.next_index());
        requests.Recv(actual(relative - 1), data + done, std::min(segment, num_bytes - done));
      }
    }
    size_t k = 0;
    for (size_t done = 0; done < num_bytes && status.ok(); done += segment, ++k) {
      if (relative > 0) status = requests.WaitOne(recv_index[k]);
      if (status.ok() && relative < n - 1) {
        requests.Send(actual(relative + 1), data + done, std::min(segment, num_bytes - done));
      }
    }
    absl::Status all = requests.WaitAll();
    if (status.ok()) status = all;
  }
  return Annotate(
      status, absl::StrCat("broadcast of ", count, " ", DataTypeName(type), " from rank ", root),
      rank_, size_);
}

absl::Status Communicator::DoAllToAllV(const char* input, absl::Span<const size_t> send_counts,
                                       char* output, absl::Span<const size_t> recv_counts,
                                       DataType type) {
  const size_t element_bytes = DataTypeBytes(type);
  const int n = size_;
  if (n > 1) CountAlgorithm("all_to_all/pairwise");
  std::vector<size_t> send_offset(n + 1, 0), recv_offset(n + 1, 0);
  for (int r = 0; r < n; ++r) {
    send_offset[r + 1] = send_offset[r] + send_counts[r] * element_bytes;
    recv_offset[r + 1] = recv_offset[r] + recv_counts[r] * element_bytes;
  }
  ScopedRegistration input_registration(*transport_, input, send_offset[n]);
  ScopedRegistration output_registration(*transport_, output, recv_offset[n]);
  Requests requests(*transport_);
  // Round k pairs every rank with rank + k (send) and rank - k (receive), so no rank is
  // everyone's first target. Rounds are posted while the ones in flight move at most
  // alltoall_bytes_in_flight each way (always at least one), which bounds the bytes
  // queued in the network stack and keeps the copies cache-friendly; a small exchange
  // posts every round at once.
  auto round_bytes = [&](int k) {
    const int from = Mod(rank_ - k, n);
    const int to = Mod(rank_ + k, n);
    return std::max(send_counts[to], recv_counts[from]) * element_bytes;
  };
  std::vector<size_t> round_requests;  // request indices of each posted round, two per round
  size_t bytes_in_flight = 0;
  int next_round = 1;
  auto post_rounds = [&] {
    for (; next_round < n; ++next_round) {
      const size_t bytes = round_bytes(next_round);
      if (bytes_in_flight > 0 && bytes_in_flight + bytes > options_.alltoall_bytes_in_flight) {
        return;
      }
      const int from = Mod(rank_ - next_round, n);
      const int to = Mod(rank_ + next_round, n);
      round_requests.push_back(
          requests.Recv(from, output + recv_offset[from], recv_counts[from] * element_bytes));
      round_requests.push_back(
          requests.Send(to, input + send_offset[to], send_counts[to] * element_bytes));
      bytes_in_flight += bytes;
    }
  };
  post_rounds();
  // This rank's own block is a local copy: do it while the network moves the rest.
  CopyWhileProgressing(output + recv_offset[rank_], input + send_offset[rank_],
                       send_counts[rank_] * element_bytes);
  for (int k = 1; k < n && requests.status().ok(); ++k) {
    (void)requests.WaitOne(round_requests[2 * (k - 1)]);
    (void)requests.WaitOne(round_requests[2 * (k - 1) + 1]);
    bytes_in_flight -= round_bytes(k);
    post_rounds();
  }
  return Annotate(
      requests.WaitAll(),
      absl::StrCat("all_to_all of ", send_offset[n] / std::max<size_t>(element_bytes, 1), " ",
                   DataTypeName(type)),
      rank_, size_);
}

absl::Status Communicator::DoBarrier() {
  if (size_ > 1) CountAlgorithm("barrier/dissemination");
  for (int distance = 1; distance < size_; distance <<= 1) {
    Requests requests(*transport_);
    requests.Recv(Mod(rank_ - distance, size_), nullptr, 0);
    requests.Send(Mod(rank_ + distance, size_), nullptr, 0);
    RETURN_IF_ERROR(Annotate(requests.WaitAll(), "barrier", rank_, size_));
  }
  return absl::OkStatus();
}

}  // namespace weft::datapath
