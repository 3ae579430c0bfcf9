// weft-agent: parses flags, loads and validates the config, builds the agent and runs
// it until SIGTERM or SIGINT. Exit status: 0 after a clean stop, 2 on a bad config or
// flag (nothing started), 1 when something could not start.
#include <pthread.h>
#include <signal.h>

#include <cstdint>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "agent/agent.h"
#include "agent/agent_flags.h"
#include "agent/controller_client.h"
#include "agent/health_server.h"
#include "agent/backend_factory.h"
#include "agent/inspect.h"
#include "agent/sim_faults.h"
#include "agent/job_service.h"
#include "common/clock.h"
#include "common/daemon_config.h"
#include "common/log_level.h"
#include "common/logging.h"
#include "common/metrics_server.h"
#include "common/sd_notify.h"
#include "common/text_output.h"
#include "prometheus/registry.h"
#include "security/certificate_monitor.h"
#include "security/credentials.h"

ABSL_FLAG(std::string, config, "", "YAML agent config (AgentConfig); defaults when empty");
ABSL_FLAG(std::optional<std::string>, node, std::nullopt, "node name");
ABSL_FLAG(std::optional<std::string>, rack, std::nullopt, "rack of this node");
ABSL_FLAG(std::optional<std::string>, pod, std::nullopt, "pod of this node");
ABSL_FLAG(std::optional<std::string>, controller, std::nullopt, "controller HOST:PORT");
ABSL_FLAG(std::optional<std::string>, metrics, std::nullopt, "/metrics HOST:PORT, or off");
ABSL_FLAG(std::optional<std::string>, health, std::nullopt, "gRPC health HOST:PORT, or off");
ABSL_FLAG(std::optional<uint32_t>, interval_ms, std::nullopt, "telemetry interval, ms");
ABSL_FLAG(std::optional<uint32_t>, nics, std::nullopt, "simulated NICs");
ABSL_FLAG(std::optional<uint32_t>, gpus, std::nullopt, "simulated GPUs");
ABSL_FLAG(std::optional<double>, traffic_level, std::nullopt,
          "simulated mean load, share of line rate (0..1)");
ABSL_FLAG(std::optional<std::string>, fault, std::nullopt,
          "simulated faults: pfc_storm, link_down, retransmits, dead, reject_tunables "
          "(comma-separated or repeated; none clears the config's)");
ABSL_FLAG(bool, dry_run, false,
          "desired QoS/DCQCN state: validate and compare with the NICs, never write; ACK "
          "only what the NICs already have (sets tunables_dry_run)");
ABSL_FLAG(std::optional<uint32_t>, fault_delay_ms, std::nullopt,
          "simulated faults (except dead) start this many ms after agent start");
ABSL_FLAG(std::optional<std::string>, backend, std::nullopt,
          "NIC backend: simulated or linux (inspect defaults to linux)");
ABSL_FLAG(std::optional<std::string>, root, std::nullopt,
          "linux backend: filesystem root holding sys/ (default /)");
ABSL_FLAG(std::string, output, "table", "inspect: table or json");
ABSL_FLAG(std::optional<std::string>, lldp, std::nullopt,
          "LLDP neighbors from lldpd: auto, off, or lldpd's control socket path");
ABSL_FLAG(bool, insecure, false, "plaintext to any controller address (overrides insecure)");
ABSL_FLAG(std::optional<std::string>, tls_cert, std::nullopt,
          "node certificate PEM, CN = node name (overrides tls.cert_file)");
ABSL_FLAG(std::optional<std::string>, tls_key, std::nullopt,
          "node private key PEM (overrides tls.key_file)");
ABSL_FLAG(std::optional<std::string>, tls_ca, std::nullopt,
          "CA of the controller's certificate, PEM (overrides tls.ca_file)");
ABSL_FLAG(std::optional<std::string>, job_socket, std::nullopt,
          "Unix socket serving local jobs (JobService), or off (overrides job_socket)");
ABSL_FLAG(std::string, log_level, "info", "debug, info, warning or error");

namespace weft::agent {

// The /metrics server at exit (see the end of Main); external linkage so the store is
// not optimized away.
MetricsServer* metrics_server_left_to_exit = nullptr;

namespace {

absl::StatusOr<weft::v1::AgentConfig> ConfigFromFlags() {
  absl::StatusOr<weft::v1::AgentConfig> config = LoadAgentConfig(absl::GetFlag(FLAGS_config));
  if (!config.ok()) return config.status();
  AgentFlagOverrides flags;
  flags.node = absl::GetFlag(FLAGS_node);
  flags.rack = absl::GetFlag(FLAGS_rack);
  flags.pod = absl::GetFlag(FLAGS_pod);
  flags.controller = absl::GetFlag(FLAGS_controller);
  flags.metrics = absl::GetFlag(FLAGS_metrics);
  flags.health = absl::GetFlag(FLAGS_health);
  flags.interval_ms = absl::GetFlag(FLAGS_interval_ms);
  flags.nics = absl::GetFlag(FLAGS_nics);
  flags.gpus = absl::GetFlag(FLAGS_gpus);
  flags.traffic_level = absl::GetFlag(FLAGS_traffic_level);
  flags.faults = absl::GetFlag(FLAGS_fault);
  flags.fault_delay_ms = absl::GetFlag(FLAGS_fault_delay_ms);
  flags.backend = absl::GetFlag(FLAGS_backend);
  flags.root = absl::GetFlag(FLAGS_root);
  flags.lldp = absl::GetFlag(FLAGS_lldp);
  if (absl::GetFlag(FLAGS_dry_run)) flags.tunables_dry_run = true;
  if (absl::Status s = ApplyAgentFlags(flags, &*config); !s.ok()) return s;
  if (absl::GetFlag(FLAGS_insecure)) config->set_insecure(true);
  if (auto v = absl::GetFlag(FLAGS_tls_cert)) config->mutable_tls()->set_cert_file(*v);
  if (auto v = absl::GetFlag(FLAGS_tls_key)) config->mutable_tls()->set_key_file(*v);
  if (auto v = absl::GetFlag(FLAGS_tls_ca)) config->mutable_tls()->set_ca_file(*v);
  if (auto v = absl::GetFlag(FLAGS_job_socket)) config->set_job_socket(*v);
  if (absl::Status s = ValidateAgentConfig(*config); !s.ok()) return s;
  return config;
}

// `weft-agent inspect`: discover and read every counter once, print, exit. Needs no
// controller and no node name; without --config or --backend it reads the real node.
int Inspect() {
  if (absl::GetFlag(FLAGS_config).empty() && !absl::GetFlag(FLAGS_backend).has_value()) {
    absl::SetFlag(&FLAGS_backend, std::string("linux"));
  }
  if (!absl::GetFlag(FLAGS_node).has_value()) absl::SetFlag(&FLAGS_node, std::string("inspect"));
  const std::string output = absl::GetFlag(FLAGS_output);
  if (output != "table" && output != "json") {
    std::cerr << "weft-agent inspect: flag --output: value '" << output
              << "' is not a format; accepted: table, json\n";
    return 2;
  }
  absl::StatusOr<weft::v1::AgentConfig> config = ConfigFromFlags();
  if (!config.ok()) {
    std::cerr << "weft-agent inspect: " << config.status().message() << "\n";
    return 2;
  }
  RealClock clock;
  absl::StatusOr<std::unique_ptr<NicBackend>> backend = MakeNicBackend(*config, &clock);
  if (!backend.ok()) {
    std::cerr << "weft-agent inspect: " << backend.status().message() << "\n";
    return 2;
  }
  absl::StatusOr<NodeInventory> inventory = (*backend)->Discover();
  if (!inventory.ok()) {
    std::cerr << "weft-agent inspect: " << inventory.status().message() << "\n";
    return 1;
  }
  absl::StatusOr<std::vector<RawNicReading>> readings = (*backend)->ReadCounters();
  if (!readings.ok()) {
    std::cerr << "weft-agent inspect: " << readings.status().message() << "\n";
    return 1;
  }
  weft::v1::NodeSnapshot snapshot = MakeSnapshot(*inventory, *readings);
  AddTunables((*backend)->Tunables(), &snapshot);
  std::cout << (output == "json" ? FormatJson(snapshot) : FormatSnapshotTable(snapshot));
  return 0;
}

bool Enabled(const std::string& address) { return !address.empty() && address != "off"; }

int Main(int argc, char** argv) {
  // SIGINT/SIGTERM are blocked in every thread (threads inherit the mask) and taken by
  // sigwait() below, so no handler runs on a gRPC or civetweb thread.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  absl::SetProgramUsageMessage(
      "weft-agent --config FILE | --node NAME [flags]\n"
      "       [--tls_cert F --tls_key F --tls_ca F | --insecure]\n"
      "       weft-agent inspect [--root DIR] [--backend linux|simulated] [--output table|json]");
  std::vector<std::string> args =
      MergeRepeatedFlag(std::vector<std::string>(argv, argv + argc), "fault");
  std::vector<char*> arg_ptrs;
  for (std::string& arg : args) arg_ptrs.push_back(arg.data());
  std::vector<char*> positional =
      absl::ParseCommandLine(static_cast<int>(arg_ptrs.size()), arg_ptrs.data());
  if (positional.size() == 2 && std::string(positional[1]) == "inspect") return Inspect();
  if (positional.size() > 1) {
    std::cerr << "weft-agent: unexpected argument '" << positional[1]
              << "'; the only command is 'inspect'\n";
    return 2;
  }

  absl::StatusOr<LogLevel> log_level = ParseLogLevel(absl::GetFlag(FLAGS_log_level));
  absl::StatusOr<weft::v1::AgentConfig> config = ConfigFromFlags();
  if (!log_level.ok() || !config.ok()) {
    std::cerr << "weft-agent: " << (log_level.ok() ? config.status() : log_level.status()).message()
              << "\n";
    return 2;
  }
  SetMinLogLevel(*log_level);
  // systemd Type=notify: READY once serving, the watchdog fed from now on.
  ServiceNotifier notifier(SdNotifyEnvFromProcess());

  RealClock clock;
  absl::StatusOr<std::unique_ptr<NicBackend>> backend = MakeNicBackend(*config, &clock);
  if (!backend.ok()) {
    std::cerr << "weft-agent: " << backend.status().message() << "\n";
    return 2;
  }

  auto registry = std::make_shared<prometheus::Registry>();
  std::unique_ptr<MetricsServer> metrics_server;
  if (Enabled(config->metrics_address())) {
    absl::StatusOr<std::unique_ptr<MetricsServer>> started =
        MetricsServer::Start(config->metrics_address(), registry);
    if (!started.ok()) {
      WEFT_LOG(ERROR) << "cannot start /metrics: " << started.status().ToString();
      return 1;
    }
    metrics_server = *std::move(started);
    WEFT_LOG(INFO) << "serving /metrics address=" << metrics_server->address();
    // Registration advertises the bound address (a configured port 0 resolved).
    config->set_metrics_address(metrics_server->address());
  }
  std::unique_ptr<HealthServer> health_server;
  if (Enabled(config->health_address())) {
    absl::StatusOr<std::unique_ptr<HealthServer>> started =
        HealthServer::Start(config->health_address());
    if (!started.ok()) {
      WEFT_LOG(ERROR) << "cannot start gRPC health: " << started.status().ToString();
      return 1;
    }
    health_server = *std::move(started);
    WEFT_LOG(INFO) << "serving grpc.health.v1 address=" << health_server->address();
  }

  GrpcControllerClientOptions client_options;
  client_options.address = config->controller_address();
  absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials =
      security::MakeChannelCredentials(config->tls());
  if (!credentials.ok()) {
    std::cerr << "weft-agent: " << credentials.status().message() << "\n";
    return 2;
  }
  client_options.credentials = *std::move(credentials);
  // The certificate files' expiry and validity on /metrics (null without TLS).
  const std::unique_ptr<security::CertificateMonitor> certificate_monitor =
      security::CertificateMonitor::Start(config->tls(), *registry);
  if (!security::TlsEnabled(config->tls())) {
    WEFT_LOG(WARNING) << "connection to the controller " << config->controller_address()
                      << " is PLAINTEXT: no TLS, the controller cannot verify this node "
                         "(set tls in the config; see deploy/examples/agent.yaml)";
  }
  client_options.min_reconnect_backoff =
      absl::Milliseconds(config->reconnect().initial_backoff_ms());
  client_options.max_reconnect_backoff = absl::Milliseconds(config->reconnect().max_backoff_ms());
  GrpcControllerClient grpc_client(client_options);
  const std::unique_ptr<ControllerClient> faulty = WrapForSimulatedFaults(*config, &grpc_client);
  ControllerClient* client = faulty != nullptr ? faulty.get() : &grpc_client;

  Agent agent(*config, backend->get(), client, &clock, registry.get(), health_server.get());
  if (absl::Status started = agent.Start(); !started.ok()) {
    WEFT_LOG(ERROR) << "cannot start the agent: " << started.ToString();
    return 1;
  }
  // Local jobs ask for their NIC and meet their peers here (agent/job_service.h).
  JobServiceImpl job_service(
      JobServiceOptions{config->node_name(), config->controller_address()},
      [&agent] { return agent.inventory(); }, grpc_client.channel());
  std::unique_ptr<JobServer> job_server;
  if (config->job_socket() != "off") {
    absl::StatusOr<std::unique_ptr<JobServer>> started =
        JobServer::Start(config->job_socket(), &job_service);
    if (started.ok()) {
      job_server = *std::move(started);
      WEFT_LOG(INFO) << "serving jobs socket=" << job_server->path();
    } else {
      // Telemetry and tunables are the agent's first duty: it goes on without the
      // job socket (e.g. several simulated agents on one machine share the default).
      WEFT_LOG(ERROR) << "not serving local jobs: " << started.status().ToString();
    }
  }
  // Ready means this node's endpoints serve; the controller session follows on its own
  // (with backoff), so a controller that is down does not fail the unit's start.
  notifier.Ready("serving node=" + config->node_name());
  int signal_number = 0;
  sigwait(&stop_signals, &signal_number);
  WEFT_LOG(INFO) << "stopping on signal " << signal_number;
  notifier.Stopping();
  job_server.reset();  // relays in flight are cancelled, the socket removed
  agent.Stop();  // cancels the stream, joins the agent's threads
  // civetweb's mg_stop() waits out its one-second poll before returning, which would
  // hold the exit past a second; /metrics has nothing to flush, so the process exit
  // closes it instead. A global keeps it reachable, so LeakSanitizer does not report it.
  metrics_server_left_to_exit = metrics_server.release();
  WEFT_LOG(INFO) << "stopped";
  return 0;
}

}  // namespace
}  // namespace weft::agent

int main(int argc, char** argv) { return weft::agent::Main(argc, argv); }
