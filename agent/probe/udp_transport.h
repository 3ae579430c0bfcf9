// The UDP pingmesh transport over real sockets: UdpProber sends probes and measures
// their replies; UdpResponder answers them. Both ask the kernel for timestamps
// (SO_TIMESTAMPING: software receive and transmit stamps, and the NIC's hardware ones
// where the device has hardware stamping on: a measurement uses hardware when both
// ends of a difference have them, else software, else userspace clock reads), so the
// network's round trip is told apart from each host's processing
// (agent/probe/probe_transport.h has the arithmetic).
//
// The prober binds one socket per (source address, source port) the pinglist names:
// the source port is part of the 5-tuple an ECMP switch hashes, so it pins the path.
// Each probe carries the DSCP of its class in the IP ToS byte (IPv6: traffic class),
// set on the socket before the send; the responder reads the DSCP and source port
// the probe arrived with (IP_RECVTOS, recvmsg's address), answers in the same class,
// and echoes both, so the prober sees re-marking or source NAT.
//
// Wire format (64 bytes, big-endian): magic "WFTP", kind (1 probe, 2 ACK1, 3 ACK2),
// DSCP seen, source port seen, seq (u64), responder delay in ns (i64), and which
// timestamps measured it; the rest zero. Anything else is ignored.
//
// Traceroute (TraceTransport): a trace packet is a probe whose seq has the top bit set
// and carries the trace's token and TTL, sent from the flow's own socket with the IP TTL
// set for that one send, so it takes the probes' ECMP path. Routers' ICMP time-exceeded
// come back on the socket's error queue (IP_RECVERR: sock_extended_err with
// SO_EE_ORIGIN_ICMP, the router from SO_EE_OFFENDER, the packet's payload naming the
// trace), no raw socket needed; the responder answers a trace packet that reaches it as
// any probe. IP_RECVERR also makes an ICMP error fail the socket's next send once
// (sk_err): Send retries that once.
//
// Thread-safety: see ProbeTransport. UdpResponder runs its own thread.
#ifndef WEFT_AGENT_PROBE_UDP_TRANSPORT_H_
#define WEFT_AGENT_PROBE_UDP_TRANSPORT_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "agent/probe/probe_transport.h"
#include "agent/probe/trace_transport.h"

namespace weft::agent::probe {

inline constexpr size_t kUdpProbeBytes = 64;

// A socket's kernel timestamps of one packet, ns since the epoch (0: absent).
struct PacketTimes {
  int64_t software_ns = 0;
  int64_t hardware_ns = 0;
};

class UdpProber : public ProbeTransport, public TraceTransport {
 public:
  // Fails when epoll or the wake-up eventfd cannot be made.
  static absl::StatusOr<std::unique_ptr<UdpProber>> Create();
  ~UdpProber() override;

  absl::Status Send(const ProbeFlow& flow, uint64_t seq) override;
  std::vector<ProbeMeasurement> Receive(absl::Duration timeout) override;
  void Forget(uint64_t seq) override;
  void Wake() override;

  absl::Status SendTrace(const ProbeFlow& flow, uint64_t token, int ttl) override;
  std::vector<TraceReply> TakeTraceReplies() override;

  // The local address:port of the socket that probes `flow` ("" before its first
  // probe), as getsockname reports it.
  std::string LocalAddressOf(const ProbeFlow& flow) const;

 private:
  struct Socket {
    int fd = -1;
    int family = 0;
    int tos = -1;          // the ToS/traffic class set now (-1: never set)
    uint32_t next_id = 0;  // SOF_TIMESTAMPING_OPT_ID of the next send
    std::map<uint32_t, uint64_t> seq_of_id;
  };
  struct InFlight {
    int fd = -1;
    int64_t t1_ns = 0;  // userspace, just before sendto
    PacketTimes t2;     // the kernel's / NIC's transmit stamp
    // After ACK1: what it measured, for ACK2 to complete.
    bool have_ack1 = false;
    ProbeMeasurement ack1;
    int64_t net_span_ns = 0;   // T5 − T2 on the better clock
    int64_t user_span_ns = 0;  // T6 − T1
    TimestampSource source = TimestampSource::kUser;
  };
  using SocketKey = std::tuple<std::string, uint16_t, int>;  // address, port, family

  UdpProber(int epoll_fd, int wake_fd);
  absl::StatusOr<Socket*> SocketFor(const ProbeFlow& flow, int family)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Sends `seq` on `flow`'s socket with IP TTL `ttl` (0: the default); `t1_ns` gets the
  // userspace send time.
  absl::StatusOr<Socket*> SendPacket(const ProbeFlow& flow, uint64_t seq, int ttl,
                                     int64_t* t1_ns) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void DrainErrorQueue(Socket* socket) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void DrainReplies(Socket* socket, std::vector<ProbeMeasurement>* out)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const int epoll_fd_;
  const int wake_fd_;
  mutable absl::Mutex mu_;
  std::map<SocketKey, Socket> sockets_ ABSL_GUARDED_BY(mu_);
  std::map<int, Socket*> by_fd_ ABSL_GUARDED_BY(mu_);
  std::map<uint64_t, InFlight> in_flight_ ABSL_GUARDED_BY(mu_);
  std::vector<TraceReply> trace_replies_ ABSL_GUARDED_BY(mu_);
};

class UdpResponder {
 public:
  // Binds `bind_address` ("0.0.0.0", "::", a local address) on `port` (0: any free
  // one) and starts answering. UNAVAILABLE naming the address and the reason when
  // the port cannot be bound.
  static absl::StatusOr<std::unique_ptr<UdpResponder>> Start(const std::string& bind_address,
                                                             uint16_t port);
  ~UdpResponder();  // stops

  uint16_t port() const { return port_; }
  uint64_t probes_answered() const { return answered_.load(); }

 private:
  struct Ack1 {
    uint64_t seq = 0;
    std::string peer;  // sockaddr bytes
    PacketTimes t3;
    int tos = 0;
    uint16_t seen_port = 0;
    uint8_t seen_dscp = 0;
  };

  UdpResponder(int fd, int family, int epoll_fd, int wake_fd, uint16_t port);
  void Run();
  void AnswerProbes();
  void SendAck2s();
  void SetTos(int tos);

  const int fd_;
  const int family_;
  const int epoll_fd_;
  const int wake_fd_;
  const uint16_t port_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> answered_{0};
  // Responder thread only.
  int tos_ = -1;
  uint32_t next_id_ = 0;
  std::map<uint32_t, std::optional<Ack1>> sent_;  // OPT_ID -> ACK1 (nullopt: an ACK2)
  std::thread thread_;
};

}  // namespace weft::agent::probe

#endif  // WEFT_AGENT_PROBE_UDP_TRANSPORT_H_
