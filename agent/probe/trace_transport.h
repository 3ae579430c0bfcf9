// TraceTransport: how the agent's path tracer (agent/probe/path_tracer.h) sends a
// traceroute packet with a probe flow's own 5-tuple and DSCP and a given IP TTL, and
// hears what came back: a router's ICMP time-exceeded naming it, or the flow's responder
// answering (the packet reached it). UdpProber (agent/probe/udp_transport.h) sends them
// from the flow's own probe socket, so the source port, hence the ECMP path, is the
// probes'; tests use a fake.
//
// Thread-safety: SendTrace and TakeTraceReplies from any thread.
#ifndef WEFT_AGENT_PROBE_TRACE_TRANSPORT_H_
#define WEFT_AGENT_PROBE_TRACE_TRANSPORT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "agent/probe/probe_transport.h"

namespace weft::agent::probe {

// What came back for the packet of trace `token` sent with `ttl`.
struct TraceReply {
  uint64_t token = 0;
  int ttl = 0;
  std::string router;    // the router whose time-exceeded named it ("" when reached)
  bool reached = false;  // the flow's responder answered, or its host refused the port
};

// Tokens fit in 47 bits (the transport tags packets with the token and TTL).
inline constexpr uint64_t kMaxTraceToken = (uint64_t{1} << 47) - 1;
inline constexpr int kMaxTraceTtl = 255;

class TraceTransport {
 public:
  virtual ~TraceTransport() = default;
  // Sends one traceroute packet on `flow` with IP TTL (IPv6: hop limit) `ttl`, tagged
  // with `token` (at most kMaxTraceToken) and `ttl` (1..kMaxTraceTtl). An error names
  // the flow and the failing call; nothing was sent.
  virtual absl::Status SendTrace(const ProbeFlow& flow, uint64_t token, int ttl) = 0;
  // The replies heard since the last call.
  virtual std::vector<TraceReply> TakeTraceReplies() = 0;
};

}  // namespace weft::agent::probe

#endif  // WEFT_AGENT_PROBE_TRACE_TRANSPORT_H_
