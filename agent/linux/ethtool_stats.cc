#include "agent/linux/ethtool_stats.h"

#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace weft {
namespace {

// Room for counters a driver adds between GSSET_INFO and GSTATS (mlx5 adds per-priority
// PFC counters when PFC is switched on): the kernel writes its own count, not ours.
constexpr uint32_t kSlack = 64;

class Socket {
 public:
  Socket() : fd_(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)) {}
  ~Socket() {
    if (fd_ >= 0) close(fd_);
  }
  int fd() const { return fd_; }

 private:
  int fd_;
};

absl::Status IoctlError(absl::string_view what, absl::string_view ifname, int err) {
  const std::string message =
      absl::StrCat("SIOCETHTOOL ", what, " on ", ifname, ": ", std::strerror(err));
  switch (err) {
    case ENODEV:
      return absl::NotFoundError(message);
    case EOPNOTSUPP:
      return absl::UnimplementedError(message);
    case EPERM:
    case EACCES:
      return absl::PermissionDeniedError(message);
    default:
      return absl::UnavailableError(message);
  }
}

absl::Status Ethtool(const Socket& sock, absl::string_view ifname, void* data,
                     absl::string_view what) {
  ifreq ifr{};
  std::memcpy(ifr.ifr_name, ifname.data(), ifname.size());
  ifr.ifr_data = static_cast<char*>(data);
  if (ioctl(sock.fd(), SIOCETHTOOL, &ifr) != 0) return IoctlError(what, ifname, errno);
  return absl::OkStatus();
}

absl::StatusOr<uint32_t> StatsCount(const Socket& sock, absl::string_view ifname) {
  // ethtool_sset_info is followed by one u32 per set bit of sset_mask.
  alignas(ethtool_sset_info) char buf[sizeof(ethtool_sset_info) + sizeof(uint32_t)] = {};
  auto* info = reinterpret_cast<ethtool_sset_info*>(buf);
  info->cmd = ETHTOOL_GSSET_INFO;
  info->sset_mask = 1ULL << ETH_SS_STATS;
  RETURN_IF_ERROR(Ethtool(sock, ifname, info, "ETHTOOL_GSSET_INFO"));
  if ((info->sset_mask & (1ULL << ETH_SS_STATS)) == 0) {
    return absl::UnimplementedError(
        absl::StrCat("netdev ", ifname, " has no ethtool statistics"));
  }
  return info->data[0];
}

}  // namespace

absl::StatusOr<std::vector<std::string>> ParseEthtoolStringTable(absl::string_view data,
                                                                 uint32_t count) {
  if (data.size() / ETH_GSTRING_LEN < count) {
    return absl::InvalidArgumentError(absl::StrCat("ethtool string table has ", data.size(),
                                                   " bytes, need ", count, " x ",
                                                   ETH_GSTRING_LEN));
  }
  std::vector<std::string> names;
  names.reserve(count);
  for (uint32_t i = 0; i < count; ++i) {
    absl::string_view slot = data.substr(size_t{i} * ETH_GSTRING_LEN, ETH_GSTRING_LEN);
    const size_t nul = slot.find('\0');
    if (nul == absl::string_view::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("ethtool string ", i, " is not NUL-terminated"));
    }
    if (nul == 0) {
      return absl::InvalidArgumentError(absl::StrCat("ethtool string ", i, " is empty"));
    }
    names.emplace_back(slot.substr(0, nul));
  }
  return names;
}

absl::StatusOr<EthtoolStats> IoctlEthtoolReader::ReadStats(absl::string_view ifname) {
  if (ifname.empty() || ifname.size() >= IFNAMSIZ) {
    return absl::InvalidArgumentError(absl::StrCat("bad netdev name '", ifname, "'"));
  }
  Socket sock;
  if (sock.fd() < 0) {
    return absl::UnavailableError(absl::StrCat("socket(): ", std::strerror(errno)));
  }
  ASSIGN_OR_RETURN(const uint32_t count, StatsCount(sock, ifname));

  const size_t capacity = size_t{count} + kSlack;
  std::unique_ptr<char[]> strings_buf(
      new char[sizeof(ethtool_gstrings) + capacity * ETH_GSTRING_LEN]());
  auto* strings = reinterpret_cast<ethtool_gstrings*>(strings_buf.get());
  strings->cmd = ETHTOOL_GSTRINGS;
  strings->string_set = ETH_SS_STATS;
  strings->len = count;
  RETURN_IF_ERROR(Ethtool(sock, ifname, strings, "ETHTOOL_GSTRINGS"));

  std::unique_ptr<char[]> stats_buf(new char[sizeof(ethtool_stats) + capacity * 8]());
  auto* stats = reinterpret_cast<ethtool_stats*>(stats_buf.get());
  stats->cmd = ETHTOOL_GSTATS;
  stats->n_stats = count;
  RETURN_IF_ERROR(Ethtool(sock, ifname, stats, "ETHTOOL_GSTATS"));

  if (strings->len != count || stats->n_stats != count) {
    return absl::UnavailableError(absl::StrCat(
        "ethtool statistics of ", ifname, " changed while reading (", count, " names, then ",
        strings->len, " names and ", stats->n_stats, " values); retry next cycle"));
  }
  ASSIGN_OR_RETURN(std::vector<std::string> names,
                   ParseEthtoolStringTable(
                       absl::string_view(reinterpret_cast<const char*>(strings->data),
                                         size_t{count} * ETH_GSTRING_LEN),
                       count));
  EthtoolStats out;
  out.reserve(count);
  for (uint32_t i = 0; i < count; ++i) out.emplace_back(std::move(names[i]), stats->data[i]);
  return out;
}

}  // namespace weft
