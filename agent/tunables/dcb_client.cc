#include "agent/tunables/dcb_client.h"

#include <linux/netlink.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace weft::agent {

absl::StatusOr<std::unique_ptr<NetlinkDcbClient>> NetlinkDcbClient::Open() {
  const int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
  if (fd < 0) {
    return absl::UnavailableError(
        absl::StrCat("socket(AF_NETLINK, NETLINK_ROUTE): ", std::strerror(errno)));
  }
  timeval timeout{2, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  sockaddr_nl local{};
  local.nl_family = AF_NETLINK;
  if (bind(fd, reinterpret_cast<sockaddr*>(&local), sizeof(local)) != 0) {
    const int err = errno;
    close(fd);
    return absl::UnavailableError(absl::StrCat("bind(AF_NETLINK): ", std::strerror(err)));
  }
  return std::unique_ptr<NetlinkDcbClient>(new NetlinkDcbClient(fd));
}

NetlinkDcbClient::~NetlinkDcbClient() { close(fd_); }

absl::StatusOr<std::string> NetlinkDcbClient::Transact(const std::string& request, uint32_t seq,
                                                       const std::string& ifname) {
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  if (sendto(fd_, request.data(), request.size(), 0, reinterpret_cast<sockaddr*>(&kernel),
             sizeof(kernel)) < 0) {
    return absl::UnavailableError(
        absl::StrCat("DCB netlink to ", ifname, ": sendto: ", std::strerror(errno)));
  }
  std::string buffer(65536, '\0');
  while (true) {
    const ssize_t n = recv(fd_, buffer.data(), buffer.size(), 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return absl::UnavailableError(absl::StrCat("DCB netlink to ", ifname, ": recv: ",
                                                 std::strerror(errno)));
    }
    if (static_cast<size_t>(n) < sizeof(nlmsghdr)) continue;
    nlmsghdr header;
    std::memcpy(&header, buffer.data(), sizeof(header));
    if (header.nlmsg_seq != seq) continue;  // a stale reply of an earlier timeout
    return buffer.substr(0, static_cast<size_t>(n));
  }
}

absl::StatusOr<DcbIeeeState> NetlinkDcbClient::GetIeee(const std::string& ifname) {
  const uint32_t seq = next_seq_++;
  absl::StatusOr<std::string> reply = Transact(EncodeIeeeGet(ifname, seq), seq, ifname);
  if (!reply.ok()) return reply.status();
  absl::StatusOr<DcbIeeeState> state = ParseIeeeGetReply(*reply, seq);
  if (!state.ok()) {
    return absl::Status(state.status().code(),
                        absl::StrCat(ifname, ": ", state.status().message()));
  }
  return state;
}

absl::Status NetlinkDcbClient::Set(const std::string& request, uint32_t seq,
                                   const std::string& ifname) {
  absl::StatusOr<std::string> reply = Transact(request, seq, ifname);
  if (!reply.ok()) return reply.status();
  absl::Status status = ParseIeeeSetReply(*reply, seq);
  if (!status.ok()) return absl::Status(status.code(), absl::StrCat(ifname, ": ", status.message()));
  return status;
}

absl::Status NetlinkDcbClient::SetEts(const std::string& ifname, const ieee_ets& ets) {
  const uint32_t seq = next_seq_++;
  return Set(EncodeIeeeSetEts(ifname, ets, seq), seq, ifname);
}

absl::Status NetlinkDcbClient::SetPfc(const std::string& ifname, const ieee_pfc& pfc) {
  const uint32_t seq = next_seq_++;
  return Set(EncodeIeeeSetPfc(ifname, pfc, seq), seq, ifname);
}

absl::Status NetlinkDcbClient::SetApps(const std::string& ifname, const std::vector<dcb_app>& apps) {
  const uint32_t seq = next_seq_++;
  return Set(EncodeIeeeSetApps(ifname, apps, seq), seq, ifname);
}

absl::Status NetlinkDcbClient::DelApps(const std::string& ifname, const std::vector<dcb_app>& apps) {
  const uint32_t seq = next_seq_++;
  return Set(EncodeIeeeDelApps(ifname, apps, seq), seq, ifname);
}

}  // namespace weft::agent
