// Inventory: the controller's table of nodes — what each node is (rack, pod, NICs,
// GPUs), which agent session speaks for it, whether it is alive, whether an operator
// drained it, and a short window of telemetry per NIC with the node's current rates.
// Pure logic over protos and a Clock: no gRPC; the services in agent_service.h and
// admin_service.h adapt to it and a ticker calls EvaluateLiveness().
//
// Invariants:
//   * One entry per node name. A Register of a known node replaces its NodeInfo and
//     starts a new session; it never adds a second entry.
//   * Session epochs of a node only grow: a Register returns
//     max(current epoch of the node, last_session_epoch) + 1, and from then on only
//     that epoch is accepted (the older session is "fenced").
//   * state = DRAINED if an operator drained the node, else HEALTHY while it reports
//     and DOWN once it has been silent for more than down_after_intervals ×
//     telemetry_interval. `reporting` tracks liveness independently of draining.
//     (DEGRADED is part of the API and of the metrics; nothing sets it yet.)
//   * Register and accepted telemetry count as "heard from the node"; a node's rates
//     are zero while it is not reporting.
//
// Thread-safe: every method may be called from any thread (one internal mutex; no
// method blocks on anything else, so gRPC reactors may call it).
#ifndef WEFT_CONTROLLER_INVENTORY_H_
#define WEFT_CONTROLLER_INVENTORY_H_

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "controller/controller_metrics.h"
#include "controller/nic_rates.h"
#include "proto/weft/v1/admin.pb.h"
#include "proto/weft/v1/config.pb.h"
#include "proto/weft/v1/node.pb.h"
#include "proto/weft/v1/telemetry.pb.h"

namespace weft::controller {

struct InventoryOptions {
  absl::Duration telemetry_interval = absl::Seconds(1);
  int down_after_intervals = 3;
  // Samples kept per NIC; older ones are dropped first.
  int window_samples = 60;

  // telemetry_interval_ms, down_after_intervals and window_samples of `config`.
  static InventoryOptions FromConfig(const weft::v1::ControllerConfig& config);
};

// The outcome of an accepted Register.
struct Registration {
  uint64_t session_epoch = 0;
  // The epoch of the session this one fenced; 0 when the node had none.
  uint64_t fenced_epoch = 0;
};

// One state transition, as logged and counted.
struct StateChange {
  std::string node;
  weft::v1::NodeState from = weft::v1::NODE_STATE_UNSPECIFIED;
  weft::v1::NodeState to = weft::v1::NODE_STATE_UNSPECIFIED;
  std::string reason;
};

// One entry of a NIC's window: what was received and what it contributes to rates.
struct WindowSample {
  absl::Time received_at;
  int64_t timestamp_us = 0;  // the agent's reading time
  bool rates_valid = false;
  bool has_error = false;
  NicRates rates;  // zero when has_error or !rates_valid
};

class Inventory {
 public:
  // `clock` and `metrics` must outlive the inventory. Options must be positive
  // (ValidateControllerConfig guarantees it for options built from a config).
  Inventory(const Clock* clock, InventoryOptions options, ControllerMetrics* metrics);

  Inventory(const Inventory&) = delete;
  Inventory& operator=(const Inventory&) = delete;

  // Records `info` and starts a new session of that node (see the epoch invariant).
  // A node that was DOWN becomes HEALTHY (unless drained); a drained node stays
  // drained. Telemetry windows of NICs the node still has are kept.
  // INVALID_ARGUMENT when the name is empty, there are no NICs, a NIC has no device
  // name or appears twice, or last_session_epoch is at its maximum.
  absl::StatusOr<Registration> Register(const weft::v1::NodeInfo& info,
                                        uint64_t last_session_epoch);

  // OK when `epoch` is the current session of `node`. Otherwise:
  //   FAILED_PRECONDITION  the node is not registered (the agent must Register);
  //   ABORTED              "session N of node X was superseded by session M";
  //   INVALID_ARGUMENT     the epoch was never granted (higher than the current one).
  // SessionRejectReason() turns these into metric label values.
  absl::Status CheckSession(absl::string_view node, uint64_t epoch) const;

  // Appends the batch's samples to their NICs' windows and marks the node as heard
  // from. Fails as CheckSession does (and counts the rejection). Samples naming a NIC
  // the node did not register are dropped and counted; the rest of the batch is kept.
  absl::Status AcceptTelemetry(absl::string_view node, uint64_t epoch,
                               const weft::v1::TelemetryBatch& batch);

  // Marks nodes silent for more than the down-after threshold as not reporting.
  // Returns the state changes it made (each is logged and counted once).
  std::vector<StateChange> EvaluateLiveness();

  // Puts the node in DRAINED with `reason` ("no reason given" when empty). Draining a
  // drained node only replaces the reason. NOT_FOUND names an unknown node.
  absl::StatusOr<weft::v1::NodeStatus> Drain(absl::string_view node,
                                             absl::string_view reason);
  // Returns a drained node to HEALTHY or DOWN by its liveness. NOT_FOUND for an
  // unknown node; FAILED_PRECONDITION when the node is not drained.
  absl::StatusOr<weft::v1::NodeStatus> Undrain(absl::string_view node);

  // NOT_FOUND names an unknown node.
  absl::StatusOr<weft::v1::NodeStatus> GetNode(absl::string_view node) const;
  // All nodes, sorted by name; only those of `rack` when it is not empty.
  std::vector<weft::v1::NodeStatus> ListNodes(absl::string_view rack = "") const;

  // The window of one NIC, oldest first. NOT_FOUND for an unknown node or NIC.
  absl::StatusOr<std::vector<WindowSample>> NicWindow(absl::string_view node,
                                                      absl::string_view device,
                                                      uint32_t port) const;

  // down_after_intervals × telemetry_interval.
  absl::Duration down_after() const { return down_after_; }

 private:
  struct NicState {
    weft::v1::Nic nic;
    bool has_latest = false;
    weft::v1::NicSample latest;
    std::deque<WindowSample> window;
  };

  struct Node {
    weft::v1::NodeInfo info;
    uint64_t epoch = 0;
    absl::Time registered_at;
    absl::Time last_seen;
    bool reporting = true;
    bool drained = false;
    std::string drain_reason;
    std::vector<NicState> nics;  // in NodeInfo order
  };

  using NodeMap = std::map<std::string, Node, std::less<>>;

  static weft::v1::NodeState StateOf(const Node& node);
  weft::v1::NodeStatus StatusOf(const Node& node) const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  absl::Status CheckSessionLocked(absl::string_view node, uint64_t epoch) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // When the node's state now differs from `before`, logs the transition, updates
  // the metrics and returns it.
  std::optional<StateChange> NoteStateChange(const std::string& name,
                                             weft::v1::NodeState before,
                                             const Node& node, absl::string_view reason)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void AddToStateCount(weft::v1::NodeState state, int64_t delta)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Clock* const clock_;
  const InventoryOptions options_;
  const absl::Duration down_after_;
  ControllerMetrics* const metrics_;

  mutable absl::Mutex mu_;
  NodeMap nodes_ ABSL_GUARDED_BY(mu_);
  std::array<int64_t, 5> state_counts_ ABSL_GUARDED_BY(mu_) = {};
};

// ABORTED "session <old_epoch> of node <node> was superseded by session <new_epoch>":
// how a fenced session is told, by CheckSession and by the stream that gets ended.
absl::Status SupersededError(absl::string_view node, uint64_t old_epoch,
                             uint64_t new_epoch);

// The metric label for a CheckSession/AcceptTelemetry error: "unknown_node",
// "superseded", "ungranted_session" ("other" for anything else).
absl::string_view SessionRejectReason(const absl::Status& status);

// "HEALTHY", "DOWN", ...: a NodeState as it appears in logs.
std::string NodeStateName(weft::v1::NodeState state);

}  // namespace weft::controller

#endif  // WEFT_CONTROLLER_INVENTORY_H_
