// ControllerServer: one weft-controller process's worth of wiring. It owns the
// Inventory, the PlacementManager (reservations over the inventory's nodes), the
// AgentService, AdminService and PlacementService adapters, the gRPC server they are
// served on (plus the standard grpc.health.v1 service), the /metrics endpoint, and the
// ticker, a thread that calls Inventory::Sweep() (liveness, health hysteresis,
// auto-drain, rack gauges) and refreshes the reservation gauges every
// telemetry_interval / 4 (the Clock decides what "too long" means, so tests drive
// liveness, health and lease expiry with a FakeClock).
//
// It also owns the QoS/DCQCN desired state of every node (DesiredStateManager, fed by
// the agent streams) and the RolloutManager behind RolloutService, whose records live
// in the controller's database (in memory without one); the ticker steps the active
// rollout.
//
// Security (security/): with config.tls set, the server speaks mTLS and every call
// passes the AuthProcessor (caller from certificate or bearer token, role checked
// against security/policy.cc); without it, plaintext (validated to be loopback-only
// unless insecure) with a warning. Either way every mutating call is written to the
// AuditLog.
//
// The composition root: Create builds the whole object graph from a validated config
// (each part gets what it uses in its constructor; nothing is wired after), Start
// restores the durable state and serves, Stop ends it. Example (what
// controller/main.cc does):
//   ASSIGN_OR_RETURN(std::unique_ptr<ControllerServer> server,
//                    ControllerServer::Create(config, &clock, registry, store));
//   RETURN_IF_ERROR(server->Start());
//   ... wait for SIGTERM ...
//   server->Stop();
//
// Thread-safety: Start and Stop are called from one thread; the accessors may be
// called from any thread after Start succeeded. Stop is idempotent and also run by
// the destructor.
#ifndef WEFT_CONTROLLER_SERVER_CONTROLLER_SERVER_H_
#define WEFT_CONTROLLER_SERVER_CONTROLLER_SERVER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/clock.h"
#include "common/metrics_server.h"
#include "common/periodic_task.h"
#include "controller/api/admin_service.h"
#include "controller/api/agent_service.h"
#include "controller/api/audit_log.h"
#include "controller/inventory/controller_metrics.h"
#include "controller/inventory/inventory.h"
#include "controller/pingmesh/pingmesh_manager.h"
#include "controller/pingmesh/pingmesh_metrics.h"
#include "controller/placement/placement_manager.h"
#include "controller/placement/placement_metrics.h"
#include "controller/api/pingmesh_service.h"
#include "controller/api/placement_service.h"
#include "controller/rollout/desired_state.h"
#include "controller/rollout/rollout_manager.h"
#include "controller/rollout/rollout_metrics.h"
#include "controller/api/rollout_service.h"
#include "controller/api/tune_service.h"
#include "controller/tuning/tune_manager.h"
#include "controller/tuning/tune_metrics.h"
#include "store/rollout_store.h"
#include "controller/api/rendezvous_service.h"
#include "grpcpp/grpcpp.h"
#include "prometheus/registry.h"
#include "proto/weft/v1/config.pb.h"
#include "security/certificate_monitor.h"
#include "security/server_auth.h"
#include "security/tokens.h"
#include "store/controller_store.h"

namespace weft::controller {

// Reported to agents in RegisterResponse.controller_version.
inline constexpr char kControllerVersion[] = "0.1.0";

class ControllerServer {
 public:
  // `config` should have passed ValidateControllerConfig (common/daemon_config.h).
  // `clock` must outlive the server; `registry` receives the controller's metrics and
  // is what /metrics serves. `store` (store/controller_store.h; main.cc opens it in
  // config.state_dir) makes nodes, drains, reservations, events, rollouts and the
  // audit log durable and must outlive the server; without one everything is in
  // memory. INVALID_ARGUMENT when the config's interval, threshold or window is zero
  // or the tokens file is not well formed; NOT_FOUND when it cannot be read.
  static absl::StatusOr<std::unique_ptr<ControllerServer>> Create(
      weft::v1::ControllerConfig config, const Clock* clock,
      std::shared_ptr<prometheus::Registry> registry, store::ControllerStore* store = nullptr);
  ~ControllerServer();

  ControllerServer(const ControllerServer&) = delete;
  ControllerServer& operator=(const ControllerServer&) = delete;

  // With a store, first restores the inventory's nodes and drains, the event log, the
  // live reservations and the rollouts (the store's error when they cannot be read).
  // Then binds listen_address (gRPC) and metrics_address (/metrics) — port 0 picks a
  // free port — and starts serving and the liveness ticker. UNAVAILABLE when an
  // address cannot be bound; INVALID_ARGUMENT when a TLS file is not PEM; NOT_FOUND
  // when it cannot be read; FAILED_PRECONDITION when called twice. On failure nothing
  // keeps running.
  absl::Status Start();

  // Marks the health service NOT_SERVING, ends agent streams with UNAVAILABLE, shuts
  // the gRPC server down (in-flight unary calls get up to 2 s), stops the ticker and
  // /metrics. Returns when all of it has stopped.
  void Stop();

  // "host:port" actually bound, valid after Start succeeded.
  const std::string& listen_address() const { return listen_address_; }
  int grpc_port() const { return grpc_port_; }
  std::string metrics_address() const;

  Inventory& inventory() { return inventory_; }
  AgentServiceImpl& agent_service() { return agent_service_; }
  PlacementManager& placement() { return placement_; }
  AuditLog& audit_log() { return audit_log_; }
  DesiredStateManager& desired_state() { return desired_state_; }
  PingmeshManager& pingmesh() { return pingmesh_; }

 private:
  // security::AuditSink over audit_log_.
  class AuditLogSink final : public security::AuditSink {
   public:
    explicit AuditLogSink(AuditLog* log) : log_(log) {}
    absl::Status Record(const security::AuditRecord& record) override;

   private:
    AuditLog* const log_;
  };

  // A gRPC service and the name its health status is served under.
  struct ServedService {
    grpc::Service* service;
    std::string name;
  };

  ControllerServer(weft::v1::ControllerConfig config, const Clock* clock,
                   std::shared_ptr<prometheus::Registry> registry,
                   store::ControllerStore* store,
                   std::shared_ptr<const security::TokenTable> tokens);

  // Every service the server registers, each named once: registration and health
  // status both come from this list.
  std::vector<ServedService> Services();
  void Tick();

  const weft::v1::ControllerConfig config_;
  const Clock* const clock_;
  const std::shared_ptr<prometheus::Registry> registry_;
  store::ControllerStore* const store_;
  const std::shared_ptr<const security::TokenTable> tokens_;  // null: certificates only
  ControllerMetrics metrics_;
  Inventory inventory_;
  AuditLog audit_log_;
  AuditLogSink audit_sink_;
  // QoS/DCQCN desired state per node, sent down the agent streams, and the policy
  // rollouts over it, kept in the store (in memory without one).
  RolloutMetrics rollout_metrics_;
  DesiredStateManager desired_state_;
  // Pingmesh: pinglists down the agent streams, probe windows up, fault localisation.
  PingmeshMetrics pingmesh_metrics_;
  PingmeshManager pingmesh_;
  AgentServiceImpl agent_service_;
  AdminServiceImpl admin_service_;
  PlacementMetrics placement_metrics_;
  PlacementManager placement_;
  PlacementServiceImpl placement_service_;
  const std::unique_ptr<store::RolloutStore> rollout_store_;
  RolloutManager rollouts_;
  RolloutServiceImpl rollout_service_;
  // The DCQCN tuner: searches in the twin's models, proposals applied as rollouts.
  TuneMetrics tune_metrics_;
  TuneManager tuner_;
  TuneServiceImpl tune_service_;
  PingmeshServiceImpl pingmesh_service_;
  // Where agents relay their jobs' rendezvous (job.proto); its own sweeper thread.
  // With mTLS an agent relays only its own node's ranks.
  RendezvousServiceImpl rendezvous_service_;

  bool started_ = false;
  bool stopped_ = false;
  std::unique_ptr<grpc::Server> grpc_server_;
  std::unique_ptr<MetricsServer> metrics_server_;
  // The TLS files' expiry and validity on /metrics (null without TLS).
  std::unique_ptr<security::CertificateMonitor> certificate_monitor_;
  std::string listen_address_;
  int grpc_port_ = 0;
  // Liveness sweep, gauges and rollout steps, on the clock (a FakeClock steps it).
  PeriodicTask ticker_;
  // Pingmesh's plans and judgements, on the clock: every fifth of a probe window (or
  // the ticker's period, if shorter), since a window is judged as soon as every agent
  // has sent it.
  PeriodicTask pingmesh_ticker_;
};

}  // namespace weft::controller

#endif  // WEFT_CONTROLLER_SERVER_CONTROLLER_SERVER_H_
