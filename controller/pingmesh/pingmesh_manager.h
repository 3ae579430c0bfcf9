// PingmeshManager: the controller's pingmesh (issue 22) between the agents and the pure
// logic of pingmesh/. On the ticker it
//   - plans: every `replan_interval` it reads the fleet (the inventory's nodes), and when
//     the nodes, NICs, addresses or ToRs changed, computes the pinglists
//     (pingmesh/pinglist.h) and sends each node whose list changed its new one down its
//     agent stream (a node that left the plan gets an empty list: it stops probing);
//   - judges: the agents' probe windows (TelemetryBatch.probe_windows) are bucketed by
//     their window, which goes to the localiser (pingmesh/localiser.h) over the
//     topology and the traces (pingmesh/traced_resolver.h), windows in order, as soon
//     as every node expected to report it has: each node probing now (routine list with
//     peers, or a running
//     check's) says how far it has sent its windows (probe_windows_through_us; agents
//     send windows as they close). A node silent (dead, cut off, an older agent) holds
//     no window past `lateness` after its end (the probe timeout plus 1.5 telemetry
//     intervals, when the last report of it is due). Each verdict raised or cleared
//     becomes an event (RULE_FIRED / RULE_CLEARED with rule "pingmesh_<kind>") and a
//     metric; with `degrade_blamed_nodes`, the findings the verdicts make against nodes
//     (controller/pingmesh/verdict_findings.h) go to the findings sink
//     (Inventory::SetExternalFindings) whenever a node's set changes;
//   - pins paths: the agents' traceroutes of their flows (TelemetryBatch.probe_traces) go
//     to the resolver (pingmesh/traced_resolver.h, with PingmeshConfig.switches), and a
//     stream whose traced path changed is resolved again by the localiser, so a lossy
//     leaf-spine link is named by its spine rather than its ToR's uplink bundle;
//   - summarises: probes are summed node to node over `matrix_period`, for
//     `weftctl pingmesh matrix` and the rack-to-rack gauges.
// An agent that (re)connects gets its current list at once (OnStreamAttached).
//
// Thread-safe. OnStreamAttached, OnProbeWindows and OnProbeTraces run on the agent
// stream reactors and only take a short lock; the localiser runs on the ticker under mu_. Lock
// order: mu_, then inbox_mu_ or traces_mu_; the sender (the agent service) and the
// findings sink are called with neither held.
#ifndef WEFT_CONTROLLER_PINGMESH_PINGMESH_MANAGER_H_
#define WEFT_CONTROLLER_PINGMESH_PINGMESH_MANAGER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "controller/inventory/event_log.h"
#include "controller/pingmesh/fleet.h"
#include "controller/pingmesh/pingmesh_metrics.h"
#include "controller/pingmesh/verdict_findings.h"
#include "google/protobuf/repeated_ptr_field.h"
#include "pingmesh/localiser.h"
#include "pingmesh/pinglist.h"
#include "pingmesh/traced_resolver.h"
#include "proto/weft/v1/admin.pb.h"
#include "proto/weft/v1/agent.pb.h"
#include "proto/weft/v1/config.pb.h"
#include "proto/weft/v1/pingmesh.pb.h"
#include "proto/weft/v1/probe.pb.h"

namespace weft::controller {

struct PingmeshManagerOptions {
  bool enabled = true;
  absl::Duration window = absl::Milliseconds(250);
  absl::Duration timeout = absl::Milliseconds(200);
  // How long after a window's end the reports of a node that has not sent it are
  // waited for (a window every probing node has sent is judged at once).
  absl::Duration lateness = absl::Milliseconds(2500);
  absl::Duration replan_interval = absl::Seconds(5);
  int tor_uplinks = 8;
  // Verdicts against a host, a NIC or a NIC's cable go to the findings sink.
  bool degrade_blamed_nodes = true;
  absl::Duration matrix_period = absl::Seconds(10);
  pingmesh::PinglistOptions pinglist;
  pingmesh::LocaliserOptions localiser;
  // Switches' traceroute addresses (PingmeshConfig.switches).
  std::vector<pingmesh::SwitchAddresses> switches;

  // From the config; `telemetry_interval` is how often agents report (part of lateness).
  static PingmeshManagerOptions FromConfig(const weft::v1::PingmeshConfig& config,
                                           absl::Duration telemetry_interval);
};

class PingmeshManager {
 public:
  // The nodes as the inventory has them (Inventory::ListNodeIdentities).
  using FleetSource = std::function<std::vector<weft::v1::NodeStatus>()>;
  // Queues a message on a node's agent stream (AgentServiceImpl::SendToNode).
  using Sender =
      std::function<absl::Status(const std::string& node, weft::v1::ControllerMessage message)>;
  // Replaces what pingmesh finds against `node` (empty: nothing any more). An error (the
  // node is not in the inventory yet) makes the manager offer that node's findings again
  // after the next judged window.
  using FindingsSink =
      std::function<absl::Status(const std::string& node, std::vector<Finding> findings)>;

  // INVALID_ARGUMENT for options the localiser or the pinglists refuse, naming the field.
  static absl::Status ValidateOptions(const PingmeshManagerOptions& options);

  // `clock`, `events` and `metrics` outlive the manager; `options` passed ValidateOptions.
  // `findings` may be empty (no sink).
  PingmeshManager(const Clock* clock, FleetSource fleet, Sender send, EventLog* events,
                  PingmeshMetrics* metrics, PingmeshManagerOptions options,
                  FindingsSink findings = nullptr);

  PingmeshManager(const PingmeshManager&) = delete;
  PingmeshManager& operator=(const PingmeshManager&) = delete;

  // The node's agent opened a stream: it gets its current pinglist (if it has one).
  void OnStreamAttached(const std::string& node) ABSL_LOCKS_EXCLUDED(mu_, inbox_mu_);
  // A telemetry batch's probe windows from `node`'s agent (the source of every stream),
  // and its probe_windows_through_us: every window of the node ending at or before it
  // has now been sent (0: the agent does not say).
  void OnProbeWindows(const std::string& node,
                      const google::protobuf::RepeatedPtrField<weft::v1::ProbeWindow>& windows,
                      int64_t windows_through_us = 0) ABSL_LOCKS_EXCLUDED(inbox_mu_);

  // A telemetry batch's traceroutes from `node`'s agent; queued (at most
  // kMaxQueuedTraces, the rest counted dropped) for the next Tick, which checks each
  // (a refused one is counted and logged) and re-resolves the streams whose path changed.
  void OnProbeTraces(const std::string& node,
                     const google::protobuf::RepeatedPtrField<weft::v1::ProbePathTrace>& traces)
      ABSL_LOCKS_EXCLUDED(traces_mu_);

  // Plans when due and judges every window whose reports are in. The ticker calls it.
  void Tick() ABSL_LOCKS_EXCLUDED(mu_, inbox_mu_);

  // A pre-job check (pingmesh.proto CheckRequest): the nodes probe each other, every
  // rail's NICs in full mesh and across rails inside each node, at the per-node budget,
  // in place of their routine pinglists until `seconds` are over; then a localiser of its
  // own judges those probes alone and `done` gets the answer, from the ticker, once.
  // INVALID_ARGUMENT (no nodes, a node twice, seconds above 300) and FAILED_PRECONDITION
  // (pingmesh off, a node already in a running check) are returned at once, and `done`
  // is not called then. Nodes that cannot be probed fail the check with the reason.
  using CheckDone = std::function<void(absl::StatusOr<weft::v1::CheckResponse>)>;
  absl::Status StartCheck(const weft::v1::CheckRequest& request, CheckDone done)
      ABSL_LOCKS_EXCLUDED(mu_, inbox_mu_);
  // Ends every running check with `status` (the controller shutting down); later
  // StartCheck calls are refused with UNAVAILABLE.
  void CancelChecks(const absl::Status& status) ABSL_LOCKS_EXCLUDED(mu_);

  weft::v1::PingmeshStatus Status() const ABSL_LOCKS_EXCLUDED(mu_, inbox_mu_);
  // Rack to rack (`rack` empty), or node to node from the nodes of `rack`; NOT_FOUND
  // for a rack no probed node is in.
  absl::StatusOr<weft::v1::PingmeshMatrix> Matrix(const std::string& rack) const
      ABSL_LOCKS_EXCLUDED(mu_);

 private:
  // Sums of one node pair's windows.
  struct PairSums {
    uint64_t sent = 0, lost = 0, answered_windows = 0;
    double rtt_min_us = 0, rtt_p50_sum_us = 0, rtt_p99_us = 0;
    void Add(const pingmesh::ProbeWindow& window);
    void Merge(const PairSums& other);
  };
  using PairMap = std::map<std::pair<std::string, std::string>, PairSums>;

  // One running pre-job check.
  struct Check {
    std::vector<std::string> nodes;  // as requested
    absl::flat_hash_map<std::string, std::string> not_probed;  // node → why
    absl::Time start;
    absl::Time end;
    pingmesh::PinglistPlan plan;
    absl::flat_hash_set<pingmesh::ProbeKey> streams;
    std::unique_ptr<pingmesh::Localiser> localiser;
    absl::flat_hash_map<std::string, std::pair<uint64_t, uint64_t>> sent_lost;  // by node
    // Every verdict raised while it ran, by kind and component (the newest evidence).
    std::map<std::string, weft::v1::PingmeshVerdict> verdicts;
    CheckDone done;
    weft::v1::CheckResponse answer;  // set when it ends
  };
  using Messages = std::vector<std::pair<std::string, weft::v1::ControllerMessage>>;
  using NodeFindings = std::vector<std::pair<std::string, std::vector<Finding>>>;

  // How far (µs) every node expected to report windows has sent them all: the least
  // probe_windows_through_us over the nodes probing now. 0 when one has not said, or
  // none probes.
  int64_t ReportedThroughLocked() const ABSL_SHARED_LOCKS_REQUIRED(mu_, inbox_mu_);
  static constexpr size_t kMaxQueuedTraces = 65536;

  // Hands the queued traces to the resolver (OnProbeTraces).
  void ApplyTracesLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) ABSL_LOCKS_EXCLUDED(traces_mu_);
  // The messages to send for a new fleet (empty when nothing changed).
  Messages ReplanLocked(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Judges one window; checks it ends are moved to `finished`, their nodes' routine
  // lists to `to_send`.
  void JudgeWindowLocked(int64_t start_us, std::vector<pingmesh::ProbeWindow> windows,
                         std::vector<std::unique_ptr<Check>>* finished, Messages* to_send)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The check's pinglists; empty plan when no two NICs of its nodes can be probed.
  pingmesh::PinglistPlan CheckPlanLocked(const std::vector<std::string>& nodes) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  weft::v1::CheckResponse CheckAnswerLocked(Check& check) const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // `list` stamped with the next version, as a message.
  weft::v1::ControllerMessage StampLocked(weft::v1::Pinglist list, absl::Time now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Send(Messages messages);
  // The nodes whose findings changed since the last call, with their new findings.
  NodeFindings FindingChangesLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  weft::v1::PingmeshVerdict ToProto(const pingmesh::Verdict& verdict) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  void RecordVerdict(const weft::v1::PingmeshVerdict& verdict, bool raised,
                     absl::Time now) ABSL_SHARED_LOCKS_REQUIRED(mu_);
  weft::v1::PingmeshMatrix MatrixOf(const PairMap& pairs, const std::string& rack) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);

  const Clock* const clock_;
  const FleetSource fleet_source_;
  const Sender send_;
  EventLog* const events_;
  PingmeshMetrics* const metrics_;
  const PingmeshManagerOptions options_;
  const FindingsSink findings_sink_;

  mutable absl::Mutex mu_ ABSL_ACQUIRED_BEFORE(inbox_mu_, traces_mu_);
  Fleet fleet_ ABSL_GUARDED_BY(mu_);
  pingmesh::PinglistPlan plan_ ABSL_GUARDED_BY(mu_);
  uint64_t plan_version_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t last_list_version_ ABSL_GUARDED_BY(mu_) = 0;
  // The list each node was last sent (version 0 in the map; the stamped one is sent).
  std::map<std::string, weft::v1::Pinglist> lists_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, std::string> node_rack_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_set<pingmesh::ProbeKey> planned_ ABSL_GUARDED_BY(mu_);
  pingmesh::TracedResolver resolver_ ABSL_GUARDED_BY(mu_);
  pingmesh::Localiser localiser_ ABSL_GUARDED_BY(mu_);
  absl::Time next_replan_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  int64_t last_window_end_us_ ABSL_GUARDED_BY(mu_) = 0;
  PairMap period_pairs_ ABSL_GUARDED_BY(mu_);
  PairMap last_period_pairs_ ABSL_GUARDED_BY(mu_);
  int64_t period_start_us_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t last_period_start_us_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t last_period_end_us_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t windows_unknown_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t windows_accepted_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<std::unique_ptr<Check>> checks_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, Check*> checking_ ABSL_GUARDED_BY(mu_);  // node → its check
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;  // CancelChecks ran: no new checks
  // What the findings sink was last given, by node (nodes with none are absent).
  std::map<std::string, std::vector<Finding>> published_findings_ ABSL_GUARDED_BY(mu_);

  mutable absl::Mutex inbox_mu_;
  // Windows not judged yet, by their start (µs since the Unix epoch).
  std::map<int64_t, std::vector<pingmesh::ProbeWindow>> inbox_ ABSL_GUARDED_BY(inbox_mu_);
  // Every window ending at or before this was judged (0: none yet).
  int64_t judged_through_us_ ABSL_GUARDED_BY(inbox_mu_) = 0;
  uint64_t windows_late_ ABSL_GUARDED_BY(inbox_mu_) = 0;
  // Each node's last probe_windows_through_us.
  absl::flat_hash_map<std::string, int64_t> reported_through_us_ ABSL_GUARDED_BY(inbox_mu_);

  // Traces not applied yet (taken by the ticker under mu_, then this).
  mutable absl::Mutex traces_mu_;
  std::vector<pingmesh::PathTrace> traces_inbox_ ABSL_GUARDED_BY(traces_mu_);
};

}  // namespace weft::controller

#endif  // WEFT_CONTROLLER_PINGMESH_PINGMESH_MANAGER_H_
