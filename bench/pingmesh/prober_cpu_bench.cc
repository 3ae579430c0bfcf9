// One node's pingmesh prober and responder, CPU end to end (issue 22: probing under 2 %
// of one core per node). Run:
//   bazel build -c opt //bench/pingmesh:prober_cpu_bench
//   bazel-bin/bench/pingmesh/prober_cpu_bench [--rates=1000,8000] [--seconds=20]
//
// The pinglist is the one the controller would send the busiest node of the 1,024-node
// twin (pingmesh/pinglist.h sized for the node budget under test, turned into the wire
// proto by controller/pingmesh/fleet.h), every NIC of the fleet given a loopback address
// of its own. Two processes, forked, each the agent's own pingmesh part
// (agent/probe/pingmesh.h: UdpProber, Prober, UdpResponder, as the agent daemon builds
// them) over real UDP sockets on loopback:
//   - the prober node: applies the pinglist and probes at the budget (its own responder
//     answers its cross-rail probes, NIC to NIC inside the node);
//   - the peers: one responder answers every other peer's probes, as many as one node
//     answers when every node probes at the same rate.
// Baseline, in the same run: both processes up with no pinglist (the idle agent's
// pingmesh). CPU is each process's time on a CPU over the measured seconds, all its
// threads (/proc/PID/task/*/schedstat, ns; kernel work done in their context, e.g. the
// loopback's receive path, included), as a share of one core; the prober's own
// thread-CPU metric (weft_agent_prober_cpu_seconds_total) is shown beside it. The agent's
// CPU budget (probe.max_cpu_share) is set out of the way (--max_cpu_share) so that the
// cost of the whole rate is measured, not the budget's clamp.
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "agent/probe/pingmesh.h"
#include "bench/pingmesh/twin_pingmesh.h"
#include "common/clock.h"
#include "common/testing/metrics.h"
#include "controller/pingmesh/fleet.h"
#include "pingmesh/pinglist.h"
#include "sim/fabric.h"

ABSL_FLAG(std::string, rates, "1000,8000",
          "node budgets to measure, probes/s (1000: ControllerConfig.pingmesh and "
          "probe.max_probes_per_second defaults; 8000: the twin evaluation's)");
ABSL_FLAG(int, nodes, 1024, "twin nodes the pinglist is planned for");
ABSL_FLAG(int, nodes_per_group, 32, "nodes per rail group (a rack)");
ABSL_FLAG(double, seconds, 20, "measured seconds per phase");
ABSL_FLAG(double, warmup_s, 3, "seconds before each measurement");
ABSL_FLAG(double, max_cpu_share, 0.5, "the prober's probe.max_cpu_share during the run");

namespace weft::bench {
namespace {

constexpr int kNics = 8;

// A UDP port free now on 0.0.0.0.
uint32_t FreeUdpPort() {
  const int fd = socket(AF_INET, SOCK_DGRAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  socklen_t length = sizeof(address);
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    std::perror("prober_cpu_bench: a free UDP port");
    std::exit(1);
  }
  close(fd);
  return ntohs(address.sin_port);
}

// Time `pid`'s threads have spent on a CPU, seconds.
double ProcessCpuSeconds(pid_t pid) {
  double ns = 0;
  std::error_code error;
  for (const auto& task :
       std::filesystem::directory_iterator(absl::StrCat("/proc/", pid, "/task"), error)) {
    std::ifstream in(task.path() / "schedstat");
    double on_cpu_ns = 0;
    if (in >> on_cpu_ns) ns += on_cpu_ns;
  }
  return ns / 1e9;
}

weft::v1::AgentConfig NodeConfig(const std::string& node, uint32_t port, double max_probes) {
  weft::v1::AgentConfig config;
  config.set_node_name(node);
  weft::v1::ProbeConfig* probe = config.mutable_probe();
  probe->set_udp_port(port);
  probe->set_bind_address("0.0.0.0");
  probe->set_max_probes_per_second(max_probes);
  probe->set_max_nic_share(0.01);
  probe->set_max_cpu_share(absl::GetFlag(FLAGS_max_cpu_share));
  return config;
}

std::vector<weft::v1::Nic> Nics() {
  std::vector<weft::v1::Nic> nics(kNics);
  for (int i = 0; i < kNics; ++i) {
    nics[i].set_device(TwinNicName(i));
    nics[i].set_speed_mbps(400000);
  }
  return nics;
}

// Counts over the measured seconds; answers and losses also over the timeout after.
struct ProberReport {
  double sent = 0, answered = 0, lost = 0, send_errors = 0;
  double thread_cpu_s = 0;  // weft_agent_prober_cpu_seconds_total over the measurement
  double scheduled_rate = 0;
};

// The child that runs one node's pingmesh: applies `list` (none: idle), waits for the
// warm-up, measures for `seconds` and writes a ProberReport to `report_fd`; then waits
// for SIGTERM. The agent takes windows every telemetry interval; so does this.
[[noreturn]] void RunNode(const weft::v1::AgentConfig& config, const weft::v1::Pinglist* list,
                          int report_fd) {
  RealClock clock;
  prometheus::Registry registry;
  absl::StatusOr<std::unique_ptr<agent::probe::Pingmesh>> mesh =
      agent::probe::Pingmesh::Create(config, &clock, &registry);
  if (!mesh.ok() || *mesh == nullptr || (*mesh)->udp_port() == 0) {
    std::fprintf(stderr, "prober_cpu_bench: %s: no pingmesh (%s)\n", config.node_name().c_str(),
                 mesh.status().ToString().c_str());
    _exit(1);
  }
  (*mesh)->Start(Nics());
  if (list != nullptr) {
    if (absl::Status applied = (*mesh)->Apply(*list); !applied.ok()) {
      std::fprintf(stderr, "prober_cpu_bench: %s\n", applied.ToString().c_str());
      _exit(1);
    }
  }
  const std::map<std::string, std::string> node = {{"node", config.node_name()}};
  auto metric = [&](const char* name) { return MetricValue(registry, name, node).value_or(0); };
  auto sample = [&] {
    return ProberReport{metric("weft_agent_probes_sent_total"),
                        metric("weft_agent_probes_answered_total"),
                        metric("weft_agent_probes_lost_total"),
                        metric("weft_agent_probe_send_errors_total"),
                        metric("weft_agent_prober_cpu_seconds_total"),
                        metric("weft_agent_probe_rate")};
  };
  auto run_for = [&](double seconds) {
    const absl::Time end = absl::Now() + absl::Seconds(seconds);
    while (absl::Now() < end) {
      absl::SleepFor(absl::Milliseconds(200));
      (*mesh)->TakeWindows();
    }
  };
  run_for(absl::GetFlag(FLAGS_warmup_s));
  const ProberReport start = sample();
  run_for(absl::GetFlag(FLAGS_seconds));
  ProberReport end = sample();
  // Answers and losses resolve up to a timeout after the send: let them in.
  const double scheduled = end.scheduled_rate;
  const double sent = end.sent - start.sent, cpu = end.thread_cpu_s - start.thread_cpu_s;
  run_for(1.5);
  end = sample();
  ProberReport report{sent,
                      end.answered - start.answered,
                      end.lost - start.lost,
                      end.send_errors - start.send_errors,
                      cpu,
                      scheduled};
  if (write(report_fd, &report, sizeof(report)) != sizeof(report)) _exit(1);
  for (;;) run_for(1);
}

pid_t Fork(const weft::v1::AgentConfig& config, const weft::v1::Pinglist* list, int* report_fd) {
  int fds[2];
  if (pipe(fds) != 0) std::exit(1);
  std::fflush(stdout);
  const pid_t pid = fork();
  if (pid < 0) std::exit(1);
  if (pid == 0) {
    close(fds[0]);
    RunNode(config, list, fds[1]);
  }
  close(fds[1]);
  *report_fd = fds[0];
  return pid;
}

void Stop(pid_t pid) {
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
}

struct Phase {
  std::string name;
  double planned_rate = 0;  // the node's pinglist, probes/s
  int peers = 0, flows = 0;
  ProberReport prober;
  double prober_cpu_s = 0, responder_cpu_s = 0, seconds = 0;
};

// One phase: the prober node with `list` (null: idle) against the peers' responder.
Phase Measure(const std::string& name, const weft::v1::AgentConfig& prober_config,
              const weft::v1::Pinglist* list, pid_t responder) {
  Phase phase;
  phase.name = name;
  int report_fd = -1;
  const pid_t prober = Fork(prober_config, list, &report_fd);
  absl::SleepFor(absl::Seconds(absl::GetFlag(FLAGS_warmup_s)));
  const absl::Time start = absl::Now();
  const double prober_start = ProcessCpuSeconds(prober);
  const double responder_start = ProcessCpuSeconds(responder);
  absl::SleepFor(absl::Seconds(absl::GetFlag(FLAGS_seconds)));
  phase.prober_cpu_s = ProcessCpuSeconds(prober) - prober_start;
  phase.responder_cpu_s = ProcessCpuSeconds(responder) - responder_start;
  phase.seconds = absl::ToDoubleSeconds(absl::Now() - start);
  if (read(report_fd, &phase.prober, sizeof(phase.prober)) != sizeof(phase.prober)) {
    std::fprintf(stderr, "prober_cpu_bench: %s: the prober node failed\n", name.c_str());
    std::exit(1);
  }
  close(report_fd);
  Stop(prober);
  if (list != nullptr) {
    phase.peers = list->peers_size();
    for (const weft::v1::ProbePeer& peer : list->peers()) {
      phase.flows += peer.source_ports_size();
      phase.planned_rate += peer.probes_per_second();
    }
  }
  return phase;
}

// The busiest node's pinglist of the twin planned for `max_probes_per_node_per_s`, every
// NIC on loopback (node k's NIC i at 127.<1 + k / 256>.<k % 256>.<i + 1>), every peer
// answering on `peers_port` but the node itself, on `own_port`.
weft::v1::Pinglist BusiestNodeList(const sim::Fabric& fabric, double max_probes_per_node_per_s,
                                   uint32_t peers_port, uint32_t own_port, std::string* node) {
  pingmesh::PinglistOptions options;
  options.max_probes_per_node_per_s = max_probes_per_node_per_s;
  const pingmesh::FabricInventory inventory =
      TwinInventory(fabric, absl::GetFlag(FLAGS_nodes_per_group));
  absl::StatusOr<pingmesh::PinglistPlan> plan = pingmesh::BuildPinglists(inventory, options);
  if (!plan.ok()) {
    std::fprintf(stderr, "prober_cpu_bench: %s\n", plan.status().ToString().c_str());
    std::exit(1);
  }
  double busiest = -1;
  for (const pingmesh::Pinglist& list : plan->pinglists) {
    double rate = 0;
    for (const pingmesh::PinglistEntry& entry : list.entries) rate += entry.probes_per_s;
    if (rate > busiest) busiest = rate, *node = list.node;
  }
  controller::Fleet fleet;
  for (size_t k = 0; k < inventory.nodes.size(); ++k) {
    const pingmesh::NodeSpec& spec = inventory.nodes[k];
    fleet.udp_ports[spec.name] = spec.name == *node ? own_port : peers_port;
    for (size_t i = 0; i < spec.nics.size(); ++i) {
      fleet.nics[absl::StrCat(spec.name, "/", spec.nics[i].name)].address =
          absl::StrCat("127.", 1 + k / 256, ".", k % 256, ".", i + 1);
    }
  }
  pingmesh::PinglistPlan busiest_only = *plan;
  busiest_only.pinglists.clear();
  for (const pingmesh::Pinglist& list : plan->pinglists) {
    if (list.node == *node) busiest_only.pinglists.push_back(list);
  }
  weft::v1::Pinglist proto =
      controller::PinglistProtos(busiest_only, fleet, controller::PinglistWire{})[0].second;
  proto.set_version(1);
  return proto;
}

int Main() {
  sim::RailOptions rail;
  rail.nodes = absl::GetFlag(FLAGS_nodes);
  rail.nodes_per_group = absl::GetFlag(FLAGS_nodes_per_group);
  rail.nics_per_node = kNics;
  rail.nic_bps = 400e9;
  rail.uplinks_per_leaf = 8;
  absl::StatusOr<sim::Fabric> fabric = sim::BuildRailOptimized(rail);
  if (!fabric.ok()) {
    std::fprintf(stderr, "prober_cpu_bench: %s\n", fabric.status().ToString().c_str());
    return 1;
  }
  std::vector<double> rates;
  for (absl::string_view rate : absl::StrSplit(absl::GetFlag(FLAGS_rates), ',')) {
    double value = 0;
    if (!absl::SimpleAtod(rate, &value) || value <= 0) {
      std::fprintf(stderr, "prober_cpu_bench: --rates: '%s' is not a rate\n",
                   std::string(rate).c_str());
      return 1;
    }
    rates.push_back(value);
  }
  const uint32_t peers_port = FreeUdpPort();
  int unused_fd = -1;
  const double max_rate = *std::max_element(rates.begin(), rates.end());
  const pid_t responder = Fork(NodeConfig("peers", peers_port, max_rate), nullptr, &unused_fd);

  std::vector<Phase> phases;
  std::string node = "idle";
  phases.push_back(
      Measure("idle agent (no pinglist)", NodeConfig(node, FreeUdpPort(), max_rate), nullptr,
              responder));
  for (double rate : rates) {
    const uint32_t own_port = FreeUdpPort();
    const weft::v1::Pinglist list =
        BusiestNodeList(*fabric, rate, peers_port, own_port, &node);
    phases.push_back(Measure(absl::StrCat(rate, " probes/s budget (", node, ")"),
                             NodeConfig(node, own_port, rate), &list, responder));
  }
  Stop(responder);

  std::printf("pinglist: the busiest node of the %d-node twin, %d NICs; %.0f s measured "
              "per phase after %.0f s of warm-up; probe.max_cpu_share %.2f\n\n",
              rail.nodes, kNics, absl::GetFlag(FLAGS_seconds),
              absl::GetFlag(FLAGS_warmup_s), absl::GetFlag(FLAGS_max_cpu_share));
  std::printf("| phase | peers / flows | planned probes/s | sent probes/s | answered (of "
              "resolved) | lost | "
              "prober node CPU, %% of a core | above idle | prober threads (own metric) | "
              "responder CPU (peers), %% of a core | above idle |\n"
              "|---|---|---|---|---|---|---|---|---|---|---|\n");
  const Phase& idle = phases[0];
  for (const Phase& p : phases) {
    const double prober_share = 100 * p.prober_cpu_s / p.seconds;
    const double responder_share = 100 * p.responder_cpu_s / p.seconds;
    const double seconds = absl::GetFlag(FLAGS_seconds);
    std::printf("| %s | %d / %d | %.0f | %.0f | %.4f | %.0f | %.3f | %.3f | %.3f | %.3f | %.3f |\n",
                p.name.c_str(), p.peers, p.flows, p.planned_rate, p.prober.sent / seconds,
                p.prober.answered + p.prober.lost > 0
                    ? p.prober.answered / (p.prober.answered + p.prober.lost)
                    : 0.0,
                p.prober.lost,
                prober_share, prober_share - 100 * idle.prober_cpu_s / idle.seconds,
                100 * p.prober.thread_cpu_s / seconds, responder_share,
                responder_share - 100 * idle.responder_cpu_s / idle.seconds);
  }
  std::printf("\ntarget (issue 22): under 2 %% of one core per node (the prober node's CPU "
              "above idle, plus its responder's share of the peers' answering)\n");
  return 0;
}

}  // namespace
}  // namespace weft::bench

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return weft::bench::Main();
}
