// HealthTracker: one node's health state — HEALTHY or DEGRADED by the health rules —
// with hysteresis over time. The inventory's sweep feeds it, every tick, whether any
// rule fires on the node and since when (the earliest Finding::since); the tracker
// flips to DEGRADED only once a rule has held for `degrade_after`, and back to HEALTHY
// only after `recover_after` without any firing rule. Liveness (DOWN) and draining are
// the inventory's business: while a node is not reporting the inventory calls
// Suspend(), which keeps the state but forgets the pending timers, and Resume(at) when
// it reports again (and when it registers), so a returning node is judged on what it
// reports after its return.
//
// Pure logic over absl::Time values the caller passes in (its Clock): no clock, no
// locks. Thread-compatible; the inventory holds one per node under its mutex.
//
// Example (degrade_after 2 s, recover_after 10 s):
//   tracker.Observe(t0, t0);            // rule firing since t0: still HEALTHY
//   tracker.Observe(t0 + 2s, t0);       // held 2 s: DEGRADED, returns true
//   tracker.Observe(t0 + 3s, nullopt);  // clean since t0+3s
//   tracker.Observe(t0 + 13s, nullopt); // clean for 10 s: HEALTHY, returns true
#ifndef WEFT_CONTROLLER_HEALTH_HEALTH_TRACKER_H_
#define WEFT_CONTROLLER_HEALTH_HEALTH_TRACKER_H_

#include <optional>

#include "absl/time/time.h"
#include "proto/weft/v1/admin.pb.h"
#include "proto/weft/v1/config.pb.h"

namespace weft::controller {

struct HealthTimings {
  // Defaults are those of DefaultControllerConfig().
  absl::Duration degrade_after = absl::Milliseconds(2000);
  absl::Duration recover_after = absl::Milliseconds(10000);

  static HealthTimings FromConfig(const weft::v1::HealthConfig& config);
};

class HealthTracker {
 public:
  explicit HealthTracker(HealthTimings timings = HealthTimings());

  // One observation at `now`. `firing_since` is nullopt when no rule fires on the
  // node (recovery counts from the first such observation in a row), else the
  // earliest time the firing condition was first seen, clamped to the
  // time the tracker has been watching since (the last Resume(), else the first
  // Observe() after construction or Suspend()): it does not vouch for time it did not
  // watch. Returns true when this observation changed the state.
  bool Observe(absl::Time now, std::optional<absl::Time> firing_since);

  // The node stopped reporting: keep the state, restart both timers.
  void Suspend();
  // The node reports (again) from `at`: watch from then on, with fresh timers.
  void Resume(absl::Time at);

  bool degraded() const { return degraded_; }
  // NODE_STATE_HEALTHY or NODE_STATE_DEGRADED.
  weft::v1::NodeState state() const;

 private:
  HealthTimings timings_;
  bool degraded_ = false;
  // First Observe since construction or Suspend(); nullopt until then.
  std::optional<absl::Time> watching_since_;
  // HEALTHY: when the firing condition started; DEGRADED: when it last went clean.
  std::optional<absl::Time> pending_since_;
};

}  // namespace weft::controller

#endif  // WEFT_CONTROLLER_HEALTH_HEALTH_TRACKER_H_
