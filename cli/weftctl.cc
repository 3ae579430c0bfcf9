// weftctl: the operator's command line for a Weft controller.
//
//   weftctl [--controller HOST:PORT] [--output table|json] COMMAND ...
//     (TLS, client certificates and tokens: --tls_ca, --tls_cert, --tls_key, --token,
//      --token_file, --insecure; cli/transport.h)
//     nodes [--rack R]              one row per node with its state and rates
//     node NAME                     a node's NICs, GPUs and current rates
//     drain NAME --reason "..."     take a node out of placement
//     undrain NAME                  put a drained node back
//     events [--node N] [--since 10m|RFC3339] [--limit N]
//                                   the controller's event log, oldest first
//     racks [--pod P]               per rack and per pod: nodes by state and rates
//     place --job J (--nodes N | --ranks R --gpus-per-node G) [...] [--format F]
//                                   place a job's ranks and reserve the nodes
//                                   (cli/place_command.h: flags and formats)
//     place --offline --topology T.yaml [--occupancy O.yaml] ...
//                                   the same engine on a topology file, no controller
//     release ID | --job J          end a reservation
//     renew (ID | --job J) [--ttl S]
//                                   extend a reservation's lease
//     reservations                  the live reservations
//     topology export --format slurm|k8s-labels|json [--offline --topology T.yaml]
//                                   the rack/pod tiers for schedulers
//                                   (cli/topology_export.h)
//     topology check --topology DESIGN.yaml [--offline --observed SNAPSHOT.json]
//                                   LLDP cabling against the design (cli/topology_check.h);
//                                   exit 1 when there are findings
//     prometheus targets [--out FILE]
//                                   the agents' /metrics as a Prometheus file_sd file
//                                   (cli/prometheus_command.h)
//     audit [--who W] [--method M] [--since 10m|RFC3339] [--limit N]
//                                   who changed what, when, with what result
//                                   (cli/audit_command.h)
//     policy validate FILE          a QoS/DCQCN policy, offline (cli/policy_command.h)
//     policy diff FILE              what it would change on the controller's nodes
//     rollout start FILE | status [ID] | pause | resume | abort [--reason R] | history
//                                   staged rollout of a policy (cli/rollout_command.h)
// Flags may be written with dashes or underscores (--gpus-per-node, --gpus_per_node).
// The commands, their help and their handlers: cli/command_table.h; the flags:
// cli/weftctl_flags.h.
//
// Exit status: 0 on success, 1 when the controller (or the offline engine) refuses or
// cannot be reached, 2 on a usage error.
#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/usage.h"
#include "cli/command_table.h"
#include "cli/weftctl_flags.h"

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(weft::UsageText());
  // --help, -h and `help` [COMMAND] answer on stdout and exit 0, before Abseil's own
  // --help (which lists every flag of every library and exits 1).
  std::string help_command;
  if (weft::IsHelpRequest(std::vector<std::string>(argv + 1, argv + argc), &help_command)) {
    return weft::PrintHelp(help_command, std::cout);
  }
  const std::vector<std::string> args = weft::ParseWeftctlFlags(argc, argv);
  return weft::RunWeftctl(args, weft::WeftctlOptionsFromFlags(), std::cout, std::cerr);
}
