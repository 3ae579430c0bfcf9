// ingest_bench: the load generator of the controller ingest benchmark. Against one
// running weft-controller (started by bench/ingest/run.sh), it grows a Fleet of
// simulated agents step by step and, at each step, measures over a steady window:
// controller CPU (utime+stime from /proc, in cores) and RSS, telemetry batches the
// controller accepted (weft_controller_telemetry_batches_total) against those due and
// those sent, rejections and stream failures, and this process's own CPU. Prints a
// markdown table (stdout) and progress (stderr). A step passes with controller CPU
// under --cpu_limit_cores and at least --min_accepted of the due batches accepted; the
// ramp stops after the first failing step.
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "bench/ingest/fleet.h"
#include "bench/ingest/process_stats.h"

ABSL_FLAG(std::string, controller, "", "controller gRPC host:port");
ABSL_FLAG(int, controller_pid, 0, "the controller's process id (for /proc)");
ABSL_FLAG(std::string, metrics, "", "controller /metrics host:port (IPv4)");
ABSL_FLAG(std::string, steps, "1000,2500,5000,10000,12500,15000,17500",
          "node counts to ramp through, comma-separated, ascending");
ABSL_FLAG(int, window_s, 20, "measuring window per step, seconds");
ABSL_FLAG(int, settle_s, 5, "wait after a step's nodes stream before measuring, seconds");
ABSL_FLAG(int, interval_ms, 1000, "telemetry interval of every node");
ABSL_FLAG(int, max_connecting, 256, "nodes registering / opening streams at once");
ABSL_FLAG(int, sender_threads, 4, "generator threads that start the writes");
ABSL_FLAG(double, cpu_limit_cores, 1.0, "a step passes with controller CPU below this");
ABSL_FLAG(double, min_accepted, 0.99, "... and at least this share of due batches accepted");

namespace weft::bench {
namespace {

struct Snapshot {
  absl::Time at;
  double controller_cpu_s = 0;
  double own_cpu_s = 0;
  double machine_busy_s = 0;
  std::map<std::string, double> metrics;
  FleetStats fleet;
};

absl::StatusOr<Snapshot> Take(int controller_pid, const std::string& metrics_address,
                              const Fleet& fleet) {
  Snapshot s;
  absl::StatusOr<std::string> text = FetchMetrics(metrics_address);
  if (!text.ok()) return text.status();
  s.metrics = SumSeriesByName(*text);
  absl::StatusOr<double> cpu = ProcessCpuSeconds(controller_pid);
  if (!cpu.ok()) return cpu.status();
  s.controller_cpu_s = *cpu;
  absl::StatusOr<double> own = ProcessCpuSeconds(getpid());
  if (!own.ok()) return own.status();
  s.own_cpu_s = *own;
  s.machine_busy_s = MachineCpuSeconds();
  s.fleet = fleet.stats();
  s.at = absl::Now();
  return s;
}

double Metric(const Snapshot& s, const std::string& name) {
  auto it = s.metrics.find(name);
  return it == s.metrics.end() ? 0 : it->second;
}

struct StepResult {
  int64_t nodes = 0;
  double grow_s = 0;  // until the step's new nodes all streamed
  double streams = 0;
  double due_per_s = 0;
  double sent_per_s = 0;
  double accepted_per_s = 0;
  double accepted_share = 0;
  int64_t rejected = 0;  // controller-side rejections + fleet failures in the window
  int64_t skipped = 0;
  int64_t late_slots = 0;
  double controller_cores = 0;
  double controller_rss_mib = 0;
  double rss_per_node_kib = 0;
  double own_cores = 0;
  double own_rss_mib = 0;
  double machine_busy_cores = 0;  // every process on the machine
  bool passed = false;
  std::string verdict;  // "yes", or why not
};

std::string Row(const StepResult& r) {
  return absl::StrFormat(
      "| %d | %.0f | %.0f | %.0f | %.0f | %.0f | %.2f%% | %d | %d | **%.2f** | %.1f | %.0f | "
      "%.1f | %.2f | %.0f | %.2f | %s |",
      r.nodes, r.grow_s, r.streams, r.due_per_s, r.sent_per_s, r.accepted_per_s,
      100 * r.accepted_share, r.rejected, r.skipped, r.controller_cores,
      1e6 * r.controller_cores / std::max(1.0, r.accepted_per_s), r.controller_rss_mib,
      r.rss_per_node_kib, r.own_cores, r.own_rss_mib, r.machine_busy_cores, r.verdict);
}

int Run() {
  const std::string controller = absl::GetFlag(FLAGS_controller);
  const int pid = absl::GetFlag(FLAGS_controller_pid);
  const std::string metrics = absl::GetFlag(FLAGS_metrics);
  if (controller.empty() || pid <= 0 || metrics.empty()) {
    std::cerr << "ingest_bench: --controller, --controller_pid and --metrics are required\n";
    return 2;
  }
  std::vector<int64_t> steps;
  for (absl::string_view step : absl::StrSplit(absl::GetFlag(FLAGS_steps), ',')) {
    int64_t n = 0;
    if (!absl::SimpleAtoi(step, &n) || n <= 0 || (!steps.empty() && n <= steps.back())) {
      std::cerr << "ingest_bench: --steps: '" << step
                << "' is not a node count above the previous one\n";
      return 2;
    }
    steps.push_back(n);
  }
  const absl::Duration interval = absl::Milliseconds(absl::GetFlag(FLAGS_interval_ms));
  const absl::Duration window = absl::Seconds(absl::GetFlag(FLAGS_window_s));
  const absl::Duration settle = absl::Seconds(absl::GetFlag(FLAGS_settle_s));

  // Every node holds one socket here and one in the controller.
  rlimit files{};
  getrlimit(RLIMIT_NOFILE, &files);
  const int64_t fd_headroom = 200;
  const int64_t max_nodes = static_cast<int64_t>(files.rlim_cur) - fd_headroom;

  // A pid of a wrapper (a shell, nice) would measure the wrong process.
  std::string comm;
  std::getline(std::ifstream(absl::StrCat("/proc/", pid, "/comm")), comm);
  if (comm != "weft-controller") {
    std::cerr << "ingest_bench: --controller_pid " << pid << " is '" << comm
              << "', not weft-controller\n";
    return 2;
  }
  absl::StatusOr<long> idle_rss = ProcessRssKib(pid);
  if (!idle_rss.ok()) {
    std::cerr << "ingest_bench: controller pid " << pid << ": " << idle_rss.status() << "\n";
    return 1;
  }

  FleetOptions options;
  options.controller_address = controller;
  options.interval = interval;
  options.max_connecting = absl::GetFlag(FLAGS_max_connecting);
  options.sender_threads = absl::GetFlag(FLAGS_sender_threads);
  Fleet fleet(options);

  std::vector<StepResult> results;
  std::string stopped_because;
  for (int64_t target : steps) {
    if (target > max_nodes) {
      stopped_because = absl::StrCat(
          "the next step (", target, " nodes) needs more sockets than RLIMIT_NOFILE (",
          files.rlim_cur, ") allows this process");
      break;
    }
    std::cerr << "ingest_bench: growing to " << target << " nodes\n";
    const absl::Time grow_start = absl::Now();
    if (absl::Status grown = fleet.GrowTo(target, absl::Seconds(600)); !grown.ok()) {
      stopped_because = absl::StrCat("growing to ", target, " nodes failed: ", grown.message());
      break;
    }
    const double grow_s = absl::ToDoubleSeconds(absl::Now() - grow_start);
    std::cerr << "ingest_bench: " << target << " nodes streaming after " << grow_s
              << " s; settling\n";
    absl::SleepFor(settle);
    absl::StatusOr<Snapshot> before = Take(pid, metrics, fleet);
    absl::SleepFor(window);
    absl::StatusOr<Snapshot> after = Take(pid, metrics, fleet);
    absl::StatusOr<long> rss = ProcessRssKib(pid);
    absl::StatusOr<long> own_rss = ProcessRssKib(getpid());
    if (!before.ok() || !after.ok() || !rss.ok() || !own_rss.ok()) {
      stopped_because = absl::StrCat(
          "measuring failed: ",
          (!before.ok() ? before.status() : !after.ok() ? after.status() : rss.status())
              .ToString());
      break;
    }
    const double seconds = absl::ToDoubleSeconds(after->at - before->at);
    StepResult r;
    r.nodes = target;
    r.grow_s = grow_s;
    r.streams = Metric(*after, "weft_controller_agent_streams");
    r.sent_per_s =
        static_cast<double>(after->fleet.batches_sent - before->fleet.batches_sent) / seconds;
    r.accepted_per_s = (Metric(*after, "weft_controller_telemetry_batches_total") -
                        Metric(*before, "weft_controller_telemetry_batches_total")) /
                       seconds;
    // Due counts the nodes that should be streaming: every node of the step.
    const double due_per_s = static_cast<double>(target) / absl::ToDoubleSeconds(interval);
    r.accepted_share = r.accepted_per_s / due_per_s;
    r.due_per_s = due_per_s;
    auto delta = [&](const std::string& name) {
      return static_cast<int64_t>(Metric(*after, name) - Metric(*before, name));
    };
    r.rejected = delta("weft_controller_telemetry_rejected_total") +
                 delta("weft_controller_streams_rejected_total") +
                 (after->fleet.write_failures - before->fleet.write_failures) +
                 (after->fleet.stream_failures - before->fleet.stream_failures) +
                 (after->fleet.register_failures - before->fleet.register_failures);
    r.skipped = after->fleet.skipped_busy - before->fleet.skipped_busy;
    r.late_slots = after->fleet.late_slots - before->fleet.late_slots;
    r.controller_cores = (after->controller_cpu_s - before->controller_cpu_s) / seconds;
    r.controller_rss_mib = static_cast<double>(*rss) / 1024;
    r.rss_per_node_kib = static_cast<double>(*rss - *idle_rss) / static_cast<double>(target);
    r.own_cores = (after->own_cpu_s - before->own_cpu_s) / seconds;
    r.own_rss_mib = static_cast<double>(*own_rss) / 1024;
    r.machine_busy_cores = (after->machine_busy_s - before->machine_busy_s) / seconds;
    const double min_accepted = absl::GetFlag(FLAGS_min_accepted);
    r.passed = r.controller_cores < absl::GetFlag(FLAGS_cpu_limit_cores) &&
               r.accepted_share >= min_accepted;
    std::vector<std::string> why;
    if (r.controller_cores >= absl::GetFlag(FLAGS_cpu_limit_cores)) {
      why.push_back("controller CPU");
    }
    if (r.accepted_share < min_accepted) {
      // Who fell behind: the controller (sent but not accepted; rejections) or the
      // generator (not even sent: it shares the machine's cores).
      if (r.accepted_per_s < min_accepted * r.sent_per_s || r.rejected > 0) {
        why.push_back("controller behind");
      }
      if (r.sent_per_s < min_accepted * r.due_per_s) why.push_back("generator behind");
      // Every core busy: whoever fell behind was short of CPU, not of design.
      if (r.machine_busy_cores > 0.95 * sysconf(_SC_NPROCESSORS_ONLN)) {
        why.push_back("machine saturated");
      }
    }
    r.verdict = r.passed ? "yes" : absl::StrCat("**no** (", absl::StrJoin(why, ", "), ")");
    results.push_back(r);
    std::cerr << "ingest_bench: " << Row(r) << " (late wheel slots: " << r.late_slots
              << ", failed streams so far: " << after->fleet.stream_failures << ")\n";
    if (!r.passed) {
      stopped_because = absl::StrCat("the ", target, "-node step did not pass");
      break;
    }
  }

  std::cout << "| nodes | added in (s) | streams open | batches due/s | sent/s | accepted/s "
               "| accepted of due | rejected + errors | skipped (busy) | controller CPU (cores) "
               "| controller CPU per batch (µs) | controller RSS (MiB) | RSS per node (KiB) "
               "| generator CPU (cores) | generator RSS (MiB) | machine busy (cores) | passes |\n";
  std::cout << "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
               ":---:|\n";
  int64_t largest = 0;
  for (const StepResult& r : results) {
    std::cout << Row(r) << "\n";
    if (r.passed) largest = r.nodes;
  }
  std::cout << "\nLARGEST_PASSING_NODES=" << largest << "\n";
  if (!results.empty()) {
    const StepResult& last = results.back();
    std::cout << "LAST_STEP_NODES=" << last.nodes << "\n";
    std::cout << absl::StrFormat("LAST_STEP_US_PER_BATCH=%.1f\n",
                                 1e6 * last.controller_cores /
                                     std::max(1.0, last.accepted_per_s));
  }
  std::cout << "IDLE_RSS_MIB=" << absl::StrFormat("%.1f", *idle_rss / 1024.0) << "\n";
  std::cout << "RLIMIT_NOFILE=" << files.rlim_cur << "\n";
  std::cout << "STOPPED_BECAUSE=" << (stopped_because.empty() ? "all steps ran" : stopped_because)
            << "\n";
  const std::vector<std::string> failures = fleet.failure_samples();
  std::cout << "FAILURES=" << (failures.empty() ? "none" : absl::StrJoin(failures, "; "))
            << "\n";
  fleet.Stop();
  return 0;
}

}  // namespace
}  // namespace weft::bench

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "ingest_bench --controller HOST:PORT --controller_pid PID --metrics HOST:PORT "
      "[--steps N,N,...] [--window_s S] [--settle_s S]");
  absl::ParseCommandLine(argc, argv);
  // As in weft-controller: Debian's Abseil keeps Mutex deadlock detection on, and gRPC
  // locks absl Mutexes on every operation; the generator's CPU should be gRPC's work.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  return weft::bench::Run();
}
