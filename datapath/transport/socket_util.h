// Small TCP socket helpers shared by the TCP transport and the TCP rendezvous store:
// an owning fd, listen/connect/accept with deadlines, whole-buffer reads and writes with
// deadlines, and "host:port" parsing. Errors name the call, the address and strerror.
//
// Thread-safety: free functions are thread-safe; a ScopedFd is a value (not shared).
#ifndef WEFT_DATAPATH_TRANSPORT_SOCKET_UTIL_H_
#define WEFT_DATAPATH_TRANSPORT_SOCKET_UTIL_H_

#include <cstddef>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace weft::datapath {

// Owns a file descriptor; closes it on destruction.
class ScopedFd {
 public:
  ScopedFd() = default;
  explicit ScopedFd(int fd) : fd_(fd) {}
  ScopedFd(ScopedFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  ScopedFd& operator=(ScopedFd&& other) noexcept;
  ScopedFd(const ScopedFd&) = delete;
  ScopedFd& operator=(const ScopedFd&) = delete;
  ~ScopedFd();

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int Release() { return std::exchange(fd_, -1); }
  void Reset();

 private:
  int fd_ = -1;
};

// "<call>: <strerror> (errno N)" with a code close to the errno.
absl::Status SocketErrnoToStatus(absl::string_view call, int errno_value);

struct HostPort {
  std::string host;
  int port = 0;
};
// "10.0.0.1:29500", "[::1]:29500", "node-7:29500".
absl::StatusOr<HostPort> ParseHostPort(absl::string_view text);
std::string FormatHostPort(const HostPort& address);

// A listening TCP socket bound to host:port (port 0 picks a free port).
absl::StatusOr<ScopedFd> ListenTcp(const std::string& host, int port, int backlog);
// The port a bound socket got.
absl::StatusOr<int> LocalPort(int fd);
// Connects to host:port, retrying while nobody listens there yet (ECONNREFUSED) until
// `timeout` has passed. The socket is blocking, with TCP_NODELAY set.
absl::StatusOr<ScopedFd> ConnectTcp(const HostPort& address, absl::Duration timeout);
// Accepts one connection, waiting at most `timeout`. TCP_NODELAY set.
absl::StatusOr<ScopedFd> AcceptTcp(int listen_fd, absl::Duration timeout);

// Writes / reads exactly `num_bytes`, waiting until `deadline`. Work on blocking and
// non-blocking sockets. A peer that closes the connection is UNAVAILABLE.
absl::Status WriteFull(int fd, const void* data, size_t num_bytes, absl::Time deadline);
absl::Status ReadFull(int fd, void* data, size_t num_bytes, absl::Time deadline);

absl::Status SetNonBlocking(int fd);
absl::Status SetNoDelay(int fd);

}  // namespace weft::datapath

#endif  // WEFT_DATAPATH_TRANSPORT_SOCKET_UTIL_H_
