#include "datapath/transport/tcp_transport.h"

#include <endian.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "common/status_macros.h"

namespace weft::datapath {
namespace {

constexpr uint32_t kHelloMagic = 0x32544657;    // "WFT2": the data connection
constexpr uint32_t kControlMagic = 0x32434657;  // "WFC2": the clear-to-send connection
constexpr size_t kHeaderBytes = 8;
constexpr int kMaxIov = 64;

struct Hello {
  uint32_t magic;
  uint32_t from_rank;
  uint32_t to_rank;
  uint32_t size;
  // Ranks that disagree on it would wait forever: one for a clear-to-send the other
  // never sends.
  uint64_t clear_to_send_bytes;
};

}  // namespace

absl::StatusOr<std::unique_ptr<TcpTransport>> TcpTransport::Create(
    int rank, int size, Rendezvous& rendezvous, const TcpTransportOptions& options) {
  if (size < 1 || rank < 0 || rank >= size) {
    return absl::InvalidArgumentError(
        absl::StrCat("rank ", rank, " is not in a job of ", size, " ranks"));
  }
  std::unique_ptr<TcpTransport> transport(new TcpTransport(rank, size, options));
  RETURN_IF_ERROR(transport->Connect(rendezvous));
  return transport;
}

TcpTransport::TcpTransport(int rank, int size, const TcpTransportOptions& options)
    : rank_(rank), size_(size), options_(options), peers_(size) {}

TcpTransport::~TcpTransport() = default;

absl::Status TcpTransport::Connect(Rendezvous& rendezvous) {
  const absl::Time deadline = absl::Now() + options_.connect_timeout;
  ASSIGN_OR_RETURN(ScopedFd listener,
                   ListenTcp(options_.listen_host, 0, std::min(2 * size_ + 16, 4096)));
  ASSIGN_OR_RETURN(int port, LocalPort(listener.get()));
  ASSIGN_OR_RETURN(
      std::vector<std::string> addresses,
      ExchangeAll(rendezvous, options_.rendezvous_key, rank_, size_,
                  FormatHostPort({options_.listen_host, port}), options_.connect_timeout));
  // With more ranks than cores a Wait spins only for small messages (see
  // TcpTransportOptions::spin_before_block).
  int local_ranks = 0;
  for (const std::string& address : addresses) {
    absl::StatusOr<HostPort> parsed = ParseHostPort(address);
    if (parsed.ok() && parsed->host == options_.listen_host) ++local_ranks;
  }
  cpu_set_t cpus;
  const int cores = sched_getaffinity(0, sizeof(cpus), &cpus) == 0 ? CPU_COUNT(&cpus) : 1;
  oversubscribed_ = local_ranks > cores;
  // Connect down, accept up: connect() completes through the listen backlog, so no
  // rank waits on another's accept order.
  for (int peer = 0; peer < rank_; ++peer) {
    ASSIGN_OR_RETURN(HostPort address, ParseHostPort(addresses[peer]));
    for (const uint32_t magic : {kHelloMagic, kControlMagic}) {
      absl::StatusOr<ScopedFd> fd = ConnectTcp(address, deadline - absl::Now());
      if (!fd.ok()) {
        return absl::Status(fd.status().code(),
                            absl::StrCat("rank ", rank_, " connecting to rank ", peer, ": ",
                                         fd.status().message()));
      }
      const Hello hello{magic, static_cast<uint32_t>(rank_), static_cast<uint32_t>(peer),
                        static_cast<uint32_t>(size_), options_.clear_to_send_bytes};
      RETURN_IF_ERROR(WriteFull(fd->get(), &hello, sizeof(hello), deadline));
      (magic == kHelloMagic ? peers_[peer].fd : peers_[peer].control) = std::move(*fd);
    }
  }
  for (int accepted = 0; accepted < 2 * (size_ - 1 - rank_); ++accepted) {
    absl::StatusOr<ScopedFd> fd = AcceptTcp(listener.get(), deadline - absl::Now());
    if (!fd.ok()) {
      std::vector<int> missing;
      for (int peer = rank_ + 1; peer < size_; ++peer) {
        if (!peers_[peer].fd.valid() || !peers_[peer].control.valid()) missing.push_back(peer);
      }
      return absl::Status(fd.status().code(),
                          absl::StrCat("rank ", rank_, ": ranks ", absl::StrJoin(missing, ", "),
                                       " never connected: ", fd.status().message()));
    }
    Hello hello;
    RETURN_IF_ERROR(ReadFull(fd->get(), &hello, sizeof(hello), deadline));
    const bool known_magic = hello.magic == kHelloMagic || hello.magic == kControlMagic;
    const bool from_ok = hello.from_rank > static_cast<uint32_t>(rank_) &&
                         hello.from_rank < static_cast<uint32_t>(size_);
    if (!known_magic || hello.size != static_cast<uint32_t>(size_) ||
        hello.to_rank != static_cast<uint32_t>(rank_) || !from_ok ||
        (hello.magic == kHelloMagic ? peers_[hello.from_rank].fd
                                    : peers_[hello.from_rank].control)
            .valid()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "rank ", rank_, ": refused a connection claiming rank ", hello.from_rank, " of ",
          hello.size, " (to rank ", hello.to_rank, "); is another job using this address?"));
    }
    if (hello.clear_to_send_bytes != options_.clear_to_send_bytes) {
      return absl::FailedPreconditionError(absl::StrCat(
          "rank ", rank_, ": rank ", hello.from_rank, " sends with clear_to_send_bytes ",
          hello.clear_to_send_bytes, " and this rank with ", options_.clear_to_send_bytes,
          "; every rank of a job must use the same TcpTransportOptions"));
    }
    (hello.magic == kHelloMagic ? peers_[hello.from_rank].fd : peers_[hello.from_rank].control) =
        std::move(*fd);
  }
  for (int peer = 0; peer < size_; ++peer) {
    if (peer == rank_) continue;
    const int fd = peers_[peer].fd.get();
    RETURN_IF_ERROR(SetNonBlocking(fd));
    RETURN_IF_ERROR(SetNonBlocking(peers_[peer].control.get()));
    if (options_.socket_buffer_bytes > 0) {
      // Above net.core.{w,r}mem_max only a privileged process may go (the *FORCE
      // options); otherwise the kernel caps the value.
      const int bytes = options_.socket_buffer_bytes;
      if (::setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &bytes, sizeof(bytes)) != 0) {
        ::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof(bytes));
      }
      if (::setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &bytes, sizeof(bytes)) != 0) {
        ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof(bytes));
      }
    }
  }
  return absl::OkStatus();
}

TcpTransport::Request* TcpTransport::NewRequest(bool is_send, int peer, char* data,
                                                size_t num_bytes) {
  std::unique_ptr<Request> request;
  if (free_requests_.empty()) {
    request = std::make_unique<Request>();
  } else {
    request = std::move(free_requests_.back());
    free_requests_.pop_back();
    *request = Request();
  }
  request->id = next_id_++;
  request->is_send = is_send;
  request->peer = peer;
  request->data = data;
  request->num_bytes = num_bytes;
  request->header = htole64(static_cast<uint64_t>(num_bytes));
  Request* raw = request.get();
  requests_[raw->id] = std::move(request);
  return raw;
}

absl::StatusOr<Transport::RequestId> TcpTransport::PostSend(int peer, const void* data,
                                                            size_t num_bytes) {
  RETURN_IF_ERROR(CheckPeer(peer));
  if (!broken_.ok()) return broken_;
  Request* request =
      NewRequest(true, peer, const_cast<char*>(static_cast<const char*>(data)), num_bytes);
  request->cleared = !NeedsClearance(num_bytes);
  peers_[peer].sends.push_back(request);
  // Start writing now: the message is on its way before the caller waits.
  if (peers_[peer].sends.size() == 1) ProgressSends(peer);
  return request->id;
}

absl::StatusOr<Transport::RequestId> TcpTransport::PostRecv(int peer, void* data,
                                                            size_t num_bytes) {
  RETURN_IF_ERROR(CheckPeer(peer));
  if (!broken_.ok()) return broken_;
  Request* request = NewRequest(false, peer, static_cast<char*>(data), num_bytes);
  request->header = 0;
  peers_[peer].recvs.push_back(request);
  if (NeedsClearance(num_bytes)) {
    // The buffer is posted: let the sender's bytes come.
    ++peers_[peer].clears_posted;
    FlushClears(peer);
  }
  return request->id;
}

bool TcpTransport::NeedsClearance(size_t num_bytes) const {
  return options_.clear_to_send_bytes > 0 && num_bytes >= options_.clear_to_send_bytes;
}

bool TcpTransport::CanWrite(const Peer& peer) const {
  if (peer.sends.empty()) return false;
  const Request* r = peer.sends.front();
  return r->cleared || r->done_bytes < kHeaderBytes || peer.clears_used < peer.clears_received;
}

bool TcpTransport::FlushClears(int peer_rank) {
  Peer& peer = peers_[peer_rank];
  bool moved = false;
  while (true) {
    if (peer.control_out_written == kHeaderBytes) {
      if (peer.clears_announced == peer.clears_posted) return moved;
      peer.clears_announced = peer.clears_posted;
      peer.control_out = htole64(peer.clears_announced);
      peer.control_out_written = 0;
    }
    const ssize_t written =
        ::send(peer.control.get(), reinterpret_cast<char*>(&peer.control_out) +
                                       peer.control_out_written,
               kHeaderBytes - peer.control_out_written, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (written < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) return moved;
      if (errno == EINTR) continue;
      BreakOnSocketError("send", errno, absl::StrCat("clearing rank ", peer_rank, " to send"));
      return true;
    }
    moved = true;
    peer.control_out_written += static_cast<size_t>(written);
  }
}

bool TcpTransport::ReadClears(int peer_rank) {
  Peer& peer = peers_[peer_rank];
  bool moved = false;
  while (true) {
    const ssize_t got =
        ::recv(peer.control.get(), reinterpret_cast<char*>(&peer.control_in) + peer.control_in_read,
               kHeaderBytes - peer.control_in_read, MSG_DONTWAIT);
    if (got == 0) {
      Break(absl::UnavailableError(absl::StrCat(
          "rank ", peer_rank, " closed its connection to rank ", rank_, " (it exited or failed)")));
      return true;
    }
    if (got < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) return moved;
      if (errno == EINTR) continue;
      BreakOnSocketError("recv", errno,
                         absl::StrCat("reading rank ", peer_rank, "'s clear-to-send"));
      return true;
    }
    moved = true;
    peer.control_in_read += static_cast<size_t>(got);
    if (peer.control_in_read == kHeaderBytes) {
      peer.clears_received = std::max(peer.clears_received, le64toh(peer.control_in));
      peer.control_in_read = 0;
    }
  }
}

bool TcpTransport::ProgressSends(int peer_rank) {
  Peer& peer = peers_[peer_rank];
  bool moved = false;
  while (!peer.sends.empty()) {
    iovec iov[kMaxIov];
    int n = 0;
    size_t wanted = 0;
    for (Request* r : peer.sends) {
      if (n + 2 > kMaxIov) break;
      if (!r->cleared && peer.clears_used < peer.clears_received) {
        r->cleared = true;  // the receiver posted the buffer this message goes to
        ++peer.clears_used;
      }
      if (r->done_bytes < kHeaderBytes) {
        iov[n++] = {reinterpret_cast<char*>(&r->header) + r->done_bytes,
                    kHeaderBytes - r->done_bytes};
        if (!r->cleared) {
          // The header goes ahead, so a size mismatch shows at once; the bytes and
          // everything behind them wait for the clear-to-send.
          wanted += kHeaderBytes - r->done_bytes;
          break;
        }
        if (r->num_bytes > 0) iov[n++] = {r->data, r->num_bytes};
      } else {
        if (!r->cleared) break;
        const size_t offset = r->done_bytes - kHeaderBytes;
        iov[n++] = {r->data + offset, r->num_bytes - offset};
      }
      wanted += kHeaderBytes + r->num_bytes - r->done_bytes;
    }
    if (n == 0) return moved;  // waiting for a clear-to-send
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = n;
    const ssize_t written = ::sendmsg(peer.fd.get(), &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (written < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) return moved;
      if (errno == EINTR) continue;
      BreakOnSocketError("sendmsg", errno, absl::StrCat("sending to rank ", peer_rank));
      return true;
    }
    moved = true;
    size_t left = static_cast<size_t>(written);
    while (left > 0) {
      Request* r = peer.sends.front();
      const size_t take = std::min(kHeaderBytes + r->num_bytes - r->done_bytes, left);
      r->done_bytes += take;
      left -= take;
      if (r->done_bytes == kHeaderBytes + r->num_bytes) {
        r->complete = true;
        peer.sends.pop_front();
      } else {
        break;
      }
    }
    if (static_cast<size_t>(written) < wanted) return moved;  // the socket buffer is full
  }
  return moved;
}

bool TcpTransport::ProgressRecvs(int peer_rank) {
  Peer& peer = peers_[peer_rank];
  bool moved = false;
  while (!peer.recvs.empty()) {
    // Read ahead into every posted receive: sizes must match exactly, so the next
    // message's header and bytes can only belong where they land (or it is an error).
    iovec iov[kMaxIov];
    int n = 0;
    size_t wanted = 0;
    for (Request* r : peer.recvs) {
      if (n + 2 > kMaxIov) break;
      if (r->done_bytes < kHeaderBytes) {
        iov[n++] = {reinterpret_cast<char*>(&r->header) + r->done_bytes,
                    kHeaderBytes - r->done_bytes};
        if (r->num_bytes > 0) iov[n++] = {r->data, r->num_bytes};
      } else {
        const size_t offset = r->done_bytes - kHeaderBytes;
        iov[n++] = {r->data + offset, r->num_bytes - offset};
      }
      wanted += kHeaderBytes + r->num_bytes - r->done_bytes;
    }
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = n;
    const ssize_t got = ::recvmsg(peer.fd.get(), &msg, MSG_DONTWAIT);
    if (got == 0) {
      Break(absl::UnavailableError(absl::StrCat(
          "rank ", peer_rank, " closed its connection to rank ", rank_, " (it exited or failed)")));
      return true;
    }
    if (got < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) return moved;
      if (errno == EINTR) continue;
      BreakOnSocketError("recvmsg", errno, absl::StrCat("receiving from rank ", peer_rank));
      return true;
    }
    moved = true;
    size_t left = static_cast<size_t>(got);
    while (!peer.recvs.empty()) {
      Request* r = peer.recvs.front();
      if (r->done_bytes < kHeaderBytes) {
        const size_t take = std::min(kHeaderBytes - r->done_bytes, left);
        r->done_bytes += take;
        left -= take;
        if (r->done_bytes < kHeaderBytes) break;
        const uint64_t sent_bytes = le64toh(r->header);
        if (sent_bytes != r->num_bytes) {
          Break(absl::InternalError(absl::StrCat("message size mismatch: rank ", peer_rank,
                                                 " sent ", sent_bytes, " bytes where rank ", rank_,
                                                 " posted a receive of ", r->num_bytes, " bytes")));
          return true;
        }
      }
      const size_t take = std::min(kHeaderBytes + r->num_bytes - r->done_bytes, left);
      r->done_bytes += take;
      left -= take;
      if (r->done_bytes < kHeaderBytes + r->num_bytes) break;
      r->complete = true;
      peer.recvs.pop_front();
    }
    if (static_cast<size_t>(got) < wanted) return moved;  // drained what had arrived
  }
  return moved;
}

void TcpTransport::BreakOnSocketError(absl::string_view call, int error_number,
                                      absl::string_view doing) {
  const absl::Status error = SocketErrnoToStatus(call, error_number);
  Break(absl::Status(error.code(), absl::StrCat("rank ", rank_, " ", doing, ": ", error.message())));
}

void TcpTransport::Break(const absl::Status& status) {
  if (broken_.ok()) {
    broken_ = status;
    // Tell every peer at once: their next read or write here fails instead of waiting
    // out their progress timeout.
    for (Peer& peer : peers_) {
      if (peer.fd.valid()) ::shutdown(peer.fd.get(), SHUT_RDWR);
      if (peer.control.valid()) ::shutdown(peer.control.get(), SHUT_RDWR);
    }
  }
  for (Peer& peer : peers_) {
    for (auto* queue : {&peer.sends, &peer.recvs}) {
      for (Request* r : *queue) {
        r->complete = true;
        r->status = broken_;
      }
      queue->clear();
    }
  }
}

std::string TcpTransport::DescribePending() const {
  std::vector<std::string> parts;
  for (int p = 0; p < size_; ++p) {
    for (const Request* r : peers_[p].recvs) {
      parts.push_back(absl::StrCat("receive from rank ", p, " (",
                                   r->done_bytes > kHeaderBytes ? r->done_bytes - kHeaderBytes : 0,
                                   " of ", r->num_bytes, " bytes)"));
    }
    for (const Request* r : peers_[p].sends) {
      parts.push_back(absl::StrCat("send to rank ", p, " (",
                                   r->done_bytes > kHeaderBytes ? r->done_bytes - kHeaderBytes : 0,
                                   " of ", r->num_bytes, " bytes",
                                   r->cleared ? "" : ", waiting for its clear-to-send", ")"));
    }
    if (parts.size() > 8) break;
  }
  return absl::StrJoin(parts, ", ");
}

bool TcpTransport::PollOnce(int timeout_ms) {
  poll_fds_.clear();
  poll_peers_.clear();
  poll_is_control_.clear();
  for (int p = 0; p < size_; ++p) {
    const Peer& peer = peers_[p];
    const bool can_write = CanWrite(peer);
    short events = 0;
    if (can_write) events |= POLLOUT;
    if (!peer.recvs.empty()) events |= POLLIN;
    if (events != 0) {
      poll_fds_.push_back({peer.fd.get(), events, 0});
      poll_peers_.push_back(p);
      poll_is_control_.push_back(false);
    }
    short control_events = 0;
    if (!peer.sends.empty() && !can_write) control_events |= POLLIN;  // awaiting a clear
    if (peer.control_out_written < kHeaderBytes) control_events |= POLLOUT;
    if (control_events != 0) {
      poll_fds_.push_back({peer.control.get(), control_events, 0});
      poll_peers_.push_back(p);
      poll_is_control_.push_back(true);
    }
  }
  if (poll_fds_.empty()) return false;
  const int ready = ::poll(poll_fds_.data(), poll_fds_.size(), timeout_ms);
  if (ready < 0) {
    if (errno != EINTR) Break(SocketErrnoToStatus("poll", errno));
    return false;
  }
  bool moved = false;
  constexpr short kReadable = POLLIN | POLLERR | POLLHUP;
  constexpr short kWritable = POLLOUT | POLLERR | POLLHUP;
  // Reads first: draining what arrived keeps the peers' windows open, so they are not
  // held up while this rank writes; clear-to-sends next, so the writes below may use
  // them.
  for (size_t i = 0; i < poll_fds_.size() && ready > 0 && broken_.ok(); ++i) {
    const int p = poll_peers_[i];
    if (!(poll_fds_[i].revents & kReadable)) continue;
    if (poll_is_control_[i]) {
      moved |= ReadClears(p);
    } else if (!peers_[p].recvs.empty()) {
      moved |= ProgressRecvs(p);
    }
  }
  // Write only when the kernel says there is room (it waits for a good share of the
  // send buffer to free up): many small writes make many small segments and acks.
  for (size_t i = 0; i < poll_fds_.size() && ready > 0 && broken_.ok(); ++i) {
    const int p = poll_peers_[i];
    if (poll_is_control_[i]) {
      if (poll_fds_[i].revents & kWritable) moved |= FlushClears(p);
      // A clear that just arrived opens this peer's data socket: try it now rather
      // than after another poll.
      if (CanWrite(peers_[p])) moved |= ProgressSends(p);
    } else if ((poll_fds_[i].revents & kWritable) && !peers_[p].sends.empty()) {
      moved |= ProgressSends(p);
    }
  }
  return moved;
}

void TcpTransport::Progress() {
  if (broken_.ok()) PollOnce(0);
}

absl::Status TcpTransport::Wait(RequestId id) {
  auto it = requests_.find(id);
  if (it == requests_.end()) {
    return absl::InvalidArgumentError(absl::StrCat("unknown or already waited request ", id));
  }
  Request* request = it->second.get();
  const absl::Duration spin =
      oversubscribed_ && request->num_bytes > options_.oversubscribed_spin_max_bytes
          ? absl::ZeroDuration()
          : options_.spin_before_block;
  bool stalled = false;
  absl::Time stalled_since;
  while (!request->complete && broken_.ok()) {
    if (PollOnce(0)) {
      stalled = false;
      continue;
    }
    if (request->complete) break;
    const absl::Time now = absl::Now();
    if (!stalled) {
      stalled = true;
      stalled_since = now;
    }
    if (now - stalled_since < spin) {
      // A reply is often a few microseconds away: look again before paying for a
      // sleep and a wake-up, but let other runnable threads have the core meanwhile.
      sched_yield();
      continue;
    }
    if (now - stalled_since >= options_.progress_timeout) {
      Break(absl::DeadlineExceededError(absl::StrCat(
          "rank ", rank_, ": no progress for ", absl::FormatDuration(options_.progress_timeout),
          " waiting on: ", DescribePending())));
      break;
    }
    const absl::Duration left = stalled_since + options_.progress_timeout - now;
    const int timeout_ms =
        static_cast<int>(std::clamp<int64_t>(absl::ToInt64Milliseconds(left) + 1, 1, 1000));
    if (PollOnce(timeout_ms)) stalled = false;
  }
  absl::Status status = request->status;
  free_requests_.push_back(std::move(it->second));
  requests_.erase(it);
  return status;
}

}  // namespace weft::datapath
