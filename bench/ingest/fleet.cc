#include "bench/ingest/fleet.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "bench/ingest/synthetic_node.h"
#include "grpcpp/grpcpp.h"
#include "proto/weft/v1/agent.grpc.pb.h"
#include "proto/weft/v1/agent.pb.h"

namespace weft::bench {
namespace {

constexpr double kGoldenRatioFraction = 0.6180339887498949;

std::string Describe(const grpc::Status& status) {
  return absl::StrCat("code ", status.error_code(), " \"", status.error_message(), "\"");
}

}  // namespace

// One simulated agent: a Register call, then one Connect stream, driven by the
// completions of its sender's queue. After Register() (called once, by GrowTo) every
// method runs on the node's sender thread, so the state needs no lock. At most one
// operation of each kind is pending: the Register, the stream's start, one write, or
// the stream's Finish, which is only started once no write is pending.
class Fleet::Node {
 public:
  Node(Fleet* fleet, int64_t index, int sender, std::unique_ptr<SyntheticNode> model,
       std::shared_ptr<grpc::Channel> channel)
      : fleet_(fleet),
        sender_(sender),
        slot_(SlotOf(index)),
        model_(std::move(model)),
        channel_(std::move(channel)),
        stub_(weft::v1::AgentService::NewStub(channel_)) {
    *register_request_.mutable_node() = model_->info();
  }

  int sender() const { return sender_; }
  int slot() const { return slot_; }
  const std::string& name() const { return model_->info().name(); }

  void Register() {
    // Like an agent that retries: a connection the busy controller is slow to accept
    // (its SETTINGS may take longer than a connect attempt's 20 s) is retried rather
    // than failing the node.
    register_context_.set_wait_for_ready(true);
    register_context_.set_deadline(
        absl::ToChronoTime(absl::Now() + fleet_->options_.register_timeout));
    register_call_ =
        stub_->PrepareAsyncRegister(&register_context_, register_request_, queue());
    register_call_->StartCall();
    register_call_->Finish(&register_response_, &register_status_, &register_tag_);
  }

  // Starts the write of the batch due now, unless one is pending or the stream is not
  // (or no longer) streaming.
  void TrySend(absl::Time now) {
    if (state_ != State::kStreaming) return;
    if (write_pending_) {
      fleet_->skipped_busy_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    write_pending_ = true;
    fleet_->batches_sent_.fetch_add(1, std::memory_order_relaxed);
    stream_->Write(model_->NextBatch(now), &write_tag_);
  }

  // The fleet is stopping: cancel what is pending; an idle stream is finished now, a
  // busy one when its pending operation completes.
  void Cancel() {
    register_context_.TryCancel();
    if (stream_ == nullptr) return;
    stream_context_.TryCancel();
    if (state_ == State::kStreaming && !write_pending_) Finish();
  }

  // Dispatches a completion of this sender's queue to its node.
  static void Complete(void* tag, bool ok) {
    Tag* t = static_cast<Tag*>(tag);
    t->node->OnCompletion(t->op, ok);
  }

 private:
  enum class Op { kRegister, kStart, kWrite, kFinish };
  enum class State { kRegistering, kStarting, kHello, kStreaming, kFinishing, kDone };
  struct Tag {
    Node* node;
    Op op;
  };

  grpc::CompletionQueue* queue() { return &fleet_->senders_[sender_]->queue; }
  bool stopping() const { return fleet_->stopping_.load(std::memory_order_relaxed); }

  void OnCompletion(Op op, bool ok) {
    switch (op) {
      case Op::kRegister:
        if (!register_status_.ok() || stopping()) {
          if (!register_status_.ok() && !stopping()) {
            fleet_->register_failures_.fetch_add(1, std::memory_order_relaxed);
            fleet_->NoteFailure(absl::StrCat("register ", name(), ": ",
                                             Describe(register_status_)));
          }
          Settle();
          state_ = State::kDone;
          fleet_->NodeCallsDone();
          return;
        }
        hello_.mutable_hello()->set_node_name(name());
        hello_.mutable_hello()->set_session_epoch(register_response_.session_epoch());
        stream_ = stub_->PrepareAsyncConnect(&stream_context_, queue());
        state_ = State::kStarting;
        stream_->StartCall(&start_tag_);
        return;
      case Op::kStart:
        if (!ok || stopping()) {
          Finish();
          return;
        }
        state_ = State::kHello;
        write_pending_ = true;
        stream_->Write(hello_, &write_tag_);
        return;
      case Op::kWrite:
        write_pending_ = false;
        if (state_ == State::kHello && ok && !stopping()) {
          state_ = State::kStreaming;
          fleet_->streaming_.fetch_add(1, std::memory_order_relaxed);
          fleet_->NodeStreaming(this);
          Settle();
          return;
        }
        if (!ok && state_ == State::kStreaming) {
          fleet_->write_failures_.fetch_add(1, std::memory_order_relaxed);
        }
        if (!ok || stopping()) Finish();
        return;
      case Op::kFinish:
        if (was_streaming_) fleet_->streaming_.fetch_sub(1, std::memory_order_relaxed);
        if (!stopping()) {
          fleet_->stream_failures_.fetch_add(1, std::memory_order_relaxed);
          fleet_->NoteFailure(absl::StrCat("stream ", name(), ": ", Describe(finish_status_)));
        }
        Settle();
        state_ = State::kDone;
        fleet_->NodeCallsDone();
        return;
    }
  }

  // Collects the stream's status (the controller ended it, or we cancelled it).
  void Finish() {
    was_streaming_ = state_ == State::kStreaming;
    state_ = State::kFinishing;
    stream_->Finish(&finish_status_, &finish_tag_);
  }

  // Streaming or failed: no longer counted as connecting.
  void Settle() {
    if (settled_) return;
    settled_ = true;
    fleet_->NodeSettled();
  }

  Fleet* const fleet_;
  const int sender_;
  const int slot_;
  const std::unique_ptr<SyntheticNode> model_;
  const std::shared_ptr<grpc::Channel> channel_;
  const std::unique_ptr<weft::v1::AgentService::Stub> stub_;

  Tag register_tag_{this, Op::kRegister};
  Tag start_tag_{this, Op::kStart};
  Tag write_tag_{this, Op::kWrite};
  Tag finish_tag_{this, Op::kFinish};

  grpc::ClientContext register_context_;
  weft::v1::RegisterRequest register_request_;
  weft::v1::RegisterResponse register_response_;
  grpc::Status register_status_;
  std::unique_ptr<grpc::ClientAsyncResponseReader<weft::v1::RegisterResponse>>
      register_call_;

  grpc::ClientContext stream_context_;
  std::unique_ptr<
      grpc::ClientAsyncReaderWriter<weft::v1::AgentMessage, weft::v1::ControllerMessage>>
      stream_;
  weft::v1::AgentMessage hello_;
  grpc::Status finish_status_;

  State state_ = State::kRegistering;
  bool write_pending_ = false;
  bool was_streaming_ = false;
  bool settled_ = false;
};

int Fleet::SlotOf(int64_t index) {
  const double phase = std::fmod(static_cast<double>(index) * kGoldenRatioFraction, 1.0);
  return std::min(kSlots - 1, static_cast<int>(phase * kSlots));
}

Fleet::Fleet(FleetOptions options)
    : options_(std::move(options)),
      sender_count_(std::max(1, options_.sender_threads)),
      wheel_start_(absl::Now()) {
  {
    absl::MutexLock lock(&slots_mu_);
    slots_.resize(kSlots);
  }
  for (int i = 0; i < sender_count_; ++i) senders_.push_back(std::make_unique<Sender>());
  for (int i = 0; i < sender_count_; ++i) {
    senders_[i]->thread = std::thread([this, i] { RunSender(i); });
  }
}

Fleet::~Fleet() { Stop(); }

absl::Status Fleet::GrowTo(int64_t total, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  auto below_limit = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return connecting_ < options_.max_connecting;
  };
  while (true) {
    int64_t index;
    {
      absl::MutexLock lock(&mu_);
      if (stopped_) return absl::FailedPreconditionError("the fleet was stopped");
      index = static_cast<int64_t>(nodes_.size());
      if (index >= total) break;
      if (!mu_.AwaitWithDeadline(absl::Condition(&below_limit), deadline)) {
        return absl::DeadlineExceededError(
            absl::StrCat("fleet: ", index, " of ", total, " nodes started when time ran out"));
      }
    }
    absl::StatusOr<std::unique_ptr<SyntheticNode>> model = SyntheticNode::Create(
        absl::StrFormat("%s%06d", options_.node_prefix, index), options_.nics, options_.gpus,
        absl::Now());
    if (!model.ok()) return model.status();
    const int64_t rack = index / std::max(1, options_.nodes_per_rack);
    (*model)->set_location(absl::StrFormat("rack-%04d", rack),
                           absl::StrFormat("pod-%03d", rack / std::max(1, options_.racks_per_pod)));
    grpc::ChannelArguments args;
    // A channel of its own per node means a TCP connection of its own, as with real
    // agents; without this, channels with equal arguments share one subchannel.
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    auto node = std::make_unique<Node>(
        this, index, SlotOf(index) % sender_count_, *std::move(model),
        grpc::CreateCustomChannel(options_.controller_address,
                                  grpc::InsecureChannelCredentials(), args));
    Node* raw = node.get();
    {
      absl::MutexLock lock(&mu_);
      nodes_.push_back(std::move(node));
      ++connecting_;
      ++outstanding_;
    }
    raw->Register();  // from here on the node belongs to its sender thread
  }
  absl::MutexLock lock(&mu_);
  auto settled = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return connecting_ == 0; };
  if (!mu_.AwaitWithDeadline(absl::Condition(&settled), deadline)) {
    return absl::DeadlineExceededError(absl::StrCat(
        "fleet: ", connecting_, " nodes still connecting when time ran out"));
  }
  return absl::OkStatus();
}

void Fleet::NodeStreaming(Node* node) {
  absl::MutexLock lock(&slots_mu_);
  slots_[node->slot()].push_back(node);
}

void Fleet::NodeSettled() {
  absl::MutexLock lock(&mu_);
  --connecting_;
}

void Fleet::NodeCallsDone() {
  absl::MutexLock lock(&mu_);
  --outstanding_;
}

void Fleet::NoteFailure(const std::string& description) {
  absl::MutexLock lock(&mu_);
  if (failures_.size() >= 5) return;
  // Distinct by everything after the node name.
  const std::string tail = description.substr(description.find(':'));
  for (const std::string& seen : failures_) {
    if (seen.substr(seen.find(':')) == tail) return;
  }
  failures_.push_back(description);
}

void Fleet::RunSender(int sender) {
  grpc::CompletionQueue& queue = senders_[sender]->queue;
  const absl::Duration slot_width = options_.interval / kSlots;
  const absl::Duration late = options_.interval / 10;
  void* tag = nullptr;
  bool ok = false;
  std::vector<Node*> due;
  // This sender's slots: sender, sender + n, sender + 2n, ...
  for (int64_t k = sender; !stopping_.load(); k += sender_count_) {
    const absl::Time due_at = wheel_start_ + k * slot_width;
    while (queue.AsyncNext(&tag, &ok, absl::ToChronoTime(due_at)) ==
           grpc::CompletionQueue::GOT_EVENT) {
      Node::Complete(tag, ok);
    }
    if (stopping_.load()) break;
    const absl::Time now = absl::Now();
    if (now - due_at > late) late_slots_.fetch_add(1, std::memory_order_relaxed);
    {
      absl::MutexLock lock(&slots_mu_);
      due = slots_[k % kSlots];
    }
    for (Node* node : due) node->TrySend(now);
  }

  // Stopping: cancel this sender's nodes and collect their completions; a node whose
  // pending operation completes starts no new one but its stream's Finish.
  std::vector<Node*> mine;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& node : nodes_) {
      if (node->sender() == sender) mine.push_back(node.get());
    }
  }
  for (Node* node : mine) node->Cancel();
  // Every node ends in one Register or one Finish completion; the other operations
  // complete first. Cancelled, they all complete promptly.
  const absl::Time give_up = absl::Now() + absl::Seconds(15);
  auto busy = [this]() {
    absl::MutexLock lock(&mu_);
    return outstanding_ > 0;
  };
  while (busy() && absl::Now() < give_up) {
    if (queue.AsyncNext(&tag, &ok, absl::ToChronoTime(absl::Now() + absl::Milliseconds(100))) ==
        grpc::CompletionQueue::GOT_EVENT) {
      Node::Complete(tag, ok);
    }
  }
}

FleetStats Fleet::stats() const {
  FleetStats s;
  {
    absl::MutexLock lock(&mu_);
    s.nodes = static_cast<int64_t>(nodes_.size());
  }
  s.streaming = streaming_.load();
  s.register_failures = register_failures_.load();
  s.stream_failures = stream_failures_.load();
  s.batches_sent = batches_sent_.load();
  s.write_failures = write_failures_.load();
  s.skipped_busy = skipped_busy_.load();
  s.late_slots = late_slots_.load();
  return s;
}

std::vector<std::string> Fleet::failure_samples() const {
  absl::MutexLock lock(&mu_);
  return failures_;
}

void Fleet::Stop() {
  {
    absl::MutexLock lock(&mu_);
    if (stopped_) return;
    stopped_ = true;
  }
  stopping_ = true;
  for (auto& sender : senders_) sender->thread.join();
  bool finished;
  {
    absl::MutexLock lock(&mu_);
    finished = outstanding_ == 0;
    if (!finished) {
      // gRPC still holds operations of some nodes: leak the nodes and the queues
      // rather than free what a late completion would touch.
      for (auto& node : nodes_) (void)node.release();
      for (auto& sender : senders_) (void)sender.release();
    }
    nodes_.clear();
  }
  if (!finished) return;
  for (auto& sender : senders_) {
    sender->queue.Shutdown();
    void* tag = nullptr;
    bool ok = false;
    while (sender->queue.Next(&tag, &ok)) {
    }
  }
}

}  // namespace weft::bench
