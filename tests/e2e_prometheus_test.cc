// End to end, the way an operator runs Weft: a real weft-controller and six real
// weft-agents (two racks of three, simulated NICs, one with a PFC pause storm),
// `weftctl prometheus targets` writing the file_sd file, and Debian's real Prometheus
// on loopback scraping them through it with deploy/prometheus/prometheus.yml (only
// intervals, addresses and paths changed) and the real deploy/prometheus/
// weft-alerts.yml. Through Prometheus' HTTP API it checks that every query of every
// panel of every dashboard in deploy/grafana returns data (template variables
// resolved through Prometheus as Grafana would), that every alert rule evaluates
// cleanly, and that WeftPfcPauseStorm fires for the faulty node and for no other.
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "common/file.h"
#include "common/testing/temp_dir.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "proto/weft/v1/placement.grpc.pb.h"
#include "tests/cluster_harness.h"
#include "tests/subprocess.h"
#include "yaml-cpp/yaml.h"

namespace weft {
namespace {

using google::protobuf::ListValue;
using google::protobuf::Struct;
using google::protobuf::Value;
using weft::testing::Cluster;
using weft::testing::CommandResult;
using weft::testing::FreePort;
using weft::testing::RunCommand;
using weft::testing::Subprocess;
using weft::testing::TempPath;
using weft::testing::WaitForPort;

constexpr char kStormNode[] = "gpu-b02";
const char* const kDashboards[] = {"weft-fleet.json", "weft-racks.json", "weft-node.json",
                                   "weft-rollouts.json", "weft-jobs.json"};

std::string FindInPath(const std::string& name) {
  for (absl::string_view dir : absl::StrSplit(std::getenv("PATH"), ':')) {
    const std::string path = absl::StrCat(dir, "/", name);
    if (access(path.c_str(), X_OK) == 0) return path;
  }
  for (const char* dir : {"/usr/bin", "/usr/sbin", "/bin"}) {
    const std::string path = absl::StrCat(dir, "/", name);
    if (access(path.c_str(), X_OK) == 0) return path;
  }
  return "";
}

std::string ReadFile(const std::string& path) {
  return ReadWholeFile(path).value_or("");
}

std::string Runfile(const std::string& path) {
  char cwd[4096];
  return absl::StrCat(getcwd(cwd, sizeof(cwd)), "/", path);
}

Struct ParseJson(const std::string& json) {
  Struct out;
  if (!google::protobuf::util::JsonStringToMessage(json, &out).ok()) out.Clear();
  return out;
}

const Value& Field(const Struct& s, const std::string& key) {
  static const Value kNull;
  auto it = s.fields().find(key);
  return it == s.fields().end() ? kNull : it->second;
}

// One panel query, where it comes from, and the query as sent.
struct PanelQuery {
  std::string where;  // "weft-node.json: PFC pause time per NIC and priority (A)"
  std::string expr;
};

class E2ePrometheusTest : public ::testing::Test {
 protected:
  void SetUp() override {
    prometheus_bin_ = FindInPath("prometheus");
    curl_ = FindInPath("curl");
    if (prometheus_bin_.empty() || curl_.empty()) {
      GTEST_SKIP() << "needs Debian's prometheus and curl (tools/deps.sh installs both)";
    }
    dir_ = TempPath("e2e");
    ASSERT_EQ(RunCommand({"/bin/mkdir", "-p", dir_ + "/data"}, absl::Seconds(5)).exit_status, 0);
  }

  void StartCluster() {
    ASSERT_TRUE(cluster_.StartController({}, absl::Seconds(20)));
    for (const char* rack : {"a", "b"}) {
      for (int i = 1; i <= 3; ++i) {
        const std::string node = absl::StrCat("gpu-", rack, "0", i);
        std::vector<std::string> flags = {"--metrics", absl::StrCat("127.0.0.1:", FreePort())};
        // NICs on loopback aliases, a probe port each: the agents probe each other for
        // real, so the pingmesh panels have loss and RTT.
        const std::string config = absl::StrCat(dir_, "/", node, ".yaml");
        std::ofstream(config) << "simulated:\n  nic_ipv4: [\"127.0." << (rack[0] == 'a' ? 1 : 2)
                              << "." << 2 * i - 1 << "\", \"127.0." << (rack[0] == 'a' ? 1 : 2)
                              << "." << 2 * i << "\"]\nprobe:\n  udp_port: " << FreePort() << "\n";
        flags.insert(flags.end(), {"--config", config});
        if (node == kStormNode) flags.insert(flags.end(), {"--fault", "pfc_storm"});
        cluster_.StartAgent({.name = node,
                             .rack = absl::StrCat("rack-", rack),
                             .pod = "pod-1",
                             .interval_ms = 500,
                             .nics = 2,
                             .gpus = 2,
                             .flags = flags});
      }
    }
  }

  // Places a two-node job through PlacementService once the nodes are healthy and
  // reports one iteration for it, as a scheduler would, so the jobs dashboard has data.
  void PlaceAndReportAJob() {
    auto placement = weft::v1::PlacementService::NewStub(
        grpc::CreateChannel(cluster_.address(), grpc::InsecureChannelCredentials()));
    weft::v1::PlacementRequest request;
    request.set_job_id("e2e-llm");
    request.set_node_count(2);
    weft::v1::PlacementResponse placed;
    grpc::Status status;
    ASSERT_TRUE(weft::testing::WaitFor(
        "a two-node placement", absl::Seconds(30),
        [&](std::string* observed) {
          grpc::ClientContext context;
          status = placement->Place(&context, request, &placed);
          *observed = status.error_message();
          return status.ok();
        },
        absl::Milliseconds(200)));
    weft::v1::ReportJobProgressRequest report;
    report.set_reservation_id(placed.reservation_id());
    weft::v1::JobProgress* progress = report.mutable_progress();
    progress->set_iterations_done(1);
    progress->set_iteration_s(0.8);
    progress->set_first_iteration_s(0.8);
    progress->set_communication_s(0.3);
    progress->set_tokens_per_s(1420);
    weft::v1::ReportJobProgressResponse reported;
    grpc::ClientContext context;
    status = placement->ReportJobProgress(&context, report, &reported);
    ASSERT_TRUE(status.ok()) << status.error_message();
  }

  // Writes the file_sd file with weftctl once all six agents registered.
  void WriteTargets() {
    targets_file_ = dir_ + "/weft-agents.json";
    CommandResult result;
    ASSERT_TRUE(weft::testing::WaitFor(
        "weftctl prometheus targets writing 6 targets", absl::Seconds(30),
        [&](std::string* observed) {
          result = cluster_.Weftctl({"prometheus", "targets", "--out", targets_file_});
          *observed = result.err;
          return result.exit_status == 0 && absl::StrContains(result.err, "wrote 6 targets");
        },
        absl::Milliseconds(200)));
    ASSERT_EQ(result.exit_status, 0) << result.err;
    ASSERT_TRUE(absl::StrContains(result.err, "wrote 6 targets")) << result.err;
    ListValue groups;
    ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(ReadFile(targets_file_), &groups).ok());
    ASSERT_EQ(groups.values_size(), 6);
    const Struct& labels = Field(groups.values(4).struct_value(), "labels").struct_value();
    EXPECT_EQ(Field(labels, "node").string_value(), "gpu-b02");
    EXPECT_EQ(Field(labels, "rack").string_value(), "rack-b");
  }

  // deploy/prometheus/prometheus.yml with this test's intervals, addresses and paths.
  std::string PrometheusConfig() {
    YAML::Node config = YAML::LoadFile("deploy/prometheus/prometheus.yml");
    config["global"]["scrape_interval"] = "1s";
    config["global"]["evaluation_interval"] = "1s";
    config["rule_files"][0] = Runfile("deploy/prometheus/weft-alerts.yml");
    bool controller_job = false, agent_job = false;
    for (YAML::Node job : config["scrape_configs"]) {
      const std::string name = job["job_name"].as<std::string>();
      if (name == "weft-controller") {
        job["static_configs"][0]["targets"][0] = cluster_.metrics_address();
        controller_job = true;
      } else if (name == "weft-agent") {
        job["file_sd_configs"][0]["files"][0] = targets_file_;
        job["file_sd_configs"][0]["refresh_interval"] = "1s";
        agent_job = true;
      }
    }
    EXPECT_TRUE(controller_job && agent_job) << "prometheus.yml lost a Weft scrape job";
    YAML::Emitter out;
    out << config;
    const std::string path = dir_ + "/prometheus.yml";
    std::ofstream(path) << out.c_str() << "\n";
    return path;
  }

  void StartPrometheus() {
    const std::string config = PrometheusConfig();
    const int port = FreePort();
    prometheus_url_ = absl::StrCat("http://127.0.0.1:", port);
    prometheus_ = &cluster_.Track(
        "prometheus", {prometheus_bin_, "--config.file=" + config,
                       "--storage.tsdb.path=" + dir_ + "/data",
                       absl::StrCat("--web.listen-address=127.0.0.1:", port), "--log.level=warn"});
    ASSERT_TRUE(WaitForPort(port, absl::Seconds(30))) << prometheus_->Log();
  }

  // GET an API path with url-encoded parameters; the parsed JSON ({} on failure).
  Struct Api(const std::string& path, const std::vector<std::string>& params = {}) {
    std::vector<std::string> argv = {curl_, "-s", "--get", "--max-time", "10"};
    for (const std::string& p : params) argv.insert(argv.end(), {"--data-urlencode", p});
    argv.push_back(prometheus_url_ + path);
    CommandResult result = RunCommand(argv, absl::Seconds(15));
    return ParseJson(result.out);
  }

  // Number of results of an instant query; -1 when Prometheus refuses it.
  int ResultCount(const std::string& expr, std::string* error) {
    Struct response = Api("/api/v1/query", {"query=" + expr});
    if (Field(response, "status").string_value() != "success") {
      *error = Field(response, "error").string_value();
      return -1;
    }
    return Field(Field(response, "data").struct_value(), "result").list_value().values_size();
  }

  // Waits until Prometheus scrapes the controller and all six agents.
  void WaitForTargetsUp() {
    const absl::Time deadline = absl::Now() + absl::Seconds(60);
    std::string last;
    while (absl::Now() < deadline) {
      Struct targets = Api("/api/v1/targets");
      std::map<std::string, int> up;
      for (const Value& t : Field(Field(targets, "data").struct_value(), "activeTargets")
                                .list_value()
                                .values()) {
        const Struct& labels = Field(t.struct_value(), "labels").struct_value();
        if (Field(t.struct_value(), "health").string_value() == "up") {
          ++up[Field(labels, "job").string_value()];
        }
      }
      last = absl::StrCat("controller up: ", up["weft-controller"],
                          ", agents up: ", up["weft-agent"]);
      if (up["weft-controller"] == 1 && up["weft-agent"] == 6) return;
      absl::SleepFor(absl::Milliseconds(500));
    }
    FAIL() << "Prometheus does not scrape every target: " << last << "\n" << prometheus_->Log();
  }

  // label_values(metric{...}, label) as Grafana evaluates it.
  std::vector<std::string> LabelValues(const std::string& definition) {
    const std::string inner = definition.substr(
        strlen("label_values("), definition.size() - strlen("label_values(") - 1);
    const size_t comma = inner.rfind(',');
    const std::string selector = inner.substr(0, comma);
    const std::string label(absl::StripAsciiWhitespace(inner.substr(comma + 1)));
    Struct response = Api(absl::StrCat("/api/v1/label/", label, "/values"),
                          {"match[]=" + selector});
    std::vector<std::string> values;
    for (const Value& v : Field(response, "data").list_value().values()) {
      values.push_back(v.string_value());
    }
    return values;
  }

  // Resolves a dashboard's template variables: a single-valued one takes the storm
  // node when offered (its panels then show the fault), else the first value; a
  // multi-valued one is "All" (.*). Every variable query must offer values.
  std::map<std::string, std::string> ResolveVariables(const Struct& dashboard,
                                                      const std::string& file) {
    std::map<std::string, std::string> values = {{"__rate_interval", "1m"},
                                                 {"__interval", "15s"}};
    for (const Value& v :
         Field(Field(dashboard, "templating").struct_value(), "list").list_value().values()) {
      const Struct& var = v.struct_value();
      if (Field(var, "type").string_value() != "query") continue;
      const std::string name = Field(var, "name").string_value();
      std::string definition = Field(var, "definition").string_value();
      for (const auto& [k, val] : values) {
        absl::StrReplaceAll({{"$" + k, val}}, &definition);
      }
      const std::vector<std::string> offered = LabelValues(definition);
      EXPECT_FALSE(offered.empty()) << file << ": variable $" << name << " (" << definition
                                    << ") has no values";
      if (Field(var, "multi").bool_value() || Field(var, "includeAll").bool_value()) {
        values[name] = ".*";
      } else if (std::find(offered.begin(), offered.end(), kStormNode) != offered.end()) {
        values[name] = kStormNode;
      } else {
        values[name] = offered.empty() ? "" : offered.front();
      }
    }
    return values;
  }

  std::vector<PanelQuery> DashboardQueries() {
    std::vector<PanelQuery> queries;
    for (const char* file : kDashboards) {
      const Struct dashboard = ParseJson(ReadFile(absl::StrCat("deploy/grafana/", file)));
      EXPECT_GT(Field(dashboard, "panels").list_value().values_size(), 0) << file;
      std::map<std::string, std::string> values = ResolveVariables(dashboard, file);
      for (const Value& p : Field(dashboard, "panels").list_value().values()) {
        const Struct& panel = p.struct_value();
        for (const Value& t : Field(panel, "targets").list_value().values()) {
          std::string expr = Field(t.struct_value(), "expr").string_value();
          // Longest names first, so $node does not eat the start of $nodes.
          for (auto it = values.rbegin(); it != values.rend(); ++it) {
            absl::StrReplaceAll({{"${" + it->first + "}", it->second},
                                 {"$" + it->first, it->second}},
                                &expr);
          }
          queries.push_back({absl::StrCat(file, ": ", Field(panel, "title").string_value(),
                                          " (", Field(t.struct_value(), "refId").string_value(),
                                          ")"),
                             expr});
        }
      }
    }
    return queries;
  }

  std::string dir_, prometheus_bin_, curl_, targets_file_, prometheus_url_;
  Cluster cluster_{{.telemetry_interval_ms = 500}};
  Subprocess* prometheus_ = nullptr;
};

TEST_F(E2ePrometheusTest, DashboardsShowDataAndThePfcStormAlertFiresForTheFaultyNodeOnly) {
  StartCluster();
  WriteTargets();
  PlaceAndReportAJob();
  StartPrometheus();
  const absl::Time prometheus_started = absl::Now();
  WaitForTargetsUp();

  // Every panel query returns data. rate() needs two scrapes and the rollout and
  // desired-state series appear when the controller registers them, so poll a while
  // and then report each query that still returns nothing. This cluster's gRPC is
  // plaintext, so it has no certificate files and no weft_tls_* series: those queries
  // must evaluate, but may be empty (security_test reads them from a TLS controller); so
  // may the table of pingmesh verdicts, which a healthy fabric leaves empty.
  const std::vector<PanelQuery> queries = DashboardQueries();
  ASSERT_GT(queries.size(), 40u);
  std::map<std::string, std::string> empty;  // where -> why
  int empty_without_tls = 0;
  const absl::Time deadline = absl::Now() + absl::Seconds(45);
  do {
    empty.clear();
    empty_without_tls = 0;
    for (const PanelQuery& q : queries) {
      std::string error;
      const int n = ResultCount(q.expr, &error);
      // A healthy fabric has no pingmesh verdict: that table is empty here
      // (tests/pingmesh_test reads the series while a NIC is blamed).
      const bool needs_tls = absl::StrContains(q.expr, "weft_tls_") ||
                             absl::StrContains(q.expr, "weft_controller_pingmesh_verdict)");
      if (n == 0 && needs_tls) ++empty_without_tls;
      if (n < 0 || (n == 0 && !needs_tls)) {
        empty[q.where] = n < 0 ? "refused: " + error : "no data: " + q.expr;
      }
    }
    if (empty.empty()) break;
    absl::SleepFor(absl::Seconds(2));
  } while (absl::Now() < deadline);
  std::vector<std::string> report;
  for (const auto& [where, why] : empty) report.push_back(absl::StrCat(where, " -> ", why));
  std::cout << "dashboard queries with data: "
            << queries.size() - empty.size() - empty_without_tls << " of " << queries.size()
            << " (" << empty_without_tls << " empty: TLS series, plaintext cluster), "
            << absl::ToInt64Seconds(absl::Now() - prometheus_started)
            << " s after Prometheus started\n";
  EXPECT_TRUE(empty.empty()) << empty.size() << " of " << queries.size()
                             << " dashboard queries return nothing:\n  "
                             << absl::StrJoin(report, "\n  ");

  // Every rule loaded and evaluates without error against the live series.
  Struct rules = Api("/api/v1/rules");
  int rule_count = 0;
  for (const Value& g :
       Field(Field(rules, "data").struct_value(), "groups").list_value().values()) {
    for (const Value& r : Field(g.struct_value(), "rules").list_value().values()) {
      ++rule_count;
      EXPECT_EQ(Field(r.struct_value(), "health").string_value(), "ok")
          << Field(r.struct_value(), "name").string_value() << ": "
          << Field(r.struct_value(), "lastError").string_value();
    }
  }
  EXPECT_GE(rule_count, 11) << "weft-alerts.yml not loaded?\n" << prometheus_->Log();

  // WeftPfcPauseStorm has `for: 1m`: it fires about a minute after the storm shows.
  std::set<std::string> storm_nodes;
  std::vector<std::string> other_firing;
  const absl::Time alert_deadline = absl::Now() + absl::Seconds(240);
  while (absl::Now() < alert_deadline) {
    storm_nodes.clear();
    other_firing.clear();
    Struct alerts = Api("/api/v1/alerts");
    for (const Value& a :
         Field(Field(alerts, "data").struct_value(), "alerts").list_value().values()) {
      const Struct& labels = Field(a.struct_value(), "labels").struct_value();
      const std::string name = Field(labels, "alertname").string_value();
      const std::string node = Field(labels, "node").string_value();
      if (Field(a.struct_value(), "state").string_value() != "firing") continue;
      if (name == "WeftPfcPauseStorm") {
        storm_nodes.insert(node);
      } else {
        other_firing.push_back(absl::StrCat(name, " node=", node));
      }
    }
    if (!storm_nodes.empty()) break;
    absl::SleepFor(absl::Seconds(2));
  }
  std::cout << "WeftPfcPauseStorm firing for " << absl::StrJoin(storm_nodes, ",") << " "
            << absl::ToInt64Seconds(absl::Now() - prometheus_started)
            << " s after Prometheus started (rule: for 1m)\n";
  EXPECT_EQ(storm_nodes, std::set<std::string>{kStormNode});
  EXPECT_TRUE(other_firing.empty()) << "unexpected alerts: " << absl::StrJoin(other_firing, ", ");
  // And the storm alert carries the place of the node, from the file_sd labels.
  std::string error;
  EXPECT_EQ(ResultCount(absl::StrCat("ALERTS{alertname=\"WeftPfcPauseStorm\",alertstate=\"firing\","
                                     "node=\"", kStormNode, "\",rack=\"rack-b\",pod=\"pod-1\"}"),
                        &error),
            1)
      << error;
}

}  // namespace
}  // namespace weft
