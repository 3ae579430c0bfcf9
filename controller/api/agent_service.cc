#include "controller/api/agent_service.h"

#include <algorithm>
#include <deque>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "google/protobuf/arena.h"
#include "common/grpc_status.h"
#include "security/identity.h"

namespace weft::controller {

using weft::v1::AgentMessage;
using weft::v1::ControllerMessage;

// One agent's Connect stream. Created by Connect, deleted by itself in OnDone.
//
// The read path (OnReadDone and what it calls) runs one reaction at a time, so
// `arena_`, `incoming_`, `node_`, `epoch_` and `hello_seen_` need no lock; OnDone,
// which reads `node_`, runs after every other reaction has returned. Everything the
// write path and other threads (End, Send) share is under `mu_`.
//
// Each message is read into an arena that is reset before the next read, with the
// stream's own first block: parsing a heap message frees and reallocates every
// submessage of the previous one (a telemetry batch has ~250), which at thousands of
// agents cost the controller more CPU than handling the telemetry did.
class AgentServiceImpl::AgentStream final
    : public grpc::ServerBidiReactor<AgentMessage, ControllerMessage> {
 public:
  AgentStream(AgentServiceImpl* service, std::string peer)
      : service_(service), peer_(std::move(peer)), arena_(ArenaOptions(arena_block_)) {}

  // Issues the first read. Called once, by Connect, after the service tracks us.
  void Start() { StartRead(NextIncoming()); }

  // Ends the stream with `status` unless it is already ending; queued writes are
  // dropped. If a write is in flight, Finish follows its completion (one write at a
  // time, and Finish is the last operation). Any thread.
  void End(const grpc::Status& status) {
    absl::MutexLock lock(&mu_);
    if (ending_) return;
    ending_ = true;
    queue_.clear();
    if (write_in_flight_) {
      pending_finish_ = status;
    } else {
      Finish(status);
    }
  }

  // Queues `message`; false when the stream is ending. Any thread. A desired state
  // replaces any older one still queued (the newest wins, and an agent that stops
  // reading holds at most one write in flight and one queued, never a growing queue).
  bool Send(ControllerMessage message) {
    absl::MutexLock lock(&mu_);
    if (ending_) return false;
    if (message.has_desired_state()) {
      queue_.erase(std::remove_if(queue_.begin(), queue_.end(),
                                  [](const ControllerMessage& queued) {
                                    return queued.has_desired_state();
                                  }),
                   queue_.end());
    }
    queue_.push_back(std::move(message));
    if (!write_in_flight_) StartNextWriteLocked();
    return true;
  }

  bool ending() const {
    absl::MutexLock lock(&mu_);
    return ending_;
  }

  const std::string& peer() const { return peer_; }

  // The hello must then name this node (the CN of the agent's certificate). Called
  // by Connect before Start.
  void RequireNode(std::string certified_node) { certified_node_ = std::move(certified_node); }

  void OnReadDone(bool ok) override {
    if (!ok) {
      // The agent closed its side, or the call was cancelled or broke.
      End(grpc::Status::OK);
      return;
    }
    const grpc::Status status = Handle(*incoming_);
    if (!status.ok()) {
      WEFT_LOG(WARNING) << "ending agent stream node=" << (node_.empty() ? "-" : node_)
                        << " epoch=" << epoch_ << " peer=" << peer_
                        << " code=" << status.error_code() << " reason=\""
                        << status.error_message() << "\"";
      End(status);
      return;
    }
    AgentMessage* next = NextIncoming();
    absl::MutexLock lock(&mu_);
    if (!ending_) StartRead(next);
  }

  void OnWriteDone(bool ok) override {
    absl::MutexLock lock(&mu_);
    write_in_flight_ = false;
    if (pending_finish_.has_value()) {
      Finish(*pending_finish_);
      pending_finish_.reset();
      return;
    }
    if (!ok) {
      // The stream is broken; the failing read ends it.
      queue_.clear();
      return;
    }
    if (!queue_.empty()) StartNextWriteLocked();
  }

  void OnDone() override {
    service_->StreamDone(this, node_);
    delete this;
  }

 private:
  // A batch of 8 NICs takes about 11.5 KiB parsed (1.2 KiB on the wire); a larger
  // message spills into blocks the arena allocates (and frees at the next reset).
  static constexpr size_t kArenaBlockBytes = 12 * 1024;

  static google::protobuf::ArenaOptions ArenaOptions(char* block) {
    google::protobuf::ArenaOptions options;
    options.initial_block = block;
    options.initial_block_size = kArenaBlockBytes;
    return options;
  }

  // Drops the previous message and returns an empty one to read into.
  AgentMessage* NextIncoming() {
    arena_.Reset();
    incoming_ = google::protobuf::Arena::CreateMessage<AgentMessage>(&arena_);
    return incoming_;
  }

  void StartNextWriteLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    outgoing_ = std::move(queue_.front());
    queue_.pop_front();
    write_in_flight_ = true;
    StartWrite(&outgoing_);
  }

  grpc::Status NoHello() {
    service_->metrics_->StreamRejected("no_hello");
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "the first message on a Connect stream must be a StreamHello "
                        "naming the node and the session epoch that Register returned");
  }

  grpc::Status Handle(const AgentMessage& message) {
    switch (message.body_case()) {
      case AgentMessage::kHello: {
        if (hello_seen_) {
          service_->metrics_->StreamRejected("duplicate_hello");
          return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                              absl::StrCat("a second StreamHello on the stream of node ",
                                           node_, "; send exactly one, first"));
        }
        if (certified_node_.has_value()) {
          absl::Status identity =
              security::CheckClaimedNode(*certified_node_, message.hello().node_name());
          if (!identity.ok()) {
            service_->metrics_->StreamRejected("identity");
            WEFT_LOG(WARNING) << "stream refused peer=" << peer_ << " reason=\""
                              << identity.message() << "\"";
            return ToGrpcStatus(identity);
          }
        }
        node_ = message.hello().node_name();
        epoch_ = message.hello().session_epoch();
        absl::Status attached = service_->AttachStream(this, message.hello());
        if (!attached.ok()) return ToGrpcStatus(attached);
        hello_seen_ = true;
        if (service_->listener_ != nullptr) {
          service_->listener_->OnStreamAttached(node_, message.hello().applied_version());
        }
        if (service_->pingmesh_ != nullptr) service_->pingmesh_->OnStreamAttached(node_);
        return grpc::Status::OK;
      }
      case AgentMessage::kTelemetry: {
        if (!hello_seen_) {
          service_->metrics_->TelemetryRejected("no_hello");
          return NoHello();
        }
        if (message.telemetry().probe_windows_only()) {
          return HandleProbeWindows(message.telemetry());
        }
        absl::Status accepted =
            service_->inventory_->AcceptTelemetry(node_, epoch_, message.telemetry());
        if (!accepted.ok()) {
          service_->metrics_->StreamRejected(SessionRejectReason(accepted));
          return ToGrpcStatus(accepted);
        }
        if (service_->listener_ != nullptr && message.telemetry().has_tunables()) {
          service_->listener_->OnTunablesStatus(node_, message.telemetry().tunables());
        }
        PassProbeWindows(message.telemetry());
        if (service_->pingmesh_ != nullptr && message.telemetry().probe_traces_size() > 0) {
          service_->pingmesh_->OnProbeTraces(node_, message.telemetry().probe_traces());
        }
        return grpc::Status::OK;
      }
      case AgentMessage::kDesiredStateAck: {
        if (!hello_seen_) return NoHello();
        const weft::v1::DesiredStateAck& ack = message.desired_state_ack();
        service_->metrics_->DesiredStateAckReceived(ack.accepted());
        if (service_->listener_ != nullptr) service_->listener_->OnDesiredStateAck(node_, ack);
        if (ack.accepted()) {
          WEFT_LOG(INFO) << "desired state ack node=" << node_ << " version=" << ack.version()
                         << " nonce=" << ack.nonce() << " read_back=" << ack.read_back_size();
        } else {
          std::string first_error = "none given";
          if (ack.errors_size() > 0) {
            const auto& e = ack.errors(0);
            first_error = absl::StrCat(e.device(), " ", e.parameter(), "=", e.value(), ": ",
                                       e.reason());
          }
          WEFT_LOG(WARNING) << "desired state nack node=" << node_
                            << " version=" << ack.version() << " nonce=" << ack.nonce()
                            << " errors=" << ack.errors_size() << " first_error=\""
                            << first_error << "\"";
        }
        return grpc::Status::OK;
      }
      case AgentMessage::BODY_NOT_SET:
        if (!hello_seen_) return NoHello();
        // A newer agent's message kind this controller does not know: skip it.
        WEFT_LOG(DEBUG) << "ignored agent message without a known body node=" << node_;
        return grpc::Status::OK;
    }
    return grpc::Status::OK;
  }

  // A batch of probe windows alone (TelemetryBatch.probe_windows_only), sent between
  // collections: the session is checked as for telemetry, and the windows go to
  // pingmesh only. It is not a collection: the inventory never sees it, so it keeps the
  // node neither alive nor its rates or health current.
  grpc::Status HandleProbeWindows(const weft::v1::TelemetryBatch& batch) {
    absl::Status session = service_->inventory_->CheckSession(node_, epoch_);
    if (!session.ok()) {
      service_->metrics_->TelemetryRejected(SessionRejectReason(session));
      service_->metrics_->StreamRejected(SessionRejectReason(session));
      return ToGrpcStatus(session);
    }
    PassProbeWindows(batch);
    return grpc::Status::OK;
  }

  void PassProbeWindows(const weft::v1::TelemetryBatch& batch) {
    if (service_->pingmesh_ == nullptr) return;
    if (batch.probe_windows_size() == 0 && batch.probe_windows_through_us() == 0) return;
    service_->pingmesh_->OnProbeWindows(node_, batch.probe_windows(),
                                        batch.probe_windows_through_us());
  }

  AgentServiceImpl* const service_;
  const std::string peer_;

  // Read path only. The block is declared before the arena that uses it.
  alignas(8) char arena_block_[kArenaBlockBytes];
  google::protobuf::Arena arena_;
  AgentMessage* incoming_ = nullptr;  // on arena_
  std::string node_;
  uint64_t epoch_ = 0;
  bool hello_seen_ = false;
  std::optional<std::string> certified_node_;  // set before Start, then read-only

  mutable absl::Mutex mu_;
  bool ending_ ABSL_GUARDED_BY(mu_) = false;
  bool write_in_flight_ ABSL_GUARDED_BY(mu_) = false;
  std::optional<grpc::Status> pending_finish_ ABSL_GUARDED_BY(mu_);
  ControllerMessage outgoing_ ABSL_GUARDED_BY(mu_);  // the write in flight
  std::deque<ControllerMessage> queue_ ABSL_GUARDED_BY(mu_);
};

AgentServiceImpl::AgentServiceImpl(Inventory* inventory, ControllerMetrics* metrics,
                                   AgentServiceOptions options,
                                   DesiredStateListener* listener,
                                   PingmeshManager* pingmesh)
    : inventory_(inventory), metrics_(metrics), options_(std::move(options)),
      listener_(listener), pingmesh_(pingmesh) {}

AgentServiceImpl::~AgentServiceImpl() = default;

grpc::ServerUnaryReactor* AgentServiceImpl::Register(
    grpc::CallbackServerContext* context, const weft::v1::RegisterRequest* request,
    weft::v1::RegisterResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  if (options_.verify_node_identity) {
    absl::Status identity = security::CheckClaimedNode(
        security::PeerCommonName(*context->auth_context()), request->node().name());
    if (!identity.ok()) {
      WEFT_LOG(WARNING) << "register refused node=" << request->node().name()
                        << " peer=" << context->peer() << " reason=\"" << identity.message()
                        << "\"";
      reactor->Finish(ToGrpcStatus(identity));
      return reactor;
    }
  }
  absl::StatusOr<Registration> registration;
  {
    absl::MutexLock lock(&mu_);
    if (shutting_down_) {
      reactor->Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE,
                                   "the controller is shutting down; retry"));
      return reactor;
    }
    // Under mu_ so that no hello can attach an older session between the new epoch
    // being granted and the old stream being fenced.
    registration = inventory_->Register(request->node(), request->last_session_epoch());
    if (registration.ok()) {
      auto it = attached_.find(request->node().name());
      if (it != attached_.end() && it->second.epoch < registration->session_epoch) {
        it->second.stream->End(ToGrpcStatus(SupersededError(
            request->node().name(), it->second.epoch, registration->session_epoch)));
        attached_.erase(it);
      }
    }
  }
  if (!registration.ok()) {
    WEFT_LOG(WARNING) << "register rejected node=" << request->node().name()
                      << " peer=" << context->peer() << " reason=\""
                      << registration.status().message() << "\"";
    reactor->Finish(ToGrpcStatus(registration.status()));
    return reactor;
  }
  response->set_session_epoch(registration->session_epoch);
  response->set_telemetry_interval_ms(options_.telemetry_interval_ms);
  response->set_controller_version(options_.controller_version);
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

grpc::ServerBidiReactor<AgentMessage, ControllerMessage>* AgentServiceImpl::Connect(
    grpc::CallbackServerContext* context) {
  auto* stream = new AgentStream(this, context->peer());
  if (options_.verify_node_identity) {
    stream->RequireNode(security::PeerCommonName(*context->auth_context()));
  }
  bool shutting_down;
  {
    absl::MutexLock lock(&mu_);
    shutting_down = shutting_down_;
    open_.insert(stream);
  }
  metrics_->StreamOpened();
  if (shutting_down) {
    stream->End(grpc::Status(grpc::StatusCode::UNAVAILABLE,
                             "the controller is shutting down; reconnect later"));
  } else {
    stream->Start();
  }
  return stream;
}

absl::Status AgentServiceImpl::AttachStream(AgentStream* stream,
                                            const weft::v1::StreamHello& hello) {
  if (hello.node_name().empty()) {
    metrics_->StreamRejected("no_hello");
    return absl::InvalidArgumentError(
        "StreamHello has no node_name; send the name Register was called with");
  }
  absl::MutexLock lock(&mu_);
  absl::Status session = inventory_->CheckSession(hello.node_name(), hello.session_epoch());
  if (!session.ok()) {
    metrics_->StreamRejected(SessionRejectReason(session));
    return session;
  }
  auto it = attached_.find(hello.node_name());
  if (it != attached_.end()) {
    AgentStream* other = it->second.stream;
    if (it->second.epoch == hello.session_epoch() && !other->ending()) {
      metrics_->StreamRejected("duplicate_stream");
      return absl::AlreadyExistsError(absl::StrCat(
          "session ", hello.session_epoch(), " of node ", hello.node_name(),
          " already has an open stream (from ", other->peer(),
          "); one stream per session — call Register to start a new session"));
    }
    if (it->second.epoch < hello.session_epoch()) {
      other->End(ToGrpcStatus(
          SupersededError(hello.node_name(), it->second.epoch, hello.session_epoch())));
    }
  }
  attached_[hello.node_name()] = Attached{stream, hello.session_epoch()};
  WEFT_LOG(INFO) << "agent stream attached node=" << hello.node_name()
                 << " epoch=" << hello.session_epoch() << " peer=" << stream->peer();
  return absl::OkStatus();
}

void AgentServiceImpl::StreamDone(AgentStream* stream, const std::string& node) {
  {
    absl::MutexLock lock(&mu_);
    open_.erase(stream);
    auto it = attached_.find(node);
    if (it != attached_.end() && it->second.stream == stream) attached_.erase(it);
  }
  metrics_->StreamClosed();
  WEFT_LOG(DEBUG) << "agent stream closed node=" << (node.empty() ? "-" : node)
                  << " peer=" << stream->peer();
}

absl::Status AgentServiceImpl::SendToNode(absl::string_view node, ControllerMessage message) {
  absl::MutexLock lock(&mu_);
  auto it = attached_.find(node);
  if (it == attached_.end()) {
    return absl::NotFoundError(absl::StrCat("node ", node, " has no open agent stream"));
  }
  if (!it->second.stream->Send(std::move(message))) {
    return absl::UnavailableError(
        absl::StrCat("the agent stream of node ", node, " is closing"));
  }
  return absl::OkStatus();
}

void AgentServiceImpl::FinishAllStreams(const absl::Status& status) {
  absl::MutexLock lock(&mu_);
  shutting_down_ = true;
  const grpc::Status grpc_status = ToGrpcStatus(status);
  for (AgentStream* stream : open_) stream->End(grpc_status);
  attached_.clear();
}

size_t AgentServiceImpl::open_streams() const {
  absl::MutexLock lock(&mu_);
  return open_.size();
}

}  // namespace weft::controller
