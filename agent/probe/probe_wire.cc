#include "agent/probe/probe_wire.h"

#include <time.h>

#include <algorithm>

namespace weft::agent::probe {
namespace {

void Put(uint8_t* at, uint64_t value, int bytes) {
  for (int i = bytes - 1; i >= 0; --i, value >>= 8) at[i] = static_cast<uint8_t>(value);
}

uint64_t Get(const uint8_t* at, int bytes) {
  uint64_t value = 0;
  for (int i = 0; i < bytes; ++i) value = (value << 8) | at[i];
  return value;
}

}  // namespace

void EncodeProbeHeader(uint32_t magic, const ProbeHeader& h, uint8_t* out) {
  Put(out, magic, 4);
  out[4] = h.kind;
  out[5] = h.dscp;
  Put(out + 6, h.port, 2);
  Put(out + 8, h.seq, 8);
  Put(out + 16, static_cast<uint64_t>(h.delay_ns), 8);
  out[24] = h.source;
}

bool DecodeProbeHeader(uint32_t magic, const uint8_t* in, size_t len, ProbeHeader* h) {
  if (len < kProbeHeaderBytes || Get(in, 4) != magic) return false;
  h->kind = in[4];
  h->dscp = in[5];
  h->port = static_cast<uint16_t>(Get(in + 6, 2));
  h->seq = Get(in + 8, 8);
  h->delay_ns = static_cast<int64_t>(Get(in + 16, 8));
  h->source = in[24];
  return h->kind >= kProbe && h->kind <= kAck2;
}

WireSource ToWire(TimestampSource source) {
  switch (source) {
    case TimestampSource::kHardware:
      return kWireHardware;
    case TimestampSource::kSoftware:
      return kWireSoftware;
    case TimestampSource::kUser:
      return kWireUser;
  }
  return kWireUser;
}

ProbeMeasurement CompleteMeasurement(const ProbeMeasurement& ack1, const ProbeHeader& reply,
                                     int64_t net_span_ns, int64_t user_span_ns,
                                     TimestampSource prober_timestamps) {
  ProbeMeasurement m = ack1;
  m.responder_host_delay = absl::Nanoseconds(reply.delay_ns);
  m.network_rtt = absl::Nanoseconds(std::max<int64_t>(0, net_span_ns - reply.delay_ns));
  m.sender_host_delay = absl::Nanoseconds(std::max<int64_t>(0, user_span_ns - net_span_ns));
  m.timestamps = std::max(prober_timestamps, FromWire(reply.source));
  m.final = reply.kind == kAck2;
  return m;
}

TimestampSource FromWire(uint8_t source) {
  return source == kWireHardware   ? TimestampSource::kHardware
         : source == kWireSoftware ? TimestampSource::kSoftware
                                   : TimestampSource::kUser;
}

int64_t RealtimeNs() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

}  // namespace weft::agent::probe
