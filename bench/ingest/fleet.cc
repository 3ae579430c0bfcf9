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

// One simulated agent: a Register call, then one Connect stream.
//
// The reactor callbacks run on gRPC threads; TrySend runs on the node's sender thread;
// Shutdown on the fleet's caller. `mu_` guards the write/hold state they share. No
// gRPC Start*/RemoveHold is called with `mu_` held, so a reaction that runs inline
// cannot deadlock on it. The stream keeps a hold until it breaks or the fleet stops,
// so OnDone (after which the reactor must not be touched) cannot race a TrySend.
class Fleet::Node final
    : public grpc::ClientBidiReactor<weft::v1::AgentMessage, weft::v1::ControllerMessage> {
 public:
  Node(Fleet* fleet, int64_t index, std::unique_ptr<SyntheticNode> model,
       std::shared_ptr<grpc::Channel> channel)
      : fleet_(fleet),
        index_(index),
        model_(std::move(model)),
        channel_(std::move(channel)),
        stub_(weft::v1::AgentService::NewStub(channel_)) {
    *register_request_.mutable_node() = model_->info();
  }

  const std::string& name() const { return model_->info().name(); }

  void Register() {
    stub_->async()->Register(&register_context_, &register_request_, &register_response_,
                             [this](grpc::Status status) { OnRegistered(status); });
  }

  // Starts the write of the batch due now, unless one is pending or the stream is down.
  void TrySend(absl::Time now) {
    {
      absl::MutexLock lock(&mu_);
      if (!streaming_ || broken_) return;
      if (in_flight_) {
        fleet_->skipped_busy_.fetch_add(1, std::memory_order_relaxed);
        return;
      }
      in_flight_ = true;
    }
    weft::v1::AgentMessage& batch = model_->NextBatch(now);
    fleet_->batches_sent_.fetch_add(1, std::memory_order_relaxed);
    StartWrite(&batch);
  }

  void Shutdown() {
    bool release = false;
    bool stream_started;
    {
      absl::MutexLock lock(&mu_);
      shutting_down_ = true;
      stream_started = stream_started_;
      if (stream_started_ && !hold_released_) {
        hold_released_ = true;
        release = true;
      }
    }
    register_context_.TryCancel();
    if (stream_started) stream_context_.TryCancel();
    if (release) RemoveHold();
  }

  void OnWriteDone(bool ok) override {
    bool release = false;
    bool hello_written = false;
    bool hello_failed = false;
    {
      absl::MutexLock lock(&mu_);
      in_flight_ = false;
      if (!hello_done_) {
        hello_done_ = true;
        hello_written = ok;
        hello_failed = !ok;
        streaming_ = ok;
      } else if (!ok) {
        fleet_->write_failures_.fetch_add(1, std::memory_order_relaxed);
      }
      if (!ok) broken_ = true;
      if (broken_ && !hold_released_) {
        hold_released_ = true;
        release = true;
      }
    }
    if (hello_written) fleet_->NodeStreaming(this, index_);
    if (hello_failed) fleet_->NodeSettled();
    if (release) RemoveHold();
  }

  void OnReadDone(bool ok) override {
    if (ok) {
      fleet_->downlink_messages_.fetch_add(1, std::memory_order_relaxed);
      StartRead(&incoming_);
      return;
    }
    bool release = false;
    {
      absl::MutexLock lock(&mu_);
      broken_ = true;
      if (!in_flight_ && !hold_released_) {
        hold_released_ = true;
        release = true;
      }
    }
    if (release) RemoveHold();
  }

  void OnDone(const grpc::Status& status) override {
    bool was_streaming;
    bool shutting_down;
    {
      absl::MutexLock lock(&mu_);
      was_streaming = streaming_;
      streaming_ = false;
      shutting_down = shutting_down_;
    }
    if (was_streaming) fleet_->streaming_.fetch_sub(1, std::memory_order_relaxed);
    if (!shutting_down) {
      fleet_->stream_failures_.fetch_add(1, std::memory_order_relaxed);
      fleet_->NoteFailure(absl::StrCat("stream ", name(), ": ", Describe(status)));
    }
    fleet_->NodeCallsDone();
  }

 private:
  void OnRegistered(const grpc::Status& status) {
    bool start = false;
    bool shutting_down;
    {
      absl::MutexLock lock(&mu_);
      shutting_down = shutting_down_;
      if (status.ok() && !shutting_down_) {
        start = true;
        stream_started_ = true;
        in_flight_ = true;  // the hello
        hello_.mutable_hello()->set_node_name(name());
        hello_.mutable_hello()->set_session_epoch(register_response_.session_epoch());
        // Binding and the hold do no I/O and run no reactions: safe under mu_, and
        // a Shutdown that follows sees the hold it has to release.
        stub_->async()->Connect(&stream_context_, this);
        AddHold();
      }
    }
    if (!start) {
      if (!status.ok() && !shutting_down) {
        fleet_->register_failures_.fetch_add(1, std::memory_order_relaxed);
        fleet_->NoteFailure(absl::StrCat("register ", name(), ": ", Describe(status)));
      }
      fleet_->NodeSettled();
      fleet_->NodeCallsDone();
      return;
    }
    if (fleet_->options_.read_downlink) StartRead(&incoming_);
    StartWrite(&hello_);
    StartCall();
  }

  Fleet* const fleet_;
  const int64_t index_;
  const std::unique_ptr<SyntheticNode> model_;  // its sender thread only, after the hello
  const std::shared_ptr<grpc::Channel> channel_;
  const std::unique_ptr<weft::v1::AgentService::Stub> stub_;

  grpc::ClientContext register_context_;
  weft::v1::RegisterRequest register_request_;
  weft::v1::RegisterResponse register_response_;
  grpc::ClientContext stream_context_;
  weft::v1::AgentMessage hello_;
  weft::v1::ControllerMessage incoming_;  // read path only

  absl::Mutex mu_;
  bool stream_started_ ABSL_GUARDED_BY(mu_) = false;
  bool hello_done_ ABSL_GUARDED_BY(mu_) = false;
  bool streaming_ ABSL_GUARDED_BY(mu_) = false;
  bool in_flight_ ABSL_GUARDED_BY(mu_) = false;
  bool broken_ ABSL_GUARDED_BY(mu_) = false;
  bool hold_released_ ABSL_GUARDED_BY(mu_) = false;
  bool shutting_down_ ABSL_GUARDED_BY(mu_) = false;
};

Fleet::Fleet(FleetOptions options)
    : options_(std::move(options)),
      sender_count_(std::max(1, options_.sender_threads)),
      wheel_start_(absl::Now()) {
  {
    absl::MutexLock lock(&slots_mu_);
    slots_.resize(kSlots);
  }
  for (int i = 0; i < sender_count_; ++i) senders_.emplace_back([this, i] { RunSender(i); });
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
    grpc::ChannelArguments args;
    // A channel of its own per node means a TCP connection of its own, as with real
    // agents; without this, channels with equal arguments share one subchannel.
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    auto node = std::make_unique<Node>(
        this, index, *std::move(model),
        grpc::CreateCustomChannel(options_.controller_address,
                                  grpc::InsecureChannelCredentials(), args));
    Node* raw = node.get();
    {
      absl::MutexLock lock(&mu_);
      nodes_.push_back(std::move(node));
      ++connecting_;
      ++outstanding_;
    }
    raw->Register();
  }
  absl::MutexLock lock(&mu_);
  auto settled = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return connecting_ == 0; };
  if (!mu_.AwaitWithDeadline(absl::Condition(&settled), deadline)) {
    return absl::DeadlineExceededError(absl::StrCat(
        "fleet: ", connecting_, " nodes still connecting when time ran out"));
  }
  return absl::OkStatus();
}

void Fleet::NodeStreaming(Node* node, int64_t index) {
  const double phase = std::fmod(static_cast<double>(index) * kGoldenRatioFraction, 1.0);
  const int slot = std::min(kSlots - 1, static_cast<int>(phase * kSlots));
  {
    absl::MutexLock lock(&slots_mu_);
    slots_[slot].push_back(node);
  }
  streaming_.fetch_add(1, std::memory_order_relaxed);
  NodeSettled();
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
  const absl::Duration slot_width = options_.interval / kSlots;
  const absl::Duration late = options_.interval / 10;
  std::vector<Node*> due;
  for (int64_t k = sender;; k += sender_count_) {
    const absl::Time due_at = wheel_start_ + k * slot_width;
    const absl::Duration wait = due_at - absl::Now();
    if (wait > absl::ZeroDuration() && stop_senders_.WaitForNotificationWithTimeout(wait)) {
      return;
    }
    if (stop_senders_.HasBeenNotified()) return;
    const absl::Time now = absl::Now();
    if (now - due_at > late) late_slots_.fetch_add(1, std::memory_order_relaxed);
    {
      absl::MutexLock lock(&slots_mu_);
      due = slots_[k % kSlots];
    }
    for (Node* node : due) node->TrySend(now);
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
  s.downlink_messages = downlink_messages_.load();
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
  stop_senders_.Notify();
  for (std::thread& sender : senders_) sender.join();
  std::vector<Node*> nodes;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& node : nodes_) nodes.push_back(node.get());
  }
  for (Node* node : nodes) node->Shutdown();
  absl::MutexLock lock(&mu_);
  auto finished = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return outstanding_ == 0; };
  if (!mu_.AwaitWithTimeout(absl::Condition(&finished), absl::Seconds(15))) {
    // gRPC still holds some of them; leak rather than free what a callback may touch.
    for (auto& node : nodes_) (void)node.release();
  }
  nodes_.clear();
}

}  // namespace weft::bench
