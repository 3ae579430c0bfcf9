#include "common/notify_listener.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstddef>
#include <cstring>
#include <utility>

namespace weft {

NotifyListener::NotifyListener(std::string name) : name_(std::move(name)) {
  fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (name_.empty() || name_.size() >= sizeof(addr.sun_path)) return;
  std::memcpy(addr.sun_path, name_.data(), name_.size());
  socklen_t len = offsetof(sockaddr_un, sun_path) + name_.size();
  if (name_[0] == '@') {
    addr.sun_path[0] = '\0';
  } else {
    unlink(name_.c_str());
    ++len;
  }
  bound_ = bind(fd_, reinterpret_cast<sockaddr*>(&addr), len) == 0;
}

NotifyListener::~NotifyListener() {
  close(fd_);
  if (bound_ && name_[0] != '@') unlink(name_.c_str());
}

std::optional<std::string> NotifyListener::Receive(absl::Duration timeout) {
  pollfd p{fd_, POLLIN, 0};
  if (poll(&p, 1, static_cast<int>(absl::ToInt64Milliseconds(timeout))) != 1) {
    return std::nullopt;
  }
  char buf[4096];
  const ssize_t n = recv(fd_, buf, sizeof(buf), 0);
  if (n < 0) return std::nullopt;
  return std::string(buf, n);
}

}  // namespace weft
