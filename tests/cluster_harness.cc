#include "tests/cluster_harness.h"

#include <signal.h>

#include <chrono>
#include <iostream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "common/testing/temp_dir.h"
#include "grpcpp/grpcpp.h"

namespace weft::testing {
namespace {

std::string TestName() {
  const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
  return info != nullptr ? info->name() : "suite";
}

std::string Tail(const std::string& text, size_t bytes) {
  if (text.size() <= bytes) return text;
  return absl::StrCat("[... ", text.size() - bytes, " bytes before]\n",
                      text.substr(text.size() - bytes));
}

std::string Describe(const std::map<std::string, weft::v1::NodeStatus>& nodes) {
  if (nodes.empty()) return "no nodes (or the controller did not answer)";
  std::vector<std::string> parts;
  for (const auto& [name, node] : nodes) {
    parts.push_back(absl::StrCat(name, "=", weft::v1::NodeState_Name(node.state()),
                                 " tx_gbps=", node.rates().tx_gbps()));
  }
  return absl::StrJoin(parts, ", ");
}

}  // namespace

::testing::AssertionResult WaitFor(absl::string_view what, absl::Duration timeout,
                                   const std::function<bool(std::string* observed)>& check,
                                   absl::Duration poll) {
  const absl::Time deadline = absl::Now() + timeout;
  std::string observed;
  while (true) {
    observed.clear();
    if (check(&observed)) return ::testing::AssertionSuccess();
    if (absl::Now() >= deadline) break;
    absl::SleepFor(poll);
  }
  return ::testing::AssertionFailure()
         << what << ": not within " << absl::FormatDuration(timeout) << "; last observed: "
         << (observed.empty() ? "(nothing)" : observed);
}

std::optional<double> SeriesValue(absl::string_view text, absl::string_view series) {
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (!absl::StartsWith(line, series) || line.size() <= series.size() ||
        line[series.size()] != ' ') {
      continue;
    }
    double value = 0;
    if (absl::SimpleAtod(line.substr(series.size() + 1), &value)) return value;
  }
  return std::nullopt;
}

Cluster::Cluster(ControllerOptions options) : options_(std::move(options)) {
  port_ = FreePort();
  address_ = absl::StrCat(options_.listen_host, ":", port_);
  metrics_address_ = absl::StrCat("127.0.0.1:", FreePort());
  // Its own directory: a durable store must not find an earlier run's state.
  state_dir_ = MakeTempDir(TestName() + ".controller-state");
}

Cluster::~Cluster() {
  if (::testing::Test::HasFailure()) {
    std::cerr << "=== logs of the processes of " << TestName() << " ===\n" << Logs();
  }
}

std::string Cluster::LogPath(const std::string& process) {
  return TempPath(absl::StrCat(TestName(), ".", process, ".log"));
}

::testing::AssertionResult Cluster::StartController(std::vector<std::string> extra_flags,
                                                    absl::Duration timeout) {
  if (state_dir_.empty()) {
    return ::testing::AssertionFailure() << "no state directory under " << TempPath("");
  }
  std::vector<std::string> argv = {kControllerBinary,
                                   "--listen", address_,
                                   "--metrics", metrics_address_,
                                   absl::StrCat("--telemetry_interval_ms=",
                                                options_.telemetry_interval_ms),
                                   "--state_dir", state_dir_};
  argv.insert(argv.end(), options_.flags.begin(), options_.flags.end());
  argv.insert(argv.end(), extra_flags.begin(), extra_flags.end());
  // One log across restarts: its tail shows the latest life.
  controller_ = std::make_unique<Subprocess>(argv, LogPath("controller"));
  ++controller_starts_;
  // Connect only once it listens: a channel that met "connection refused" first would
  // sit in gRPC's reconnect backoff for a second or more.
  ::testing::AssertionResult listening =
      options_.listen_host == "127.0.0.1"
          ? WaitFor(absl::StrCat("controller listening on ", address_), timeout,
                    [&](std::string* observed) {
                      if (!controller_->running()) *observed = "the controller exited";
                      return WaitForPort(port_, absl::ZeroDuration());
                    })
          : WaitFor(absl::StrCat("controller accepting on ", address_), timeout,
                    [&](std::string* observed) {
                      if (!controller_->running()) *observed = "the controller exited";
                      auto channel =
                          grpc::CreateChannel(address_, grpc::InsecureChannelCredentials());
                      return channel->WaitForConnected(std::chrono::system_clock::now() +
                                                       std::chrono::milliseconds(200));
                    });
  // A fresh channel each life: no reconnect backoff left over from the dead one.
  grpc::ChannelArguments args;
  args.SetInt("weft.cluster_harness.start", controller_starts_);
  admin_ = weft::v1::AdminService::NewStub(
      grpc::CreateCustomChannel(address_, grpc::InsecureChannelCredentials(), args));
  return listening;
}

std::optional<int> Cluster::StopController(int signo, absl::Duration timeout) {
  controller_->Signal(signo);
  return controller_->Wait(timeout);
}

Subprocess& Cluster::StartAgent(const AgentOptions& options) {
  std::vector<std::string> argv = options.wrapper;
  argv.insert(argv.end(), {kAgentBinary, "--node", options.name, "--controller", address_});
  if (!options.rack.empty()) argv.insert(argv.end(), {"--rack", options.rack});
  if (!options.pod.empty()) argv.insert(argv.end(), {"--pod", options.pod});
  auto has_flag = [&](absl::string_view flag) {
    for (const std::string& f : options.flags) {
      if (f == flag || absl::StartsWith(f, absl::StrCat(flag, "="))) return true;
    }
    return false;
  };
  if (!has_flag("--metrics")) argv.insert(argv.end(), {"--metrics", "off"});
  if (!has_flag("--job_socket")) argv.insert(argv.end(), {"--job_socket", "off"});
  if (options.health) {
    health_addresses_[options.name] = absl::StrCat("127.0.0.1:", FreePort());
    argv.insert(argv.end(), {"--health", health_addresses_[options.name]});
  } else {
    argv.insert(argv.end(), {"--health", "off"});
  }
  if (!has_flag("--config") && !has_flag("--probe_port")) {
    const int probe_port = options.probe ? FreePort() : 0;
    argv.push_back(absl::StrCat("--probe_port=", probe_port));
    std::vector<std::string> nic_ipv4;
    for (int i = 0; options.probe && i < options.nics; ++i) {
      nic_ipv4.push_back(absl::StrCat("127.", probe_port / 256, ".", probe_port % 256, ".", i + 1));
    }
    if (!nic_ipv4.empty()) argv.push_back(absl::StrCat("--nic_ipv4=", absl::StrJoin(nic_ipv4, ",")));
  }
  argv.push_back(absl::StrCat("--interval_ms=", options.interval_ms));
  argv.push_back(absl::StrCat("--nics=", options.nics));
  if (options.gpus.has_value()) argv.push_back(absl::StrCat("--gpus=", *options.gpus));
  argv.insert(argv.end(), options.flags.begin(), options.flags.end());
  auto& agent = agents_[options.name];
  agent = std::make_unique<Subprocess>(argv, LogPath(options.name));
  return *agent;
}

Subprocess& Cluster::Track(const std::string& name, std::vector<std::string> argv) {
  auto& process = tracked_[name];
  process = std::make_unique<Subprocess>(std::move(argv), LogPath(name));
  return *process;
}

CommandResult Cluster::Weftctl(std::vector<std::string> args, absl::Duration timeout) {
  std::vector<std::string> argv = {kWeftctlBinary, "--controller", address_};
  argv.insert(argv.end(), weftctl_flags_.begin(), weftctl_flags_.end());
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCommand(argv, timeout);
}

std::string Cluster::Metrics() {
  return RunCommand({"/usr/bin/curl", "-sf", absl::StrCat("http://", metrics_address_, "/metrics")},
                    absl::Seconds(5))
      .out;
}

::testing::AssertionResult Cluster::WaitForMetric(absl::string_view series, double value,
                                                  absl::Duration timeout) {
  return WaitFor(
      absl::StrCat("controller metric ", series, " at ", value), timeout,
      [&](std::string* observed) {
        const std::optional<double> now = Metric(series);
        *observed = now.has_value() ? absl::StrCat(*now) : "series absent";
        return now == value;
      },
      absl::Milliseconds(200));
}

weft::v1::ListNodesResponse Cluster::ListNodes() {
  weft::v1::ListNodesResponse response;
  if (admin_ == nullptr) return response;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(2));
  if (!admin_->ListNodes(&context, weft::v1::ListNodesRequest(), &response).ok()) {
    response.Clear();
  }
  return response;
}

std::map<std::string, weft::v1::NodeStatus> Cluster::NodesByName() {
  std::map<std::string, weft::v1::NodeStatus> out;
  const weft::v1::ListNodesResponse response = ListNodes();
  for (const auto& node : response.nodes()) out[node.info().name()] = node;
  return out;
}

::testing::AssertionResult Cluster::WaitForNodes(
    absl::string_view what, absl::Duration timeout,
    const std::function<bool(const std::map<std::string, weft::v1::NodeStatus>&)>& predicate) {
  return WaitFor(what, timeout, [&](std::string* observed) {
    const std::map<std::string, weft::v1::NodeStatus> nodes = NodesByName();
    *observed = Describe(nodes);
    return predicate(nodes);
  });
}

::testing::AssertionResult Cluster::WaitForHealthy(const std::vector<std::string>& names,
                                                   absl::Duration timeout) {
  return WaitForNodes(
      absl::StrCat(absl::StrJoin(names, ", "), " HEALTHY with rates"), timeout,
      [&](const auto& nodes) {
        for (const std::string& name : names) {
          auto it = nodes.find(name);
          if (it == nodes.end() || it->second.state() != weft::v1::NODE_STATE_HEALTHY ||
              it->second.rates().tx_gbps() <= 0) {
            return false;
          }
        }
        return true;
      });
}

::testing::AssertionResult Cluster::WaitForState(const std::string& name,
                                                 weft::v1::NodeState state,
                                                 absl::Duration timeout) {
  return WaitForNodes(absl::StrCat(name, " ", weft::v1::NodeState_Name(state)), timeout,
                      [&](const auto& nodes) {
                        auto it = nodes.find(name);
                        return it != nodes.end() && it->second.state() == state;
                      });
}

std::string Cluster::Logs(size_t tail_bytes) const {
  std::string out;
  if (controller_ != nullptr) {
    absl::StrAppend(&out, "--- controller log:\n", Tail(controller_->Log(), tail_bytes));
  }
  for (const auto& [name, agent] : agents_) {
    absl::StrAppend(&out, "--- ", name, " log:\n", Tail(agent->Log(), tail_bytes));
  }
  for (const auto& [name, process] : tracked_) {
    absl::StrAppend(&out, "--- ", name, " log:\n", Tail(process->Log(), tail_bytes));
  }
  return out;
}

}  // namespace weft::testing
