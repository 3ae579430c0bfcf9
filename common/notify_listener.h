// NotifyListener: systemd's side of the sd_notify protocol for tests, a bound AF_UNIX
// datagram socket (a path, or "@name" in the abstract namespace) whose messages the
// test reads with a timeout. testonly. Not thread-safe.
#ifndef WEFT_COMMON_NOTIFY_LISTENER_H_
#define WEFT_COMMON_NOTIFY_LISTENER_H_

#include <optional>
#include <string>

#include "absl/time/time.h"

namespace weft {

class NotifyListener {
 public:
  // Binds `name`; check bound() before use. A path socket is unlinked first and on
  // destruction; keep paths under 108 bytes (e.g. under /tmp).
  explicit NotifyListener(std::string name);
  ~NotifyListener();
  NotifyListener(const NotifyListener&) = delete;
  NotifyListener& operator=(const NotifyListener&) = delete;

  bool bound() const { return bound_; }
  const std::string& name() const { return name_; }
  // The next datagram, or nullopt when none arrives within `timeout`.
  std::optional<std::string> Receive(absl::Duration timeout);

 private:
  std::string name_;
  int fd_ = -1;
  bool bound_ = false;
};

}  // namespace weft

#endif  // WEFT_COMMON_NOTIFY_LISTENER_H_
