// Prober: the agent's pingmesh prober (issue 22). It probes the flows of the pinglist
// the controller sent (weft.v1.Pinglist: each peer NIC over each of its source ports,
// at the peer's rate, with the DSCP of the class under test) through a ProbeTransport
// (UDP sockets, or an RDMA UD QP where the peer asks for it), counts a probe lost when
// no reply came within the list's timeout, and summarises each flow over windows
// (agent/probe/probe_windows.h) that the agent sends up as soon as they close: the
// prober calls ProberOptions.on_windows_closed, and TakeWindows hands them out with the
// time through which every window is out (TelemetryBatch.probe_windows_through_us).
//
// Bounded: the probes of all flows together never exceed max_probes_per_second
// (agent/probe/probe_scheduler.h: rates scaled down to it, a minimum gap between any
// two probes); the prober's threads' CPU time is held under max_cpu_share of a core
// (agent/probe/cpu_budget.h slows the rate down when it is exceeded).
//
// Metrics (on the injected registry, label node):
//   weft_agent_probes_sent_total, weft_agent_probes_lost_total,
//   weft_agent_probes_answered_total, weft_agent_probe_send_errors_total
//   weft_agent_probe_rate            probes per second scheduled now (after the caps)
//   weft_agent_prober_cpu_seconds_total  CPU time of the prober's threads
//   weft_agent_pinglist_version      the version probed (0: none)
//
// Time: sends, timeouts and windows run on the injected Clock (tests step a
// FakeClock); what replies measured comes from the transports' own timestamps.
//
// Threading: thread-safe. Start() runs a sender thread (on the Clock) and one
// receiver thread per transport; Stop() joins them.
#ifndef WEFT_AGENT_PROBE_PROBER_H_
#define WEFT_AGENT_PROBE_PROBER_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "agent/probe/cpu_budget.h"
#include "agent/probe/probe_scheduler.h"
#include "agent/probe/probe_transport.h"
#include "agent/probe/probe_windows.h"
#include "common/clock.h"
#include "prometheus/counter.h"
#include "prometheus/gauge.h"
#include "prometheus/registry.h"
#include "proto/weft/v1/probe.pb.h"

namespace weft::agent::probe {

struct ProberOptions {
  std::string node_name;
  // Hard cap on this node's probes per second, all flows together.
  double max_probes_per_second = 1000;
  // Share of one core the prober's threads may use.
  double max_cpu_share = 0.02;
  // Flows one pinglist may hold (peers × source ports).
  size_t max_flows = 4096;
  // Probes due within this of now go out on the same wake: a wake of the sender thread
  // costs more than a send (at 1,000 probes/s, 5 ms took the prober from 9.9 % to 4 % of
  // a core, docs/benchmarks.md). Each probe keeps its own timestamps and the flows their
  // grid. Off by default for now: with it, the netns leaf-spine test's 5 % loss on one
  // ToR-spine link was blamed on the spine (3 runs of 3), as the probes the CPU budget
  // no longer held back tip the localiser's switch rule in a two-ToR fabric.
  absl::Duration send_ahead = absl::ZeroDuration();
  // Called on the sender thread, without the prober's lock, each time windows closed
  // (TakeWindows has something new). It must not block: it should only wake whoever
  // takes them. May be empty.
  std::function<void()> on_windows_closed;
};

// Checks a pinglist as the prober would apply it: the options.proto rules, and UD
// peers' source ports (49152..65535), GID and QP number. INVALID_ARGUMENT naming the
// peer and field otherwise.
absl::Status ValidatePinglist(const weft::v1::Pinglist& pinglist, size_t max_flows);

// The flows of a valid pinglist, in peer then source-port order, with each flow's
// rate (the peer's rate shared by its source ports).
std::vector<std::pair<ProbeFlow, double>> FlowsOf(const weft::v1::Pinglist& pinglist);

class Prober {
 public:
  // `udp` must be set; `rdma_ud` holds one UD transport per RDMA device, by name: a UD
  // flow goes through its source_nic's (or the only one, when the flow names none),
  // and fails saying why when there is none. Every pointer must outlive the prober.
  Prober(ProbeTransport* udp, std::map<std::string, ProbeTransport*> rdma_ud, const Clock* clock,
         ProberOptions options, prometheus::Registry* registry);
  ~Prober();  // Stop()s.

  Prober(const Prober&) = delete;
  Prober& operator=(const Prober&) = delete;

  void Start();
  void Stop();  // idempotent

  // Replaces the pinglist (ValidatePinglist first; on error nothing changes). Windows
  // of flows no longer probed close when their time is up, as the others do; a new
  // window length or timeout closes every open window now.
  absl::Status Apply(const weft::v1::Pinglist& pinglist);

  // The windows closed since the last call. `closed_through`, when given, is set to the
  // time through which every window has been handed out (this call's or an earlier
  // one's): each window ending at or before it, of any flow. InfinitePast before any
  // window closed.
  std::vector<weft::v1::ProbeWindow> TakeWindows(absl::Time* closed_through = nullptr);

  uint64_t pinglist_version() const;
  // Probes per second scheduled now, after the cap and the CPU budget.
  double scheduled_rate() const;
  // Probes in flight (sent, not yet answered or timed out), in all and of one source
  // port.
  size_t in_flight() const;
  size_t in_flight(uint16_t source_port) const;

 private:
  struct Pending {
    ProbeFlow flow;
    ProbeTransport* transport = nullptr;
    absl::Time sent_at;
    absl::Time deadline;
    std::optional<ProbeMeasurement> measured;
  };

  void SendLoop();
  void ReceiveLoop(ProbeTransport* transport);
  ProbeTransport* TransportFor(const ProbeFlow& flow) const;
  // Resolves the probes whose deadline passed: answered when ACK1 came, else lost.
  void ExpireLocked(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Moves the windows whose probes are all resolved to closed_; true when any moved.
  bool CloseWindowsLocked(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void AddCpu(double seconds);

  ProbeTransport* const udp_;
  const std::map<std::string, ProbeTransport*> rdma_ud_;
  const Clock* const clock_;
  const ProberOptions options_;

  prometheus::Counter& sent_;
  prometheus::Counter& lost_;
  prometheus::Counter& answered_;
  prometheus::Counter& send_errors_;
  prometheus::Counter& cpu_seconds_;
  prometheus::Gauge& rate_;
  prometheus::Gauge& version_;

  mutable absl::Mutex mu_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t changes_ ABSL_GUARDED_BY(mu_) = 0;  // bumped by Apply to wake the sender
  weft::v1::Pinglist pinglist_ ABSL_GUARDED_BY(mu_);
  std::vector<ProbeFlow> flows_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<ProbeScheduler> scheduler_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<ProbeWindows> windows_ ABSL_GUARDED_BY(mu_);
  absl::Duration timeout_ ABSL_GUARDED_BY(mu_) = absl::Seconds(1);
  std::map<uint64_t, Pending> pending_ ABSL_GUARDED_BY(mu_);  // by seq: deadline order
  uint64_t next_seq_ ABSL_GUARDED_BY(mu_) = 1;
  std::vector<weft::v1::ProbeWindow> closed_ ABSL_GUARDED_BY(mu_);
  // Every window ending at or before this is in closed_ or was taken.
  absl::Time closed_through_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  // Windows were added to closed_ since on_windows_closed was last called.
  bool closed_unannounced_ ABSL_GUARDED_BY(mu_) = false;
  std::set<std::string> logged_errors_ ABSL_GUARDED_BY(mu_);
  CpuBudget cpu_budget_ ABSL_GUARDED_BY(mu_);
  double cpu_total_ ABSL_GUARDED_BY(mu_) = 0;

  std::thread sender_;
  std::vector<std::thread> receivers_;
};

}  // namespace weft::agent::probe

#endif  // WEFT_AGENT_PROBE_PROBER_H_
