// PingmeshMetrics: the Prometheus families of the controller's pingmesh, registered on
// the controller's registry. Names are part of the operator interface (the "Pingmesh"
// panels of deploy/grafana/weft-racks.json read them):
//
//   weft_controller_pingmesh_verdicts{kind,problem}      gauge, verdicts in force
//   weft_controller_pingmesh_verdict{kind,component,problem}
//                                                        gauge, one series per verdict in
//                                                        force, its confidence (0..1)
//   weft_controller_pingmesh_windows_total{result}       counter, probe windows received:
//       accepted, late (after their window was judged), unknown (no stream of the plan)
//   weft_controller_pingmesh_judged_windows_total{when}  counter, windows judged: when
//       "reported" (every probing node had sent it), "deadline" (lateness ran out first:
//       a node silent, late or not saying how far it is, or no node probing)
//   weft_controller_pingmesh_traces_total{result}        counter, agents' traceroutes:
//       accepted, path_changed (of those accepted), refused (invalid, or of a stream no
//       pinglist holds), dropped (queue full)
//   weft_controller_pingmesh_streams                     gauge, probe streams planned
//   weft_controller_pingmesh_probed_nodes                gauge
//   weft_controller_pingmesh_pinglists_sent_total        counter
//   weft_controller_pingmesh_rack_loss_ratio{source_rack,destination_rack}
//   weft_controller_pingmesh_rack_rtt_p99_us{source_rack,destination_rack}
//                                                        gauges over the last matrix period
//
// Thread-safe.
#ifndef WEFT_CONTROLLER_PINGMESH_PINGMESH_METRICS_H_
#define WEFT_CONTROLLER_PINGMESH_PINGMESH_METRICS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/registry.h"
#include "proto/weft/v1/pingmesh.pb.h"

namespace weft::controller {

class PingmeshMetrics {
 public:
  explicit PingmeshMetrics(prometheus::Registry& registry);
  PingmeshMetrics(const PingmeshMetrics&) = delete;
  PingmeshMetrics& operator=(const PingmeshMetrics&) = delete;

  void VerdictRaised(const weft::v1::PingmeshVerdict& verdict) ABSL_LOCKS_EXCLUDED(mu_);
  void VerdictCleared(const weft::v1::PingmeshVerdict& verdict) ABSL_LOCKS_EXCLUDED(mu_);
  // "accepted", "late" or "unknown".
  void WindowsReceived(absl::string_view result, uint64_t count);
  // "reported" or "deadline".
  void WindowJudged(absl::string_view when);
  // Traceroutes: accepted, path_changed (of those accepted), refused (invalid), dropped
  // (the queue was full).
  void TracesReceived(absl::string_view result, uint64_t count);
  void Planned(uint64_t streams, uint64_t probed_nodes);
  void PinglistSent();
  // Replaces every rack-to-rack series with the cells of `matrix`.
  void SetRackMatrix(const weft::v1::PingmeshMatrix& matrix) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  prometheus::Family<prometheus::Gauge>& verdicts_;
  prometheus::Family<prometheus::Gauge>& verdict_;
  prometheus::Family<prometheus::Counter>& windows_;
  prometheus::Family<prometheus::Counter>& judged_;
  prometheus::Family<prometheus::Counter>& traces_;
  prometheus::Gauge& streams_;
  prometheus::Gauge& probed_nodes_;
  prometheus::Counter& pinglists_sent_;
  prometheus::Family<prometheus::Gauge>& rack_loss_;
  prometheus::Family<prometheus::Gauge>& rack_rtt_p99_;

  absl::Mutex mu_;
  // The series of the verdicts in force, by kind + component + problem.
  absl::flat_hash_map<std::string, prometheus::Gauge*> verdict_series_ ABSL_GUARDED_BY(mu_);
  std::vector<prometheus::Gauge*> rack_loss_series_ ABSL_GUARDED_BY(mu_);
  std::vector<prometheus::Gauge*> rack_rtt_series_ ABSL_GUARDED_BY(mu_);
};

}  // namespace weft::controller

#endif  // WEFT_CONTROLLER_PINGMESH_PINGMESH_METRICS_H_
