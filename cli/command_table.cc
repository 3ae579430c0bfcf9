#include "cli/command_table.h"

#include <algorithm>
#include <utility>

#include "absl/flags/reflection.h"
#include "absl/strings/str_cat.h"
#include "cli/audit_command.h"
#include "cli/fabric_command.h"
#include "cli/node_commands.h"
#include "cli/policy_command.h"
#include "cli/prometheus_command.h"
#include "cli/reservation_commands.h"
#include "cli/rollout_command.h"
#include "cli/pingmesh_command.h"
#include "cli/tune_command.h"
#include "cli/topology_command.h"

namespace weft {
namespace {

constexpr char kSynopsis[] =
    "weftctl [--controller HOST:PORT] [--output table|json] COMMAND\n"
    "        [--tls_ca CA.crt [--tls_cert C --tls_key K] [--token T | --token_file F]]\n"
    "        [--insecure]   (TLS and roles: cli/transport.h)\n";

}  // namespace

const std::vector<Command>& Commands() {
  static const auto* const commands = new std::vector<Command>{
    {"nodes",
        "  nodes [--rack R]            list nodes with state and rates\n",
     {"rack"}, &RunNodesCommand},
    {"node",
        "  node NAME                   show one node's NICs, GPUs and rates\n",
     {}, &RunNodeCommand},
    {"drain",
        "  drain NAME --reason \"...\"   drain a node\n",
     {"reason"}, &RunDrainCommand},
    {"undrain",
        "  undrain NAME                undrain a node\n",
     {}, &RunUndrainCommand},
    {"events",
        "  events [--node N] [--since 10m|2026-11-30T06:00:00Z] [--limit N]\n"
        "                              state changes, drains, rule firings, oldest first\n",
     {"node", "since", "limit"}, &RunEventsCommand},
    {"racks",
        "  racks [--pod P]             per rack and per pod: nodes by state and rates\n",
     {"pod"}, &RunRacksCommand},
    {"place",
        "  place --job J (--nodes N | --ranks R --gpus-per-node G) [--pattern ring|alltoall|pipeline]\n"
        "        [--tp N --pp N --dp N --ep N] [--qos training|storage|control] [--exclude a,b]\n"
        "        [--within a,b,..] [--max-racks K] [--one-pod] [--max-congestion X] [--ttl S]\n"
        "        [--precheck S]\n"
        "        [--gradient-bytes B --alltoall-bytes B --activation-bytes B]\n"
        "        [--format table|hostfile|env|json]\n"
        "        [--offline --topology T.yaml [--occupancy O.yaml]]\n"
        "                              place a job's ranks and reserve its nodes\n",
     {"job", "nodes", "ranks", "gpus_per_node", "pattern", "tp", "pp", "dp", "ep", "qos", "exclude", "within", "max_racks", "one_pod", "precheck", "max_congestion", "ttl", "gradient_bytes", "alltoall_bytes", "activation_bytes", "format", "offline", "topology", "occupancy"}, &RunPlaceCommand},
    {"release",
        "  release ID | --job J        end a reservation\n",
     {"job"}, &RunReleaseOrRenewCommand},
    {"renew",
        "  renew (ID | --job J) [--ttl S]  extend a reservation's lease\n",
     {"job", "ttl"}, &RunReleaseOrRenewCommand},
    {"reservations",
        "  reservations                list the live reservations\n",
     {}, &RunReservationsCommand},
    {"jobs",
        "  jobs                        every reservation's job: progress and fabric congestion\n",
     {}, &RunJobsCommand},
    {"topology",
        "  topology export --format slurm|k8s-labels|json [--offline --topology T.yaml]\n"
        "                              the rack and pod tiers for Slurm, Kubernetes or tools\n",
     {"format", "offline", "topology"}, &RunTopologyCommand},
    {"policy",
        "  policy validate FILE        check a QoS/DCQCN policy offline (no controller)\n",
     {}, &RunPolicyCommand},
    {"policy",
        "  policy diff FILE            what the policy would change, per parameter and node count\n",
     {}, &RunPolicyCommand},
    {"rollout",
        "  rollout start FILE | status [ID] | pause [ID] | resume [ID] | abort [ID] [--reason R]\n"
        "        | history             staged rollout of a policy: canary, bake, waves, rollback\n",
     {"reason"}, &RunRolloutCommand},
    {"tune",
        "  tune propose [--scope rack-a,pod:P,node:N] [--dry-run] [--strategy surrogate|annealing]\n"
        "        [--seed N] [--max-evaluations N] [--wait] | status [ID] | history | apply ID\n"
        "                              DCQCN tuning: search in the twin, roll the best out\n",
     {"scope", "dry_run", "strategy", "seed", "max_evaluations", "wait"}, &RunTuneCommand},
    {"pingmesh",
        "  pingmesh status | matrix [--rack R]\n"
        "                              probe verdicts (blamed host, NIC, switch, link); loss/RTT\n"
        "                              rack to rack, or node to node from rack R\n",
     {"rack"}, &RunPingmeshCommand},
    {"check",
        "  check --nodes a,b,... [--seconds S]\n"
        "                              pre-job check: the nodes probe each other for S s (10);\n"
        "                              pass/fail per node with the blamed component; exit 1 on a fail\n",
     {"nodes", "seconds"}, &RunCheckCommand},
    {"topology",
        "  topology check --topology DESIGN.yaml [--offline --observed SNAPSHOT.json]\n"
        "                              LLDP cabling against the design; exit 1 on findings\n",
     {"topology", "offline", "observed"}, &RunTopologyCommand},
    {"prometheus",
        "  prometheus targets [--out FILE]\n"
        "                              the agents' /metrics as a Prometheus file_sd file\n",
     {"out"}, &RunPrometheusCommand},
    {"audit",
        "  audit [--who W] [--method M] [--since 10m|RFC3339] [--limit N]\n"
        "                              the audit log of mutating calls, oldest first\n",
     {"who", "method", "since", "limit"}, &RunAuditCommand},
    {"fabric",
        "  fabric faults | inject KIND [--node N] [--nic D] [--link L] [--value X] | clear ID|all\n"
        "        | links [--prefix P] [--busy] | jobs [--fabric HOST:PORT]\n"
        "                              the fabric twin (weft-fabric): faults, links, its jobs\n",
     {"fabric", "node", "nic", "link", "value", "prefix", "busy"}, &RunFabricCommand},
  };
  return *commands;
}

const std::vector<std::string>& GlobalFlags() {
  static const auto* const flags = new std::vector<std::string>{
      "controller", "output", "timeout_ms", "tls_ca",   "tls_cert",
      "tls_key",    "token",  "token_file", "insecure",
  };
  return *flags;
}

std::string UsageText() {
  std::string text = kSynopsis;
  for (const Command& command : Commands()) absl::StrAppend(&text, command.usage);
  if (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
}

namespace {

void AppendFlag(const std::string& name, std::string* out) {
  const absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
  if (flag == nullptr) {
    absl::StrAppend(out, "  --", name, "  (not defined: a bug in the command table)\n");
    return;
  }
  absl::StrAppend(out, "  --", name, "  ", flag->Help());
  const std::string default_value = flag->DefaultValue();
  if (!default_value.empty()) absl::StrAppend(out, " (default: ", default_value, ")");
  absl::StrAppend(out, "\n");
}

}  // namespace

std::optional<std::string> CommandHelpText(absl::string_view command) {
  std::string text = "usage:\n";
  std::vector<std::string> flags;
  bool found = false;
  for (const Command& entry : Commands()) {
    if (entry.name != command) continue;
    found = true;
    absl::StrAppend(&text, entry.usage);
    for (const std::string& flag : entry.flags) {
      if (std::find(flags.begin(), flags.end(), flag) == flags.end()) flags.push_back(flag);
    }
  }
  if (!found) return std::nullopt;
  if (!flags.empty()) {
    absl::StrAppend(&text, "\nflags:\n");
    for (const std::string& flag : flags) AppendFlag(flag, &text);
  }
  absl::StrAppend(&text, "\nglobal flags:\n");
  for (const std::string& flag : GlobalFlags()) AppendFlag(flag, &text);
  return text;
}

bool IsHelpRequest(const std::vector<std::string>& args, std::string* command) {
  bool help = false;
  command->clear();
  for (const std::string& arg : args) {
    if (arg == "--help" || arg == "-h" || arg == "-help" || arg == "help") {
      help = true;
      continue;
    }
    // The first word that names a command (a flag's value may come before it).
    if (!command->empty() || arg.empty() || arg[0] == '-') continue;
    for (const Command& entry : Commands()) {
      if (entry.name == arg) *command = arg;
    }
  }
  return help;
}

int PrintHelp(absl::string_view command, std::ostream& out) {
  if (command.empty()) {
    out << "usage: " << UsageText() << "\n";
  } else {
    out << CommandHelpText(command).value_or("");
  }
  return kExitOk;
}

int Dispatch(const std::vector<std::string>& args, const CommandContext& context) {
  for (const Command& command : Commands()) {
    if (command.name == args[0]) return command.run(args, context);
  }
  return context.Usage(absl::StrCat("unknown command '", args[0], "'"));
}

int RunWeftctl(const std::vector<std::string>& args, const WeftctlOptions& options,
               std::ostream& out, std::ostream& err) {
  const std::string usage = UsageText();
  auto usage_error = [&](absl::string_view problem) {
    return PrintUsageError(err, usage, problem);
  };
  if (args.empty()) return usage_error("no command given");
  if (options.output != "table" && options.output != "json") {
    return usage_error(absl::StrCat("--output '", options.output, "' is not one of: table, json"));
  }
  absl::StatusOr<ControllerClient> controller =
      ControllerClient::Connect(options.transport, options.timeout_ms);
  if (!controller.ok()) return usage_error(controller.status().message());
  return Dispatch(args, CommandContext{out, err, options, *controller, usage});
}

}  // namespace weft
