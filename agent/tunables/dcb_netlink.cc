#include "agent/tunables/dcb_netlink.h"

#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace weft::agent {
namespace {

static_assert(sizeof(ieee_ets) == 59, "struct ieee_ets: 3 + 7 x 8 bytes");
static_assert(sizeof(ieee_pfc) == 136, "struct ieee_pfc: u8 x3, pad, u16, 2 x u64[8]");
static_assert(sizeof(dcb_app) == 4, "struct dcb_app: u8, u8, u16");
static_assert(sizeof(dcbmsg) == 4, "struct dcbmsg: u8, u8, u16");

// Builds one netlink message: header, dcbmsg, attributes (4-byte aligned, as NLA_ALIGN).
class MessageBuilder {
 public:
  MessageBuilder(uint16_t type, uint8_t cmd, uint32_t seq) {
    nlmsghdr header{};
    header.nlmsg_type = type;
    header.nlmsg_flags = NLM_F_REQUEST;
    header.nlmsg_seq = seq;
    Append(&header, sizeof(header));
    dcbmsg dcb{};
    dcb.dcb_family = AF_UNSPEC;
    dcb.cmd = cmd;
    Append(&dcb, sizeof(dcb));
  }

  void Attr(uint16_t type, const void* data, size_t len) {
    nlattr attr{};
    attr.nla_len = static_cast<uint16_t>(NLA_HDRLEN + len);
    attr.nla_type = type;
    Append(&attr, sizeof(attr));
    Append(data, len);
    Pad();
  }
  void IfName(absl::string_view ifname) {
    std::string name(ifname);
    Attr(DCB_ATTR_IFNAME, name.c_str(), name.size() + 1);
  }
  // Opens a nested attribute; returns its offset for EndNest.
  size_t BeginNest(uint16_t type) {
    const size_t offset = bytes_.size();
    nlattr attr{};
    attr.nla_type = type;
    Append(&attr, sizeof(attr));
    return offset;
  }
  void EndNest(size_t offset) {
    const uint16_t len = static_cast<uint16_t>(bytes_.size() - offset);
    std::memcpy(&bytes_[offset], &len, sizeof(len));
  }
  std::string Finish() {
    const uint32_t len = static_cast<uint32_t>(bytes_.size());
    std::memcpy(&bytes_[0], &len, sizeof(len));  // nlmsghdr.nlmsg_len
    return bytes_;
  }

 private:
  void Append(const void* data, size_t len) {
    bytes_.append(static_cast<const char*>(data), len);
  }
  void Pad() { bytes_.resize(NLA_ALIGN(bytes_.size()), '\0'); }
  std::string bytes_;
};

std::string EncodeApps(uint8_t cmd, absl::string_view ifname, const std::vector<dcb_app>& apps,
                       uint32_t seq) {
  MessageBuilder message(RTM_SETDCB, cmd, seq);
  message.IfName(ifname);
  const size_t ieee = message.BeginNest(DCB_ATTR_IEEE);
  const size_t table = message.BeginNest(DCB_ATTR_IEEE_APP_TABLE);
  for (const dcb_app& app : apps) message.Attr(DCB_ATTR_IEEE_APP, &app, sizeof(app));
  message.EndNest(table);
  message.EndNest(ieee);
  return message.Finish();
}

// DCB_CMD_IEEE_SET carrying one struct in DCB_ATTR_IEEE.
std::string EncodeIeeeSetStruct(absl::string_view ifname, uint16_t type, const void* data,
                                size_t len, uint32_t seq) {
  MessageBuilder message(RTM_SETDCB, DCB_CMD_IEEE_SET, seq);
  message.IfName(ifname);
  const size_t ieee = message.BeginNest(DCB_ATTR_IEEE);
  message.Attr(type, data, len);
  message.EndNest(ieee);
  return message.Finish();
}

// One attribute in a buffer of attributes.
struct Attr {
  uint16_t type;
  absl::string_view payload;
};

absl::StatusOr<std::vector<Attr>> ParseAttrs(absl::string_view data, absl::string_view where) {
  std::vector<Attr> attrs;
  while (data.size() >= NLA_HDRLEN) {
    nlattr header;
    std::memcpy(&header, data.data(), sizeof(header));
    if (header.nla_len < NLA_HDRLEN || header.nla_len > data.size()) {
      return absl::InternalError(absl::StrCat("DCB reply: attribute of length ", header.nla_len,
                                              " overruns ", where));
    }
    attrs.push_back({static_cast<uint16_t>(header.nla_type & NLA_TYPE_MASK),
                     data.substr(NLA_HDRLEN, header.nla_len - NLA_HDRLEN)});
    data.remove_prefix(std::min<size_t>(NLA_ALIGN(header.nla_len), data.size()));
  }
  return attrs;
}

// The first message of `reply` after checking header, sequence and NLMSG_ERROR; its
// attributes after the dcbmsg.
absl::StatusOr<std::vector<Attr>> ReplyAttrs(absl::string_view reply, uint32_t seq,
                                             absl::string_view what) {
  if (reply.size() < NLMSG_HDRLEN) {
    return absl::InternalError(absl::StrCat(what, ": reply of ", reply.size(),
                                            " bytes is shorter than a netlink header"));
  }
  nlmsghdr header;
  std::memcpy(&header, reply.data(), sizeof(header));
  if (header.nlmsg_len < NLMSG_HDRLEN || header.nlmsg_len > reply.size()) {
    return absl::InternalError(absl::StrCat(what, ": reply length ", header.nlmsg_len,
                                            " does not fit the ", reply.size(), " bytes read"));
  }
  if (header.nlmsg_seq != seq) {
    return absl::InternalError(absl::StrCat(what, ": reply has sequence ", header.nlmsg_seq,
                                            ", expected ", seq));
  }
  absl::string_view body = reply.substr(NLMSG_HDRLEN, header.nlmsg_len - NLMSG_HDRLEN);
  if (header.nlmsg_type == NLMSG_ERROR) {
    if (body.size() < sizeof(int)) return absl::InternalError(absl::StrCat(what, ": short NLMSG_ERROR"));
    int error = 0;
    std::memcpy(&error, body.data(), sizeof(error));
    if (error == 0) return std::vector<Attr>{};  // a plain ACK
    return DcbErrnoStatus(error, what);
  }
  if (header.nlmsg_type != RTM_GETDCB && header.nlmsg_type != RTM_SETDCB) {
    return absl::InternalError(absl::StrCat(what, ": unexpected reply type ", header.nlmsg_type));
  }
  if (body.size() < sizeof(dcbmsg)) return absl::InternalError(absl::StrCat(what, ": no dcbmsg"));
  return ParseAttrs(body.substr(NLMSG_ALIGN(sizeof(dcbmsg))), what);
}

}  // namespace

absl::Status DcbErrnoStatus(int error, absl::string_view what) {
  const int err = error < 0 && error != INT_MIN ? -error : error;  // -INT_MIN overflows
  std::string message = absl::StrCat(what, ": ", std::strerror(err));
  switch (err) {
    case EOPNOTSUPP:
      return absl::UnimplementedError(
          absl::StrCat(message, " (the netdev's driver has no DCB support: no dcbnl ops)"));
    case ENODEV:
      return absl::NotFoundError(absl::StrCat(message, " (no such netdev)"));
    case EPERM:
    case EACCES:
      return absl::PermissionDeniedError(absl::StrCat(message, " (needs CAP_NET_ADMIN)"));
    case EINVAL:
    case ERANGE:
      return absl::InvalidArgumentError(message);
    default:
      return absl::UnavailableError(message);
  }
}

std::string EncodeIeeeGet(absl::string_view ifname, uint32_t seq) {
  MessageBuilder message(RTM_GETDCB, DCB_CMD_IEEE_GET, seq);
  message.IfName(ifname);
  return message.Finish();
}

std::string EncodeIeeeSetEts(absl::string_view ifname, const ieee_ets& ets, uint32_t seq) {
  return EncodeIeeeSetStruct(ifname, DCB_ATTR_IEEE_ETS, &ets, sizeof(ets), seq);
}

std::string EncodeIeeeSetPfc(absl::string_view ifname, const ieee_pfc& pfc, uint32_t seq) {
  return EncodeIeeeSetStruct(ifname, DCB_ATTR_IEEE_PFC, &pfc, sizeof(pfc), seq);
}

std::string EncodeIeeeSetApps(absl::string_view ifname, const std::vector<dcb_app>& apps,
                              uint32_t seq) {
  return EncodeApps(DCB_CMD_IEEE_SET, ifname, apps, seq);
}

std::string EncodeIeeeDelApps(absl::string_view ifname, const std::vector<dcb_app>& apps,
                              uint32_t seq) {
  return EncodeApps(DCB_CMD_IEEE_DEL, ifname, apps, seq);
}

absl::StatusOr<DcbIeeeState> ParseIeeeGetReply(absl::string_view reply, uint32_t seq) {
  absl::StatusOr<std::vector<Attr>> attrs = ReplyAttrs(reply, seq, "RTM_GETDCB DCB_CMD_IEEE_GET");
  if (!attrs.ok()) return attrs.status();
  DcbIeeeState state;
  for (const Attr& top : *attrs) {
    if (top.type != DCB_ATTR_IEEE) continue;
    absl::StatusOr<std::vector<Attr>> ieee = ParseAttrs(top.payload, "DCB_ATTR_IEEE");
    if (!ieee.ok()) return ieee.status();
    for (const Attr& attr : *ieee) {
      if (attr.type == DCB_ATTR_IEEE_ETS) {
        if (attr.payload.size() < sizeof(ieee_ets)) {
          return absl::InternalError(absl::StrCat("DCB_ATTR_IEEE_ETS of ", attr.payload.size(),
                                                  " bytes, struct ieee_ets has ", sizeof(ieee_ets)));
        }
        std::memcpy(&state.ets, attr.payload.data(), sizeof(ieee_ets));
        state.has_ets = true;
      } else if (attr.type == DCB_ATTR_IEEE_PFC) {
        if (attr.payload.size() < sizeof(ieee_pfc)) {
          return absl::InternalError(absl::StrCat("DCB_ATTR_IEEE_PFC of ", attr.payload.size(),
                                                  " bytes, struct ieee_pfc has ", sizeof(ieee_pfc)));
        }
        std::memcpy(&state.pfc, attr.payload.data(), sizeof(ieee_pfc));
        state.has_pfc = true;
      } else if (attr.type == DCB_ATTR_IEEE_APP_TABLE) {
        absl::StatusOr<std::vector<Attr>> apps = ParseAttrs(attr.payload, "DCB_ATTR_IEEE_APP_TABLE");
        if (!apps.ok()) return apps.status();
        for (const Attr& app_attr : *apps) {
          if (app_attr.type != DCB_ATTR_IEEE_APP || app_attr.payload.size() < sizeof(dcb_app)) continue;
          dcb_app app;
          std::memcpy(&app, app_attr.payload.data(), sizeof(app));
          state.apps.push_back(app);
        }
      }
    }
  }
  return state;
}

absl::Status ParseIeeeSetReply(absl::string_view reply, uint32_t seq) {
  absl::StatusOr<std::vector<Attr>> attrs = ReplyAttrs(reply, seq, "RTM_SETDCB DCB_CMD_IEEE_SET");
  if (!attrs.ok()) return attrs.status();
  for (const Attr& attr : *attrs) {
    // dcbnl_ieee_set / _del report the driver's result as one u8 (a negative errno cast).
    if (attr.type == DCB_ATTR_IEEE && attr.payload.size() >= 1) {
      const int8_t status = static_cast<int8_t>(attr.payload[0]);
      if (status != 0) return DcbErrnoStatus(status, "RTM_SETDCB: the driver refused the setting");
    }
  }
  return absl::OkStatus();
}

}  // namespace weft::agent
