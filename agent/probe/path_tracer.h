// PathTracer: the agent's traceroute of its probe flows (issue 22), so the controller
// knows which ECMP path, hence which spine, each source port takes. Each UDP flow of the
// pinglist is traced when the list arrives, again every `interval`, and soon after a
// window in which it lost probes (TraceSoon; not twice within `min_retrace`, since its
// path may have moved): one packet per TTL
// 1..max_hops, all at once, through a TraceTransport (UdpProber: the flow's own socket,
// hence its 5-tuple and DSCP); the routers' ICMP time-exceeded name the hops, the flow's
// responder answering marks the trace reached. A trace ends once it reached its peer and
// every TTL below heard back, or `timeout` after it started; it is handed out as a
// weft.v1.ProbePathTrace for the next telemetry batch.
//
// Bounded: at most `traces_per_second` traces start a second (each max_hops packets, and
// the responder's two answers to those that reach it), a small share of the probe rate,
// and gentle on routers' ICMP rate limits. RDMA UD flows are not traced (their 5-tuple
// is the NIC's, not a socket's).
//
// Metrics (on the injected registry, labels node and result):
//   weft_agent_probe_traces_total{result="reached"|"incomplete"|"send_error"}
//
// Time: only Tick's `now` (tests step it); Start runs a thread ticking on the injected
// Clock every 50 ms.
//
// Thread-safety: thread-safe.
#ifndef WEFT_AGENT_PROBE_PATH_TRACER_H_
#define WEFT_AGENT_PROBE_PATH_TRACER_H_

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "agent/probe/probe_transport.h"
#include "agent/probe/trace_transport.h"
#include "common/clock.h"
#include "prometheus/counter.h"
#include "prometheus/registry.h"
#include "proto/weft/v1/probe.pb.h"

namespace weft::agent::probe {

struct PathTracerOptions {
  int max_hops = 8;
  double traces_per_second = 2;
  // Between two traces of one flow; zero: each flow once per pinglist.
  absl::Duration interval = absl::Minutes(5);
  // A flow that lost probes is traced again at the earliest this long after its last
  // trace.
  absl::Duration min_retrace = absl::Seconds(10);
  // How long a trace waits for its answers.
  absl::Duration timeout = absl::Seconds(1);
  // Traces waiting to be handed out before the oldest are dropped.
  size_t max_pending = 4096;
};

class PathTracer {
 public:
  // `transport`, `clock` and `registry` outlive the tracer.
  PathTracer(TraceTransport* transport, const Clock* clock, PathTracerOptions options,
             prometheus::Registry* registry, const std::string& node_name);
  ~PathTracer();  // Stop()s

  PathTracer(const PathTracer&) = delete;
  PathTracer& operator=(const PathTracer&) = delete;

  void Start();
  void Stop();  // idempotent

  // The flows of a new pinglist: each UDP flow is traced again, the new ones first in
  // line; traces of flows no longer listed are abandoned.
  void SetFlows(const std::vector<ProbeFlow>& flows);

  // The flow of `window` lost probes: it is traced next, once `min_retrace` has passed
  // since its last trace. Windows of flows not traced (RDMA UD, gone) are ignored.
  void TraceSoon(const weft::v1::ProbeWindow& window);

  // Reads the replies, ends the traces that are complete or timed out, and starts those
  // due at `now` within the rate.
  void Tick(absl::Time now);

  // The traces ended since the last call.
  std::vector<weft::v1::ProbePathTrace> TakeTraces();

  uint64_t traces_started() const;

 private:
  struct Running {
    ProbeFlow flow;
    absl::Time deadline;
    std::vector<std::string> routers;  // by TTL - 1
    int reached_ttl = 0;               // the lowest TTL that reached the peer (0: none)
  };

  void FinishLocked(Running& trace, absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  TraceTransport* const transport_;
  const Clock* const clock_;
  const PathTracerOptions options_;
  prometheus::Counter& reached_;
  prometheus::Counter& incomplete_;
  prometheus::Counter& send_errors_;

  mutable absl::Mutex mu_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<ProbeFlow> flows_ ABSL_GUARDED_BY(mu_);
  std::map<ProbeFlow, absl::Time> next_due_ ABSL_GUARDED_BY(mu_);      // by flow
  std::map<ProbeFlow, absl::Time> last_started_ ABSL_GUARDED_BY(mu_);  // by flow
  absl::Time next_start_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  uint64_t next_token_ ABSL_GUARDED_BY(mu_) = 1;
  std::map<uint64_t, Running> running_ ABSL_GUARDED_BY(mu_);  // by token
  std::deque<weft::v1::ProbePathTrace> done_ ABSL_GUARDED_BY(mu_);
  uint64_t started_ ABSL_GUARDED_BY(mu_) = 0;
  std::thread thread_;
};

}  // namespace weft::agent::probe

#endif  // WEFT_AGENT_PROBE_PATH_TRACER_H_
