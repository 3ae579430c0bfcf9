// Command-line overrides for weft-agent: the values of the flags that were set, and
// how they land in an AgentConfig loaded from file (flags win). agent/command_line.cc
// parses the flags; this library holds the logic so it can be tested without a process.
//
//   --node, --rack, --pod, --controller   identity and controller address
//   --metrics HOST:PORT|off               /metrics endpoint
//   --health HOST:PORT|off                gRPC health endpoint
//   --interval_ms N
//   --backend simulated|linux|fabric      NIC backend
//   --root DIR                            the Linux backend's sysfs root
//   --fabric HOST:PORT                    the fabric backend's weft-fabric address
//   --lldp auto|off|SOCKET                LLDP neighbors from lldpd
//   --nics N, --gpus N, --traffic_level X simulated backend
//   --fault NAME[,NAME...]                simulated faults (repeatable; replaces the
//                                         file's list; "none" clears it)
//   --fault_delay_ms N                    simulated faults start N ms after agent start
//   --dry-run                             desired QoS/DCQCN state: compare, never write
//   --job_socket PATH|off                 Unix socket serving local jobs
//   --probe_port N                        pingmesh responder's UDP port (probe.udp_port;
//                                         0: no probing); one per agent on a shared host
//   --nic_ipv4 A[,A...]                   the NICs' IPv4 addresses (simulated.nic_ipv4 or
//                                         fabric.nic_ipv4, by backend; replaces the list)
//
// Pure functions: thread-safe.
#ifndef WEFT_AGENT_AGENT_FLAGS_H_
#define WEFT_AGENT_AGENT_FLAGS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/weft/v1/config.pb.h"

namespace weft::agent {

// One field per flag; nullopt when the flag was not given.
struct AgentFlagOverrides {
  std::optional<std::string> node;
  std::optional<std::string> rack;
  std::optional<std::string> pod;
  std::optional<std::string> controller;
  std::optional<std::string> metrics;
  std::optional<std::string> health;
  std::optional<uint32_t> interval_ms;
  std::optional<std::string> backend;
  std::optional<std::string> root;
  std::optional<std::string> fabric;  // fabric.address
  std::optional<std::string> lldp;
  std::optional<uint32_t> nics;
  std::optional<uint32_t> gpus;
  std::optional<double> traffic_level;
  std::optional<std::string> faults;  // comma-separated names
  std::optional<uint32_t> fault_delay_ms;
  std::optional<bool> tunables_dry_run;
  std::optional<std::string> job_socket;
  std::optional<uint32_t> probe_port;
  std::optional<std::string> nic_ipv4;  // comma-separated
};

// "pfc_storm", "link_down", "retransmits", "dead", "reject_tunables" (case-insensitive, with or without
// the SIM_FAULT_ prefix). INVALID_ARGUMENT names the value and what is accepted.
absl::StatusOr<weft::v1::SimFault> ParseSimFault(absl::string_view name);

// Writes every set override into `config`. "off" for --health becomes "" (disabled),
// as the config schema spells it. INVALID_ARGUMENT on an unknown fault name; range
// checks are left to ValidateAgentConfig so flags and file share one set of rules.
absl::Status ApplyAgentFlags(const AgentFlagOverrides& flags, weft::v1::AgentConfig* config);

// absl flags keep only the last occurrence of a flag. Returns `args` (argv, program
// name first) with every occurrence of --`name` (as --name=V, --name V, -name=V or
// -name V, before a "--" terminator) merged into one trailing --name=V1,V2,...
std::vector<std::string> MergeRepeatedFlag(const std::vector<std::string>& args,
                                           absl::string_view name);

}  // namespace weft::agent

#endif  // WEFT_AGENT_AGENT_FLAGS_H_
