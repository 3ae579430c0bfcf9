// Inventory: the controller's table of nodes — what each node is (rack, pod, NICs,
// GPUs), which agent session speaks for it, whether it is alive, whether it is
// drained (and by whom), a short window of telemetry per NIC with the node's current
// rates, the health rules firing on its NICs, and its health state with hysteresis.
// It also owns the event log those changes are recorded in. Pure logic over protos
// and a Clock: no gRPC; the services in agent_service.h and admin_service.h adapt to
// it and a ticker calls Sweep().
//
// Invariants:
//   * One entry per node name. A Register of a known node replaces its NodeInfo and
//     starts a new session; it never adds a second entry.
//   * Session epochs of a node only grow: a Register returns
//     max(current epoch of the node, last_session_epoch) + 1, and from then on only
//     that epoch is accepted (the older session is "fenced").
//   * state = DRAINED if the node is drained (by an operator or by the auto-drain
//     policy), else DOWN once it has been silent for more than down_after_intervals ×
//     telemetry_interval, else DEGRADED while its HealthTracker says so, else HEALTHY.
//     `reporting` tracks liveness and `health` tracks the rules, independently of
//     draining, so a drained node keeps being judged.
//   * Each NIC's findings are EvaluateNicWindow() of its current window: recomputed
//     whenever a sample arrives; a rule that starts or stops firing is logged as an
//     event and counted. Findings are shown only while the node reports.
//   * A node's external findings (SetExternalFindings: what another part of the
//     controller found, such as pingmesh blaming the node's NIC) count for its health
//     like its NICs' findings; each source's set is replaced whole, and they are not
//     persisted (their source finds them again after a restart).
//   * An operator's drain is never undone by the controller. An operator who drains
//     an auto-drained node takes it over; an operator undrain restarts the auto-drain
//     clock of a still-sick node.
//   * Register and accepted telemetry count as "heard from the node"; a node's rates
//     are zero while it is not reporting.
//
// Durable state: with a ControllerStore, every node's identity (name, rack, pod, last
// NodeInfo), its drain (who, reason, source) and a ceiling of the session epochs it
// was granted are committed before the call that changes them returns, and Restore()
// reads them back after a restart: restored nodes are DOWN (or DRAINED) until their
// agents register again, and every epoch granted after the restart is above any
// granted before it. Epoch ceilings are reserved kEpochBlock at a time, so a
// re-registration writes to disk only once per kEpochBlock sessions of a node (and
// Restore raises every ceiling in one transaction), not on every reconnect.
//
// Thread-safe: every method may be called from any thread (one internal mutex; no
// method blocks on anything else, so gRPC reactors may call it; with a store, a drain,
// an undrain, an auto drain and a Register that needs a new epoch block wait for one
// disk commit under that mutex). Lock order: the inventory's mutex, then the
// EventLog's and the metrics' own, then the store's.
#ifndef WEFT_CONTROLLER_INVENTORY_INVENTORY_H_
#define WEFT_CONTROLLER_INVENTORY_INVENTORY_H_

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
#include "controller/health/auto_drain.h"
#include "controller/inventory/controller_metrics.h"
#include "controller/inventory/event_log.h"
#include "controller/health/health_rules.h"
#include "controller/health/health_tracker.h"
#include "controller/health/nic_rates.h"
#include "proto/weft/v1/admin.pb.h"
#include "proto/weft/v1/config.pb.h"
#include "proto/weft/v1/node.pb.h"
#include "proto/weft/v1/telemetry.pb.h"
#include "store/controller_store.h"

namespace weft::controller {

// Session epochs reserved per durable write (see "Durable state" above).
inline constexpr uint64_t kEpochBlock = 1024;

struct InventoryOptions {
  absl::Duration telemetry_interval = absl::Seconds(1);
  int down_after_intervals = 3;
  // Samples kept per NIC; older ones are dropped first.
  int window_samples = 60;
  HealthThresholds health;
  HealthTimings health_timings;
  AutoDrainPolicy auto_drain;
  size_t event_log_capacity = 10000;

  // The options of `config`; the health section and event_log_capacity only where
  // `config` has them (otherwise the defaults above, which are
  // DefaultControllerConfig()'s).
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

// One entry of a NIC's window: what was received, what it contributes to rates and
// what the health rules read (health_rules.h).
using WindowSample = NicReading;

class Inventory {
 public:
  // `clock` and `metrics` must outlive the inventory. Options must be positive
  // (ValidateControllerConfig guarantees it for options built from a config).
  // `store`, when not null, must outlive it too; call Restore() before serving.
  Inventory(const Clock* clock, InventoryOptions options, ControllerMetrics* metrics,
            store::ControllerStore* store = nullptr);

  // Loads the nodes and events the store holds (nothing without a store) and
  // reserves a new epoch block for every node. Call once, before any other method.
  // Fails with the store's error; the inventory is then empty.
  absl::Status Restore();

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

  // Replaces the findings `source` ("pingmesh") holds against `node` (empty: none).
  // They count for the node's health from the next sweep, like the findings of its
  // NICs, so a node with one held for degrade_after becomes DEGRADED (and may be
  // auto-drained). The source logs its own events; rules newly held are counted.
  // NOT_FOUND names an unknown node (nothing changes).
  absl::Status SetExternalFindings(absl::string_view node, absl::string_view source,
                                   std::vector<Finding> findings);

  // Marks nodes silent for more than the down-after threshold as not reporting.
  // Returns the state changes it made (each is logged, counted and recorded once).
  std::vector<StateChange> EvaluateLiveness();

  // Feeds every node's findings to its HealthTracker (DEGRADED / HEALTHY with
  // hysteresis), applies the auto-drain policy, and refreshes the finding and rack
  // gauges. Returns the state changes it made.
  std::vector<StateChange> EvaluateHealth();

  // EvaluateLiveness() then EvaluateHealth(): what the controller's ticker calls.
  std::vector<StateChange> Sweep();

  // An operator (`who`, the authenticated caller when known) puts the node in
  // DRAINED with `reason` ("no reason given" when empty). Draining a drained node
  // replaces the reason and makes the drain the operator's (an auto drain is taken
  // over). NOT_FOUND names an unknown node; the store's error (nothing changed) when
  // the drain cannot be committed.
  absl::StatusOr<weft::v1::NodeStatus> Drain(absl::string_view node,
                                             absl::string_view reason,
                                             absl::string_view who = "");
  // An operator (`who`, as for Drain: the event names it) returns a drained node
  // (whoever drained it) to its liveness and health state. NOT_FOUND for an unknown
  // node; FAILED_PRECONDITION when the node is not drained; the store's error (nothing
  // changed) when it cannot be committed.
  absl::StatusOr<weft::v1::NodeStatus> Undrain(absl::string_view node,
                                               absl::string_view who = "");

  // NOT_FOUND names an unknown node.
  absl::StatusOr<weft::v1::NodeStatus> GetNode(absl::string_view node) const;
  // All nodes, sorted by name; only those of `rack` when it is not empty.
  std::vector<weft::v1::NodeStatus> ListNodes(absl::string_view rack = "") const;
  // All nodes, sorted by name, with what they are and their state only (info, state,
  // reporting, health, drain): no NIC samples, findings or rates. For callers that
  // read the fleet often and need none of those (pingmesh reads it every few seconds):
  // ListNodes parses every NIC's latest sample, which at thousands of nodes they would
  // pay for nothing.
  std::vector<weft::v1::NodeStatus> ListNodeIdentities() const;

  // The window of one NIC, oldest first. NOT_FOUND for an unknown node or NIC.
  absl::StatusOr<std::vector<WindowSample>> NicWindow(absl::string_view node,
                                                      absl::string_view device,
                                                      uint32_t port) const;

  // The event log's entries matching `request` (node, since_us, within_ms by this
  // inventory's clock, limit), oldest first.
  weft::v1::ListEventsResponse ListEvents(const weft::v1::ListEventsRequest& request) const;

  // Node counts and summed rates per rack and per pod; only pod `pod` when not empty.
  weft::v1::ListRacksResponse ListRacks(absl::string_view pod = "") const;

  // down_after_intervals × telemetry_interval.
  absl::Duration down_after() const { return down_after_; }

  EventLog& events() { return events_; }

 private:
  struct NicState {
    weft::v1::Nic nic;
    bool has_latest = false;
    // The latest NicSample, serialized: rewritten in place (no allocation) on every
    // sample, parsed only when a status is asked for. Copying the proto instead freed
    // and reallocated its ~30 submessages per NIC per interval.
    std::string latest_serialized;
    std::deque<NicReading> window;
    // Σ LinkFlapIncrease over the window's consecutive pairs, kept as readings come
    // and go; while it is 0 (almost always) the window is not walked for link flaps.
    uint64_t link_flap_total = 0;
    // EvaluateNicWindow(window), as of the latest sample.
    std::vector<Finding> findings;
  };

  // What the sweep reads of every node comes first, so that it sits in few cache
  // lines: the sweep visits every node four times a second.
  struct Node {
    absl::Time last_seen;
    bool reporting = true;
    bool drained = false;
    weft::v1::DrainSource drained_by = weft::v1::DRAIN_SOURCE_UNSPECIFIED;
    // Sick (not reporting, or DEGRADED) or clean, and since when: what the
    // auto-drain policy judges. Updated by EvaluateHealth.
    bool sick = false;
    // Kept in step with `nics` by Register and AcceptTelemetry (the only places
    // windows and findings change), so the sweep need not visit every NIC of every
    // node: how many findings fire and the sum of the NICs' latest rates (RatesOf).
    int findings = 0;
    absl::Time sick_or_clean_since;
    HealthTracker health;
    NicRates latest_rates;
    // info.pod() and info.rack(), held here for the rack summaries of the sweep.
    std::string pod;
    std::string rack;

    weft::v1::NodeInfo info;
    uint64_t epoch = 0;
    absl::Time registered_at;
    std::string drain_reason;
    // Who drained it (the operator's identity; "" for auto drains or when unknown).
    std::string drained_who;
    // The durable ceiling of granted epochs (0 without a store).
    uint64_t epoch_ceiling = 0;
    std::vector<NicState> nics;  // in NodeInfo order
    // SetExternalFindings, by source.
    std::map<std::string, std::vector<Finding>, std::less<>> external_findings;
    // Why the node last became DEGRADED (the rule that fired first).
    std::string health_reason;
  };

  using NodeMap = std::map<std::string, Node, std::less<>>;
  // A node of nodes_ as the sweep walks them: its name and entry.
  using NodeRef = std::pair<const std::string*, Node*>;

  static weft::v1::NodeState StateOf(const Node& node);
  // Sum of the NICs' latest rates; zero while the node is not reporting.
  static NicRates RatesOf(const Node& node);
  // With `samples` false, no NicStatus, findings or rates (ListNodeIdentities).
  weft::v1::NodeStatus StatusOf(const Node& node, bool samples = true) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  absl::Status CheckSessionLocked(absl::string_view node, uint64_t epoch) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // CheckSession's verdict for `name` and its entry (nullptr: not registered).
  static absl::Status SessionStatus(absl::string_view name, const Node* node,
                                    uint64_t epoch);
  // Recomputes node.latest_rates and node.findings from its NICs and external findings.
  static void Summarize(Node& node);
  // nodes_ in name order as a vector, rebuilt after a node was added.
  const std::vector<NodeRef>& SweepOrder() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // When the node's state now differs from `before`, logs the transition, updates
  // the metrics and returns it (CountStateChange), and records it in the event log
  // as STATE_CHANGED (NoteStateChange).
  std::optional<StateChange> CountStateChange(const std::string& name,
                                              weft::v1::NodeState before,
                                              const Node& node, absl::string_view reason)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::optional<StateChange> NoteStateChange(const std::string& name,
                                             weft::v1::NodeState before,
                                             const Node& node, absl::string_view reason)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Recomputes a NIC's findings after a new sample; logs and counts the rules that
  // started or stopped firing.
  void UpdateFindings(const std::string& node_name, NicState& nic, absl::Time now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Drains or undrains by the auto-drain policy's decision; returns the change.
  std::optional<StateChange> ApplyAutoDrain(const std::string& name, Node& node,
                                            absl::Time now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void AddToStateCount(weft::v1::NodeState state, int64_t delta)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // `node` as the store keeps it; the caller overrides the fields about to change.
  static store::StoredNode ToStored(const std::string& name, const Node& node);
  // Commits `stored` when there is a store (OK otherwise).
  absl::Status Persist(const store::StoredNode& stored) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Clock* const clock_;
  const InventoryOptions options_;
  const absl::Duration down_after_;
  ControllerMetrics* const metrics_;
  store::ControllerStore* const store_;
  EventLog events_;

  mutable absl::Mutex mu_;
  NodeMap nodes_ ABSL_GUARDED_BY(mu_);
  // The sweep walks this instead of the tree: loads of independent pointers overlap,
  // where walking a 12,500-node tree waits on one cache miss after another. Entries
  // stay valid because nodes are never removed (map nodes do not move).
  std::vector<NodeRef> sweep_order_ ABSL_GUARDED_BY(mu_);
  bool sweep_order_stale_ ABSL_GUARDED_BY(mu_) = false;
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

#endif  // WEFT_CONTROLLER_INVENTORY_INVENTORY_H_
