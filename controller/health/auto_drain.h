// Automatic drain policy: when the controller drains a sick node by itself, and when
// it undrains a node it drained. Pure decision over what the inventory knows about a
// node at one instant; the inventory applies the decision in its sweep and records
// who drained the node, because the one rule that matters most is: never undo an
// operator's drain.
//
//   drain    enabled, the node is not drained, and it has been sick (DEGRADED or DOWN)
//            for `after` (after an operator undrain, counted from the undrain);
//   undrain  enabled, the node was drained by this policy (DRAIN_SOURCE_AUTO), and it
//            has been clean (reporting and HEALTHY) for `undrain_after_clean`.
//
// Thread-compatible: plain values and a free function.
#ifndef WEFT_CONTROLLER_HEALTH_AUTO_DRAIN_H_
#define WEFT_CONTROLLER_HEALTH_AUTO_DRAIN_H_

#include "absl/time/time.h"
#include "proto/weft/v1/admin.pb.h"
#include "proto/weft/v1/config.pb.h"

namespace weft::controller {

struct AutoDrainPolicy {
  // Defaults are those of DefaultControllerConfig().
  bool enabled = false;
  absl::Duration after = absl::Seconds(60);
  absl::Duration undrain_after_clean = absl::Seconds(300);

  static AutoDrainPolicy FromConfig(const weft::v1::AutoDrainConfig& config);
};

// One node, as the policy sees it.
struct AutoDrainInput {
  bool drained = false;
  weft::v1::DrainSource drained_by = weft::v1::DRAIN_SOURCE_UNSPECIFIED;
  // Sick (DEGRADED or DOWN) or clean (reporting and HEALTHY), and since when.
  bool sick = false;
  absl::Time condition_since;
};

enum class AutoDrainAction { kNone, kDrain, kUndrain };

AutoDrainAction DecideAutoDrain(const AutoDrainPolicy& policy, const AutoDrainInput& node,
                                absl::Time now);

}  // namespace weft::controller

#endif  // WEFT_CONTROLLER_HEALTH_AUTO_DRAIN_H_
