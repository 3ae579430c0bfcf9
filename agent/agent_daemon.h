// AgentDaemon: weft-agent's composition root. Build() turns a validated AgentConfig and
// what belongs to the process (its clock, its metrics registry) into the agent's whole
// object graph, each part made once, in the order the parts need each other:
//
//   NIC backend        MakeNicBackend (agent/backend_factory.h): config.backend,
//                      simulated or linux, with LLDP neighbors when config.lldp asks
//   /metrics, health   bound now, when their addresses are not "off"/""; the agent
//                      advertises the bound /metrics address (port 0 resolved)
//   controller link    TLS credentials (security/credentials.h), GrpcControllerClient,
//                      and the simulated `dead` fault's decorator (agent/sim_faults.h):
//                      simulation faults are applied here and nowhere else, so the
//                      agent loop never tests for a simulation
//   pingmesh           agent/probe/pingmesh.h: the probe responder bound now, the
//                      prober started with the agent (none when probe.udp_port is 0)
//   Agent              agent/agent.h, over all of the above
//   job service        agent/job_service.h, over the agent's inventory and the
//                      controller channel
//
// Nothing is wired after Build(): the graph is fixed. Start() starts the agent and the
// job socket; Stop() (or destruction) stops them.
//
// Example (agent/main.cc):
//   RealClock clock;
//   auto daemon = AgentDaemon::Build(config, {&clock, std::make_shared<prometheus::Registry>()});
//   if (daemon.ok() && (*daemon)->Start().ok()) { /* wait for SIGTERM */ (*daemon)->Stop(); }
//
// Threading: Build, Start, Stop and the destructor from one thread; the accessors from
// any thread.
#ifndef WEFT_AGENT_AGENT_DAEMON_H_
#define WEFT_AGENT_AGENT_DAEMON_H_

#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "agent/agent.h"
#include "agent/controller_client.h"
#include "agent/health_server.h"
#include "agent/job_service.h"
#include "agent/nic_backend.h"
#include "common/clock.h"
#include "common/metrics_server.h"
#include "prometheus/registry.h"
#include "proto/weft/v1/config.pb.h"
#include "security/certificate_monitor.h"

namespace weft::agent {

// What the daemon takes from the process rather than from its config.
struct AgentProcess {
  const Clock* clock = nullptr;  // must outlive the daemon
  // The agent's metrics, served on config.metrics_address; the daemon keeps a share.
  std::shared_ptr<prometheus::Registry> registry;
  // A stopped daemon leaves its /metrics server running until the process exits:
  // civetweb's mg_stop() waits out a one-second poll, which would hold a stopping
  // weft-agent's exit past a second, and /metrics has nothing to flush. False (tests):
  // it stops with the daemon.
  bool leave_metrics_to_exit = false;
};

class AgentDaemon {
 public:
  // `config` must have passed ValidateAgentConfig. Fails with
  //   INVALID_ARGUMENT  a setting the operator must change (the NIC backend refuses
  //                     its config, the TLS files cannot be used); the message says so;
  //   UNAVAILABLE       an endpoint could not start: "cannot start /metrics: ...",
  //                     "pingmesh prober: ..." (no epoll/eventfd), or
  //                     "cannot start gRPC health: ...".
  // Nothing is left serving after a failure.
  static absl::StatusOr<std::unique_ptr<AgentDaemon>> Build(weft::v1::AgentConfig config,
                                                            const AgentProcess& process);
  ~AgentDaemon();  // Stop()s.

  AgentDaemon(const AgentDaemon&) = delete;
  AgentDaemon& operator=(const AgentDaemon&) = delete;

  // Starts the agent (discovery, then its session loop; Agent::Start's error, e.g. an
  // inventory that cannot be read), then serves local jobs on config.job_socket unless
  // it is "off". A job socket that cannot be served is logged and the agent goes on:
  // telemetry and tunables are its first duty (several simulated agents on one machine
  // share the default socket).
  absl::Status Start();

  // Removes the job socket (relays in flight cancelled), then stops the agent (stream
  // cancelled, threads joined). Idempotent.
  void Stop();

  // The config as run: metrics_address is the bound address.
  const weft::v1::AgentConfig& config() const { return config_; }
  NicBackend& backend() const { return *backend_; }
  // The client the agent talks through: the gRPC client, or a simulated fault's
  // decorator around it.
  ControllerClient& controller_client() const {
    return fault_client_ != nullptr ? *fault_client_ : *grpc_client_;
  }
  GrpcControllerClient& grpc_client() const { return *grpc_client_; }
  // Null when switched off.
  const MetricsServer* metrics_server() const { return metrics_server_.get(); }
  const HealthServer* health_server() const { return health_server_.get(); }
  Agent& agent() const { return *agent_; }
  // Null when probing is off.
  const probe::Pingmesh* pingmesh() const { return pingmesh_.get(); }

 private:
  struct Parts;
  AgentDaemon(Parts parts, bool leave_metrics_to_exit);

  const weft::v1::AgentConfig config_;
  const bool leave_metrics_to_exit_;
  // Declared so that each part is destroyed before what it points to.
  const std::shared_ptr<prometheus::Registry> registry_;
  const std::unique_ptr<NicBackend> backend_;
  std::unique_ptr<MetricsServer> metrics_server_;  // left to the exit by Stop()
  const std::unique_ptr<HealthServer> health_server_;
  const std::unique_ptr<security::CertificateMonitor> certificate_monitor_;  // null: no TLS
  const std::unique_ptr<GrpcControllerClient> grpc_client_;
  const std::unique_ptr<ControllerClient> fault_client_;  // null: no connection fault
  const std::unique_ptr<probe::Pingmesh> pingmesh_;       // null: probing off
  const std::unique_ptr<Agent> agent_;
  const std::unique_ptr<JobServiceImpl> job_service_;
  std::unique_ptr<JobServer> job_server_;  // from Start() to Stop()
};

}  // namespace weft::agent

#endif  // WEFT_AGENT_AGENT_DAEMON_H_
