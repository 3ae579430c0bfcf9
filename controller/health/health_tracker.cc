#include "controller/health/health_tracker.h"

#include <algorithm>

namespace weft::controller {

HealthTimings HealthTimings::FromConfig(const weft::v1::HealthConfig& config) {
  HealthTimings timings;
  timings.degrade_after = absl::Milliseconds(config.degrade_after_ms());
  timings.recover_after = absl::Milliseconds(config.recover_after_ms());
  return timings;
}

HealthTracker::HealthTracker(HealthTimings timings) : timings_(timings) {}

weft::v1::NodeState HealthTracker::state() const {
  return degraded_ ? weft::v1::NODE_STATE_DEGRADED : weft::v1::NODE_STATE_HEALTHY;
}

void HealthTracker::Suspend() {
  watching_since_.reset();
  pending_since_.reset();
}

void HealthTracker::Resume(absl::Time at) {
  watching_since_ = at;
  pending_since_.reset();
}

bool HealthTracker::Observe(absl::Time now, std::optional<absl::Time> firing_since) {
  if (!watching_since_.has_value()) watching_since_ = now;
  if (!degraded_) {
    if (!firing_since.has_value()) {
      pending_since_.reset();
      return false;
    }
    const absl::Time since = std::clamp(*firing_since, *watching_since_, now);
    // Rules may take turns; the condition "some rule fires" held since the earliest.
    pending_since_ = pending_since_.has_value() ? std::min(*pending_since_, since) : since;
    if (now - *pending_since_ < timings_.degrade_after) return false;
    degraded_ = true;
    pending_since_.reset();
    return true;
  }
  if (firing_since.has_value()) {
    pending_since_.reset();
    return false;
  }
  if (!pending_since_.has_value()) pending_since_ = now;
  if (now - *pending_since_ < timings_.recover_after) return false;
  degraded_ = false;
  pending_since_.reset();
  return true;
}

}  // namespace weft::controller
