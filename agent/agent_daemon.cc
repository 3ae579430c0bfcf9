#include "agent/agent_daemon.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "agent/backend_factory.h"
#include "agent/sim_faults.h"
#include "common/logging.h"
#include "rdma/verbs_ibv.h"
#include "security/credentials.h"

namespace weft::agent {
namespace {

bool Enabled(const std::string& address) { return !address.empty() && address != "off"; }

// Never destroyed, and reachable from here, so LeakSanitizer does not report it.
void LeaveToProcessExit(std::unique_ptr<MetricsServer> server) {
  static auto* const left = new std::vector<std::unique_ptr<MetricsServer>>();
  left->push_back(std::move(server));
}

}  // namespace

struct AgentDaemon::Parts {
  weft::v1::AgentConfig config;
  std::shared_ptr<prometheus::Registry> registry;
  std::unique_ptr<NicBackend> backend;
  std::unique_ptr<MetricsServer> metrics_server;
  std::unique_ptr<HealthServer> health_server;
  std::unique_ptr<security::CertificateMonitor> certificate_monitor;
  std::unique_ptr<GrpcControllerClient> grpc_client;
  std::unique_ptr<ControllerClient> fault_client;
  std::unique_ptr<probe::Pingmesh> pingmesh;
  std::unique_ptr<Agent> agent;
  std::unique_ptr<JobServiceImpl> job_service;
};

absl::StatusOr<std::unique_ptr<AgentDaemon>> AgentDaemon::Build(weft::v1::AgentConfig config,
                                                                const AgentProcess& process) {
  Parts parts;
  parts.registry = process.registry;
  absl::StatusOr<std::unique_ptr<NicBackend>> backend = MakeNicBackend(config, process.clock);
  if (!backend.ok()) return absl::InvalidArgumentError(backend.status().message());
  parts.backend = *std::move(backend);

  if (Enabled(config.metrics_address())) {
    absl::StatusOr<std::unique_ptr<MetricsServer>> started =
        MetricsServer::Start(config.metrics_address(), parts.registry);
    if (!started.ok()) {
      return absl::UnavailableError(
          absl::StrCat("cannot start /metrics: ", started.status().ToString()));
    }
    parts.metrics_server = *std::move(started);
    WEFT_LOG(INFO) << "serving /metrics address=" << parts.metrics_server->address();
    // Registration advertises the bound address (a configured port 0 resolved).
    config.set_metrics_address(parts.metrics_server->address());
  }
  if (Enabled(config.health_address())) {
    absl::StatusOr<std::unique_ptr<HealthServer>> started =
        HealthServer::Start(config.health_address());
    if (!started.ok()) {
      return absl::UnavailableError(
          absl::StrCat("cannot start gRPC health: ", started.status().ToString()));
    }
    parts.health_server = *std::move(started);
    WEFT_LOG(INFO) << "serving grpc.health.v1 address=" << parts.health_server->address();
  }

  GrpcControllerClientOptions client_options;
  client_options.address = config.controller_address();
  absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials =
      security::MakeChannelCredentials(config.tls());
  if (!credentials.ok()) return absl::InvalidArgumentError(credentials.status().message());
  client_options.credentials = *std::move(credentials);
  // The certificate files' expiry and validity on /metrics (null without TLS).
  parts.certificate_monitor = security::CertificateMonitor::Start(config.tls(), *parts.registry);
  if (!security::TlsEnabled(config.tls())) {
    WEFT_LOG(WARNING) << "connection to the controller " << config.controller_address()
                      << " is PLAINTEXT: no TLS, the controller cannot verify this node "
                         "(set tls in the config; see deploy/examples/agent.yaml)";
  }
  client_options.min_reconnect_backoff =
      absl::Milliseconds(config.reconnect().initial_backoff_ms());
  client_options.max_reconnect_backoff = absl::Milliseconds(config.reconnect().max_backoff_ms());
  parts.grpc_client = std::make_unique<GrpcControllerClient>(std::move(client_options));
  parts.fault_client = WrapForSimulatedFaults(config, parts.grpc_client.get());
  ControllerClient* client =
      parts.fault_client != nullptr ? parts.fault_client.get() : parts.grpc_client.get();

  // UD probing needs the node's real NICs: the Linux backend's.
  std::unique_ptr<rdma::Verbs> probe_verbs;
  if (config.backend() == "linux") probe_verbs = std::make_unique<rdma::IbvVerbs>();
  absl::StatusOr<std::unique_ptr<probe::Pingmesh>> pingmesh = probe::Pingmesh::Create(
      config, process.clock, parts.registry.get(), std::move(probe_verbs));
  if (!pingmesh.ok()) return pingmesh.status();
  parts.pingmesh = *std::move(pingmesh);
  parts.agent = std::make_unique<Agent>(config, parts.backend.get(), client, process.clock,
                                        parts.registry.get(), parts.health_server.get(),
                                        parts.pingmesh.get());
  // Local jobs ask for their NIC and meet their peers here (agent/job_service.h).
  parts.job_service = std::make_unique<JobServiceImpl>(
      JobServiceOptions{config.node_name(), config.controller_address()},
      [agent = parts.agent.get()] { return agent->inventory(); }, parts.grpc_client->channel());
  parts.config = std::move(config);
  return std::unique_ptr<AgentDaemon>(
      new AgentDaemon(std::move(parts), process.leave_metrics_to_exit));
}

AgentDaemon::AgentDaemon(Parts parts, bool leave_metrics_to_exit)
    : config_(std::move(parts.config)),
      leave_metrics_to_exit_(leave_metrics_to_exit),
      registry_(std::move(parts.registry)),
      backend_(std::move(parts.backend)),
      metrics_server_(std::move(parts.metrics_server)),
      health_server_(std::move(parts.health_server)),
      certificate_monitor_(std::move(parts.certificate_monitor)),
      grpc_client_(std::move(parts.grpc_client)),
      fault_client_(std::move(parts.fault_client)),
      pingmesh_(std::move(parts.pingmesh)),
      agent_(std::move(parts.agent)),
      job_service_(std::move(parts.job_service)) {}

AgentDaemon::~AgentDaemon() { Stop(); }

absl::Status AgentDaemon::Start() {
  if (absl::Status started = agent_->Start(); !started.ok()) return started;
  if (config_.job_socket() == "off") return absl::OkStatus();
  absl::StatusOr<std::unique_ptr<JobServer>> started =
      JobServer::Start(config_.job_socket(), job_service_.get());
  if (!started.ok()) {
    WEFT_LOG(ERROR) << "not serving local jobs: " << started.status().ToString();
    return absl::OkStatus();
  }
  job_server_ = *std::move(started);
  WEFT_LOG(INFO) << "serving jobs socket=" << job_server_->path();
  return absl::OkStatus();
}

void AgentDaemon::Stop() {
  job_server_.reset();
  agent_->Stop();
  if (leave_metrics_to_exit_ && metrics_server_ != nullptr) {
    LeaveToProcessExit(std::move(metrics_server_));
  }
}

}  // namespace weft::agent
