#include "controller/server/controller_server.h"

#include <utility>

#include "absl/memory/memory.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/logging.h"
#include "common/status_macros.h"
#include "grpcpp/health_check_service_interface.h"
#include "security/credentials.h"
#include "security/tokens.h"
#include "store/sqlite_rollout_store.h"
#include "tuning/traffic_mix.h"

namespace weft::controller {
namespace {

constexpr absl::Duration kShutdownGrace = absl::Seconds(2);

// "host:port" with the port replaced; handles "[::1]:0" as well as "127.0.0.1:0".
std::string WithPort(const std::string& address, int port) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos) return absl::StrCat(address, ":", port);
  return absl::StrCat(address.substr(0, colon), ":", port);
}

// The tuner's bounds from the config (zeros: a config built in code without defaults).
TuneManagerOptions TuneOptions(const weft::v1::TuningConfig& config) {
  TuneManagerOptions options;
  if (config.max_evaluations() > 0) options.max_evaluations = config.max_evaluations();
  if (config.max_wall_s() > 0) options.max_wall = absl::Seconds(config.max_wall_s());
  if (config.seeds() > 0) {
    options.evaluation.seeds.clear();
    for (uint32_t seed = 1; seed <= config.seeds(); ++seed) options.evaluation.seeds.push_back(seed);
  }
  if (config.has_automatic()) {  // validated: thresholds nest, apply needs propose
    const weft::v1::AutoTuneConfig& automatic = config.automatic();
    options.auto_propose = automatic.propose();
    options.auto_apply = automatic.apply();
    if (automatic.check_interval_s() > 0) {
      options.check_interval = absl::Seconds(automatic.check_interval_s());
    }
    if (automatic.mix_shift_high() > 0) {
      options.trigger.mix_shift_high = automatic.mix_shift_high();
      options.trigger.mix_shift_low = automatic.mix_shift_low();
    }
    if (automatic.consecutive_checks() > 0) {
      options.trigger.consecutive_checks = static_cast<int>(automatic.consecutive_checks());
    }
    if (automatic.kpi_regression() > 0) options.trigger.kpi_regression = automatic.kpi_regression();
    options.trigger.cooldown = absl::Seconds(automatic.cooldown_s());
  }
  return options;
}

// The running jobs as the tuner reads them: each reservation's declared traffic, and
// the KPI (newest iteration against the first) of those that reported.
RunningJobs RunningJobsOf(PlacementManager* placement) {
  RunningJobs jobs;
  for (const PlacementManager::PlacedJob& job : placement->ListPlacedJobs()) {
    jobs.traffic.push_back(tuning::DeclaredTraffic(job.request, job.reservation));
    if (job.progress) {
      jobs.kpis.push_back({.iteration_s = job.progress->iteration_s(),
                           .baseline_s = job.progress->first_iteration_s()});
    }
  }
  return jobs;
}

// The rollout records' home: the controller's database, or memory without one.
std::unique_ptr<store::RolloutStore> MakeRolloutStore(store::ControllerStore* store) {
  if (store != nullptr) return std::make_unique<store::SqliteRolloutStore>(store);
  WEFT_LOG(WARNING) << "no durable store: rollouts are kept in memory only";
  return std::make_unique<store::MemoryRolloutStore>();
}

PingmeshManagerOptions PingmeshOptions(const weft::v1::ControllerConfig& config) {
  return PingmeshManagerOptions::FromConfig(config.pingmesh(),
                                            absl::Milliseconds(config.telemetry_interval_ms()));
}

// How often pingmesh looks for windows to judge: a fifth of a window, so a window every
// agent has sent waits little for its judgement, and never less often than the ticker.
absl::Duration PingmeshTickPeriod(const weft::v1::ControllerConfig& config) {
  return std::min(absl::Milliseconds(config.telemetry_interval_ms()) / 4,
                  PingmeshOptions(config).window / 5);
}

RendezvousServiceOptions RendezvousOptions(const weft::v1::ControllerConfig& config) {
  RendezvousServiceOptions options;
  options.verify_node_identity = security::TlsEnabled(config.tls());
  return options;
}

}  // namespace

absl::StatusOr<std::unique_ptr<ControllerServer>> ControllerServer::Create(
    weft::v1::ControllerConfig config, const Clock* clock,
    std::shared_ptr<prometheus::Registry> registry, store::ControllerStore* store) {
  if (config.telemetry_interval_ms() == 0 || config.down_after_intervals() == 0 ||
      config.window_samples() == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "controller config needs telemetry_interval_ms, down_after_intervals and "
        "window_samples above 0 (got ",
        config.telemetry_interval_ms(), ", ", config.down_after_intervals(), ", ",
        config.window_samples(), "); run ValidateControllerConfig first"));
  }
  RETURN_IF_ERROR(PingmeshManager::ValidateOptions(PingmeshOptions(config)));
  std::shared_ptr<const security::TokenTable> tokens;
  if (!config.tokens_file().empty()) {
    ASSIGN_OR_RETURN(security::TokenTable table,
                     security::TokenTable::LoadFile(config.tokens_file()));
    tokens = std::make_shared<const security::TokenTable>(std::move(table));
  }
  return absl::WrapUnique(new ControllerServer(std::move(config), clock, std::move(registry),
                                               store, std::move(tokens)));
}

ControllerServer::ControllerServer(weft::v1::ControllerConfig config, const Clock* clock,
                                   std::shared_ptr<prometheus::Registry> registry,
                                   store::ControllerStore* store,
                                   std::shared_ptr<const security::TokenTable> tokens)
    : config_(std::move(config)),
      clock_(clock),
      registry_(std::move(registry)),
      store_(store),
      tokens_(std::move(tokens)),
      metrics_(*registry_),
      inventory_(clock_, InventoryOptions::FromConfig(config_), &metrics_, store_),
      audit_log_(store_),
      audit_sink_(&audit_log_),
      rollout_metrics_(*registry_),
      // The agent service is the downlink; it is called only once agents are connected.
      desired_state_(clock_, &rollout_metrics_,
                     [this](const std::string& node, weft::v1::ControllerMessage message) {
                       return agent_service_.SendToNode(node, std::move(message));
                     }),
      pingmesh_metrics_(*registry_),
      pingmesh_(clock_, [this] { return inventory_.ListNodeIdentities(); },
                [this](const std::string& node, weft::v1::ControllerMessage message) {
                  return agent_service_.SendToNode(node, std::move(message));
                },
                &inventory_.events(), &pingmesh_metrics_, PingmeshOptions(config_),
                [this](const std::string& node, std::vector<Finding> findings) {
                  absl::Status set =
                      inventory_.SetExternalFindings(node, "pingmesh", std::move(findings));
                  if (!set.ok()) {
                    WEFT_LOG(DEBUG) << "pingmesh findings not kept yet node=" << node
                                    << " error=\"" << set.message() << "\"";
                  }
                  return set;
                }),
      agent_service_(&inventory_, &metrics_,
                     AgentServiceOptions{config_.telemetry_interval_ms(), kControllerVersion,
                                         security::TlsEnabled(config_.tls())},
                     &desired_state_, &pingmesh_),
      admin_service_(&inventory_, &audit_log_, clock_),
      placement_metrics_(*registry_),
      placement_(&inventory_, clock_,
                 PlacementOptions{{},
                                  CongestionScale::FromThresholds(
                                      InventoryOptions::FromConfig(config_).health)},
                 &placement_metrics_, store_),
      placement_service_(&placement_,
                         [this](const weft::v1::CheckRequest& request,
                                PrecheckedPlacement::CheckDone done) {
                           return pingmesh_.StartCheck(request, std::move(done));
                         }),
      rollout_store_(MakeRolloutStore(store_)),
      rollouts_(&inventory_, &desired_state_, rollout_store_.get(), &rollout_metrics_, clock_),
      rollout_service_(&rollouts_),
      tune_metrics_(*registry_),
      tuner_(&rollouts_, &tune_metrics_, clock_, TuneOptions(config_.tuning()),
             [this] { return RunningJobsOf(&placement_); }),
      tune_service_(&tuner_),
      pingmesh_service_(&pingmesh_),
      rendezvous_service_(clock_, *registry_, RendezvousOptions(config_)),
      ticker_(clock_, absl::Milliseconds(config_.telemetry_interval_ms()) / 4, [this] { Tick(); }),
      pingmesh_ticker_(clock_, PingmeshTickPeriod(config_), [this] { pingmesh_.Tick(); }) {}

ControllerServer::~ControllerServer() { Stop(); }

std::vector<ControllerServer::ServedService> ControllerServer::Services() {
  return {
      {&agent_service_, weft::v1::AgentService::service_full_name()},
      {&admin_service_, weft::v1::AdminService::service_full_name()},
      {&placement_service_, weft::v1::PlacementService::service_full_name()},
      {&rollout_service_, weft::v1::RolloutService::service_full_name()},
      {&tune_service_, weft::v1::TuneService::service_full_name()},
      {&pingmesh_service_, weft::v1::PingmeshService::service_full_name()},
      {&rendezvous_service_, weft::v1::RendezvousService::service_full_name()},
  };
}

absl::Status ControllerServer::Start() {
  if (started_) return absl::FailedPreconditionError("ControllerServer started twice");

  // The durable state is back before anyone can call: an agent registering now gets
  // an epoch above every one granted before the restart; rollouts are recovered before
  // agents can connect (controller/rollout/rollout_manager.h).
  RETURN_IF_ERROR(inventory_.Restore());
  RETURN_IF_ERROR(placement_.Restore());
  RETURN_IF_ERROR(rollouts_.Recover());
  if (!config_.policy_file().empty()) rollouts_.WatchPolicyFile(config_.policy_file());

  // Credentials first: a bad TLS file fails Start before anything serves.
  ASSIGN_OR_RETURN(std::shared_ptr<grpc::ServerCredentials> credentials,
                   security::MakeServerCredentials(
                       config_.tls(), std::make_shared<security::AuthProcessor>(
                                          tokens_, clock_, &audit_sink_)));
  certificate_monitor_ = security::CertificateMonitor::Start(config_.tls(), *registry_);
  if (!security::TlsEnabled(config_.tls())) {
    WEFT_LOG(WARNING) << "gRPC is PLAINTEXT on " << config_.listen_address()
                      << ": no TLS, no authentication, no roles (set tls in the config for "
                         "mTLS; see deploy/examples/controller.yaml)";
  }

  ASSIGN_OR_RETURN(metrics_server_,
                   MetricsServer::Start(config_.metrics_address(), registry_));

  // Process-wide switch; must precede BuildAndStart. Serves grpc.health.v1.Health.
  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  // Without this a second controller on the same port would silently share it.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  // No bandwidth-delay-product probing: it sends a PING per agent connection every few
  // telemetry batches, and its timers keep gRPC's timer threads waking, to tune flow
  // control windows for bulk transfers; agent messages are a few KiB a second, far
  // inside the default 64 KiB window.
  builder.AddChannelArgument(GRPC_ARG_HTTP2_BDP_PROBE, 0);
  std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>>
      interceptors;
  interceptors.push_back(
      std::make_unique<security::AuditInterceptorFactory>(clock_, &audit_sink_));
  builder.experimental().SetInterceptorCreators(std::move(interceptors));
  builder.AddListeningPort(config_.listen_address(), credentials, &grpc_port_);
  const std::vector<ServedService> services = Services();
  for (const ServedService& served : services) builder.RegisterService(served.service);
  grpc_server_ = builder.BuildAndStart();
  if (grpc_server_ == nullptr || grpc_port_ == 0) {
    grpc_server_.reset();
    metrics_server_.reset();
    return absl::UnavailableError(
        absl::StrCat("cannot serve gRPC on ", config_.listen_address(),
                     " (address in use, or not a local host:port?)"));
  }
  listen_address_ = WithPort(config_.listen_address(), grpc_port_);
  grpc::HealthCheckServiceInterface* health = grpc_server_->GetHealthCheckService();
  health->SetServingStatus(true);
  for (const ServedService& served : services) health->SetServingStatus(served.name, true);
  rendezvous_service_.Start();

  ticker_.Start();
  pingmesh_ticker_.Start();
  started_ = true;
  WEFT_LOG(INFO) << "weft-controller " << kControllerVersion << " serving grpc=" << listen_address_
                 << " metrics=" << metrics_address()
                 << " telemetry_interval_ms=" << config_.telemetry_interval_ms()
                 << " down_after_intervals=" << config_.down_after_intervals()
                 << " degrade_after_ms=" << config_.health().degrade_after_ms()
                 << " recover_after_ms=" << config_.health().recover_after_ms()
                 << " auto_drain=" << (config_.health().auto_drain().enabled() ? "on" : "off")
                 << " state_dir=" << config_.state_dir()
                 << " tls=" << (security::TlsEnabled(config_.tls()) ? "mtls" : "off");
  return absl::OkStatus();
}

absl::Status ControllerServer::AuditLogSink::Record(const security::AuditRecord& record) {
  AuditEntry entry;
  entry.at = record.at;
  entry.who = record.who.name;
  entry.role = std::string(security::RoleName(record.who.role));
  entry.method = record.method;
  entry.target = record.target;
  entry.result = AuditResult(record.result);
  return log_->Record(entry);
}

void ControllerServer::Tick() {
  inventory_.Sweep();
  placement_.RefreshGauges();
  rollouts_.Tick();
  tuner_.Tick();
}

void ControllerServer::Stop() {
  if (!started_ || stopped_) return;
  stopped_ = true;
  grpc_server_->GetHealthCheckService()->SetServingStatus(false);
  // A pre-job check answers from the ticker: end them before the server waits for calls.
  pingmesh_.CancelChecks(absl::UnavailableError(
      "the controller is shutting down; run the check again once it is back"));
  agent_service_.FinishAllStreams(absl::UnavailableError(
      "the controller is shutting down; the agent should re-register and reconnect"));
  // Waiting rendezvous calls end now, not after the shutdown grace.
  rendezvous_service_.Stop();
  grpc_server_->Shutdown(absl::ToChronoTime(absl::Now() + kShutdownGrace));
  grpc_server_->Wait();
  ticker_.Stop();
  pingmesh_ticker_.Stop();
  metrics_server_.reset();
  WEFT_LOG(INFO) << "controller stopped";
}

std::string ControllerServer::metrics_address() const {
  return metrics_server_ == nullptr ? std::string() : metrics_server_->address();
}

}  // namespace weft::controller
