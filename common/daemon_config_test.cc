#include "common/daemon_config.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "common/testing/temp_dir.h"
#include "google/protobuf/descriptor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/weft/v1/config.pb.h"
#include "yaml-cpp/yaml.h"

namespace weft {
namespace {

using ::testing::HasSubstr;
using ::weft::v1::AgentConfig;
using ::weft::v1::ControllerConfig;

// Runfiles-relative; the test runs in the workspace's runfiles directory.
constexpr char kControllerExample[] = "deploy/examples/controller.yaml";
constexpr char kAgentExample[] = "deploy/examples/agent.yaml";

std::string WriteTempFile(absl::string_view name, absl::string_view contents) {
  const std::string path = weft::testing::TempPath(std::string(name));
  std::ofstream(path) << contents;
  return path;
}

AgentConfig ValidAgentConfig() {
  AgentConfig config = DefaultAgentConfig();
  config.set_node_name("gpu-node-01");
  return config;
}

TEST(DaemonConfigTest, ControllerDefaults) {
  const ControllerConfig config = DefaultControllerConfig();
  EXPECT_EQ(config.listen_address(), "127.0.0.1:7400");
  EXPECT_EQ(config.metrics_address(), "127.0.0.1:7401");
  EXPECT_EQ(config.telemetry_interval_ms(), 1000u);
  EXPECT_EQ(config.down_after_intervals(), 3u);
  EXPECT_EQ(config.window_samples(), 60u);
  EXPECT_EQ(config.event_log_capacity(), 10000u);
  const v1::HealthConfig& health = config.health();
  EXPECT_EQ(health.consecutive_samples(), 2u);
  EXPECT_EQ(health.degrade_after_ms(), 2000u);
  EXPECT_EQ(health.recover_after_ms(), 10000u);
  EXPECT_DOUBLE_EQ(health.pfc_pause_share(), 0.5);
  EXPECT_DOUBLE_EQ(health.ecn_mark_ratio(), 0.1);
  EXPECT_DOUBLE_EQ(health.ecn_min_rcv_packets_per_s(), 1000);
  EXPECT_DOUBLE_EQ(health.cnp_ignored_per_s(), 0);
  EXPECT_DOUBLE_EQ(health.packet_seq_err_per_s(), 10);
  EXPECT_DOUBLE_EQ(health.local_ack_timeout_err_per_s(), 1);
  EXPECT_DOUBLE_EQ(health.out_of_sequence_per_s(), 10);
  EXPECT_EQ(health.link_flaps_per_window(), 0u);
  EXPECT_FALSE(health.auto_drain().enabled());
  EXPECT_EQ(health.auto_drain().after_ms(), 60000u);
  EXPECT_EQ(health.auto_drain().undrain_after_clean_ms(), 300000u);
  EXPECT_TRUE(ValidateControllerConfig(config).ok());
}

// The detection-latency target (PFC storm to node state change within 5 s at a 1 s
// interval) in numbers: the worst case is a first partial interval that falls short,
// then `consecutive_samples` full ones; the run starts with the first full one, which
// arrives by 2 intervals after the storm starts, and the node turns DEGRADED
// degrade_after later (if the rule has fired by then), one sweep (interval / 4) late.
TEST(DaemonConfigTest, DefaultsMeetTheDetectionLatencyTarget) {
  const ControllerConfig config = DefaultControllerConfig();
  const int64_t interval_ms = config.telemetry_interval_ms();
  const int64_t run_start_ms = 2 * interval_ms;
  const int64_t rule_fires_ms =
      run_start_ms + (config.health().consecutive_samples() - 1) * interval_ms;
  const int64_t degraded_ms =
      std::max<int64_t>(rule_fires_ms, run_start_ms + config.health().degrade_after_ms()) +
      interval_ms / 4;
  EXPECT_LE(degraded_ms, 5000);
}

TEST(DaemonConfigTest, ConsecutiveSamplesMustFitTheWindow) {
  ControllerConfig config = DefaultControllerConfig();
  config.set_window_samples(5);
  config.mutable_health()->set_consecutive_samples(6);
  EXPECT_EQ(ValidateControllerConfig(config).message(),
            "controller config: field 'health.consecutive_samples': value '6' is more than "
            "window_samples (5), so no rule could ever fire; accepted: an integer from 1 "
            "to window_samples (5)");
  config.mutable_health()->set_consecutive_samples(5);
  EXPECT_TRUE(ValidateControllerConfig(config).ok());
}

TEST(DaemonConfigTest, AutomaticTuningIsOffByDefaultAndItsThresholdsMustNest) {
  ControllerConfig config = DefaultControllerConfig();
  EXPECT_FALSE(config.tuning().automatic().propose());
  EXPECT_FALSE(config.tuning().automatic().apply());
  v1::AutoTuneConfig* automatic = config.mutable_tuning()->mutable_automatic();
  automatic->set_mix_shift_low(0.2);
  EXPECT_EQ(ValidateControllerConfig(config).message(),
            "controller config: field 'tuning.automatic.mix_shift_low': value '0.2' is not "
            "below mix_shift_high (0.2), so the trigger could not re-arm between shifts; "
            "accepted: a number from 0 to below mix_shift_high (0.2)");
  automatic->set_mix_shift_low(0.1);
  automatic->set_apply(true);
  EXPECT_THAT(std::string(ValidateControllerConfig(config).message()),
              HasSubstr("'tuning.automatic.apply': value 'true' without propose"));
  automatic->set_propose(true);
  EXPECT_TRUE(ValidateControllerConfig(config).ok());
  automatic->set_mix_shift_high(1.5);
  EXPECT_THAT(std::string(ValidateControllerConfig(config).message()),
              HasSubstr("tuning.automatic.mix_shift_high"));
}

TEST(DaemonConfigTest, HealthSectionIsStrict) {
  const std::string path = WriteTempFile("controller_health.yaml",
                                         "health:\n"
                                         "  auto_drain:\n"
                                         "    enabled: true\n"
                                         "    after_ms: 10\n");
  absl::StatusOr<ControllerConfig> config = LoadControllerConfig(path);
  EXPECT_EQ(config.status().message(),
            absl::StrCat(path,
                         ":4:15: field 'health.auto_drain.after_ms': value '10' is out of "
                         "range; accepted: an integer from 1000 to 86400000"));

  const std::string ok = WriteTempFile("controller_health_ok.yaml",
                                       "health:\n"
                                       "  pfc_pause_share: 0.8\n"
                                       "  auto_drain: {enabled: true}\n");
  config = LoadControllerConfig(ok);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_DOUBLE_EQ(config->health().pfc_pause_share(), 0.8);
  EXPECT_TRUE(config->health().auto_drain().enabled());
  // Keys left out keep their defaults.
  EXPECT_EQ(config->health().auto_drain().after_ms(), 60000u);
  EXPECT_EQ(config->health().degrade_after_ms(), 2000u);
}

TEST(DaemonConfigTest, AgentDefaultsNeedOnlyANodeName) {
  const AgentConfig config = DefaultAgentConfig();
  EXPECT_EQ(config.node_name(), "");
  EXPECT_EQ(config.controller_address(), "127.0.0.1:7400");
  EXPECT_EQ(config.metrics_address(), "127.0.0.1:7411");
  EXPECT_EQ(config.health_address(), "127.0.0.1:7410");
  EXPECT_EQ(config.interval_ms(), 1000u);
  EXPECT_EQ(config.backend(), "simulated");
  EXPECT_EQ(config.simulated().nics(), 8u);
  EXPECT_EQ(config.simulated().gpus(), 8u);
  EXPECT_EQ(config.simulated().link_speed_gbps(), 400u);
  EXPECT_DOUBLE_EQ(config.simulated().traffic_level(), 0.6);
  EXPECT_EQ(config.simulated().seed(), 0u);
  EXPECT_EQ(config.simulated().fault_delay_ms(), 0u);
  EXPECT_EQ(config.simulated().faults_size(), 0);
  EXPECT_EQ(config.reconnect().initial_backoff_ms(), 200u);
  EXPECT_EQ(config.reconnect().max_backoff_ms(), 10000u);

  const absl::Status status = ValidateAgentConfig(config);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      status.message(),
      "agent config: field 'node_name': required but not set; accepted: a non-empty "
      "string");
  EXPECT_TRUE(ValidateAgentConfig(ValidAgentConfig()).ok());
}

TEST(DaemonConfigTest, EmptyPathMeansDefaults) {
  absl::StatusOr<ControllerConfig> controller = LoadControllerConfig("");
  ASSERT_TRUE(controller.ok()) << controller.status();
  EXPECT_EQ(controller->DebugString(), DefaultControllerConfig().DebugString());
  absl::StatusOr<AgentConfig> agent = LoadAgentConfig("");
  ASSERT_TRUE(agent.ok()) << agent.status();
  EXPECT_EQ(agent->DebugString(), DefaultAgentConfig().DebugString());
}

TEST(DaemonConfigTest, FileOverridesDefaults) {
  const std::string path = WriteTempFile("agent_override.yaml",
                                         "node_name: n7\n"
                                         "simulated:\n"
                                         "  nics: 2\n"
                                         "  faults: [pfc_storm]\n");
  absl::StatusOr<AgentConfig> config = LoadAgentConfig(path);
  ASSERT_TRUE(config.ok()) << config.status();
  AgentConfig expected = DefaultAgentConfig();
  expected.set_node_name("n7");
  expected.mutable_simulated()->set_nics(2);
  expected.mutable_simulated()->add_faults(v1::SIM_FAULT_PFC_STORM);
  EXPECT_EQ(config->DebugString(), expected.DebugString());
  EXPECT_TRUE(ValidateAgentConfig(*config).ok());
}

TEST(DaemonConfigTest, LoadDoesNotRequireWhatAFlagMaySupply) {
  const std::string path = WriteTempFile("agent_no_name.yaml", "rack: r1\n");
  absl::StatusOr<AgentConfig> config = LoadAgentConfig(path);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_FALSE(ValidateAgentConfig(*config).ok());
  config->set_node_name("from-flag");
  EXPECT_TRUE(ValidateAgentConfig(*config).ok());
}

TEST(DaemonConfigTest, LoadErrors) {
  const std::string bad = WriteTempFile("controller_bad.yaml",
                                        "listen_address: 0.0.0.0:7400\n"
                                        "window_samples: 1\n");
  absl::StatusOr<ControllerConfig> controller = LoadControllerConfig(bad);
  EXPECT_EQ(controller.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(controller.status().message(),
            absl::StrCat(bad,
                         ":2:17: field 'window_samples': value '1' is out of range; "
                         "accepted: an integer from 2 to 3600"));

  const std::string missing = absl::StrCat(bad, ".missing");
  absl::StatusOr<AgentConfig> agent = LoadAgentConfig(missing);
  EXPECT_EQ(agent.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(agent.status().message(), absl::StrCat("cannot read config file '", missing,
                                                   "': No such file or directory"));
}

TEST(DaemonConfigTest, ControllerAddressesMustDiffer) {
  ControllerConfig config = DefaultControllerConfig();
  config.set_metrics_address("127.0.0.1:7400");
  EXPECT_EQ(ValidateControllerConfig(config).message(),
            "controller config: field 'metrics_address': value '127.0.0.1:7400' is also "
            "the listen_address; accepted: a host:port other than listen_address");

  config = DefaultControllerConfig();
  config.set_window_samples(1);  // a flag is held to the schema's rules too
  EXPECT_EQ(ValidateControllerConfig(config).message(),
            "controller config: field 'window_samples': value '1' is out of range; "
            "accepted: an integer from 2 to 3600");
}

TEST(DaemonConfigTest, AgentBackend) {
  AgentConfig config = ValidAgentConfig();
  config.set_backend("linux");
  EXPECT_TRUE(ValidateAgentConfig(config).ok());
  config.mutable_linux()->set_root("");
  EXPECT_EQ(ValidateAgentConfig(config).message(),
            "agent config: field 'linux.root': value '' is empty; accepted: a non-empty "
            "string");

  config = ValidAgentConfig();
  config.set_backend("fabric");
  EXPECT_TRUE(ValidateAgentConfig(config).ok())
      << "an empty fabric.address is the backend factory's to refuse";

  config = ValidAgentConfig();
  config.set_backend("Simulated");
  EXPECT_EQ(ValidateAgentConfig(config).message(),
            "agent config: field 'backend': value 'Simulated' is not a known backend; "
            "accepted: simulated, linux, fabric");

  config.set_backend("");
  EXPECT_EQ(ValidateAgentConfig(config).message(),
            "agent config: field 'backend': value '' is empty; accepted: a non-empty "
            "string");
}

TEST(DaemonConfigTest, AgentBackoffOrder) {
  AgentConfig config = ValidAgentConfig();
  config.mutable_reconnect()->set_initial_backoff_ms(5000);
  config.mutable_reconnect()->set_max_backoff_ms(1000);
  EXPECT_EQ(
      ValidateAgentConfig(config).message(),
      "agent config: field 'reconnect.max_backoff_ms': value '1000' is below "
      "reconnect.initial_backoff_ms (5000); accepted: an integer from 5000 to 600000");
  config.mutable_reconnect()->set_max_backoff_ms(5000);
  EXPECT_TRUE(ValidateAgentConfig(config).ok());
}

TEST(DaemonConfigTest, SimulatedNicAddressesMustBeDottedIpv4) {
  AgentConfig config = ValidAgentConfig();
  config.mutable_simulated()->add_nic_ipv4("127.0.1.1");
  config.mutable_simulated()->add_nic_ipv4("127.0.1.300");
  EXPECT_EQ(ValidateAgentConfig(config).message(),
            "agent config: field 'simulated.nic_ipv4[1]': value '127.0.1.300' is not a dotted "
            "IPv4 address; accepted: IPv4 addresses such as 127.0.1.1, one per simulated NIC");
  config.mutable_simulated()->set_nic_ipv4(1, "127.0.1.2");
  EXPECT_TRUE(ValidateAgentConfig(config).ok());
  config.mutable_fabric()->add_nic_ipv4("gpu-a01");
  EXPECT_EQ(ValidateAgentConfig(config).message(),
            "agent config: field 'fabric.nic_ipv4[0]': value 'gpu-a01' is not a dotted "
            "IPv4 address; accepted: IPv4 addresses such as 127.0.1.1, one per fabric NIC");
}

TEST(DaemonConfigTest, AgentProbeLimits) {
  AgentConfig config = ValidAgentConfig();
  EXPECT_EQ(config.probe().udp_port(), 7412u);
  config.mutable_probe()->set_bind_address("gpu-node-01");
  EXPECT_EQ(ValidateAgentConfig(config).message(),
            "agent config: field 'probe.bind_address': value 'gpu-node-01' is not a numeric "
            "IP address; accepted: 0.0.0.0, ::, or an IPv4 or IPv6 address of this node");
  config.mutable_probe()->set_bind_address("::");
  EXPECT_TRUE(ValidateAgentConfig(config).ok());
  // Probing off: the bind address is not used.
  config.mutable_probe()->set_udp_port(0);
  config.mutable_probe()->set_bind_address("anything");
  EXPECT_TRUE(ValidateAgentConfig(config).ok());
  config = ValidAgentConfig();
  config.mutable_probe()->set_udp_port(70000);
  EXPECT_NE(ValidateAgentConfig(config).message().find("probe.udp_port"), std::string::npos);
  config = ValidAgentConfig();
  config.mutable_probe()->set_max_nic_share(0.05);  // 5 %: above the 1 % bound
  EXPECT_NE(ValidateAgentConfig(config).message().find("probe.max_nic_share"),
            std::string::npos);
}

TEST(DaemonConfigTest, AgentEndpointsMustDifferUnlessDisabled) {
  AgentConfig config = ValidAgentConfig();
  config.set_health_address(config.metrics_address());
  EXPECT_EQ(
      ValidateAgentConfig(config).message(),
      "agent config: field 'health_address': value '127.0.0.1:7411' is also the "
      "metrics_address; accepted: a host:port other than metrics_address, or \"\" to "
      "disable");
  config.set_metrics_address("");
  config.set_health_address("");
  EXPECT_TRUE(ValidateAgentConfig(config).ok());
  config.set_metrics_address("off");
  EXPECT_TRUE(ValidateAgentConfig(config).ok());
}

// ---------------------------------------------------------------------------
// deploy/examples/: documented, complete, and exactly the defaults.

// The examples turn mTLS on (deploy/ never runs plaintext); everything else is the
// defaults (the refresh interval included).
void ClearTlsFiles(weft::v1::TlsConfig* tls) {
  tls->clear_cert_file();
  tls->clear_key_file();
  tls->clear_ca_file();
}

TEST(ExampleConfigTest, ControllerExampleIsTheDefaultsPlusTls) {
  absl::StatusOr<ControllerConfig> config = LoadControllerConfig(kControllerExample);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_TRUE(ValidateControllerConfig(*config).ok());
  EXPECT_EQ(config->tls().cert_file(), "/etc/weft/pki/controller.crt");
  EXPECT_EQ(config->tls().ca_file(), "/etc/weft/pki/ca.crt");
  EXPECT_FALSE(config->insecure());
  ControllerConfig without_tls = *config;
  ClearTlsFiles(without_tls.mutable_tls());
  without_tls.clear_tokens_file();
  EXPECT_EQ(without_tls.DebugString(), DefaultControllerConfig().DebugString());
}

TEST(ExampleConfigTest, AgentExampleIsTheDefaultsPlusIdentity) {
  absl::StatusOr<AgentConfig> config = LoadAgentConfig(kAgentExample);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_TRUE(ValidateAgentConfig(*config).ok()) << ValidateAgentConfig(*config);
  EXPECT_EQ(config->node_name(), "gpu-node-01");
  EXPECT_EQ(config->rack(), "rack-a");
  EXPECT_EQ(config->pod(), "pod-1");
  EXPECT_EQ(config->tls().cert_file(), "/etc/weft/pki/gpu-node-01.crt");
  EXPECT_FALSE(config->insecure());
  AgentConfig without_identity = *config;
  without_identity.clear_node_name();
  without_identity.clear_rack();
  without_identity.clear_pod();
  ClearTlsFiles(without_identity.mutable_tls());
  EXPECT_EQ(without_identity.DebugString(), DefaultAgentConfig().DebugString());
}

// Fails when a field is added to the schema but not to the example (each key of the
// example is already checked against the schema by loading it).
void ExpectEveryField(const YAML::Node& node, const google::protobuf::Descriptor* type,
                      const std::string& path) {
  ASSERT_TRUE(node.IsMap()) << path;
  for (int i = 0; i < type->field_count(); ++i) {
    const google::protobuf::FieldDescriptor* field = type->field(i);
    const std::string field_path =
        path.empty() ? field->name() : absl::StrCat(path, ".", field->name());
    const YAML::Node value = node[field->name()];
    EXPECT_TRUE(value.IsDefined()) << "missing from the example: " << field_path;
    if (value.IsDefined() && !field->is_repeated() &&
        field->cpp_type() == google::protobuf::FieldDescriptor::CPPTYPE_MESSAGE) {
      ExpectEveryField(value, field->message_type(), field_path);
    }
  }
}

TEST(ExampleConfigTest, ExamplesShowEveryField) {
  ExpectEveryField(YAML::LoadFile(kControllerExample), ControllerConfig::descriptor(),
                   "");
  ExpectEveryField(YAML::LoadFile(kAgentExample), AgentConfig::descriptor(), "");
}

}  // namespace
}  // namespace weft

namespace weft {
namespace {

TEST(DaemonConfigPortZeroTest, TwoFreePortAddressesDoNotCollide) {
  weft::v1::ControllerConfig controller = DefaultControllerConfig();
  controller.set_listen_address("127.0.0.1:0");
  controller.set_metrics_address("127.0.0.1:0");
  EXPECT_TRUE(ValidateControllerConfig(controller).ok());
  controller.set_listen_address("127.0.0.1:7000");
  controller.set_metrics_address("127.0.0.1:7000");
  EXPECT_FALSE(ValidateControllerConfig(controller).ok());
}

}  // namespace
}  // namespace weft

namespace weft {
namespace {

TEST(DaemonConfigTransportTest, PlaintextOnlyOnLoopbackUnlessInsecure) {
  weft::v1::ControllerConfig controller = DefaultControllerConfig();
  EXPECT_TRUE(ValidateControllerConfig(controller).ok());
  controller.set_listen_address("[::1]:7400");
  EXPECT_TRUE(ValidateControllerConfig(controller).ok());
  controller.set_listen_address("0.0.0.0:7400");
  absl::Status refused = ValidateControllerConfig(controller);
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(refused.message()),
              ::testing::HasSubstr("listen_address '0.0.0.0:7400' is not a loopback address"));
  controller.set_insecure(true);
  EXPECT_TRUE(ValidateControllerConfig(controller).ok());

  weft::v1::AgentConfig agent = DefaultAgentConfig();
  agent.set_node_name("n1");
  agent.set_controller_address("10.0.0.1:7400");
  EXPECT_THAT(std::string(ValidateAgentConfig(agent).message()),
              ::testing::HasSubstr("controller_address '10.0.0.1:7400' is not a loopback"));
  agent.mutable_tls()->set_cert_file("/pki/n1.crt");
  agent.mutable_tls()->set_key_file("/pki/n1.key");
  agent.mutable_tls()->set_ca_file("/pki/ca.crt");
  EXPECT_TRUE(ValidateAgentConfig(agent).ok());
  agent.set_insecure(true);
  EXPECT_THAT(std::string(ValidateAgentConfig(agent).message()),
              ::testing::HasSubstr("field 'insecure': value 'true' contradicts the tls files"));
  agent.set_insecure(false);
  agent.mutable_tls()->clear_key_file();
  EXPECT_THAT(std::string(ValidateAgentConfig(agent).message()),
              ::testing::HasSubstr("are only partly set"));
}

// The one path from a command line (ControllerConfigFromFlags / AgentConfigFromFlags).

TEST(ConfigFromFlagsTest, FlagWinsOverFileAndFileOverDefault) {
  const std::string path = WriteTempFile(
      "precedence-controller.yaml",
      "listen_address: 127.0.0.1:7500\ndown_after_intervals: 5\nstate_dir: /tmp/from-file\n");
  DaemonFlags flags;
  flags.config_path = path;
  absl::StatusOr<ControllerConfig> config =
      ControllerConfigFromFlags(flags, [](ControllerConfig* c) {
        c->set_listen_address("127.0.0.1:7600");  // as --listen would
        return absl::OkStatus();
      });
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->listen_address(), "127.0.0.1:7600");  // flag over file
  EXPECT_EQ(config->down_after_intervals(), 5u);          // file over default
  EXPECT_EQ(config->state_dir(), "/tmp/from-file");
  EXPECT_EQ(config->metrics_address(), DefaultControllerConfig().metrics_address());
}

TEST(ConfigFromFlagsTest, WithoutAFileTheDefaultsAreValidatedToo) {
  absl::StatusOr<AgentConfig> missing_node = AgentConfigFromFlags(DaemonFlags{}, nullptr);
  ASSERT_FALSE(missing_node.ok());
  EXPECT_THAT(missing_node.status().message(), ::testing::HasSubstr("node_name"));
  absl::StatusOr<AgentConfig> config = AgentConfigFromFlags(DaemonFlags{}, [](AgentConfig* c) {
    c->set_node_name("gpu-a01");
    return absl::OkStatus();
  });
  ASSERT_TRUE(config.ok()) << config.status();
  AgentConfig expected = DefaultAgentConfig();
  expected.set_node_name("gpu-a01");
  EXPECT_EQ(config->SerializeAsString(), expected.SerializeAsString());
}

TEST(ConfigFromFlagsTest, ABadFlagValueIsRefusedNamingTheField) {
  absl::StatusOr<ControllerConfig> config =
      ControllerConfigFromFlags(DaemonFlags{}, [](ControllerConfig* c) {
        c->set_down_after_intervals(0);  // as --down_after 0 would
        return absl::OkStatus();
      });
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(config.status().message(), ::testing::HasSubstr("field 'down_after_intervals'"));
  EXPECT_THAT(config.status().message(), ::testing::HasSubstr("'0'"));
}

TEST(ConfigFromFlagsTest, AnOverrideErrorNamingTheFlagComesBackUnchanged) {
  const absl::Status refused = absl::InvalidArgumentError("flag --fault: value 'meltdown' ...");
  absl::StatusOr<AgentConfig> config =
      AgentConfigFromFlags(DaemonFlags{}, [&](AgentConfig*) { return refused; });
  EXPECT_EQ(config.status(), refused);
}

TEST(ConfigFromFlagsTest, FileErrorsComeFirstAndNameTheFile) {
  const std::string path = WriteTempFile("bad-agent.yaml", "node_name: a\ninterval_ms: 0\n");
  DaemonFlags flags;
  flags.config_path = path;
  bool overrides_ran = false;
  absl::StatusOr<AgentConfig> config = AgentConfigFromFlags(flags, [&](AgentConfig*) {
    overrides_ran = true;
    return absl::OkStatus();
  });
  ASSERT_FALSE(config.ok());
  EXPECT_THAT(config.status().message(), ::testing::HasSubstr("bad-agent.yaml:2:"));
  EXPECT_FALSE(overrides_ran);
  flags.config_path = weft::testing::TempPath("no-such-config.yaml");
  EXPECT_EQ(AgentConfigFromFlags(flags, nullptr).status().code(), absl::StatusCode::kNotFound);
}

TEST(ConfigFromFlagsTest, TransportFlagsLandInBothConfigsAndAreValidated) {
  DaemonFlags flags;
  flags.insecure = true;
  auto far_listen = [](ControllerConfig* c) {
    c->set_listen_address("0.0.0.0:7400");
    return absl::OkStatus();
  };
  absl::StatusOr<ControllerConfig> insecure = ControllerConfigFromFlags(flags, far_listen);
  ASSERT_TRUE(insecure.ok()) << insecure.status();
  EXPECT_TRUE(insecure->insecure());

  flags = DaemonFlags{};
  flags.tls_cert = "/pki/node.crt";
  flags.tls_key = "/pki/node.key";
  flags.tls_ca = "/pki/ca.crt";
  absl::StatusOr<AgentConfig> tls = AgentConfigFromFlags(flags, [](AgentConfig* c) {
    c->set_node_name("gpu-a01");
    return absl::OkStatus();
  });
  ASSERT_TRUE(tls.ok()) << tls.status();
  EXPECT_EQ(tls->tls().cert_file(), "/pki/node.crt");
  EXPECT_EQ(tls->tls().key_file(), "/pki/node.key");
  EXPECT_EQ(tls->tls().ca_file(), "/pki/ca.crt");

  flags.tls_ca.reset();  // two of three: refused, naming tls
  absl::StatusOr<ControllerConfig> partial = ControllerConfigFromFlags(flags, nullptr);
  ASSERT_FALSE(partial.ok());
  EXPECT_THAT(partial.status().message(), ::testing::HasSubstr("field 'tls'"));
}

}  // namespace
}  // namespace weft

namespace weft {
namespace {

using ::weft::v1::FabricConfig;

constexpr char kFabricExample[] = "deploy/examples/fabric.yaml";

TEST(FabricConfigTest, DefaultsAreValidAndRunNoJobs) {
  const FabricConfig config = DefaultFabricConfig();
  EXPECT_TRUE(ValidateFabricConfig(config).ok()) << ValidateFabricConfig(config);
  EXPECT_EQ(config.listen_address(), "127.0.0.1:7300");
  EXPECT_EQ(config.racks() * config.nodes_per_rack(), 32u);
  EXPECT_TRUE(config.jobs().empty());
  EXPECT_TRUE(config.controller_address().empty());
}

TEST(FabricConfigTest, ExampleIsTheDefaultsPlusTheDemoJobsAndShowsEveryField) {
  absl::StatusOr<FabricConfig> config = LoadFabricConfig(kFabricExample);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_TRUE(ValidateFabricConfig(*config).ok()) << ValidateFabricConfig(*config);
  EXPECT_EQ(config->jobs_size(), 4);
  EXPECT_EQ(config->controller_address(), "127.0.0.1:7400");
  FabricConfig without_jobs = *config;
  without_jobs.clear_jobs();
  without_jobs.clear_controller_address();
  EXPECT_EQ(without_jobs.DebugString(), DefaultFabricConfig().DebugString());
  ExpectEveryField(YAML::LoadFile(kFabricExample), FabricConfig::descriptor(), "");
  ExpectEveryField(YAML::LoadFile(kFabricExample)["jobs"][0],
                   weft::v1::FabricJobConfig::descriptor(), "jobs[0]");
}

FabricConfig WithJob(weft::v1::FabricJobConfig job) {
  FabricConfig config = DefaultFabricConfig();
  config.set_controller_address("127.0.0.1:7400");
  *config.add_jobs() = std::move(job);
  return config;
}

weft::v1::FabricJobConfig Job(absl::string_view name) {
  weft::v1::FabricJobConfig job;
  job.set_name(std::string(name));
  job.set_nodes(8);
  job.set_parameters(7e9);
  job.set_tokens_per_iteration(1e6);
  return job;
}

TEST(FabricConfigTest, BadJobsAreRefusedNamingTheJobAndField) {
  weft::v1::FabricJobConfig job = Job("a");
  job.set_pipeline_stages(3);
  EXPECT_THAT(ValidateFabricConfig(WithJob(job)).message(),
              ::testing::HasSubstr("jobs[0].pipeline_stages': value '3' does not divide nodes (8)"));
  job = Job("a");
  job.set_all_reduce("butterfly");
  EXPECT_THAT(ValidateFabricConfig(WithJob(job)).message(),
              ::testing::HasSubstr("jobs[0].all_reduce': value 'butterfly'"));
  FabricConfig twice = WithJob(Job("a"));
  *twice.add_jobs() = Job("a");
  EXPECT_THAT(ValidateFabricConfig(twice).message(),
              ::testing::HasSubstr("jobs[1].name': value 'a' names an earlier job too"));
  FabricConfig no_controller = WithJob(Job("a"));
  no_controller.clear_controller_address();
  EXPECT_THAT(ValidateFabricConfig(no_controller).message(),
              ::testing::HasSubstr("jobs are configured and are placed through the controller"));
  EXPECT_TRUE(ValidateFabricConfig(WithJob(Job("a"))).ok());
}

TEST(FabricConfigTest, PlaintextToARemoteControllerNeedsInsecure) {
  FabricConfig config = DefaultFabricConfig();
  config.set_controller_address("10.0.0.5:7400");
  EXPECT_THAT(ValidateFabricConfig(config).message(), ::testing::HasSubstr("plaintext"));
  config.set_insecure(true);
  EXPECT_TRUE(ValidateFabricConfig(config).ok());
}

}  // namespace
}  // namespace weft
