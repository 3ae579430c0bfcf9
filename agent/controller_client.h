// ControllerClient: the agent's connection to the controller (weft.v1.AgentService,
// proto/weft/v1/agent.proto): a unary Register and one long-lived Connect stream
// carrying telemetry and acks up and desired state down. The agent loop
// (agent/agent.h) owns the session logic (epochs, backoff, resending state); this
// layer only moves messages and turns gRPC status into absl::Status.
//
// GrpcControllerClient is the implementation over gRPC's synchronous API. Tests can
// point it at an in-process AgentService on 127.0.0.1:0.
//
// Thread-safety: ControllerClient methods are thread-safe. A ControllerStream allows
// one thread in Read() while any threads call Write() (writes are serialized) and
// Cancel(); Finish() is called once, by the reading thread, after Read() returned
// false. A stream must be destroyed before the client that opened it.
#ifndef WEFT_AGENT_CONTROLLER_CLIENT_H_
#define WEFT_AGENT_CONTROLLER_CLIENT_H_

#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "grpcpp/channel.h"
#include "grpcpp/client_context.h"
#include "grpcpp/security/credentials.h"
#include "proto/weft/v1/agent.grpc.pb.h"
#include "proto/weft/v1/agent.pb.h"

namespace weft::agent {

class ControllerStream {
 public:
  virtual ~ControllerStream() = default;

  // Sends one message. UNAVAILABLE once the stream is broken or cancelled (Finish()
  // then tells why).
  virtual absl::Status Write(const weft::v1::AgentMessage& message) = 0;

  // Blocks for the controller's next message; false when the stream has ended.
  virtual bool Read(weft::v1::ControllerMessage* message) = 0;

  // Ends the stream from any thread: a blocked Read() or Write() returns, and
  // Finish() reports CANCELLED. Idempotent.
  virtual void Cancel() = 0;

  // The stream's final status (OK, ABORTED when fenced by a newer session, CANCELLED,
  // UNAVAILABLE, ...). Call once, after Read() returned false.
  virtual absl::Status Finish() = 0;
};

class ControllerClient {
 public:
  virtual ~ControllerClient() = default;

  // The controller's answer, or its error (UNAVAILABLE when unreachable,
  // DEADLINE_EXCEEDED, CANCELLED after Shutdown(), or what the controller refused).
  virtual absl::StatusOr<weft::v1::RegisterResponse> Register(
      const weft::v1::RegisterRequest& request) = 0;

  // Opens the Connect stream and sends `hello` as its first message. Fails with the
  // stream's status when the hello cannot be sent.
  virtual absl::StatusOr<std::unique_ptr<ControllerStream>> Connect(
      const weft::v1::StreamHello& hello) = 0;

  // Cancels every call in flight (including open streams) and makes later calls fail
  // with CANCELLED. For process shutdown; irreversible.
  virtual void Shutdown() = 0;
};

struct GrpcControllerClientOptions {
  std::string address;  // host:port of the controller
  // TLS (security/credentials.h); nullptr means plaintext.
  std::shared_ptr<grpc::ChannelCredentials> credentials;
  absl::Duration register_timeout = absl::Seconds(5);
  // gRPC's own channel reconnect backoff, kept in step with the agent's so a restarted
  // controller is found again as soon as the agent retries (gRPC's default grows to
  // 120 s).
  absl::Duration min_reconnect_backoff = absl::Milliseconds(200);
  absl::Duration max_reconnect_backoff = absl::Seconds(10);
};

class GrpcControllerClient : public ControllerClient {
 public:
  explicit GrpcControllerClient(GrpcControllerClientOptions options);
  ~GrpcControllerClient() override;

  absl::StatusOr<weft::v1::RegisterResponse> Register(
      const weft::v1::RegisterRequest& request) override;
  absl::StatusOr<std::unique_ptr<ControllerStream>> Connect(
      const weft::v1::StreamHello& hello) override;
  void Shutdown() override;

  // The channel to the controller, for other services the agent calls there (the job
  // socket relays rendezvous over it); Shutdown() does not cancel their calls.
  std::shared_ptr<grpc::Channel> channel() const { return channel_; }

 private:
  friend class GrpcControllerStream;

  // Registers a call so Shutdown() can cancel it; false after Shutdown().
  bool Track(grpc::ClientContext* context) ABSL_LOCKS_EXCLUDED(mu_);
  void Untrack(grpc::ClientContext* context) ABSL_LOCKS_EXCLUDED(mu_);

  const GrpcControllerClientOptions options_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<weft::v1::AgentService::Stub> stub_;

  absl::Mutex mu_;
  bool shut_down_ ABSL_GUARDED_BY(mu_) = false;
  absl::flat_hash_set<grpc::ClientContext*> active_ ABSL_GUARDED_BY(mu_);
};

}  // namespace weft::agent

#endif  // WEFT_AGENT_CONTROLLER_CLIENT_H_
