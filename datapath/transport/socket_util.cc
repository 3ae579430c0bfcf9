#include "datapath/transport/socket_util.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace weft::datapath {
namespace {

int MillisUntil(absl::Time deadline) {
  if (deadline == absl::InfiniteFuture()) return -1;
  const absl::Duration left = deadline - absl::Now();
  if (left <= absl::ZeroDuration()) return 0;
  return static_cast<int>(std::min<int64_t>(absl::ToInt64Milliseconds(left) + 1, 1 << 30));
}

// Waits until `fd` is ready for `events` or the deadline passes.
absl::Status WaitFd(int fd, short events, absl::Time deadline, absl::string_view what) {
  while (true) {
    pollfd p{fd, events, 0};
    const int ready = ::poll(&p, 1, MillisUntil(deadline));
    if (ready > 0) return absl::OkStatus();
    if (ready < 0 && errno != EINTR) return SocketErrnoToStatus("poll", errno);
    if (ready == 0 && absl::Now() >= deadline) {
      return absl::DeadlineExceededError(absl::StrCat("timed out ", what));
    }
  }
}

absl::StatusOr<addrinfo*> Resolve(const std::string& host, int port, bool passive) {
  addrinfo hints;
  std::memset(&hints, 0, sizeof(hints));
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = passive ? AI_PASSIVE : 0;
  addrinfo* result = nullptr;
  const std::string service = std::to_string(port);
  const int rc =
      ::getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(), &hints, &result);
  if (rc != 0) {
    return absl::NotFoundError(
        absl::StrCat("getaddrinfo(", host, ":", port, "): ", gai_strerror(rc)));
  }
  return result;
}

}  // namespace

ScopedFd& ScopedFd::operator=(ScopedFd&& other) noexcept {
  if (this != &other) {
    Reset();
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

ScopedFd::~ScopedFd() { Reset(); }

void ScopedFd::Reset() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

absl::Status SocketErrnoToStatus(absl::string_view call, int errno_value) {
  char buffer[128];
  const char* text = strerror_r(errno_value, buffer, sizeof(buffer));
  std::string message = absl::StrCat(call, ": ", text, " (errno ", errno_value, ")");
  switch (errno_value) {
    case ECONNREFUSED:
    case ECONNRESET:
    case EPIPE:
    case ENOTCONN:
    case EHOSTUNREACH:
    case ENETUNREACH:
      return absl::UnavailableError(message);
    case ETIMEDOUT:
      return absl::DeadlineExceededError(message);
    case EADDRINUSE:
      return absl::AlreadyExistsError(message);
    case EINVAL:
      return absl::InvalidArgumentError(message);
    case EACCES:
    case EPERM:
      return absl::PermissionDeniedError(message);
    case EMFILE:
    case ENFILE:
    case ENOMEM:
    case ENOBUFS:
      return absl::ResourceExhaustedError(message);
    default:
      return absl::InternalError(message);
  }
}

absl::StatusOr<HostPort> ParseHostPort(absl::string_view text) {
  auto invalid = [&] {
    return absl::InvalidArgumentError(
        absl::StrCat("address '", text, "' is not host:port (e.g. 10.0.0.1:29500)"));
  };
  HostPort out;
  absl::string_view port_text;
  if (!text.empty() && text.front() == '[') {
    const size_t close = text.find(']');
    if (close == absl::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      return invalid();
    }
    out.host = std::string(text.substr(1, close - 1));
    port_text = text.substr(close + 2);
  } else {
    const size_t colon = text.rfind(':');
    if (colon == absl::string_view::npos || colon == 0) return invalid();
    out.host = std::string(text.substr(0, colon));
    port_text = text.substr(colon + 1);
  }
  if (!absl::SimpleAtoi(port_text, &out.port) || out.port < 0 || out.port > 65535) {
    return invalid();
  }
  return out;
}

std::string FormatHostPort(const HostPort& address) {
  if (address.host.find(':') != std::string::npos) {
    return absl::StrCat("[", address.host, "]:", address.port);
  }
  return absl::StrCat(address.host, ":", address.port);
}

absl::StatusOr<ScopedFd> ListenTcp(const std::string& host, int port, int backlog) {
  absl::StatusOr<addrinfo*> resolved = Resolve(host, port, /*passive=*/true);
  if (!resolved.ok()) return resolved.status();
  addrinfo* list = *resolved;
  absl::Status last = absl::NotFoundError(absl::StrCat("no address for ", host));
  for (addrinfo* ai = list; ai != nullptr; ai = ai->ai_next) {
    ScopedFd fd(::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol));
    if (!fd.valid()) {
      last = SocketErrnoToStatus("socket", errno);
      continue;
    }
    int one = 1;
    ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (::bind(fd.get(), ai->ai_addr, ai->ai_addrlen) != 0) {
      last = SocketErrnoToStatus(absl::StrCat("bind(", host, ":", port, ")"), errno);
      continue;
    }
    if (::listen(fd.get(), backlog) != 0) {
      last = SocketErrnoToStatus(absl::StrCat("listen(", host, ":", port, ")"), errno);
      continue;
    }
    ::freeaddrinfo(list);
    return fd;
  }
  ::freeaddrinfo(list);
  return last;
}

absl::StatusOr<int> LocalPort(int fd) {
  sockaddr_storage addr;
  socklen_t len = sizeof(addr);
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    return SocketErrnoToStatus("getsockname", errno);
  }
  if (addr.ss_family == AF_INET) {
    return ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
  }
  return ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port);
}

absl::StatusOr<ScopedFd> ConnectTcp(const HostPort& address, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  const std::string name = FormatHostPort(address);
  absl::Duration backoff = absl::Milliseconds(1);
  while (true) {
    absl::StatusOr<addrinfo*> resolved = Resolve(address.host, address.port, false);
    if (!resolved.ok()) return resolved.status();
    absl::Status last;
    for (addrinfo* ai = *resolved; ai != nullptr; ai = ai->ai_next) {
      ScopedFd fd(::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol));
      if (!fd.valid()) {
        last = SocketErrnoToStatus("socket", errno);
        continue;
      }
      if (::connect(fd.get(), ai->ai_addr, ai->ai_addrlen) == 0) {
        ::freeaddrinfo(*resolved);
        absl::Status nodelay = SetNoDelay(fd.get());
        if (!nodelay.ok()) return nodelay;
        return fd;
      }
      last = SocketErrnoToStatus(absl::StrCat("connect(", name, ")"), errno);
    }
    ::freeaddrinfo(*resolved);
    if (absl::Now() + backoff >= deadline) {
      return absl::Status(
          last.code() == absl::StatusCode::kUnavailable ? absl::StatusCode::kDeadlineExceeded
                                                        : last.code(),
          absl::StrCat(last.message(), " (gave up after ", absl::FormatDuration(timeout), ")"));
    }
    absl::SleepFor(backoff);
    backoff = std::min(backoff * 2, absl::Milliseconds(100));
  }
}

absl::StatusOr<ScopedFd> AcceptTcp(int listen_fd, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (true) {
    absl::Status ready = WaitFd(listen_fd, POLLIN, deadline, "waiting for a connection");
    if (!ready.ok()) return ready;
    ScopedFd fd(::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC));
    if (fd.valid()) {
      absl::Status nodelay = SetNoDelay(fd.get());
      if (!nodelay.ok()) return nodelay;
      return fd;
    }
    if (errno != EINTR && errno != EAGAIN && errno != ECONNABORTED) {
      return SocketErrnoToStatus("accept", errno);
    }
  }
}

absl::Status WriteFull(int fd, const void* data, size_t num_bytes, absl::Time deadline) {
  const char* p = static_cast<const char*>(data);
  size_t left = num_bytes;
  while (left > 0) {
    const ssize_t n = ::send(fd, p, left, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      p += n;
      left -= static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      absl::Status ready = WaitFd(fd, POLLOUT, deadline, "writing");
      if (!ready.ok()) return ready;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return SocketErrnoToStatus("send", errno);
  }
  return absl::OkStatus();
}

absl::Status ReadFull(int fd, void* data, size_t num_bytes, absl::Time deadline) {
  char* p = static_cast<char*>(data);
  size_t left = num_bytes;
  while (left > 0) {
    const ssize_t n = ::recv(fd, p, left, MSG_DONTWAIT);
    if (n > 0) {
      p += n;
      left -= static_cast<size_t>(n);
      continue;
    }
    if (n == 0) return absl::UnavailableError("the peer closed the connection");
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      absl::Status ready = WaitFd(fd, POLLIN, deadline, "reading");
      if (!ready.ok()) return ready;
      continue;
    }
    if (errno == EINTR) continue;
    return SocketErrnoToStatus("recv", errno);
  }
  return absl::OkStatus();
}

absl::Status SetNonBlocking(int fd) {
  const int flags = ::fcntl(fd, F_GETFL, 0);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0) {
    return SocketErrnoToStatus("fcntl(O_NONBLOCK)", errno);
  }
  return absl::OkStatus();
}

absl::Status SetNoDelay(int fd) {
  int one = 1;
  if (::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) != 0) {
    return SocketErrnoToStatus("setsockopt(TCP_NODELAY)", errno);
  }
  return absl::OkStatus();
}

}  // namespace weft::datapath
