// systemd's service notification protocol (sd_notify(3)), implemented directly: one
// AF_UNIX datagram per message to the socket named by $NOTIFY_SOCKET (a path, or an
// abstract socket when it starts with '@'). A daemon started by a Type=notify unit
// says READY=1 once it serves and STOPPING=1 when it begins to shut down, and feeds
// the watchdog (WATCHDOG=1) at half of $WATCHDOG_USEC when the unit sets WatchdogSec=.
// Outside systemd (no NOTIFY_SOCKET) every call does nothing and succeeds.
//
// Example (a thin main):
//   ServiceNotifier notifier(SdNotifyEnvFromProcess());
//   ... start serving ...
//   notifier.Ready("serving grpc=127.0.0.1:7400");
//   ... wait for SIGTERM ...
//   notifier.Stopping();
//
// Thread-safety: SdNotifySend is thread-safe. A ServiceNotifier's methods are called
// from one thread; its watchdog runs on a thread of its own.
#ifndef WEFT_COMMON_SD_NOTIFY_H_
#define WEFT_COMMON_SD_NOTIFY_H_

#include <sys/types.h>

#include <optional>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace weft {

// What systemd told this process through its environment.
struct SdNotifyEnv {
  std::string socket;                     // $NOTIFY_SOCKET; empty: not under systemd
  std::optional<absl::Duration> watchdog;  // $WATCHDOG_USEC, when it is meant for us
};

// Parses the three variables (each may be null when unset). WATCHDOG_USEC is ignored
// when WATCHDOG_PID names another process (a child inherited the variables). A value
// that is not a positive integer is an error naming the variable and the value.
absl::StatusOr<SdNotifyEnv> ParseSdNotifyEnv(const char* notify_socket,
                                             const char* watchdog_usec,
                                             const char* watchdog_pid, pid_t self);

// ParseSdNotifyEnv over this process's environment; on a malformed variable logs a
// warning and returns what could be used (a bad WATCHDOG_USEC disables the watchdog).
SdNotifyEnv SdNotifyEnvFromProcess();

// Sends `state` (newline-separated VAR=value assignments, e.g. "READY=1") as one
// datagram to `socket` ("/run/systemd/notify" or "@abstract-name"). Errors carry the
// socket and errno text. An empty `socket` sends nothing and returns OK.
absl::Status SdNotifySend(absl::string_view socket, absl::string_view state);

// Ready/stopping notifications and the watchdog of one daemon.
class ServiceNotifier {
 public:
  // Starts the watchdog thread at once when env.watchdog is set (systemd arms the
  // watchdog when it starts the process, before READY).
  explicit ServiceNotifier(SdNotifyEnv env);
  ~ServiceNotifier();  // stops the watchdog thread
  ServiceNotifier(const ServiceNotifier&) = delete;
  ServiceNotifier& operator=(const ServiceNotifier&) = delete;

  // READY=1 with STATUS=`status`. Call once the daemon answers on its ports.
  void Ready(absl::string_view status);
  // STOPPING=1; stops feeding the watchdog (systemd disarms it on STOPPING).
  void Stopping();

  // How often the watchdog is fed: half of WATCHDOG_USEC, as sd_watchdog_enabled(3)
  // recommends. nullopt when there is no watchdog.
  std::optional<absl::Duration> feed_interval() const;

 private:
  void Send(absl::string_view state);
  void FeedWatchdog();
  void StopWatchdog();

  const SdNotifyEnv env_;
  absl::Mutex mu_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread watchdog_;
};

}  // namespace weft

#endif  // WEFT_COMMON_SD_NOTIFY_H_
