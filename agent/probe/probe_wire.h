// The header both pingmesh transports put at the start of every probe and reply
// (big-endian): magic (4), kind (1: probe, 2: ACK1, 3: ACK2), DSCP (1), port (2), seq
// (8), responder delay in ns (8), which timestamps measured that delay (1). Each
// transport gives the fields its meaning (agent/probe/udp_transport.h,
// ud_transport.h) and may follow the header with more. Pure functions.
#ifndef WEFT_AGENT_PROBE_PROBE_WIRE_H_
#define WEFT_AGENT_PROBE_PROBE_WIRE_H_

#include <cstddef>
#include <cstdint>

#include "agent/probe/probe_transport.h"

namespace weft::agent::probe {

enum ProbeKind : uint8_t { kProbe = 1, kAck1 = 2, kAck2 = 3 };
enum WireSource : uint8_t { kWireUser = 0, kWireSoftware = 1, kWireHardware = 2 };

struct ProbeHeader {
  uint8_t kind = 0;
  uint8_t dscp = 0;
  uint16_t port = 0;
  uint64_t seq = 0;
  int64_t delay_ns = 0;
  uint8_t source = kWireUser;
};

inline constexpr size_t kProbeHeaderBytes = 25;

// Writes the header with `magic` into out[0, kProbeHeaderBytes).
void EncodeProbeHeader(uint32_t magic, const ProbeHeader& header, uint8_t* out);
// False when `len` is short, the magic is not `magic` or the kind unknown.
bool DecodeProbeHeader(uint32_t magic, const uint8_t* in, size_t len, ProbeHeader* header);

WireSource ToWire(TimestampSource source);
TimestampSource FromWire(uint8_t source);

// The two-ack arithmetic both transports share: the measurement `ack1` (what ACK1
// said) completed by `reply` (an ACK1 or the ACK2 carrying the responder's delay). The
// network RTT is the prober's span between sending the probe and receiving the reply,
// on the timestamps it had (`net_span_ns`), less the responder's delay; the sender's
// host delay is its userspace span less that (`user_span_ns`); the timestamps are the
// coarser of the two ends'. `final` when `reply` is the ACK2.
ProbeMeasurement CompleteMeasurement(const ProbeMeasurement& ack1, const ProbeHeader& reply,
                                     int64_t net_span_ns, int64_t user_span_ns,
                                     TimestampSource prober_timestamps);

// CLOCK_REALTIME in ns: the clock the kernel's software timestamps use.
int64_t RealtimeNs();

}  // namespace weft::agent::probe

#endif  // WEFT_AGENT_PROBE_PROBE_WIRE_H_
