// ProbeTransport: how the pingmesh prober (agent/probe/prober.h) sends probes and
// learns what their replies measured, whatever carries them: real UDP sockets
// (agent/probe/udp_transport.h) or an RDMA UD QP (agent/probe/ud_transport.h).
//
// A probe is answered twice (R-Pingmesh's scheme): ACK1 as soon as the responder
// received it, carrying the responder's receive time T3; ACK2 once ACK1's send was
// timestamped, carrying T4 − T3. With T1/T2 the prober's userspace and NIC/kernel
// send times and T5/T6 the NIC/kernel and userspace receive times of ACK1:
//   network RTT         = (T5 − T2) − (T4 − T3)
//   sender host delay   = (T6 − T1) − (T5 − T2)
//   responder host delay = T4 − T3
// Every difference is taken on one host's clock, so no clock sync is needed. A
// transport reports a measurement at ACK1 (T4 estimated by the responder's userspace
// send time, `final` false) and again at ACK2 (`final` true); the prober keeps the last.
//
// Thread-safety: Send() from one thread (the prober's sender) while one other thread
// is in Receive(); Wake() from any thread.
#ifndef WEFT_AGENT_PROBE_PROBE_TRANSPORT_H_
#define WEFT_AGENT_PROBE_PROBE_TRANSPORT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "proto/weft/v1/probe.pb.h"

namespace weft::agent::probe {

// One probe flow: a peer NIC, the source port that pins its ECMP path and the DSCP of
// the class it tests.
struct ProbeFlow {
  std::string peer_node;
  std::string peer_nic;
  std::string peer_address;
  uint16_t peer_port = 0;
  std::string source_nic;
  std::string source_address;  // "" lets routing choose
  uint16_t source_port = 0;
  uint8_t dscp = 0;
  weft::v1::ProbeTransport transport = weft::v1::PROBE_TRANSPORT_UDP;
  std::string peer_gid;  // RDMA UD only
  uint32_t peer_qpn = 0;  // RDMA UD only

  // "node/nic address:port sport=S dscp=D", for logs and errors.
  std::string ToString() const;
  friend bool operator<(const ProbeFlow& a, const ProbeFlow& b);
  friend bool operator==(const ProbeFlow& a, const ProbeFlow& b);
};

// Names `flow` in a report proto (weft.v1.ProbeWindow, weft.v1.ProbePathTrace: the same
// flow fields): peer node, NIC and address, source NIC, address and port, DSCP.
template <typename FlowReport>
void SetFlowFields(const ProbeFlow& flow, FlowReport* out) {
  out->set_peer_node(flow.peer_node);
  out->set_peer_nic(flow.peer_nic);
  out->set_peer_address(flow.peer_address);
  out->set_source_nic(flow.source_nic);
  out->set_source_address(flow.source_address);
  out->set_source_port(flow.source_port);
  out->set_dscp(flow.dscp);
}

// Which clock took the send and receive timestamps of a measurement.
enum class TimestampSource { kHardware, kSoftware, kUser };
const char* TimestampSourceName(TimestampSource source);

struct ProbeMeasurement {
  uint64_t seq = 0;
  absl::Duration network_rtt;
  absl::Duration sender_host_delay;
  absl::Duration responder_host_delay;
  TimestampSource timestamps = TimestampSource::kUser;
  // The DSCP the probe carried when it reached the responder, and the source port the
  // responder saw (what the fabric did to the probe).
  uint8_t dscp_at_responder = 0;
  uint16_t source_port_at_responder = 0;
  bool final = false;  // ACK2: the responder's delay is its NIC/kernel timestamps'
};

class ProbeTransport {
 public:
  virtual ~ProbeTransport() = default;

  // Sends probe `seq` (unique while in flight) on `flow`. An error names the flow and
  // the failing call (a source port in use, an unreachable address); nothing was sent.
  virtual absl::Status Send(const ProbeFlow& flow, uint64_t seq) = 0;

  // Waits up to `timeout` of real time for replies, and returns what arrived (empty
  // on timeout or Wake()).
  virtual std::vector<ProbeMeasurement> Receive(absl::Duration timeout) = 0;

  // The prober gave up on `seq` (timed out): a late reply is ignored.
  virtual void Forget(uint64_t seq) = 0;

  // Makes a Receive() in progress return now.
  virtual void Wake() = 0;
};

}  // namespace weft::agent::probe

#endif  // WEFT_AGENT_PROBE_PROBE_TRANSPORT_H_
