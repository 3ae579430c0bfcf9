#include "controller/rollout/rollout_metrics.h"

#include <string>

namespace weft::controller {

absl::string_view SyncStatusName(SyncStatus status) {
  switch (status) {
    case SyncStatus::kInSync:
      return "in_sync";
    case SyncStatus::kPending:
      return "pending";
    case SyncStatus::kNacked:
      return "nacked";
    case SyncStatus::kDrifted:
      return "drifted";
  }
  return "pending";
}

absl::string_view RolloutPhaseLabel(weft::v1::RolloutPhase phase) {
  switch (phase) {
    case weft::v1::ROLLOUT_PHASE_CANARY:
      return "canary";
    case weft::v1::ROLLOUT_PHASE_BAKING:
      return "baking";
    case weft::v1::ROLLOUT_PHASE_WAVE:
      return "wave";
    case weft::v1::ROLLOUT_PHASE_PAUSED:
      return "paused";
    case weft::v1::ROLLOUT_PHASE_COMPLETED:
      return "completed";
    case weft::v1::ROLLOUT_PHASE_ROLLING_BACK:
      return "rolling_back";
    case weft::v1::ROLLOUT_PHASE_ROLLED_BACK:
      return "rolled_back";
    case weft::v1::ROLLOUT_PHASE_ABORTED:
      return "aborted";
    default:
      return "idle";
  }
}

RolloutMetrics::RolloutMetrics(prometheus::Registry& registry)
    : version_(prometheus::BuildGauge()
                   .Name("weft_controller_desired_state_version")
                   .Help("The newest desired-state version the controller has sent")
                   .Register(registry)
                   .Add({})),
      drift_nodes_(prometheus::BuildGauge()
                       .Name("weft_controller_tunables_drift_nodes")
                       .Help("Nodes whose agent reports tunables drifted from the applied "
                             "desired state")
                       .Register(registry)
                       .Add({})),
      wave_(prometheus::BuildGauge()
                .Name("weft_controller_rollout_wave")
                .Help("The current step of the rollout: 0 the canary, 1.. the waves")
                .Register(registry)
                .Add({})),
      completed_(prometheus::BuildCounter()
                     .Name("weft_controller_rollouts_total")
                     .Help("Rollouts that ended, by result")
                     .Register(registry)
                     .Add({{"result", "completed"}})),
      rolled_back_(prometheus::BuildCounter()
                       .Name("weft_controller_rollouts_total")
                       .Help("Rollouts that ended, by result")
                       .Register(registry)
                       .Add({{"result", "rolled_back"}})),
      aborted_(prometheus::BuildCounter()
                   .Name("weft_controller_rollouts_total")
                   .Help("Rollouts that ended, by result")
                   .Register(registry)
                   .Add({{"result", "aborted"}})) {
  auto& sync = prometheus::BuildGauge()
                   .Name("weft_controller_desired_state_nodes")
                   .Help("Nodes with a desired state, by where it stands: in_sync "
                         "(applied), pending (sent, no answer yet), nacked, drifted")
                   .Register(registry);
  for (int i = 0; i < kSyncStatusCount; ++i) {
    sync_[i] = &sync.Add({{"status", std::string(SyncStatusName(static_cast<SyncStatus>(i)))}});
  }
  auto& phase = prometheus::BuildGauge()
                    .Name("weft_controller_rollout_phase")
                    .Help("1 for the phase the current rollout is in, 0 for the others")
                    .Register(registry);
  for (int i = 0; i < kPhases; ++i) {
    phase_[i] = &phase.Add(
        {{"phase", std::string(RolloutPhaseLabel(static_cast<weft::v1::RolloutPhase>(i)))}});
  }
  SetPhase(weft::v1::ROLLOUT_PHASE_IDLE);
}

void RolloutMetrics::SetSyncCount(SyncStatus status, int64_t nodes) {
  sync_[static_cast<int>(status)]->Set(static_cast<double>(nodes));
}

void RolloutMetrics::SetDesiredVersion(uint64_t version) {
  version_.Set(static_cast<double>(version));
}

void RolloutMetrics::SetDriftNodes(int64_t nodes) { drift_nodes_.Set(static_cast<double>(nodes)); }

void RolloutMetrics::SetPhase(weft::v1::RolloutPhase phase) {
  for (int i = 0; i < kPhases; ++i) phase_[i]->Set(i == static_cast<int>(phase) ? 1 : 0);
}

void RolloutMetrics::SetWave(uint32_t step) { wave_.Set(step); }

void RolloutMetrics::RolloutFinished(weft::v1::RolloutPhase final_phase) {
  switch (final_phase) {
    case weft::v1::ROLLOUT_PHASE_COMPLETED:
      completed_.Increment();
      break;
    case weft::v1::ROLLOUT_PHASE_ROLLED_BACK:
      rolled_back_.Increment();
      break;
    case weft::v1::ROLLOUT_PHASE_ABORTED:
      aborted_.Increment();
      break;
    default:
      break;
  }
}

}  // namespace weft::controller
