#include "agent/command_line.h"

#include <cstdint>
#include <optional>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"

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
          "NIC backend: simulated, linux or fabric (inspect defaults to linux)");
ABSL_FLAG(std::optional<std::string>, root, std::nullopt,
          "linux backend: filesystem root holding sys/ (default /)");
ABSL_FLAG(std::optional<std::string>, fabric, std::nullopt,
          "fabric backend: weft-fabric's HOST:PORT (overrides fabric.address)");
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
ABSL_FLAG(std::optional<uint32_t>, probe_port, std::nullopt,
          "pingmesh responder's UDP port, 0: no probing (overrides probe.udp_port); agents "
          "sharing a host each need their own");
ABSL_FLAG(std::optional<std::string>, nic_ipv4, std::nullopt,
          "simulated and fabric backends: the NICs' IPv4 addresses, comma-separated, NIC i "
          "the i-th (overrides simulated.nic_ipv4 / fabric.nic_ipv4)");
ABSL_FLAG(std::string, log_level, "info", "debug, info, warning or error");

namespace weft::agent {

AgentCommandLine ParseAgentCommandLine(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "weft-agent --config FILE | --node NAME [flags]\n"
      "       [--tls_cert F --tls_key F --tls_ca F | --insecure]\n"
      "       weft-agent inspect [--root DIR] [--backend linux|simulated|fabric] [--fabric HOST:PORT] [--output table|json]");
  std::vector<std::string> merged =
      MergeRepeatedFlag(std::vector<std::string>(argv, argv + argc), "fault");
  std::vector<char*> merged_ptrs;
  for (std::string& arg : merged) merged_ptrs.push_back(arg.data());
  std::vector<char*> positional =
      absl::ParseCommandLine(static_cast<int>(merged_ptrs.size()), merged_ptrs.data());

  AgentCommandLine line;
  line.args.assign(positional.begin() + 1, positional.end());
  line.daemon = DaemonFlags{absl::GetFlag(FLAGS_config), absl::GetFlag(FLAGS_insecure),
                            absl::GetFlag(FLAGS_tls_cert), absl::GetFlag(FLAGS_tls_key),
                            absl::GetFlag(FLAGS_tls_ca)};
  line.log_level = absl::GetFlag(FLAGS_log_level);
  line.output = absl::GetFlag(FLAGS_output);
  AgentFlagOverrides& flags = line.overrides;
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
  flags.fabric = absl::GetFlag(FLAGS_fabric);
  flags.lldp = absl::GetFlag(FLAGS_lldp);
  if (absl::GetFlag(FLAGS_dry_run)) flags.tunables_dry_run = true;
  flags.job_socket = absl::GetFlag(FLAGS_job_socket);
  flags.probe_port = absl::GetFlag(FLAGS_probe_port);
  flags.nic_ipv4 = absl::GetFlag(FLAGS_nic_ipv4);
  return line;
}

absl::StatusOr<weft::v1::AgentConfig> ConfigFromCommandLine(const AgentCommandLine& command_line) {
  return AgentConfigFromFlags(command_line.daemon, [&](weft::v1::AgentConfig* config) {
    return ApplyAgentFlags(command_line.overrides, config);
  });
}

}  // namespace weft::agent
