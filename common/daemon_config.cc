#include "common/daemon_config.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstdint>
#include <set>
#include <utility>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "common/status_macros.h"
#include "common/yaml_proto.h"
#include "google/protobuf/descriptor.h"
#include "proto/weft/v1/config.pb.h"
#include "proto/weft/v1/options.pb.h"

namespace weft {
namespace {

constexpr absl::string_view kControllerContext = "controller config";
constexpr absl::string_view kAgentContext = "agent config";
constexpr absl::string_view kFabricContext = "fabric config";
// Renewed certificates are picked up within a minute (security/credentials.h).
constexpr uint32_t kTlsRefreshIntervalS = 60;

template <typename Config>
absl::StatusOr<Config> LoadOver(Config config, absl::string_view path) {
  if (path.empty()) return config;
  RETURN_IF_ERROR(MergeYamlFile(path, &config));
  return config;
}

absl::Status Invalid(absl::string_view context, absl::string_view field,
                     absl::string_view problem, absl::string_view accepted) {
  return absl::InvalidArgumentError(absl::StrCat(
      context, ": field '", field, "': ", problem, "; accepted: ", accepted));
}

// The (weft.v1.rule) max of a field, so a cross-field message cannot drift from the
// schema.
template <typename Message>
int64_t MaxOf(absl::string_view field_name) {
  const google::protobuf::FieldDescriptor* field =
      Message::descriptor()->FindFieldByName(std::string(field_name));
  return static_cast<int64_t>(field->options().GetExtension(weft::v1::rule).max());
}

// An agent endpoint that is switched off.
bool Disabled(absl::string_view address) { return address.empty() || address == "off"; }

// "host:0" asks the kernel for a free port, so two such addresses never collide.
bool PicksFreePort(absl::string_view address) { return absl::EndsWith(address, ":0"); }

// TLS needs all three files or none. Without TLS, plaintext is accepted on a loopback
// address (the embedded defaults, the local demo) or when `insecure` says so.
absl::Status ValidateTransport(absl::string_view context, const weft::v1::TlsConfig& tls,
                               bool insecure, absl::string_view address_field,
                               absl::string_view address) {
  const bool any = !tls.cert_file().empty() || !tls.key_file().empty() || !tls.ca_file().empty();
  const bool all = !tls.cert_file().empty() && !tls.key_file().empty() && !tls.ca_file().empty();
  if (any && !all) {
    return Invalid(context, "tls",
                   absl::StrCat("cert_file '", tls.cert_file(), "', key_file '", tls.key_file(),
                                "' and ca_file '", tls.ca_file(), "' are only partly set"),
                   "all three PEM file paths, or none");
  }
  if (all && insecure) {
    return Invalid(context, "insecure", "value 'true' contradicts the tls files that are set",
                   "false when tls is set, or remove tls to run plaintext");
  }
  if (!all && !insecure && !IsLoopbackAddress(address)) {
    return Invalid(context, "tls",
                   absl::StrCat("not set, and ", address_field, " '", address,
                                "' is not a loopback address, so gRPC would run in plaintext "
                                "over the network"),
                   "tls.cert_file, tls.key_file and tls.ca_file (deploy/pki/mint-dev-pki.sh "
                   "mints a development set), or insecure: true (--insecure) to accept "
                   "plaintext");
  }
  return absl::OkStatus();
}

}  // namespace

bool IsLoopbackAddress(absl::string_view address) {
  const size_t colon = address.rfind(':');
  absl::string_view host = colon == absl::string_view::npos ? address : address.substr(0, colon);
  if (absl::ConsumePrefix(&host, "[")) absl::ConsumeSuffix(&host, "]");
  return host == "localhost" || host == "::1" || absl::StartsWith(host, "127.");
}

weft::v1::ControllerConfig DefaultControllerConfig() {
  weft::v1::ControllerConfig config;
  config.set_listen_address("127.0.0.1:7400");
  config.set_metrics_address("127.0.0.1:7401");
  config.set_telemetry_interval_ms(1000);
  config.set_down_after_intervals(3);
  config.set_window_samples(60);
  config.set_event_log_capacity(10000);
  config.set_policy_file("");
  config.mutable_tuning()->set_max_evaluations(40);
  config.mutable_tuning()->set_max_wall_s(120);
  config.mutable_tuning()->set_seeds(3);
  weft::v1::AutoTuneConfig* automatic = config.mutable_tuning()->mutable_automatic();
  automatic->set_propose(false);
  automatic->set_apply(false);
  automatic->set_check_interval_s(60);
  automatic->set_mix_shift_high(0.2);
  automatic->set_mix_shift_low(0.1);
  automatic->set_consecutive_checks(3);
  automatic->set_kpi_regression(0.1);
  automatic->set_cooldown_s(1800);
  weft::v1::PingmeshConfig* pingmesh = config.mutable_pingmesh();
  pingmesh->set_enabled(true);
  pingmesh->set_window_ms(250);
  pingmesh->set_timeout_ms(200);
  pingmesh->set_dscp(26);
  pingmesh->set_tor_uplinks(8);
  pingmesh->set_gray_loss_rate(1e-3);
  pingmesh->set_gray_detect_s(5);
  pingmesh->set_max_probes_per_node_per_s(1000);
  pingmesh->set_max_nic_capacity_share(0.01);
  pingmesh->set_degrade_blamed_nodes(true);
  config.set_state_dir("/var/lib/weft/controller");
  // No TLS files and not insecure: plaintext, accepted only because the default
  // listen_address is loopback (ValidateTransport). deploy/examples turns TLS on.
  config.mutable_tls()->Clear();
  config.mutable_tls()->set_refresh_interval_s(kTlsRefreshIntervalS);
  config.set_insecure(false);
  config.set_tokens_file("");
  weft::v1::HealthConfig* health = config.mutable_health();
  // 2 samples in a row and 2 s from the first: a PFC storm at a 1 s interval turns
  // the node DEGRADED within 5 s (see HealthConfig in config.proto).
  health->set_consecutive_samples(2);
  health->set_degrade_after_ms(2000);
  health->set_recover_after_ms(10000);
  health->set_pfc_pause_share(0.5);
  health->set_ecn_mark_ratio(0.1);
  health->set_ecn_min_rcv_packets_per_s(1000);
  health->set_cnp_ignored_per_s(0);
  health->set_packet_seq_err_per_s(10);
  health->set_local_ack_timeout_err_per_s(1);
  health->set_out_of_sequence_per_s(10);
  health->set_link_flaps_per_window(0);
  weft::v1::AutoDrainConfig* auto_drain = health->mutable_auto_drain();
  auto_drain->set_enabled(false);
  auto_drain->set_after_ms(60000);
  auto_drain->set_undrain_after_clean_ms(300000);
  return config;
}

weft::v1::AgentConfig DefaultAgentConfig() {
  weft::v1::AgentConfig config;
  config.set_controller_address("127.0.0.1:7400");
  config.set_metrics_address("127.0.0.1:7411");
  config.set_health_address("127.0.0.1:7410");
  config.mutable_linux()->set_root("/");
  // weft-fabric's default listen address (DefaultFabricConfig).
  config.mutable_fabric()->set_address("127.0.0.1:7300");
  config.set_lldp("auto");
  config.set_tunables_dry_run(false);
  config.set_drift_check_interval_ms(60000);
  config.set_job_socket("/run/weft/agent.sock");
  weft::v1::ProbeConfig* probe = config.mutable_probe();
  probe->set_udp_port(7412);
  probe->set_bind_address("0.0.0.0");
  probe->set_max_probes_per_second(1000);
  probe->set_max_nic_share(0.01);
  probe->set_max_cpu_share(0.02);
  probe->set_trace_interval_s(300);
  probe->set_traces_per_second(2);
  probe->set_trace_max_hops(8);
  // Plaintext to the loopback default controller_address; see ValidateTransport.
  config.mutable_tls()->Clear();
  config.mutable_tls()->set_refresh_interval_s(kTlsRefreshIntervalS);
  config.set_insecure(false);
  config.set_interval_ms(1000);
  config.set_backend("simulated");
  weft::v1::SimulatedBackendConfig* simulated = config.mutable_simulated();
  simulated->set_nics(8);
  simulated->set_gpus(8);
  simulated->set_link_speed_gbps(400);
  simulated->set_traffic_level(0.6);
  simulated->set_seed(0);
  simulated->set_fault_delay_ms(0);
  weft::v1::ReconnectConfig* reconnect = config.mutable_reconnect();
  reconnect->set_initial_backoff_ms(200);
  reconnect->set_max_backoff_ms(10000);
  return config;
}

weft::v1::FabricConfig DefaultFabricConfig() {
  weft::v1::FabricConfig config;
  config.set_listen_address("127.0.0.1:7300");
  config.set_metrics_address("");
  config.set_racks(4);
  config.set_nodes_per_rack(8);
  config.set_racks_per_pod(2);
  config.set_nics_per_node(8);
  config.set_gpus_per_node(8);
  config.set_nic_gbps(400);
  config.set_uplinks_per_tor(8);
  config.set_oversubscription(2);
  config.set_tick_ms(100);
  config.set_controller_address("");
  config.set_job_check_interval_ms(1000);
  config.mutable_tls()->Clear();
  config.mutable_tls()->set_refresh_interval_s(kTlsRefreshIntervalS);
  config.set_insecure(false);
  return config;
}

absl::StatusOr<weft::v1::ControllerConfig> LoadControllerConfig(absl::string_view path) {
  return LoadOver(DefaultControllerConfig(), path);
}

absl::StatusOr<weft::v1::AgentConfig> LoadAgentConfig(absl::string_view path) {
  return LoadOver(DefaultAgentConfig(), path);
}

absl::StatusOr<weft::v1::FabricConfig> LoadFabricConfig(absl::string_view path) {
  return LoadOver(DefaultFabricConfig(), path);
}

absl::Status ValidateControllerConfig(const weft::v1::ControllerConfig& config) {
  RETURN_IF_ERROR(ValidateRules(config, kControllerContext));
  RETURN_IF_ERROR(ValidateTransport(kControllerContext, config.tls(), config.insecure(),
                                    "listen_address", config.listen_address()));
  if (config.metrics_address() == config.listen_address() &&
      !PicksFreePort(config.listen_address())) {
    return Invalid(
        kControllerContext, "metrics_address",
        absl::StrCat("value '", config.metrics_address(), "' is also the listen_address"),
        "a host:port other than listen_address");
  }
  if (config.health().consecutive_samples() > config.window_samples()) {
    return Invalid(kControllerContext, "health.consecutive_samples",
                   absl::StrCat("value '", config.health().consecutive_samples(),
                                "' is more than window_samples (", config.window_samples(),
                                "), so no rule could ever fire"),
                   absl::StrCat("an integer from 1 to window_samples (",
                                config.window_samples(), ")"));
  }
  const weft::v1::AutoTuneConfig& automatic = config.tuning().automatic();
  // Without the section (a config built in code), the tuner's defaults apply.
  if (config.tuning().has_automatic() &&
      automatic.mix_shift_low() >= automatic.mix_shift_high()) {
    return Invalid(kControllerContext, "tuning.automatic.mix_shift_low",
                   absl::StrCat("value '", automatic.mix_shift_low(),
                                "' is not below mix_shift_high (", automatic.mix_shift_high(),
                                "), so the trigger could not re-arm between shifts"),
                   absl::StrCat("a number from 0 to below mix_shift_high (",
                                automatic.mix_shift_high(), ")"));
  }
  if (automatic.apply() && !automatic.propose()) {
    return Invalid(kControllerContext, "tuning.automatic.apply",
                   "value 'true' without propose, so there would be nothing to apply",
                   "false, or propose: true as well");
  }
  return absl::OkStatus();
}

absl::Status ValidateAgentConfig(const weft::v1::AgentConfig& config) {
  RETURN_IF_ERROR(ValidateRules(config, kAgentContext));
  RETURN_IF_ERROR(ValidateTransport(kAgentContext, config.tls(), config.insecure(),
                                    "controller_address", config.controller_address()));
  if (config.backend() != "simulated" && config.backend() != "linux" &&
      config.backend() != "fabric") {
    return Invalid(kAgentContext, "backend",
                   absl::StrCat("value '", config.backend(), "' is not a known backend"),
                   "simulated, linux, fabric");
  }
  // sockaddr_un.sun_path holds 108 bytes, the terminating NUL included.
  if (config.job_socket() != "off" &&
      (!absl::StartsWith(config.job_socket(), "/") || config.job_socket().size() >= 108)) {
    return Invalid(kAgentContext, "job_socket",
                   absl::StrCat("value '", config.job_socket(),
                                "' is not an absolute path shorter than 108 bytes"),
                   "an absolute path shorter than 108 bytes (a Unix socket's limit), or off");
  }
  if (config.probe().udp_port() != 0) {
    in6_addr parsed{};
    const std::string& bind = config.probe().bind_address();
    if (inet_pton(AF_INET, bind.c_str(), &parsed) != 1 &&
        inet_pton(AF_INET6, bind.c_str(), &parsed) != 1) {
      return Invalid(kAgentContext, "probe.bind_address",
                     absl::StrCat("value '", bind, "' is not a numeric IP address"),
                     "0.0.0.0, ::, or an IPv4 or IPv6 address of this node");
    }
  }
  const std::pair<absl::string_view, const google::protobuf::RepeatedPtrField<std::string>*>
      nic_addresses[] = {{"simulated", &config.simulated().nic_ipv4()},
                         {"fabric", &config.fabric().nic_ipv4()}};
  for (const auto& [backend, addresses] : nic_addresses) {
    for (int i = 0; i < addresses->size(); ++i) {
      in_addr parsed{};
      const std::string& address = addresses->Get(i);
      if (inet_pton(AF_INET, address.c_str(), &parsed) != 1) {
        return Invalid(kAgentContext, absl::StrCat(backend, ".nic_ipv4[", i, "]"),
                       absl::StrCat("value '", address, "' is not a dotted IPv4 address"),
                       absl::StrCat("IPv4 addresses such as 127.0.1.1, one per ", backend,
                                    " NIC"));
      }
    }
  }
  const weft::v1::ReconnectConfig& reconnect = config.reconnect();
  if (reconnect.max_backoff_ms() < reconnect.initial_backoff_ms()) {
    return Invalid(
        kAgentContext, "reconnect.max_backoff_ms",
        absl::StrCat("value '", reconnect.max_backoff_ms(),
                     "' is below reconnect.initial_backoff_ms (",
                     reconnect.initial_backoff_ms(), ")"),
        absl::StrCat("an integer from ", reconnect.initial_backoff_ms(), " to ",
                     MaxOf<weft::v1::ReconnectConfig>("max_backoff_ms")));
  }
  if (!Disabled(config.metrics_address()) &&
      config.metrics_address() == config.health_address() &&
      !PicksFreePort(config.health_address())) {
    return Invalid(
        kAgentContext, "health_address",
        absl::StrCat("value '", config.health_address(), "' is also the metrics_address"),
        "a host:port other than metrics_address, or \"\" to disable");
  }
  return absl::OkStatus();
}

namespace {

absl::Status ValidateFabricJob(const weft::v1::FabricJobConfig& job, int index) {
  const std::string field = absl::StrCat("jobs[", index, "]");
  if (job.all_reduce() != "" && job.all_reduce() != "ring" && job.all_reduce() != "tree") {
    return Invalid(kFabricContext, absl::StrCat(field, ".all_reduce"),
                   absl::StrCat("value '", job.all_reduce(), "' is not an algorithm"),
                   "ring, tree (\"\": ring)");
  }
  for (const auto& [name, divisor] :
       {std::pair<const char*, uint32_t>{"pipeline_stages", job.pipeline_stages()},
        {"expert_group_nodes", job.expert_group_nodes()}}) {
    if (divisor > 1 && job.nodes() % divisor != 0) {
      return Invalid(kFabricContext, absl::StrCat(field, ".", name),
                     absl::StrCat("value '", divisor, "' does not divide nodes (", job.nodes(),
                                  ")"),
                     absl::StrCat("0, 1 or a divisor of ", job.nodes()));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateFabricConfig(const weft::v1::FabricConfig& config) {
  RETURN_IF_ERROR(ValidateRules(config, kFabricContext));
  if (!config.controller_address().empty()) {
    RETURN_IF_ERROR(ValidateTransport(kFabricContext, config.tls(), config.insecure(),
                                      "controller_address", config.controller_address()));
  }
  std::set<std::string> names;
  for (int i = 0; i < config.jobs_size(); ++i) {
    RETURN_IF_ERROR(ValidateFabricJob(config.jobs(i), i));
    if (!names.insert(config.jobs(i).name()).second) {
      return Invalid(kFabricContext, absl::StrCat("jobs[", i, "].name"),
                     absl::StrCat("value '", config.jobs(i).name(), "' names an earlier job too"),
                     "a name no other job has");
    }
  }
  if (!config.jobs().empty() && config.controller_address().empty()) {
    return Invalid(kFabricContext, "controller_address",
                   "empty, but jobs are configured and are placed through the controller",
                   "the controller's host:port (--controller), or no jobs");
  }
  return absl::OkStatus();
}

namespace {

template <typename Config>
absl::StatusOr<Config> ApplyAndValidate(absl::StatusOr<Config> config, const DaemonFlags& flags,
                                        const FlagOverrides<Config>& overrides,
                                        absl::Status (*validate)(const Config&)) {
  if (!config.ok()) return config.status();
  if (overrides) RETURN_IF_ERROR(overrides(&*config));
  if (flags.insecure) config->set_insecure(true);
  if (flags.tls_cert) config->mutable_tls()->set_cert_file(*flags.tls_cert);
  if (flags.tls_key) config->mutable_tls()->set_key_file(*flags.tls_key);
  if (flags.tls_ca) config->mutable_tls()->set_ca_file(*flags.tls_ca);
  RETURN_IF_ERROR(validate(*config));
  return config;
}

}  // namespace

absl::StatusOr<weft::v1::ControllerConfig> ControllerConfigFromFlags(
    const DaemonFlags& flags, const FlagOverrides<weft::v1::ControllerConfig>& overrides) {
  return ApplyAndValidate(LoadControllerConfig(flags.config_path), flags, overrides,
                          &ValidateControllerConfig);
}

absl::StatusOr<weft::v1::AgentConfig> AgentConfigFromFlags(
    const DaemonFlags& flags, const FlagOverrides<weft::v1::AgentConfig>& overrides) {
  return ApplyAndValidate(LoadAgentConfig(flags.config_path), flags, overrides,
                          &ValidateAgentConfig);
}

absl::StatusOr<weft::v1::FabricConfig> FabricConfigFromFlags(
    const DaemonFlags& flags, const FlagOverrides<weft::v1::FabricConfig>& overrides) {
  return ApplyAndValidate(LoadFabricConfig(flags.config_path), flags, overrides,
                          &ValidateFabricConfig);
}

}  // namespace weft
