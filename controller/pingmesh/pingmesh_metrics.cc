#include "controller/pingmesh/pingmesh_metrics.h"

#include <map>

#include "absl/strings/str_cat.h"

namespace weft::controller {
namespace {

std::string SeriesKey(const weft::v1::PingmeshVerdict& verdict) {
  return absl::StrCat(verdict.kind(), "|", verdict.component(), "|", verdict.problem());
}

}  // namespace

PingmeshMetrics::PingmeshMetrics(prometheus::Registry& registry)
    : verdicts_(prometheus::BuildGauge()
                    .Name("weft_controller_pingmesh_verdicts")
                    .Help("Pingmesh verdicts in force, by component kind (host, nic, switch, "
                          "link) and problem (slow, loss, unreachable).")
                    .Register(registry)),
      verdict_(prometheus::BuildGauge()
                   .Name("weft_controller_pingmesh_verdict")
                   .Help("One series per pingmesh verdict in force: its confidence (0..1).")
                   .Register(registry)),
      windows_(prometheus::BuildCounter()
                   .Name("weft_controller_pingmesh_windows_total")
                   .Help("Probe windows received from the agents: accepted, late (after "
                         "their window was judged), unknown (no stream of the plan).")
                   .Register(registry)),
      judged_(prometheus::BuildCounter()
                  .Name("weft_controller_pingmesh_judged_windows_total")
                  .Help("Windows judged: reported (every probing node had sent it) or "
                        "deadline (the lateness ran out first: a node silent or late, or "
                        "no node probing).")
                  .Register(registry)),
      traces_(prometheus::BuildCounter()
                  .Name("weft_controller_pingmesh_traces_total")
                  .Help("Probe flow traceroutes received from the agents: accepted, "
                        "path_changed (of those accepted), refused (invalid hops or flow), "
                        "dropped (queue full).")
                  .Register(registry)),
      streams_(prometheus::BuildGauge()
                   .Name("weft_controller_pingmesh_streams")
                   .Help("Probe streams in the controller's plan.")
                   .Register(registry)
                   .Add({})),
      probed_nodes_(prometheus::BuildGauge()
                        .Name("weft_controller_pingmesh_probed_nodes")
                        .Help("Nodes with a pinglist.")
                        .Register(registry)
                        .Add({})),
      pinglists_sent_(prometheus::BuildCounter()
                          .Name("weft_controller_pingmesh_pinglists_sent_total")
                          .Help("Pinglists sent to agents.")
                          .Register(registry)
                          .Add({})),
      rack_loss_(prometheus::BuildGauge()
                     .Name("weft_controller_pingmesh_rack_loss_ratio")
                     .Help("Share of the probes from one rack to another lost over the last "
                           "matrix period.")
                     .Register(registry)),
      rack_rtt_p99_(prometheus::BuildGauge()
                        .Name("weft_controller_pingmesh_rack_rtt_p99_us")
                        .Help("Worst window's 99th percentile network RTT of the probes from "
                              "one rack to another over the last matrix period, in µs.")
                        .Register(registry)) {
  for (const char* kind : {"host", "nic", "switch", "link"}) {
    for (const char* problem : {"slow", "loss", "unreachable"}) {
      verdicts_.Add({{"kind", kind}, {"problem", problem}});
    }
  }
  for (const char* result : {"accepted", "late", "unknown"}) windows_.Add({{"result", result}});
  for (const char* result : {"accepted", "path_changed", "refused", "dropped"}) {
    traces_.Add({{"result", result}});
  }
}

void PingmeshMetrics::VerdictRaised(const weft::v1::PingmeshVerdict& verdict) {
  verdicts_.Add({{"kind", verdict.kind()}, {"problem", verdict.problem()}}).Increment();
  absl::MutexLock lock(&mu_);
  prometheus::Gauge& series = verdict_.Add({{"kind", verdict.kind()},
                                            {"component", verdict.component()},
                                            {"problem", verdict.problem()}});
  series.Set(verdict.confidence());
  verdict_series_[SeriesKey(verdict)] = &series;
}

void PingmeshMetrics::VerdictCleared(const weft::v1::PingmeshVerdict& verdict) {
  verdicts_.Add({{"kind", verdict.kind()}, {"problem", verdict.problem()}}).Decrement();
  absl::MutexLock lock(&mu_);
  auto it = verdict_series_.find(SeriesKey(verdict));
  if (it == verdict_series_.end()) return;
  verdict_.Remove(it->second);
  verdict_series_.erase(it);
}

void PingmeshMetrics::WindowsReceived(absl::string_view result, uint64_t count) {
  if (count == 0) return;
  windows_.Add({{"result", std::string(result)}}).Increment(static_cast<double>(count));
}

void PingmeshMetrics::WindowJudged(absl::string_view when) {
  judged_.Add({{"when", std::string(when)}}).Increment();
}

void PingmeshMetrics::TracesReceived(absl::string_view result, uint64_t count) {
  if (count == 0) return;
  traces_.Add({{"result", std::string(result)}}).Increment(static_cast<double>(count));
}

void PingmeshMetrics::Planned(uint64_t streams, uint64_t probed_nodes) {
  streams_.Set(static_cast<double>(streams));
  probed_nodes_.Set(static_cast<double>(probed_nodes));
}

void PingmeshMetrics::PinglistSent() { pinglists_sent_.Increment(); }

void PingmeshMetrics::SetRackMatrix(const weft::v1::PingmeshMatrix& matrix) {
  absl::MutexLock lock(&mu_);
  for (prometheus::Gauge* series : rack_loss_series_) rack_loss_.Remove(series);
  for (prometheus::Gauge* series : rack_rtt_series_) rack_rtt_p99_.Remove(series);
  rack_loss_series_.clear();
  rack_rtt_series_.clear();
  for (const weft::v1::PingmeshMatrixCell& cell : matrix.cells()) {
    const std::map<std::string, std::string> labels = {{"source_rack", cell.source()},
                                                       {"destination_rack", cell.destination()}};
    prometheus::Gauge& loss = rack_loss_.Add(labels);
    loss.Set(cell.loss_ratio());
    rack_loss_series_.push_back(&loss);
    if (cell.has_rtt_p99_us()) {
      prometheus::Gauge& rtt = rack_rtt_p99_.Add(labels);
      rtt.Set(cell.rtt_p99_us());
      rack_rtt_series_.push_back(&rtt);
    }
  }
}

}  // namespace weft::controller
