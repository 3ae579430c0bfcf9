#include "rdma/verbs.h"

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"

namespace weft::rdma {

Gid Gid::FromIpv4(uint32_t ipv4_host_order) {
  Gid gid;
  gid.bytes[10] = 0xff;
  gid.bytes[11] = 0xff;
  gid.bytes[12] = static_cast<uint8_t>(ipv4_host_order >> 24);
  gid.bytes[13] = static_cast<uint8_t>(ipv4_host_order >> 16);
  gid.bytes[14] = static_cast<uint8_t>(ipv4_host_order >> 8);
  gid.bytes[15] = static_cast<uint8_t>(ipv4_host_order);
  return gid;
}

absl::StatusOr<Gid> Gid::Parse(absl::string_view text) {
  std::vector<absl::string_view> groups = absl::StrSplit(text, ':');
  auto invalid = [&] {
    return absl::InvalidArgumentError(
        absl::StrCat("GID '", text, "' is not eight colon-separated groups of four hex digits"));
  };
  if (groups.size() != 8) return invalid();
  Gid gid;
  for (size_t i = 0; i < groups.size(); ++i) {
    if (groups[i].size() != 4) return invalid();
    uint32_t value = 0;
    if (!absl::SimpleHexAtoi(groups[i], &value)) return invalid();
    gid.bytes[2 * i] = static_cast<uint8_t>(value >> 8);
    gid.bytes[2 * i + 1] = static_cast<uint8_t>(value);
  }
  return gid;
}

bool Gid::IsZero() const {
  for (uint8_t b : bytes) {
    if (b != 0) return false;
  }
  return true;
}

bool Gid::IsIpv4Mapped() const {
  for (int i = 0; i < 10; ++i) {
    if (bytes[i] != 0) return false;
  }
  return bytes[10] == 0xff && bytes[11] == 0xff;
}

uint32_t Gid::Ipv4() const {
  return (uint32_t{bytes[12]} << 24) | (uint32_t{bytes[13]} << 16) | (uint32_t{bytes[14]} << 8) |
         uint32_t{bytes[15]};
}

std::string Gid::ToString() const {
  std::string out;
  for (int i = 0; i < 8; ++i) {
    if (i > 0) out.push_back(':');
    absl::StrAppendFormat(&out, "%02x%02x", bytes[2 * i], bytes[2 * i + 1]);
  }
  return out;
}

absl::string_view WcStatusName(WcStatus status) {
  switch (status) {
    case WcStatus::kSuccess:
      return "IBV_WC_SUCCESS";
    case WcStatus::kLocalLengthError:
      return "IBV_WC_LOC_LEN_ERR";
    case WcStatus::kLocalQpOperationError:
      return "IBV_WC_LOC_QP_OP_ERR";
    case WcStatus::kLocalProtectionError:
      return "IBV_WC_LOC_PROT_ERR";
    case WcStatus::kWrFlushError:
      return "IBV_WC_WR_FLUSH_ERR";
    case WcStatus::kBadResponseError:
      return "IBV_WC_BAD_RESP_ERR";
    case WcStatus::kLocalAccessError:
      return "IBV_WC_LOC_ACCESS_ERR";
    case WcStatus::kRemoteInvalidRequestError:
      return "IBV_WC_REM_INV_REQ_ERR";
    case WcStatus::kRemoteAccessError:
      return "IBV_WC_REM_ACCESS_ERR";
    case WcStatus::kRemoteOperationError:
      return "IBV_WC_REM_OP_ERR";
    case WcStatus::kRetryExceededError:
      return "IBV_WC_RETRY_EXC_ERR";
    case WcStatus::kRnrRetryExceededError:
      return "IBV_WC_RNR_RETRY_EXC_ERR";
    case WcStatus::kFatalError:
      return "IBV_WC_FATAL_ERR";
    case WcStatus::kGeneralError:
      return "IBV_WC_GENERAL_ERR";
  }
  return "IBV_WC_GENERAL_ERR";
}

absl::string_view QpStateName(QpState state) {
  switch (state) {
    case QpState::kReset:
      return "RESET";
    case QpState::kInit:
      return "INIT";
    case QpState::kRtr:
      return "RTR";
    case QpState::kRts:
      return "RTS";
    case QpState::kSqd:
      return "SQD";
    case QpState::kSqe:
      return "SQE";
    case QpState::kError:
      return "ERR";
  }
  return "UNKNOWN";
}

absl::string_view GidTypeName(GidType type) {
  switch (type) {
    case GidType::kIb:
      return "IB";
    case GidType::kRoceV1:
      return "RoCE v1";
    case GidType::kRoceV2:
      return "RoCE v2";
  }
  return "unknown";
}

absl::Status VerbsErrnoToStatus(absl::string_view call, int errno_value) {
  char buffer[128];
  // GNU strerror_r returns the message pointer (which may not be `buffer`).
  const char* text = strerror_r(errno_value, buffer, sizeof(buffer));
  std::string message = absl::StrCat(call, ": ", text, " (errno ", errno_value, ")");
  switch (errno_value) {
    case ENOMEM:
    case ENOSPC:
      return absl::ResourceExhaustedError(message);
    case EINVAL:
      return absl::InvalidArgumentError(message);
    case ENODATA:
    case ENOENT:
    case ENODEV:
    case ENXIO:
      return absl::NotFoundError(message);
    case EPERM:
    case EACCES:
      return absl::PermissionDeniedError(message);
    case EAGAIN:
    case EBUSY:
      return absl::UnavailableError(message);
    case ENOSYS:
    case EOPNOTSUPP:
      return absl::UnimplementedError(message);
    case ETIMEDOUT:
      return absl::DeadlineExceededError(message);
    default:
      return absl::InternalError(message);
  }
}

int MtuBytesToEnum(uint32_t mtu_bytes) {
  switch (mtu_bytes) {
    case 256:
      return 1;
    case 512:
      return 2;
    case 1024:
      return 3;
    case 2048:
      return 4;
    case 4096:
      return 5;
    default:
      return 0;
  }
}

uint32_t MtuEnumToBytes(int mtu_enum) {
  if (mtu_enum < 1 || mtu_enum > 5) return 0;
  return 128u << mtu_enum;
}

uint16_t FlowLabelToUdpSourcePort(uint32_t flow_label) {
  // Only defined for fl != 0; the device picks the port of fl = 0 itself.
  return static_cast<uint16_t>(((flow_label & 0x3FFF) ^ ((flow_label & 0xFC000) >> 14)) | 0xC000);
}

uint32_t FlowLabelForUdpSourcePort(uint16_t port) { return port & 0x3FFF; }

}  // namespace weft::rdma
