#include "controller/health/auto_drain.h"

namespace weft::controller {

AutoDrainPolicy AutoDrainPolicy::FromConfig(const weft::v1::AutoDrainConfig& config) {
  AutoDrainPolicy policy;
  policy.enabled = config.enabled();
  policy.after = absl::Milliseconds(config.after_ms());
  policy.undrain_after_clean = absl::Milliseconds(config.undrain_after_clean_ms());
  return policy;
}

AutoDrainAction DecideAutoDrain(const AutoDrainPolicy& policy, const AutoDrainInput& node,
                                absl::Time now) {
  if (!policy.enabled) return AutoDrainAction::kNone;
  const absl::Duration held = now - node.condition_since;
  if (!node.drained) {
    return node.sick && held >= policy.after ? AutoDrainAction::kDrain
                                             : AutoDrainAction::kNone;
  }
  // Only the policy's own drains are its to undo.
  if (node.drained_by != weft::v1::DRAIN_SOURCE_AUTO) return AutoDrainAction::kNone;
  return !node.sick && held >= policy.undrain_after_clean ? AutoDrainAction::kUndrain
                                                          : AutoDrainAction::kNone;
}

}  // namespace weft::controller
