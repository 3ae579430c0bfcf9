// Agent: the main loop of weft-agent. It discovers the node through a NicBackend,
// registers with the controller, keeps one Connect stream open and sends one
// TelemetryBatch (every NIC of the node) per interval, with rates computed by
// agent/counter_math.h.
//
// Desired QoS / DCQCN state pushed down the stream is applied to the backend's NIC
// tunables as one transaction (agent/tunables/applier.h) and answered with an ACK
// (version, nonce, values read back) or a NACK (each failed NIC / parameter, nothing
// left changed). The last ACKed state is remembered: every telemetry batch reports its
// version and the parameters that drifted from it (TelemetryBatch.tunables), and each
// StreamHello carries the version so a controller knows whether to re-send. With
// config.tunables_dry_run nothing is written: a state is ACKed only when the NICs
// already have it, and NACKed otherwise with "dry run: would change ..." per parameter.
//
// Session life cycle (proto/weft/v1/agent.proto):
//   Register(NodeInfo, last_session_epoch = highest epoch granted so far, 0 at start)
//   -> Connect, StreamHello{node, granted epoch} -> telemetry every interval_ms ...
// Any failure (Register refused, stream broken, a write refused, the controller
// fencing us with ABORTED) ends the session: one log line, a jittered exponential
// backoff (common/backoff.h, seeded from the node name so agents spread out), then a
// fresh Register with the higher epoch and the full inventory again. The backoff
// starts over after a session that lived a full interval, unless the controller fenced
// it: this agent never holds two sessions, so a fence means another agent uses the
// same node name, and backing off keeps the two from taking turns every interval.
//
// While registered: weft_agent_registered = 1 and the gRPC health server (if any)
// says SERVING; otherwise 0 / NOT_SERVING. (The simulated `dead` fault is not the
// agent's: agent/sim_faults.h wraps its controller client.)
//
// Pingmesh (issue 22), when the composition root gives the agent one
// (agent/probe/pingmesh.h): it starts with the agent, once the NICs are known (they
// bound the probe rate); a pinglist pushed down the stream replaces the one probed
// (a bad one is logged and counted, the old one goes on); each telemetry batch carries
// the probe windows closed since the previous one and the pinglist version; Register
// advertises the responder's UDP port (NodeInfo.probe_udp_port).
//
// Time: sample timestamps come from the injected Clock (through the backend);
// waits between intervals and backoff sleeps are real-time, interruptible waits on a
// Mutex, so Stop() never waits for one to run out.
//
// Threading: Start() and Stop() may be called from any one thread; the agent runs a
// loop thread plus, per session, a reader thread for the downlink. Stop() returns
// within about a second: it cancels calls in flight by shutting the ControllerClient
// down (so a stopped agent's client cannot be reused) and joins both threads.
#ifndef WEFT_AGENT_AGENT_H_
#define WEFT_AGENT_AGENT_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "agent/agent_metrics.h"
#include "agent/controller_client.h"
#include "agent/controller_epoch.h"
#include "agent/health_server.h"
#include "agent/nic_backend.h"
#include "agent/outbound_queue.h"
#include "agent/probe/pingmesh.h"
#include "common/backoff.h"
#include "common/clock.h"
#include "prometheus/registry.h"
#include "proto/weft/v1/agent.pb.h"
#include "proto/weft/v1/config.pb.h"

namespace weft::agent {

inline constexpr char kAgentVersion[] = "0.1.0";
// Telemetry batches held for a stream slower than collection (16 s at the default
// interval) before the oldest are dropped.
inline constexpr size_t kTelemetryQueueCapacity = 16;

class Agent {
 public:
  // `config` should have passed ValidateAgentConfig. Every pointer must outlive the
  // agent; `health` may be null (no health endpoint), and so may `pingmesh` (no
  // probing: pinglists are ignored, with one log line).
  Agent(weft::v1::AgentConfig config, NicBackend* backend, ControllerClient* client,
        const Clock* clock, prometheus::Registry* registry, HealthServer* health,
        probe::Pingmesh* pingmesh = nullptr);
  ~Agent();  // Stop()s.

  Agent(const Agent&) = delete;
  Agent& operator=(const Agent&) = delete;

  // Discovers the node and starts the loop thread. Fails with the backend's error when
  // the inventory cannot be read, or FAILED_PRECONDITION when called twice.
  absl::Status Start();

  // Ends the session (if any) and joins the threads. Idempotent.
  void Stop();

  // True while registered with a live stream.
  bool registered() const;
  // The highest session epoch the controller has granted (0 before the first).
  uint64_t highest_epoch() const;
  // The version of the last desired state ACKed (0: none since start).
  uint64_t applied_version() const;
  // The node as last discovered, each port's state as last read (empty before
  // Start). For the job socket (agent/job_service.h); thread-safe.
  NodeInventory inventory() const;

 private:
  using NicKey = std::pair<std::string, uint32_t>;  // device, port

  void Run();
  // One Register + Connect + stream; returns why it ended (OK only when stopping).
  // `rediscover` reads the inventory afresh first; `lived_an_interval` says whether
  // the stream stayed up for a full interval.
  absl::Status RunSession(bool rediscover, bool* lived_an_interval);
  void ReadDownlink(ControllerStream* stream, OutboundQueue* outbound, absl::Status* final_status);
  void HandleDesiredState(const weft::v1::DesiredState& state, OutboundQueue* outbound);
  void HandlePinglist(const weft::v1::Pinglist& pinglist);
  // Writes what `outbound` hands out until it is closed or a write fails.
  void WriteUplink(ControllerStream* stream, OutboundQueue* outbound, std::atomic<bool>* failed);
  weft::v1::TelemetryBatch Collect();
  void NoteNicError(const std::string& device, const std::string& error);
  // Logs what a port lacks when that changes (once, not every interval).
  void NoteMissingCounters(const RawNicReading& reading);
  void SetRegistered(bool registered);
  weft::v1::NodeInfo NodeInfo() const;
  // Copy inventory_ / the readings' port states to what inventory() returns.
  void PublishInventory() ABSL_LOCKS_EXCLUDED(mu_);
  void PublishPortStates(const std::vector<RawNicReading>& readings) ABSL_LOCKS_EXCLUDED(mu_);

  // Waits until `deadline` on `clock`, Stop() or, when `session_end` is true, the end
  // of the current stream. True when it returned because of Stop() or the stream end.
  bool WaitUntil(const Clock& clock, absl::Time deadline, bool session_end)
      ABSL_LOCKS_EXCLUDED(mu_);
  bool stop_requested() const ABSL_LOCKS_EXCLUDED(mu_);
  // TelemetryBatch.tunables: the applied version and what drifted from it.
  weft::v1::TunablesStatus CheckTunables() ABSL_LOCKS_EXCLUDED(mu_, backend_mu_);

  const weft::v1::AgentConfig config_;
  NicBackend* const backend_;
  ControllerClient* const client_;
  const Clock* const clock_;
  HealthServer* const health_;
  probe::Pingmesh* const pingmesh_;
  const absl::Duration interval_;
  const absl::Duration drift_check_interval_;
  AgentMetrics metrics_;
  // The highest controller epoch seen; messages below it are ignored.
  ControllerEpochFence controller_epoch_;
  Backoff backoff_;  // loop thread only

  // Loop thread only.
  NodeInventory inventory_;
  std::map<NicKey, RawNicReading> last_good_;      // the previous reading without error
  std::map<std::string, std::string> nic_errors_;  // device -> last error logged
  std::map<NicKey, std::vector<std::string>> missing_counters_;  // last logged
  // The last drift check (CheckTunables): when, against which apply, and its result.
  absl::Time drift_checked_at_ = absl::InfinitePast();
  uint64_t drift_checked_generation_ = 0;
  std::vector<weft::v1::TunableDrift> drift_;

  // The backend is thread-compatible: the loop thread reads counters and checks drift,
  // the downlink reader applies desired state; this serializes them.
  absl::Mutex backend_mu_;

  mutable absl::Mutex mu_;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  bool stop_requested_ ABSL_GUARDED_BY(mu_) = false;
  bool stream_ended_ ABSL_GUARDED_BY(mu_) = false;
  bool registered_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t highest_epoch_ ABSL_GUARDED_BY(mu_) = 0;
  // The last desired state ACKed; version 0 until one is.
  weft::v1::DesiredState applied_ ABSL_GUARDED_BY(mu_);
  // Counts accepted applies (a re-apply of the same version too), so the next drift
  // check runs at once rather than reporting the drift the apply just fixed.
  uint64_t apply_generation_ ABSL_GUARDED_BY(mu_) = 0;
  NodeInventory published_inventory_ ABSL_GUARDED_BY(mu_);  // inventory() reads it
  std::thread loop_thread_;
};

}  // namespace weft::agent

#endif  // WEFT_AGENT_AGENT_H_
