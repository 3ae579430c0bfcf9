// AgentServiceImpl: weft.v1.AgentService (agent.proto) over gRPC's callback API.
//
// Register validates and records the node in the Inventory and grants a session
// epoch; if the node had an open stream of an older session, that stream is ended at
// once with ABORTED "session N of node X was superseded by session M" (fencing).
// Connect is one long-lived bidirectional stream per agent: its first message must be
// a StreamHello naming the node and the epoch Register granted; then telemetry and
// DesiredStateAcks flow up and ControllerMessages flow down.
//
// Streams are ServerBidiReactors that never block or sleep: reads are chained from
// OnReadDone, writes are queued and issued one at a time from OnWriteDone, and the
// inventory calls they make only take a short mutex. That is what lets one process
// hold tens of thousands of agent streams on a couple of cores.
//
// Stream errors (the stream is finished with this status):
//   INVALID_ARGUMENT     the first message is not a StreamHello, or a second hello;
//                        or the hello's epoch was never granted
//   FAILED_PRECONDITION  the hello names a node that is not registered
//   ABORTED              the session was superseded (at hello, on telemetry, or when
//                        a newer Register arrives)
//   ALREADY_EXISTS       the session already has an open stream
//   UNAVAILABLE          the controller is shutting down (FinishAllStreams)
//   UNAUTHENTICATED, PERMISSION_DENIED
//                        with verify_node_identity: no node certificate, or the hello
//                        (or the RegisterRequest) names another node than the
//                        certificate's CN (security/identity.h)
//
// Thread-safety: all public methods may be called from any thread. Lock order:
// AgentServiceImpl::mu_, then a stream's own mutex, then the Inventory's.
#ifndef WEFT_CONTROLLER_API_AGENT_SERVICE_H_
#define WEFT_CONTROLLER_API_AGENT_SERVICE_H_

#include <cstdint>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "controller/inventory/controller_metrics.h"
#include "controller/rollout/desired_state_listener.h"
#include "controller/inventory/inventory.h"
#include "controller/pingmesh/pingmesh_manager.h"
#include "grpcpp/grpcpp.h"
#include "proto/weft/v1/agent.grpc.pb.h"
#include "proto/weft/v1/agent.pb.h"

namespace weft::controller {

struct AgentServiceOptions {
  // Told to agents in RegisterResponse; the interval liveness is judged against.
  uint32_t telemetry_interval_ms = 1000;
  std::string controller_version;
  // mTLS: an agent may register and stream only as the node its certificate's CN
  // names. Off on a plaintext listener, where there is no certificate.
  bool verify_node_identity = false;
};

class AgentServiceImpl final : public weft::v1::AgentService::CallbackService {
 public:
  // `inventory` and `metrics` must outlive the service, and the service must outlive
  // the grpc::Server it is registered with. `listener` (nullptr: nobody) is handed each
  // accepted hello's applied_version, every DesiredStateAck and each telemetry batch's
  // tunables status, on the reactor threads; it must outlive the service. `pingmesh`
  // (nullptr: none) is told of each accepted hello and handed every batch's probe
  // windows, on the reactor threads; it must outlive the service.
  AgentServiceImpl(Inventory* inventory, ControllerMetrics* metrics,
                   AgentServiceOptions options, DesiredStateListener* listener = nullptr,
                   PingmeshManager* pingmesh = nullptr);
  ~AgentServiceImpl() override;

  AgentServiceImpl(const AgentServiceImpl&) = delete;
  AgentServiceImpl& operator=(const AgentServiceImpl&) = delete;

  grpc::ServerUnaryReactor* Register(grpc::CallbackServerContext* context,
                                     const weft::v1::RegisterRequest* request,
                                     weft::v1::RegisterResponse* response) override;

  grpc::ServerBidiReactor<weft::v1::AgentMessage, weft::v1::ControllerMessage>* Connect(
      grpc::CallbackServerContext* context) override;

  // Queues `message` on the node's current stream; messages are written in order,
  // one at a time. NOT_FOUND when the node has no open (attached) stream.
  absl::Status SendToNode(absl::string_view node, weft::v1::ControllerMessage message);

  // Ends every open stream with `status` (e.g. UNAVAILABLE before a shutdown), so a
  // grpc::Server::Shutdown need not wait for agents to hang up. From then on the
  // service refuses Register and Connect with UNAVAILABLE.
  void FinishAllStreams(const absl::Status& status);

  // Streams currently open, attached to a node or not.
  size_t open_streams() const;

 private:
  class AgentStream;

  // Called by a stream on its hello: checks the session with the inventory and, when
  // valid, makes the stream the node's current one.
  absl::Status AttachStream(AgentStream* stream, const weft::v1::StreamHello& hello);
  // Called from AgentStream::OnDone, the last call a stream makes.
  void StreamDone(AgentStream* stream, const std::string& node);

  struct Attached {
    AgentStream* stream = nullptr;
    uint64_t epoch = 0;
  };

  Inventory* const inventory_;
  ControllerMetrics* const metrics_;
  const AgentServiceOptions options_;
  DesiredStateListener* const listener_;
  PingmeshManager* const pingmesh_;

  mutable absl::Mutex mu_;
  absl::flat_hash_set<AgentStream*> open_ ABSL_GUARDED_BY(mu_);
  // The current stream of each node that has one.
  absl::flat_hash_map<std::string, Attached> attached_ ABSL_GUARDED_BY(mu_);
  bool shutting_down_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace weft::controller

#endif  // WEFT_CONTROLLER_API_AGENT_SERVICE_H_
