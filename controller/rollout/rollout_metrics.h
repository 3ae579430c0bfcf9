// RolloutMetrics: the Prometheus families of desired state and rollouts, registered on
// an injected prometheus::Registry. The names are part of the operator interface
// (alert rules and dashboards are written against them):
//
//   weft_controller_desired_state_nodes{status="in_sync|pending|nacked|drifted"}  gauge
//   weft_controller_desired_state_version      the newest desired version sent    gauge
//   weft_controller_tunables_drift_nodes       nodes whose agent reports drift    gauge
//   weft_controller_rollout_phase{phase="idle|canary|baking|wave|paused|completed|
//                                 rolling_back|rolled_back|aborted"}
//                                              1 for the current phase, else 0    gauge
//   weft_controller_rollout_wave               current step (0 canary, 1.. waves) gauge
//   weft_controller_rollouts_total{result="completed|rolled_back|aborted"}      counter
//
// (weft_controller_desired_state_acks_total{result} is ControllerMetrics'.)
// Thread-safe: prometheus-cpp metrics are atomic.
#ifndef WEFT_CONTROLLER_ROLLOUT_ROLLOUT_METRICS_H_
#define WEFT_CONTROLLER_ROLLOUT_ROLLOUT_METRICS_H_

#include <array>
#include <cstdint>

#include "absl/strings/string_view.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/registry.h"
#include "proto/weft/v1/rollout.pb.h"

namespace weft::controller {

// Where a node's desired state stands (one label value of desired_state_nodes).
enum class SyncStatus { kInSync = 0, kPending = 1, kNacked = 2, kDrifted = 3 };
inline constexpr int kSyncStatusCount = 4;

// "in_sync", "pending", "nacked", "drifted".
absl::string_view SyncStatusName(SyncStatus status);

// "idle", "canary", ... "aborted": the label value of a phase.
absl::string_view RolloutPhaseLabel(weft::v1::RolloutPhase phase);

class RolloutMetrics {
 public:
  // Registers every family on `registry`, which must outlive this object. The phase
  // starts at idle.
  explicit RolloutMetrics(prometheus::Registry& registry);

  RolloutMetrics(const RolloutMetrics&) = delete;
  RolloutMetrics& operator=(const RolloutMetrics&) = delete;

  void SetSyncCount(SyncStatus status, int64_t nodes);
  void SetDesiredVersion(uint64_t version);
  void SetDriftNodes(int64_t nodes);
  // Sets the gauge of `phase` to 1 and every other phase's to 0.
  void SetPhase(weft::v1::RolloutPhase phase);
  void SetWave(uint32_t step);
  // A rollout ended COMPLETED, ROLLED_BACK or ABORTED (other phases are ignored).
  void RolloutFinished(weft::v1::RolloutPhase final_phase);

 private:
  static constexpr int kPhases = 9;

  std::array<prometheus::Gauge*, kSyncStatusCount> sync_{};
  prometheus::Gauge& version_;
  prometheus::Gauge& drift_nodes_;
  std::array<prometheus::Gauge*, kPhases> phase_{};
  prometheus::Gauge& wave_;
  prometheus::Counter& completed_;
  prometheus::Counter& rolled_back_;
  prometheus::Counter& aborted_;
};

}  // namespace weft::controller

#endif  // WEFT_CONTROLLER_ROLLOUT_ROLLOUT_METRICS_H_
