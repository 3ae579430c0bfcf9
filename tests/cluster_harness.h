// The harness of every multi-process test: a real weft-controller (free ports, its own
// state directory), real weft-agents (simulated backend) by name, rack and pod, weftctl
// against that controller, the controller's /metrics and AdminService, and waits with a
// deadline whose failure names what was awaited and what was last seen. Any other
// process a test starts (job ranks, Prometheus, lldpd, slurmd) can be handed to Track(),
// so that when the test has failed by the time the Cluster goes, the tail of every
// process's log is printed.
//
// Example:
//   Cluster cluster;
//   ASSERT_TRUE(cluster.StartController());
//   cluster.StartAgent({.name = "gpu-a01", .rack = "rack-a"});
//   ASSERT_TRUE(cluster.WaitForHealthy({"gpu-a01"}, absl::Seconds(15)));
//   CommandResult nodes = cluster.Weftctl({"nodes"});
//
// testonly. Not thread-safe: one test thread drives it.
#ifndef WEFT_TESTS_CLUSTER_HARNESS_H_
#define WEFT_TESTS_CLUSTER_HARNESS_H_

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "proto/weft/v1/admin.grpc.pb.h"
#include "tests/subprocess.h"

namespace weft::testing {

inline constexpr char kControllerBinary[] = "controller/weft-controller";
inline constexpr char kAgentBinary[] = "agent/weft-agent";
inline constexpr char kWeftctlBinary[] = "cli/weftctl";

// Polls `check` every `poll` until it returns true or `timeout` passes. `check` may
// describe what it saw in `*observed`; the failure says "<what>: not within <timeout>;
// last observed: <observed>".
::testing::AssertionResult WaitFor(absl::string_view what, absl::Duration timeout,
                                   const std::function<bool(std::string* observed)>& check,
                                   absl::Duration poll = absl::Milliseconds(50));

// The value of the series `series` (name{labels}, exactly as exposed) in a /metrics
// text; nullopt if absent.
std::optional<double> SeriesValue(absl::string_view text, absl::string_view series);

struct ControllerOptions {
  // Host of --listen; the port is chosen free once and kept across restarts.
  std::string listen_host = "127.0.0.1";
  int telemetry_interval_ms = 200;
  // Any other flags (--down_after=3, --tls_cert ..., --config ...).
  std::vector<std::string> flags;
};

struct AgentOptions {
  std::string name;
  std::string rack;  // empty: no --rack
  std::string pod;   // empty: no --pod
  int interval_ms = 200;
  int nics = 2;
  std::optional<int> gpus;  // unset: the agent's default
  // Serve gRPC health on a free port (health_address() names it); else --health off.
  bool health = false;
  // Any other flags (--fault pfc_storm, --job_socket PATH, TLS, --metrics ADDR ...);
  // without --metrics or --job_socket here, both are off.
  std::vector<std::string> flags;
  // Run through this command (e.g. {"/usr/sbin/ip", "netns", "exec", NS}).
  std::vector<std::string> wrapper;
  // Pingmesh: the agent answers probes on a free UDP port of its own, and its simulated
  // NICs take loopback addresses of their own (127.<port / 256>.<port % 256>.<NIC + 1>),
  // so the controller's pinglists make the agents probe each other for real. Off
  // (--probe_port 0): agents on the default port would collide, only the first one to
  // bind answering. Left to the test when `flags` has --config or --probe_port.
  bool probe = false;
};

class Cluster {
 public:
  // Picks the controller's ports and state directory; starts nothing.
  explicit Cluster(ControllerOptions options = {});
  // Kills what still runs; first, when the current test has failed, prints the tail of
  // every log.
  ~Cluster();
  Cluster(const Cluster&) = delete;
  Cluster& operator=(const Cluster&) = delete;

  // Starts (or restarts, on the same ports and state directory) the controller with
  // the options' flags and `extra_flags`; fails when it does not listen in `timeout`.
  ::testing::AssertionResult StartController(std::vector<std::string> extra_flags = {},
                                             absl::Duration timeout = absl::Seconds(10));
  // Sends `signo` and waits for the exit; the exit status (nullopt: still running).
  std::optional<int> StopController(int signo, absl::Duration timeout = absl::Seconds(10));
  Subprocess& controller() { return *controller_; }
  const std::string& address() const { return address_; }
  const std::string& metrics_address() const { return metrics_address_; }
  const std::string& state_dir() const { return state_dir_; }

  // Starts (or restarts) the agent `options.name` against this controller.
  Subprocess& StartAgent(const AgentOptions& options);
  Subprocess& agent(const std::string& name) { return *agents_.at(name); }
  const std::map<std::string, std::unique_ptr<Subprocess>>& agents() const { return agents_; }
  // The agent's gRPC health address (AgentOptions::health).
  const std::string& health_address(const std::string& name) const {
    return health_addresses_.at(name);
  }

  // Another process of the test, whose log is printed with the others on failure.
  Subprocess& Track(const std::string& name, std::vector<std::string> argv);

  // weftctl --controller address() [weftctl_flags] `args`.
  CommandResult Weftctl(std::vector<std::string> args,
                        absl::Duration timeout = absl::Seconds(10));
  // Flags every Weftctl call passes before its arguments (--insecure, TLS ...).
  void set_weftctl_flags(std::vector<std::string> flags) { weftctl_flags_ = std::move(flags); }

  // The controller's /metrics text ("" when it does not answer).
  std::string Metrics();
  std::optional<double> Metric(absl::string_view series) { return SeriesValue(Metrics(), series); }
  ::testing::AssertionResult WaitForMetric(absl::string_view series, double value,
                                           absl::Duration timeout);

  // AdminService.ListNodes over plaintext gRPC; empty when it fails.
  weft::v1::ListNodesResponse ListNodes();
  std::map<std::string, weft::v1::NodeStatus> NodesByName();
  // Waits until `predicate(NodesByName())`; the failure lists every node's state.
  ::testing::AssertionResult WaitForNodes(
      absl::string_view what, absl::Duration timeout,
      const std::function<bool(const std::map<std::string, weft::v1::NodeStatus>&)>& predicate);
  // Every one of `names` HEALTHY with rates (past its first sample).
  ::testing::AssertionResult WaitForHealthy(const std::vector<std::string>& names,
                                            absl::Duration timeout);
  ::testing::AssertionResult WaitForState(const std::string& name, weft::v1::NodeState state,
                                          absl::Duration timeout);

  // The last `tail_bytes` of every process's log, each under its name.
  std::string Logs(size_t tail_bytes = 16384) const;

 private:
  // A log file for `process` under TEST_TMPDIR, named after the test.
  std::string LogPath(const std::string& process);

  ControllerOptions options_;
  int port_ = 0;
  std::string address_;
  std::string metrics_address_;
  std::string state_dir_;
  int controller_starts_ = 0;
  std::unique_ptr<Subprocess> controller_;
  std::map<std::string, std::unique_ptr<Subprocess>> agents_;
  std::map<std::string, std::string> health_addresses_;
  std::map<std::string, std::unique_ptr<Subprocess>> tracked_;
  std::vector<std::string> weftctl_flags_;
  std::unique_ptr<weft::v1::AdminService::Stub> admin_;
};

}  // namespace weft::testing

#endif  // WEFT_TESTS_CLUSTER_HARNESS_H_
