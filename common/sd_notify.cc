#include "common/sd_notify.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/logging.h"

namespace weft {

absl::StatusOr<SdNotifyEnv> ParseSdNotifyEnv(const char* notify_socket,
                                             const char* watchdog_usec,
                                             const char* watchdog_pid, pid_t self) {
  SdNotifyEnv env;
  if (notify_socket != nullptr) env.socket = notify_socket;
  if (watchdog_pid != nullptr && *watchdog_pid != '\0') {
    int64_t pid = 0;
    if (!absl::SimpleAtoi(watchdog_pid, &pid) || pid <= 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "WATCHDOG_PID: value '", watchdog_pid, "' is not a process id"));
    }
    if (pid != self) return env;  // meant for the process that started us
  }
  if (watchdog_usec != nullptr && *watchdog_usec != '\0') {
    uint64_t usec = 0;
    if (!absl::SimpleAtoi(watchdog_usec, &usec) || usec == 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "WATCHDOG_USEC: value '", watchdog_usec,
          "' is not a positive number of microseconds"));
    }
    env.watchdog = absl::Microseconds(usec);
  }
  return env;
}

SdNotifyEnv SdNotifyEnvFromProcess() {
  const char* socket = std::getenv("NOTIFY_SOCKET");
  absl::StatusOr<SdNotifyEnv> env = ParseSdNotifyEnv(
      socket, std::getenv("WATCHDOG_USEC"), std::getenv("WATCHDOG_PID"), getpid());
  if (env.ok()) return *std::move(env);
  WEFT_LOG(WARNING) << "systemd watchdog disabled error=\"" << env.status().message() << "\"";
  SdNotifyEnv without_watchdog;
  if (socket != nullptr) without_watchdog.socket = socket;
  return without_watchdog;
}

absl::Status SdNotifySend(absl::string_view socket, absl::string_view state) {
  if (socket.empty()) return absl::OkStatus();
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  // Abstract sockets ('@name') have a leading NUL and no terminator; their address
  // length counts exactly the name's bytes.
  if (socket[0] != '/' && socket[0] != '@') {
    return absl::InvalidArgumentError(absl::StrCat(
        "NOTIFY_SOCKET: value '", socket, "' is neither an absolute path nor '@name'"));
  }
  if (socket.size() >= sizeof(addr.sun_path)) {
    return absl::InvalidArgumentError(absl::StrCat("NOTIFY_SOCKET: value '", socket,
                                                    "' is longer than ",
                                                    sizeof(addr.sun_path) - 1, " bytes"));
  }
  std::memcpy(addr.sun_path, socket.data(), socket.size());
  if (socket[0] == '@') addr.sun_path[0] = '\0';
  const socklen_t addr_len = static_cast<socklen_t>(
      offsetof(sockaddr_un, sun_path) + socket.size() + (socket[0] == '@' ? 0 : 1));

  const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::InternalError(absl::StrCat("socket(AF_UNIX): ", strerror(errno)));
  const ssize_t sent = ::sendto(fd, state.data(), state.size(), MSG_NOSIGNAL,
                                reinterpret_cast<const sockaddr*>(&addr), addr_len);
  const int error = errno;
  ::close(fd);
  if (sent < 0) {
    return absl::UnavailableError(
        absl::StrCat("sd_notify to ", socket, ": ", strerror(error)));
  }
  return absl::OkStatus();
}

ServiceNotifier::ServiceNotifier(SdNotifyEnv env) : env_(std::move(env)) {
  if (!env_.socket.empty() && env_.watchdog.has_value()) {
    watchdog_ = std::thread([this] { FeedWatchdog(); });
  }
}

ServiceNotifier::~ServiceNotifier() { StopWatchdog(); }

std::optional<absl::Duration> ServiceNotifier::feed_interval() const {
  if (env_.socket.empty() || !env_.watchdog.has_value()) return std::nullopt;
  return *env_.watchdog / 2;
}

void ServiceNotifier::Ready(absl::string_view status) {
  Send(absl::StrCat("READY=1\nSTATUS=", status));
}

void ServiceNotifier::Stopping() {
  StopWatchdog();
  Send("STOPPING=1");
}

void ServiceNotifier::Send(absl::string_view state) {
  if (absl::Status sent = SdNotifySend(env_.socket, state); !sent.ok()) {
    WEFT_LOG(WARNING) << "systemd notification failed error=\"" << sent.message() << "\"";
  }
}

void ServiceNotifier::FeedWatchdog() {
  const absl::Duration interval = *feed_interval();
  absl::MutexLock lock(&mu_);
  while (!stop_) {
    mu_.Unlock();
    Send("WATCHDOG=1");
    mu_.Lock();
    mu_.AwaitWithTimeout(absl::Condition(&stop_), interval);
  }
}

void ServiceNotifier::StopWatchdog() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  if (watchdog_.joinable()) watchdog_.join();
}

}  // namespace weft
