#include "agent/probe/udp_transport.h"

#include <arpa/inet.h>
#include <linux/errqueue.h>
#include <linux/net_tstamp.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "agent/probe/probe_wire.h"
#include "common/logging.h"

namespace weft::agent::probe {
namespace {

constexpr uint32_t kMagic = 0x57465450;  // "WFTP"
// A trace packet's seq: this bit, the token above the low 8 bits, the TTL in them.
constexpr uint64_t kTraceSeqBit = uint64_t{1} << 63;

bool IsTraceSeq(uint64_t seq) { return (seq & kTraceSeqBit) != 0; }
uint64_t TraceTokenOf(uint64_t seq) { return (seq & ~kTraceSeqBit) >> 8; }
int TraceTtlOf(uint64_t seq) { return static_cast<int>(seq & 0xff); }

// Errors a queued ICMP error (IP_RECVERR sets the socket's sk_err) makes the next send
// fail with, though the send itself was fine.
bool IsIcmpErrno(int e) {
  return e == EHOSTUNREACH || e == ENETUNREACH || e == ECONNREFUSED || e == EPROTO;
}
// Sends remembered for their transmit stamps before the oldest are given up.
constexpr size_t kMaxRemembered = 4096;

// Header fields on this transport: dscp = the DSCP the probe arrived with, port = the
// source port the responder saw.
void Encode(const ProbeHeader& header, uint8_t (&out)[kUdpProbeBytes]) {
  std::memset(out, 0, sizeof(out));
  EncodeProbeHeader(kMagic, header, out);
}

int64_t ToNs(const timespec& ts) {
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

absl::Status ErrnoError(absl::string_view what, int errno_value) {
  return absl::UnavailableError(
      absl::StrCat(what, ": ", std::strerror(errno_value), " (errno ", errno_value, ")"));
}

// Parses a numeric IPv4 or IPv6 address; "" is the wildcard of `family_hint`.
bool ParseAddress(const std::string& text, uint16_t port, int family_hint, sockaddr_storage* out,
                  socklen_t* len) {
  std::memset(out, 0, sizeof(*out));
  auto* v4 = reinterpret_cast<sockaddr_in*>(out);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(out);
  if ((text.empty() && family_hint == AF_INET) ||
      inet_pton(AF_INET, text.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(port);
    *len = sizeof(sockaddr_in);
    return true;
  }
  if (text.empty() || inet_pton(AF_INET6, text.c_str(), &v6->sin6_addr) == 1) {
    if (text.empty()) v6->sin6_addr = in6addr_any;
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(port);
    *len = sizeof(sockaddr_in6);
    return true;
  }
  return false;
}

uint16_t PortOf(const sockaddr_storage& addr) {
  return ntohs(addr.ss_family == AF_INET ? reinterpret_cast<const sockaddr_in&>(addr).sin_port
                                         : reinterpret_cast<const sockaddr_in6&>(addr).sin6_port);
}

// The numeric address alone ("10.0.0.1", "fe80::1"); "" for another family.
std::string HostOf(const sockaddr_storage& addr) {
  char text[INET6_ADDRSTRLEN] = {};
  if (addr.ss_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in&>(addr).sin_addr, text, sizeof(text));
  } else if (addr.ss_family == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6&>(addr).sin6_addr, text,
              sizeof(text));
  }
  return text;
}

std::string FormatAddress(const sockaddr_storage& addr) {
  if (addr.ss_family == AF_INET) return absl::StrCat(HostOf(addr), ":", PortOf(addr));
  return absl::StrCat("[", HostOf(addr), "]:", PortOf(addr));
}

// Receive and transmit stamps, software and the NIC's (where hardware stamping is on),
// each transmit stamp keyed by a per-socket send counter (OPT_ID) and without the
// packet's bytes (OPT_TSONLY).
absl::Status EnableTimestamps(int fd) {
  const int flags = SOF_TIMESTAMPING_TX_SOFTWARE | SOF_TIMESTAMPING_RX_SOFTWARE |
                    SOF_TIMESTAMPING_SOFTWARE | SOF_TIMESTAMPING_TX_HARDWARE |
                    SOF_TIMESTAMPING_RX_HARDWARE | SOF_TIMESTAMPING_RAW_HARDWARE |
                    SOF_TIMESTAMPING_OPT_ID | SOF_TIMESTAMPING_OPT_TSONLY;
  if (setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPING, &flags, sizeof(flags)) != 0) {
    return ErrnoError("setsockopt(SO_TIMESTAMPING)", errno);
  }
  return absl::OkStatus();
}

// ICMP errors of the socket's sends on its error queue (traceroute), IPv4 or IPv6.
absl::Status EnableIcmpErrors(int fd, int family) {
  const int on = 1;
  const int level = family == AF_INET ? IPPROTO_IP : IPPROTO_IPV6;
  const int name = family == AF_INET ? IP_RECVERR : IPV6_RECVERR;
  if (setsockopt(fd, level, name, &on, sizeof(on)) != 0) {
    return ErrnoError(family == AF_INET ? "setsockopt(IP_RECVERR)" : "setsockopt(IPV6_RECVERR)",
                      errno);
  }
  return absl::OkStatus();
}

// The IP TTL (IPv6: hop limit) of the socket's next sends; -1 restores the default.
absl::Status SetSocketTtl(int fd, int family, int ttl) {
  const int level = family == AF_INET ? IPPROTO_IP : IPPROTO_IPV6;
  const int name = family == AF_INET ? IP_TTL : IPV6_UNICAST_HOPS;
  if (setsockopt(fd, level, name, &ttl, sizeof(ttl)) != 0) {
    return ErrnoError(family == AF_INET ? "setsockopt(IP_TTL)" : "setsockopt(IPV6_UNICAST_HOPS)",
                      errno);
  }
  return absl::OkStatus();
}

absl::Status SetSocketTos(int fd, int family, int tos) {
  const int level = family == AF_INET ? IPPROTO_IP : IPPROTO_IPV6;
  const int name = family == AF_INET ? IP_TOS : IPV6_TCLASS;
  if (setsockopt(fd, level, name, &tos, sizeof(tos)) != 0) {
    return ErrnoError(family == AF_INET ? "setsockopt(IP_TOS)" : "setsockopt(IPV6_TCLASS)",
                      errno);
  }
  return absl::OkStatus();
}

struct Received {
  PacketTimes times;
  int tos = -1;
  std::optional<uint32_t> tx_id;  // error queue: which send this stamp belongs to
  // Error queue: an ICMP error about one of our packets (its payload is the packet's).
  bool icmp = false;
  bool time_exceeded = false;     // a router on the way: `router`
  bool port_unreachable = false;  // the destination host, with no socket on the port
  std::string router;             // SO_EE_OFFENDER
};

Received ParseControl(msghdr* msg) {
  Received out;
  for (cmsghdr* c = CMSG_FIRSTHDR(msg); c != nullptr; c = CMSG_NXTHDR(msg, c)) {
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPING) {
      scm_timestamping ts{};
      std::memcpy(&ts, CMSG_DATA(c), sizeof(ts));
      out.times.software_ns = ToNs(ts.ts[0]);
      out.times.hardware_ns = ToNs(ts.ts[2]);
    } else if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TOS) {
      out.tos = *reinterpret_cast<const uint8_t*>(CMSG_DATA(c));
    } else if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_TCLASS) {
      int tclass = 0;
      std::memcpy(&tclass, CMSG_DATA(c), sizeof(tclass));
      out.tos = tclass;
    } else if ((c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_RECVERR) ||
               (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_RECVERR)) {
      sock_extended_err err{};
      std::memcpy(&err, CMSG_DATA(c), sizeof(err));
      if (err.ee_origin == SO_EE_ORIGIN_TIMESTAMPING) out.tx_id = err.ee_data;
      if (err.ee_origin == SO_EE_ORIGIN_ICMP || err.ee_origin == SO_EE_ORIGIN_ICMP6) {
        const bool v6 = err.ee_origin == SO_EE_ORIGIN_ICMP6;
        out.icmp = true;
        // ICMP time exceeded: type 11 (ICMPv6: 3); port unreachable: 3/3 (ICMPv6: 1/4).
        out.time_exceeded = err.ee_type == (v6 ? 3 : 11);
        out.port_unreachable = v6 ? (err.ee_type == 1 && err.ee_code == 4)
                                  : (err.ee_type == 3 && err.ee_code == 3);
        // The offender's sockaddr follows the sock_extended_err.
        sockaddr_storage offender{};
        const size_t after = c->cmsg_len > CMSG_LEN(sizeof(err))
                                 ? c->cmsg_len - CMSG_LEN(sizeof(err))
                                 : 0;
        std::memcpy(&offender, CMSG_DATA(c) + sizeof(err), std::min(after, sizeof(offender)));
        out.router = HostOf(offender);
      }
    }
  }
  return out;
}

// One recvmsg (non-blocking). Returns the byte count, or -1 when nothing is queued.
ssize_t ReceiveOne(int fd, int flags, uint8_t* data, size_t size, sockaddr_storage* from,
                   Received* received) {
  iovec iov{data, size};
  alignas(cmsghdr) char control[512];
  msghdr msg{};
  msg.msg_name = from;
  msg.msg_namelen = from != nullptr ? sizeof(*from) : 0;
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  const ssize_t n = recvmsg(fd, &msg, flags | MSG_DONTWAIT);
  if (n < 0) return -1;
  *received = ParseControl(&msg);
  return n;
}

// The difference b − a on the best clock both have; nullopt when neither does.
std::optional<std::pair<int64_t, TimestampSource>> Span(const PacketTimes& a,
                                                        const PacketTimes& b) {
  if (a.hardware_ns != 0 && b.hardware_ns != 0) {
    return std::make_pair(b.hardware_ns - a.hardware_ns, TimestampSource::kHardware);
  }
  if (a.software_ns != 0 && b.software_ns != 0) {
    return std::make_pair(b.software_ns - a.software_ns, TimestampSource::kSoftware);
  }
  return std::nullopt;
}

absl::StatusOr<std::pair<int, int>> MakeEpollAndWake() {
  const int epoll_fd = epoll_create1(EPOLL_CLOEXEC);
  if (epoll_fd < 0) return ErrnoError("epoll_create1", errno);
  const int wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd < 0) {
    const int e = errno;
    close(epoll_fd);
    return ErrnoError("eventfd", e);
  }
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = wake_fd;
  epoll_ctl(epoll_fd, EPOLL_CTL_ADD, wake_fd, &ev);
  return std::make_pair(epoll_fd, wake_fd);
}

void DrainWake(int wake_fd) {
  uint64_t value = 0;
  while (read(wake_fd, &value, sizeof(value)) > 0) {
  }
}

}  // namespace

// ---------------------------------------------------------------------------------
// UdpProber

absl::StatusOr<std::unique_ptr<UdpProber>> UdpProber::Create() {
  absl::StatusOr<std::pair<int, int>> fds = MakeEpollAndWake();
  if (!fds.ok()) return fds.status();
  return std::unique_ptr<UdpProber>(new UdpProber(fds->first, fds->second));
}

UdpProber::UdpProber(int epoll_fd, int wake_fd) : epoll_fd_(epoll_fd), wake_fd_(wake_fd) {}

UdpProber::~UdpProber() {
  for (auto& [key, socket] : sockets_) close(socket.fd);
  close(wake_fd_);
  close(epoll_fd_);
}

absl::StatusOr<UdpProber::Socket*> UdpProber::SocketFor(const ProbeFlow& flow, int family) {
  const SocketKey key(flow.source_address, flow.source_port, family);
  auto it = sockets_.find(key);
  if (it != sockets_.end()) return &it->second;
  sockaddr_storage local;
  socklen_t local_len = 0;
  if (!ParseAddress(flow.source_address, flow.source_port, family, &local, &local_len) ||
      local.ss_family != family) {
    return absl::InvalidArgumentError(
        absl::StrCat("source address '", flow.source_address,
                     "' is not a numeric address of the peer's family"));
  }
  const int fd = socket(family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return ErrnoError("socket(SOCK_DGRAM)", errno);
  if (bind(fd, reinterpret_cast<sockaddr*>(&local), local_len) != 0) {
    const int e = errno;
    close(fd);
    return ErrnoError(absl::StrCat("bind ", FormatAddress(local)), e);
  }
  if (absl::Status stamped = EnableTimestamps(fd); !stamped.ok()) {
    close(fd);
    return stamped;
  }
  if (absl::Status icmp = EnableIcmpErrors(fd, family); !icmp.ok()) {
    close(fd);
    return icmp;
  }
  epoll_event ev{};
  ev.events = EPOLLIN;  // EPOLLERR (a transmit stamp queued) is always reported
  ev.data.fd = fd;
  if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
    const int e = errno;
    close(fd);
    return ErrnoError("epoll_ctl(ADD)", e);
  }
  Socket& socket = sockets_[key];
  socket.fd = fd;
  socket.family = family;
  by_fd_[fd] = &socket;
  return &socket;
}

absl::StatusOr<UdpProber::Socket*> UdpProber::SendPacket(const ProbeFlow& flow, uint64_t seq,
                                                         int ttl, int64_t* t1_ns) {
  sockaddr_storage peer;
  socklen_t peer_len = 0;
  if (!ParseAddress(flow.peer_address, flow.peer_port, AF_INET, &peer, &peer_len) ||
      flow.peer_address.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("peer address '", flow.peer_address, "' is not a numeric IP address"));
  }
  absl::StatusOr<Socket*> socket = SocketFor(flow, peer.ss_family);
  if (!socket.ok()) return socket.status();
  Socket& s = **socket;
  const int tos = flow.dscp << 2;
  if (s.tos != tos) {
    if (absl::Status set = SetSocketTos(s.fd, s.family, tos); !set.ok()) return set;
    s.tos = tos;
  }
  if (ttl > 0) {
    if (absl::Status set = SetSocketTtl(s.fd, s.family, ttl); !set.ok()) return set;
  }
  ProbeHeader packet;
  packet.kind = kProbe;
  packet.seq = seq;
  uint8_t bytes[kUdpProbeBytes];
  Encode(packet, bytes);
  *t1_ns = RealtimeNs();
  auto send = [&] {
    return sendto(s.fd, bytes, sizeof(bytes), 0, reinterpret_cast<sockaddr*>(&peer), peer_len);
  };
  ssize_t sent = send();
  // An ICMP error queued for an earlier packet fails this send once; send it again.
  if (sent < 0 && IsIcmpErrno(errno)) sent = send();
  const int send_errno = errno;
  if (ttl > 0) SetSocketTtl(s.fd, s.family, -1).IgnoreError();  // every later send: default
  if (sent < 0) return ErrnoError(absl::StrCat("sendto ", FormatAddress(peer)), send_errno);
  s.seq_of_id[s.next_id++] = seq;
  if (s.seq_of_id.size() > kMaxRemembered) s.seq_of_id.erase(s.seq_of_id.begin());
  return &s;
}

absl::Status UdpProber::Send(const ProbeFlow& flow, uint64_t seq) {
  absl::MutexLock lock(&mu_);
  int64_t t1 = 0;
  absl::StatusOr<Socket*> socket = SendPacket(flow, seq, 0, &t1);
  if (!socket.ok()) return socket.status();
  InFlight& f = in_flight_[seq];
  f.fd = (*socket)->fd;
  f.t1_ns = t1;
  return absl::OkStatus();
}

absl::Status UdpProber::SendTrace(const ProbeFlow& flow, uint64_t token, int ttl) {
  if (token > kMaxTraceToken || ttl < 1 || ttl > kMaxTraceTtl) {
    return absl::InvalidArgumentError(absl::StrCat("trace of ", flow.ToString(), ": token ",
                                                   token, " or TTL ", ttl, " out of range"));
  }
  absl::MutexLock lock(&mu_);
  int64_t t1 = 0;
  return SendPacket(flow, kTraceSeqBit | (token << 8) | static_cast<uint64_t>(ttl), ttl, &t1)
      .status();
}

std::vector<TraceReply> UdpProber::TakeTraceReplies() {
  absl::MutexLock lock(&mu_);
  std::vector<TraceReply> out;
  out.swap(trace_replies_);
  return out;
}

void UdpProber::DrainErrorQueue(Socket* socket) {
  uint8_t data[kUdpProbeBytes];
  Received received;
  ssize_t n = 0;
  while ((n = ReceiveOne(socket->fd, MSG_ERRQUEUE, data, sizeof(data), nullptr, &received)) >=
         0) {
    ProbeHeader packet;
    if (received.icmp && (received.time_exceeded || received.port_unreachable) &&
        DecodeProbeHeader(kMagic, data, static_cast<size_t>(n), &packet) &&
        IsTraceSeq(packet.seq)) {
      trace_replies_.push_back(TraceReply{TraceTokenOf(packet.seq), TraceTtlOf(packet.seq),
                                          received.time_exceeded ? received.router : "",
                                          received.port_unreachable});
      continue;
    }
    if (!received.tx_id.has_value()) continue;
    auto id = socket->seq_of_id.find(*received.tx_id);
    if (id == socket->seq_of_id.end()) continue;
    auto f = in_flight_.find(id->second);
    if (f != in_flight_.end()) {
      if (received.times.software_ns != 0) f->second.t2.software_ns = received.times.software_ns;
      if (received.times.hardware_ns != 0) f->second.t2.hardware_ns = received.times.hardware_ns;
    }
    // A software and a hardware stamp may each come: keep the id until the probe ends.
  }
}

void UdpProber::DrainReplies(Socket* socket, std::vector<ProbeMeasurement>* out) {
  uint8_t data[kUdpProbeBytes];
  sockaddr_storage from;
  Received received;
  while (true) {
    const ssize_t n = ReceiveOne(socket->fd, 0, data, sizeof(data), &from, &received);
    if (n < 0) break;
    const int64_t t6 = RealtimeNs();
    ProbeHeader packet;
    if (!DecodeProbeHeader(kMagic, data, n, &packet) || packet.kind == kProbe) continue;
    if (IsTraceSeq(packet.seq)) {
      if (packet.kind == kAck1) {
        trace_replies_.push_back(
            TraceReply{TraceTokenOf(packet.seq), TraceTtlOf(packet.seq), "", true});
      }
      continue;
    }
    auto it = in_flight_.find(packet.seq);
    if (it == in_flight_.end() || it->second.fd != socket->fd) continue;
    InFlight& f = it->second;
    if (packet.kind == kAck1 && !f.have_ack1) {
      f.user_span_ns = t6 - f.t1_ns;
      f.net_span_ns = f.user_span_ns;
      f.source = TimestampSource::kUser;
      // T5 − T2 on the NIC's or the kernel's clock when both stamps are there.
      if (auto span = Span(f.t2, received.times)) std::tie(f.net_span_ns, f.source) = *span;
      ProbeMeasurement& m = f.ack1;
      m.seq = packet.seq;
      m.dscp_at_responder = packet.dscp;
      m.source_port_at_responder = packet.port;
      f.have_ack1 = true;
    } else if (packet.kind != kAck2 || !f.have_ack1) {
      continue;  // a duplicate ACK1, or an ACK2 overtaking its ACK1
    }
    const ProbeMeasurement m =
        CompleteMeasurement(f.ack1, packet, f.net_span_ns, f.user_span_ns, f.source);
    out->push_back(m);
    if (m.final) in_flight_.erase(it);
  }
}

std::vector<ProbeMeasurement> UdpProber::Receive(absl::Duration timeout) {
  std::vector<ProbeMeasurement> out;
  epoll_event events[32];
  const int n = epoll_wait(epoll_fd_, events, 32,
                           static_cast<int>(absl::ToInt64Milliseconds(timeout)));
  if (n <= 0) return out;
  absl::MutexLock lock(&mu_);
  for (int i = 0; i < n; ++i) {
    const int fd = events[i].data.fd;
    if (fd == wake_fd_) {
      DrainWake(wake_fd_);
      continue;
    }
    auto socket = by_fd_.find(fd);
    if (socket == by_fd_.end()) continue;
    // Transmit stamps first: a reply on loopback can be queued before we read them.
    DrainErrorQueue(socket->second);
    DrainReplies(socket->second, &out);
  }
  return out;
}

void UdpProber::Forget(uint64_t seq) {
  absl::MutexLock lock(&mu_);
  in_flight_.erase(seq);
}

void UdpProber::Wake() {
  const uint64_t one = 1;
  if (write(wake_fd_, &one, sizeof(one)) < 0) {
    // The counter is full: a wake-up is pending anyway.
  }
}

std::string UdpProber::LocalAddressOf(const ProbeFlow& flow) const {
  absl::MutexLock lock(&mu_);
  for (const auto& [key, socket] : sockets_) {
    if (std::get<0>(key) != flow.source_address || std::get<1>(key) != flow.source_port) continue;
    sockaddr_storage local;
    socklen_t len = sizeof(local);
    if (getsockname(socket.fd, reinterpret_cast<sockaddr*>(&local), &len) != 0) return "";
    return FormatAddress(local);
  }
  return "";
}

// ---------------------------------------------------------------------------------
// UdpResponder

absl::StatusOr<std::unique_ptr<UdpResponder>> UdpResponder::Start(const std::string& bind_address,
                                                                  uint16_t port) {
  sockaddr_storage local;
  socklen_t local_len = 0;
  if (!ParseAddress(bind_address, port, AF_INET, &local, &local_len)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "pingmesh responder: bind address '", bind_address, "' is not a numeric IP address"));
  }
  const int family = local.ss_family;
  const int fd = socket(family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return ErrnoError("pingmesh responder: socket(SOCK_DGRAM)", errno);
  auto fail = [fd](absl::Status status) {
    close(fd);
    return status;
  };
  if (bind(fd, reinterpret_cast<sockaddr*>(&local), local_len) != 0) {
    return fail(ErrnoError(absl::StrCat("pingmesh responder: bind UDP ", FormatAddress(local)),
                           errno));
  }
  const int on = 1;
  const int level = family == AF_INET ? IPPROTO_IP : IPPROTO_IPV6;
  const int recv_tos = family == AF_INET ? IP_RECVTOS : IPV6_RECVTCLASS;
  if (setsockopt(fd, level, recv_tos, &on, sizeof(on)) != 0) {
    return fail(ErrnoError("pingmesh responder: setsockopt(IP_RECVTOS)", errno));
  }
  if (absl::Status stamped = EnableTimestamps(fd); !stamped.ok()) return fail(stamped);
  socklen_t len = sizeof(local);
  getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len);
  absl::StatusOr<std::pair<int, int>> fds = MakeEpollAndWake();
  if (!fds.ok()) return fail(fds.status());
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = fd;
  epoll_ctl(fds->first, EPOLL_CTL_ADD, fd, &ev);
  std::unique_ptr<UdpResponder> responder(
      new UdpResponder(fd, family, fds->first, fds->second, PortOf(local)));
  responder->thread_ = std::thread([r = responder.get()] { r->Run(); });
  return responder;
}

UdpResponder::UdpResponder(int fd, int family, int epoll_fd, int wake_fd, uint16_t port)
    : fd_(fd), family_(family), epoll_fd_(epoll_fd), wake_fd_(wake_fd), port_(port) {}

UdpResponder::~UdpResponder() {
  stop_ = true;
  const uint64_t one = 1;
  if (write(wake_fd_, &one, sizeof(one)) < 0) {
    // Full counter: already woken.
  }
  if (thread_.joinable()) thread_.join();
  close(fd_);
  close(wake_fd_);
  close(epoll_fd_);
}

void UdpResponder::Run() {
  epoll_event events[4];
  while (!stop_) {
    const int n = epoll_wait(epoll_fd_, events, 4, 1000);
    for (int i = 0; i < n; ++i) {
      if (events[i].data.fd == wake_fd_) DrainWake(wake_fd_);
    }
    AnswerProbes();
    SendAck2s();
  }
}

void UdpResponder::SetTos(int tos) {
  if (tos == tos_) return;
  if (SetSocketTos(fd_, family_, tos).ok()) tos_ = tos;
}

void UdpResponder::AnswerProbes() {
  uint8_t data[kUdpProbeBytes];
  sockaddr_storage from;
  Received received;
  while (true) {
    const ssize_t n = ReceiveOne(fd_, 0, data, sizeof(data), &from, &received);
    if (n < 0) return;
    ProbeHeader probe;
    if (!DecodeProbeHeader(kMagic, data, n, &probe) || probe.kind != kProbe) continue;
    Ack1 ack;
    ack.seq = probe.seq;
    ack.peer.assign(reinterpret_cast<const char*>(&from),
                    from.ss_family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6));
    ack.t3 = received.times;
    ack.tos = std::max(received.tos, 0);
    ack.seen_dscp = static_cast<uint8_t>(ack.tos >> 2);
    ack.seen_port = PortOf(from);
    // Answer in the class the probe arrived in, so the reply tests it too.
    SetTos(ack.tos);
    ProbeHeader reply;
    reply.kind = kAck1;
    reply.seq = ack.seq;
    reply.dscp = ack.seen_dscp;
    reply.port = ack.seen_port;
    // Until ACK2: the userspace estimate of T4 − T3 (the kernel's T3, our send now).
    reply.delay_ns = ack.t3.software_ns != 0 ? RealtimeNs() - ack.t3.software_ns : 0;
    reply.source = kWireUser;
    uint8_t bytes[kUdpProbeBytes];
    Encode(reply, bytes);
    if (sendto(fd_, bytes, sizeof(bytes), 0, reinterpret_cast<const sockaddr*>(ack.peer.data()),
               static_cast<socklen_t>(ack.peer.size())) < 0) {
      continue;
    }
    answered_.fetch_add(1);
    sent_[next_id_++] = std::move(ack);
    if (sent_.size() > kMaxRemembered) sent_.erase(sent_.begin());
  }
}

void UdpResponder::SendAck2s() {
  uint8_t data[kUdpProbeBytes];
  Received received;
  while (ReceiveOne(fd_, MSG_ERRQUEUE, data, sizeof(data), nullptr, &received) >= 0) {
    if (!received.tx_id.has_value()) continue;
    auto it = sent_.find(*received.tx_id);
    if (it == sent_.end() || !it->second.has_value()) continue;  // an ACK2's own stamp
    const Ack1 ack = *it->second;
    sent_.erase(it);
    const std::optional<std::pair<int64_t, TimestampSource>> span = Span(ack.t3, received.times);
    if (!span.has_value()) continue;  // no stamps on this side: ACK1's estimate stands
    ProbeHeader reply;
    reply.kind = kAck2;
    reply.seq = ack.seq;
    reply.dscp = ack.seen_dscp;
    reply.port = ack.seen_port;
    reply.delay_ns = span->first;
    reply.source = ToWire(span->second);
    SetTos(ack.tos);
    uint8_t bytes[kUdpProbeBytes];
    Encode(reply, bytes);
    if (sendto(fd_, bytes, sizeof(bytes), 0, reinterpret_cast<const sockaddr*>(ack.peer.data()),
               static_cast<socklen_t>(ack.peer.size())) >= 0) {
      sent_[next_id_++] = std::nullopt;
      if (sent_.size() > kMaxRemembered) sent_.erase(sent_.begin());
    }
  }
}

}  // namespace weft::agent::probe
