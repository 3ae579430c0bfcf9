#include "datapath/rendezvous/tcp_rendezvous.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/logging.h"
#include "common/status_macros.h"

namespace weft::datapath {
namespace {

constexpr uint32_t kMaxFrameBytes = 64u << 20;

void PutU32(std::string* out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>(v >> (8 * i)));
}
void PutU64(std::string* out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>(v >> (8 * i)));
}
void PutString(std::string* out, absl::string_view s) {
  PutU32(out, static_cast<uint32_t>(s.size()));
  out->append(s.data(), s.size());
}

// Reads fields off a frame; any overrun marks the reader bad.
class Reader {
 public:
  explicit Reader(absl::string_view data) : data_(data) {}
  bool ok() const { return ok_; }
  bool done() const { return data_.empty(); }
  uint8_t U8() {
    if (data_.size() < 1) return Fail();
    const uint8_t v = static_cast<uint8_t>(data_[0]);
    data_.remove_prefix(1);
    return v;
  }
  uint32_t U32() {
    if (data_.size() < 4) return Fail();
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v |= uint32_t{static_cast<uint8_t>(data_[i])} << (8 * i);
    data_.remove_prefix(4);
    return v;
  }
  uint64_t U64() {
    if (data_.size() < 8) return Fail();
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= uint64_t{static_cast<uint8_t>(data_[i])} << (8 * i);
    data_.remove_prefix(8);
    return v;
  }
  std::string String() {
    const uint32_t n = U32();
    if (!ok_ || data_.size() < n) {
      Fail();
      return "";
    }
    std::string s(data_.substr(0, n));
    data_.remove_prefix(n);
    return s;
  }

 private:
  uint8_t Fail() {
    ok_ = false;
    data_ = absl::string_view();
    return 0;
  }
  absl::string_view data_;
  bool ok_ = true;
};

absl::Status WriteFrame(int fd, const std::string& body, absl::Time deadline) {
  std::string frame;
  frame.reserve(body.size() + 4);
  PutU32(&frame, static_cast<uint32_t>(body.size()));
  frame += body;
  return WriteFull(fd, frame.data(), frame.size(), deadline);
}

absl::StatusOr<std::string> ReadFrame(int fd, absl::Time deadline) {
  unsigned char header[4];
  RETURN_IF_ERROR(ReadFull(fd, header, 4, deadline));
  const uint32_t n = uint32_t{header[0]} | uint32_t{header[1]} << 8 | uint32_t{header[2]} << 16 |
                     uint32_t{header[3]} << 24;
  if (n > kMaxFrameBytes) {
    return absl::InvalidArgumentError(absl::StrCat("rendezvous frame of ", n, " bytes"));
  }
  std::string body(n, '\0');
  RETURN_IF_ERROR(ReadFull(fd, body.data(), n, deadline));
  return body;
}

std::string StatusReply(const absl::Status& status) {
  std::string reply;
  reply.push_back(static_cast<char>(status.code()));
  PutString(&reply, status.message());
  return reply;
}

}  // namespace

absl::StatusOr<std::unique_ptr<TcpRendezvousServer>> TcpRendezvousServer::Start(
    const std::string& host, int port) {
  ASSIGN_OR_RETURN(ScopedFd listener, ListenTcp(host, port, 1024));
  return StartOnSocket(std::move(listener));
}

absl::StatusOr<std::unique_ptr<TcpRendezvousServer>> TcpRendezvousServer::StartOnSocket(
    ScopedFd listener) {
  ASSIGN_OR_RETURN(int port, LocalPort(listener.get()));
  std::unique_ptr<TcpRendezvousServer> server(new TcpRendezvousServer(std::move(listener), port));
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) return SocketErrnoToStatus("pipe2", errno);
  server->wake_read_ = ScopedFd(pipe_fds[0]);
  server->wake_write_ = ScopedFd(pipe_fds[1]);
  server->accept_thread_ = std::thread([s = server.get()] { s->AcceptLoop(); });
  return server;
}

TcpRendezvousServer::TcpRendezvousServer(ScopedFd listener, int port)
    : listener_(std::move(listener)), port_(port) {}

TcpRendezvousServer::~TcpRendezvousServer() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    for (int fd : connections_) ::shutdown(fd, SHUT_RDWR);
  }
  store_.Close();
  const char byte = 0;
  if (wake_write_.valid()) {
    ssize_t ignored = ::write(wake_write_.get(), &byte, 1);
    (void)ignored;
  }
  if (accept_thread_.joinable()) accept_thread_.join();
  std::vector<std::thread> threads;
  {
    absl::MutexLock lock(&mu_);
    threads.swap(connection_threads_);
  }
  for (std::thread& t : threads) t.join();
}

void TcpRendezvousServer::AcceptLoop() {
  while (true) {
    pollfd fds[2] = {{listener_.get(), POLLIN, 0}, {wake_read_.get(), POLLIN, 0}};
    const int ready = ::poll(fds, 2, -1);
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0 || (fds[1].revents & POLLIN)) return;
    const int fd = ::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    (void)SetNoDelay(fd);
    absl::MutexLock lock(&mu_);
    if (stopping_) {
      ::close(fd);
      return;
    }
    connections_.push_back(fd);
    connection_threads_.emplace_back([this, fd] { Serve(fd); });
  }
}

void TcpRendezvousServer::Serve(int fd) {
  while (true) {
    absl::StatusOr<std::string> request = ReadFrame(fd, absl::InfiniteFuture());
    if (!request.ok()) break;  // the client left (or we are stopping)
    Reader in(*request);
    const uint8_t op = in.U8();
    const std::string key = in.String();
    std::string reply;
    if (op == 'P') {
      const int rank = static_cast<int>(in.U32());
      const std::string value = in.String();
      reply = in.ok() ? StatusReply(store_.Publish(key, rank, value))
                      : StatusReply(absl::InvalidArgumentError("malformed publish"));
    } else if (op == 'L') {
      const int64_t timeout_ms = static_cast<int64_t>(in.U64());
      const uint32_t n = in.U32();
      std::vector<int> ranks;
      for (uint32_t i = 0; i < n && in.ok(); ++i) ranks.push_back(static_cast<int>(in.U32()));
      if (!in.ok()) {
        reply = StatusReply(absl::InvalidArgumentError("malformed lookup"));
      } else {
        absl::StatusOr<std::vector<std::string>> values =
            store_.Lookup(key, ranks, absl::Milliseconds(timeout_ms));
        reply = StatusReply(values.status());
        if (values.ok()) {
          PutU32(&reply, static_cast<uint32_t>(values->size()));
          for (const std::string& v : *values) PutString(&reply, v);
        }
      }
    } else {
      reply = StatusReply(absl::InvalidArgumentError(absl::StrCat("unknown op ", int{op})));
    }
    if (!WriteFrame(fd, reply, absl::Now() + absl::Seconds(30)).ok()) break;
  }
  absl::MutexLock lock(&mu_);
  for (auto it = connections_.begin(); it != connections_.end(); ++it) {
    if (*it == fd) {
      connections_.erase(it);
      break;
    }
  }
  ::close(fd);
}

absl::StatusOr<std::unique_ptr<TcpRendezvousClient>> TcpRendezvousClient::Connect(
    const HostPort& server, absl::Duration connect_timeout) {
  absl::StatusOr<ScopedFd> fd = ConnectTcp(server, connect_timeout);
  if (!fd.ok()) {
    return absl::Status(fd.status().code(),
                        absl::StrCat("connecting to the rendezvous server ", FormatHostPort(server),
                                     ": ", fd.status().message()));
  }
  return std::unique_ptr<TcpRendezvousClient>(
      new TcpRendezvousClient(std::move(*fd), FormatHostPort(server)));
}

absl::StatusOr<std::string> TcpRendezvousClient::Call(const std::string& request,
                                                      absl::Duration reply_timeout) {
  auto annotate = [&](const absl::Status& s) {
    return absl::Status(s.code(), absl::StrCat("rendezvous server ", server_, ": ", s.message()));
  };
  if (!fd_.valid())
    return absl::FailedPreconditionError(
        absl::StrCat("rendezvous server ", server_, ": connection lost earlier"));
  absl::Status sent = WriteFrame(fd_.get(), request, absl::Now() + absl::Seconds(30));
  if (!sent.ok()) {
    fd_.Reset();
    return annotate(sent);
  }
  absl::StatusOr<std::string> reply = ReadFrame(fd_.get(), absl::Now() + reply_timeout);
  if (!reply.ok()) {
    fd_.Reset();  // a late reply would desynchronize the stream
    return annotate(reply.status());
  }
  return reply;
}

absl::Status TcpRendezvousClient::Publish(absl::string_view key, int rank,
                                          absl::string_view value) {
  std::string request;
  request.push_back('P');
  PutString(&request, key);
  PutU32(&request, static_cast<uint32_t>(rank));
  PutString(&request, value);
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(std::string reply, Call(request, absl::Seconds(30)));
  Reader in(reply);
  const auto code = static_cast<absl::StatusCode>(in.U8());
  const std::string message = in.String();
  if (!in.ok()) return absl::InternalError("malformed rendezvous reply");
  return absl::Status(code, message);
}

absl::StatusOr<std::vector<std::string>> TcpRendezvousClient::Lookup(absl::string_view key,
                                                                     absl::Span<const int> ranks,
                                                                     absl::Duration timeout) {
  std::string request;
  request.push_back('L');
  PutString(&request, key);
  PutU64(&request, static_cast<uint64_t>(absl::ToInt64Milliseconds(timeout)));
  PutU32(&request, static_cast<uint32_t>(ranks.size()));
  for (int rank : ranks) PutU32(&request, static_cast<uint32_t>(rank));
  absl::MutexLock lock(&mu_);
  // The server does the waiting; allow it that long plus a margin for the reply.
  ASSIGN_OR_RETURN(std::string reply, Call(request, timeout + absl::Seconds(30)));
  Reader in(reply);
  const auto code = static_cast<absl::StatusCode>(in.U8());
  const std::string message = in.String();
  if (code != absl::StatusCode::kOk) return absl::Status(code, message);
  const uint32_t n = in.U32();
  std::vector<std::string> values;
  for (uint32_t i = 0; i < n && in.ok(); ++i) values.push_back(in.String());
  if (!in.ok() || values.size() != ranks.size()) {
    return absl::InternalError("malformed rendezvous reply");
  }
  return values;
}

}  // namespace weft::datapath
