// DesiredStateManager: the controller's record of each node's QoS/DCQCN desired state:
// what it should have (desired version and content), what its agent says it has
// (applied version), the newest version known good (set when a rollout completes),
// and where the node stands (SyncStatus). It sends a node's desired state down the
// node's agent stream through an injected Sender, and sends it again when
// - the agent (re)connects with a StreamHello whose applied_version differs from the
//   desired version (a restarted agent, or a controller that changed it meanwhile);
// - the agent reports drift in a telemetry batch (TunablesStatus.drift), at most once
//   per `drift_resend_interval` while the drift lasts.
// Every send carries a fresh nonce; an ACK/NACK counts only when its version and nonce
// are those of the latest send (older answers are logged and ignored), so a late
// answer to a superseded push never marks a node in sync.
//
// Statuses: pending (sent or waiting for the node's stream, no answer yet), in_sync
// (ACKed, or the agent reports the desired version applied without drift), nacked (the
// desired version was refused: the errors are kept), drifted (applied, but the agent
// reports drift). Nodes without a desired state have no status.
//
// Thread-safety: every method may be called from any thread; one mutex. The Sender is
// called with that mutex held (so sends to one node keep their order); it must not
// block or call back into the manager. Lock order: this manager, then whatever the
// Sender takes (AgentServiceImpl::mu_, a stream's mutex).
#ifndef WEFT_CONTROLLER_ROLLOUT_DESIRED_STATE_H_
#define WEFT_CONTROLLER_ROLLOUT_DESIRED_STATE_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "controller/rollout/desired_state_listener.h"
#include "controller/rollout/rollout_metrics.h"
#include "proto/weft/v1/agent.pb.h"
#include "proto/weft/v1/desired_state.pb.h"

namespace weft::controller {

// What the manager knows of one node.
struct NodeSync {
  weft::v1::DesiredState desired;  // version and nonce of the latest send
  uint64_t applied_version = 0;    // as the agent last reported it
  uint64_t last_good_version = 0;  // 0: none yet
  SyncStatus status = SyncStatus::kPending;
  // The version and errors of the latest NACK of the desired version.
  uint64_t nacked_version = 0;
  std::vector<weft::v1::ParameterError> nack_errors;
  std::vector<weft::v1::TunableDrift> drift;
  // When the desired state was last sent (InfinitePast: never reached the node).
  absl::Time sent_at = absl::InfinitePast();
  // When the desired version was set (a rollout's ACK timeout counts from here).
  absl::Time desired_since;
};

class DesiredStateManager : public DesiredStateListener {
 public:
  // Queues a message on the node's agent stream; NOT_FOUND when it has none.
  using Sender =
      std::function<absl::Status(const std::string& node, weft::v1::ControllerMessage)>;

  // `clock` and `metrics` must outlive the manager. `sender` reaches the agents (the
  // composition root passes the agent service's SendToNode); it is called only from
  // SetDesired and the ticker, never during construction; an empty one reaches no agent.
  DesiredStateManager(const Clock* clock, RolloutMetrics* metrics, Sender sender,
                      absl::Duration drift_resend_interval = absl::Seconds(30));

  // Makes `state` (node_name and version set, version above any this node had) the
  // node's desired state, with a new nonce, and sends it if the node has a stream.
  // INVALID_ARGUMENT for an empty node name or version 0. Setting the version the node
  // already has desired again is a re-send.
  absl::Status SetDesired(weft::v1::DesiredState state);

  // Takes on a node the manager has no record of (a node that registered after the
  // last rollout, or any node after a controller restart): `state` becomes its desired
  // state with `last_good_version`. If its agent already reported `state`'s version
  // applied, the node is in sync and nothing is sent; otherwise it is sent (or waits
  // for the stream). A node the manager already has is left alone: returns false.
  bool Adopt(weft::v1::DesiredState state, uint64_t last_good_version);

  // Records `version` as the node's last good one (a rollout completed).
  void MarkGood(const std::string& node, uint64_t version);

  // DesiredStateListener.
  void OnStreamAttached(const std::string& node, uint64_t applied_version) override;
  void OnDesiredStateAck(const std::string& node,
                         const weft::v1::DesiredStateAck& ack) override;
  void OnTunablesStatus(const std::string& node,
                        const weft::v1::TunablesStatus& status) override;

  // The version the agent of a node without a record last reported applied.
  std::optional<uint64_t> UnadoptedApplied(const std::string& node) const;

  std::optional<NodeSync> Get(const std::string& node) const;
  // Every node with a desired state, by name.
  std::map<std::string, NodeSync> All() const;
  // The highest version ever set (0: none).
  uint64_t newest_version() const;

 private:
  struct Entry {
    NodeSync sync;
    bool reports_drift = false;
    absl::Time drift_resent_at = absl::InfinitePast();
  };

  // Sends the entry's desired state with a new nonce; a node without a stream stays
  // pending until it connects.
  void SendLocked(const std::string& node, Entry& entry) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void SetStatusLocked(Entry& entry, SyncStatus status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void SetReportsDriftLocked(Entry& entry, bool drift) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void AddLocked(const std::string& node, Entry entry) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Clock* const clock_;
  RolloutMetrics* const metrics_;
  const Sender sender_;
  const absl::Duration drift_resend_interval_;

  mutable absl::Mutex mu_;
  std::map<std::string, Entry, std::less<>> nodes_ ABSL_GUARDED_BY(mu_);
  // What agents of nodes without a record reported applied, for Adopt.
  std::map<std::string, uint64_t, std::less<>> unadopted_applied_ ABSL_GUARDED_BY(mu_);
  int64_t counts_[kSyncStatusCount] ABSL_GUARDED_BY(mu_) = {};
  int64_t drift_nodes_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t newest_version_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t nonce_counter_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t nonce_salt_;
};

}  // namespace weft::controller

#endif  // WEFT_CONTROLLER_ROLLOUT_DESIRED_STATE_H_
