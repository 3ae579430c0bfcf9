// Verbs: the one interface through which libweft touches an RDMA device. Every
// libibverbs call the data path uses has a method here, expressed in plain Weft structs
// (no ibv_* types), so that the RC transport runs unchanged over the real library
// (rdma/verbs_ibv.h, the only file that includes <infiniband/verbs.h>) and over the
// in-process fake (rdma/fake_verbs.h) in tests.
//
// Errors: every fallible call returns absl::Status / absl::StatusOr naming the verb and
// carrying strerror text, e.g. "ibv_reg_mr(len=4096): Cannot allocate memory (errno 12)".
// Failed work requests are not call errors: they come back as WorkCompletion statuses.
//
// Resources are owned by the handles returned (std::unique_ptr); a handle's destructor
// releases the resource (ibv_destroy_qp, ibv_dereg_mr, ...) and logs a failure, since
// a release failure is not something a caller can act on. Release children before
// parents: QPs and MRs before their PD, QPs before their CQs, CQs before their
// completion channel, everything before the device context.
//
// Thread-safety: implementations are thread-safe in the sense libibverbs is: calls on
// different objects may run concurrently; PostSend/PostRecv on one QP and PollCq on
// one CQ must be serialized by the caller.
#ifndef WEFT_RDMA_VERBS_H_
#define WEFT_RDMA_VERBS_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"

namespace weft::rdma {

// A 128-bit GID in network byte order, as the GID table holds it.
struct Gid {
  std::array<uint8_t, 16> bytes{};

  // "::ffff:10.0.0.1"-style mapping of an IPv4 address given in host byte order
  // (0x0a000001 for 10.0.0.1).
  static Gid FromIpv4(uint32_t ipv4_host_order);
  // Parses the sysfs form "0000:0000:0000:0000:0000:ffff:0a00:0001" (eight groups of
  // four hex digits). INVALID_ARGUMENT naming the text otherwise.
  static absl::StatusOr<Gid> Parse(absl::string_view text);

  bool IsZero() const;
  // Whether this is an IPv4-mapped address (::ffff:a.b.c.d).
  bool IsIpv4Mapped() const;
  // The mapped IPv4 address in host byte order; only meaningful if IsIpv4Mapped().
  uint32_t Ipv4() const;
  // The sysfs form, eight colon-separated groups of four lower-case hex digits.
  std::string ToString() const;

  friend bool operator==(const Gid& a, const Gid& b) { return a.bytes == b.bytes; }
  friend bool operator!=(const Gid& a, const Gid& b) { return !(a == b); }
};

// ibv_gid_type. RoCE v1 and IB share a slot type in sysfs ("IB/RoCE v1").
enum class GidType { kIb, kRoceV1, kRoceV2 };

// One valid GID table slot (ibv_gid_entry).
struct GidEntry {
  uint32_t index = 0;
  uint32_t port = 1;
  Gid gid;
  GidType type = GidType::kRoceV2;
  uint32_t ndev_ifindex = 0;  // the netdev the GID belongs to; 0 when none
};

struct DeviceInfo {
  std::string name;  // e.g. "mlx5_0"
  uint64_t node_guid = 0;
};

enum class PortState { kNop, kDown, kInit, kArmed, kActive, kActiveDefer };
enum class LinkLayer { kUnspecified, kInfiniBand, kEthernet };

struct PortAttributes {
  PortState state = PortState::kDown;
  LinkLayer link_layer = LinkLayer::kUnspecified;
  uint32_t active_mtu_bytes = 0;  // 256..4096
  uint32_t max_mtu_bytes = 0;
  uint32_t gid_table_len = 0;
  uint32_t max_msg_bytes = 0;
};

enum class QpState { kReset, kInit, kRtr, kRts, kSqd, kSqe, kError };

// ibv_qp_attr_mask bits (same values as libibverbs).
enum QpAttrMask : uint32_t {
  kQpAttrState = 1u << 0,
  kQpAttrAccessFlags = 1u << 3,
  kQpAttrPkeyIndex = 1u << 4,
  kQpAttrPort = 1u << 5,
  kQpAttrQkey = 1u << 6,
  kQpAttrAv = 1u << 7,
  kQpAttrPathMtu = 1u << 8,
  kQpAttrTimeout = 1u << 9,
  kQpAttrRetryCnt = 1u << 10,
  kQpAttrRnrRetry = 1u << 11,
  kQpAttrRqPsn = 1u << 12,
  kQpAttrMaxQpRdAtomic = 1u << 13,
  kQpAttrMinRnrTimer = 1u << 15,
  kQpAttrSqPsn = 1u << 16,
  kQpAttrMaxDestRdAtomic = 1u << 17,
  kQpAttrDestQpn = 1u << 20,
};

// ibv_access_flags bits (same values as libibverbs).
enum AccessFlag : uint32_t {
  kAccessLocalWrite = 1u << 0,
  kAccessRemoteWrite = 1u << 1,
  kAccessRemoteRead = 1u << 2,
  kAccessRemoteAtomic = 1u << 3,
};

// The address vector of an RC QP (ibv_ah_attr with its global route header).
struct AddressVector {
  bool is_global = true;
  Gid dgid;
  uint8_t sgid_index = 0;
  uint8_t hop_limit = 255;
  uint8_t traffic_class = 0;  // the IP ToS byte on RoCE v2
  uint32_t flow_label = 0;
  uint8_t service_level = 0;
  uint16_t dlid = 0;
  uint8_t port = 1;
};

// RoCE v2 UDP source port of a datagram whose address handle carries flow label `fl`,
// as rdma-core computes it (ibv_flow_label_to_udp_sport, which mlx5 uses):
// ((fl & 0x3FFF) ^ ((fl & 0xFC000) >> 14)) | 0xC000; fl = 0 leaves the port to the
// device (a random one in 0xC000..0xFFFF).
uint16_t FlowLabelToUdpSourcePort(uint32_t flow_label);
// The flow label that makes the source port `port` (49152..65535): port & 0x3FFF,
// which is 0 (the device's choice) for port 49152 itself.
uint32_t FlowLabelForUdpSourcePort(uint16_t port);

// ibv_qp_attr, restricted to what RC and UD setup use. Which fields count is given by the
// QpAttrMask passed alongside.
struct QpAttributes {
  QpState state = QpState::kReset;
  // RESET -> INIT
  uint16_t pkey_index = 0;
  uint8_t port = 1;
  uint32_t access_flags = 0;  // AccessFlag bits (RC)
  uint32_t qkey = 0;          // UD: the Q_Key a datagram must carry to be received
  // INIT -> RTR
  AddressVector av;
  uint32_t path_mtu_bytes = 1024;  // 256, 512, 1024, 2048 or 4096
  uint32_t dest_qp_num = 0;
  uint32_t rq_psn = 0;
  uint8_t max_dest_rd_atomic = 0;
  uint8_t min_rnr_timer = 0;
  // RTR -> RTS
  uint32_t sq_psn = 0;
  uint8_t max_rd_atomic = 0;
  uint8_t retry_cnt = 0;
  uint8_t rnr_retry = 0;
  uint8_t timeout = 0;  // local ACK timeout: 4.096 µs × 2^timeout
};

struct QpCapabilities {
  uint32_t max_send_wr = 128;
  uint32_t max_recv_wr = 128;
  uint32_t max_send_sge = 2;
  uint32_t max_recv_sge = 1;
  uint32_t max_inline_data = 0;
};

// A scatter/gather element: registered memory [addr, addr + length) under `lkey`.
struct Sge {
  uint64_t addr = 0;
  uint32_t length = 0;
  uint32_t lkey = 0;
};

enum class SendOpcode { kSend, kSendWithImm, kRdmaWrite, kRdmaWriteWithImm };

// ibv_send_wr for one work request (no chaining: pass several in a span).
struct SendWorkRequest {
  uint64_t wr_id = 0;
  SendOpcode opcode = SendOpcode::kSend;
  std::array<Sge, 2> sg_list{};
  int num_sge = 0;
  uint32_t imm_data = 0;  // host byte order; the implementation converts
  uint64_t remote_addr = 0;
  uint32_t rkey = 0;
  bool signaled = true;
  // UD only (ibv_send_wr.wr.ud): where the datagram goes.
  class VerbsAh* ah = nullptr;
  uint32_t remote_qpn = 0;
  uint32_t remote_qkey = 0;
};

struct RecvWorkRequest {
  uint64_t wr_id = 0;
  std::array<Sge, 1> sg_list{};
  int num_sge = 0;
};

// ibv_wc_status, with the statuses the data path distinguishes; the rest map to
// kGeneralError (WorkCompletion::raw_status keeps the library's value).
enum class WcStatus {
  kSuccess,
  kLocalLengthError,
  kLocalQpOperationError,
  kLocalProtectionError,
  kWrFlushError,
  kBadResponseError,
  kLocalAccessError,
  kRemoteInvalidRequestError,
  kRemoteAccessError,
  kRemoteOperationError,
  kRetryExceededError,
  kRnrRetryExceededError,
  kFatalError,
  kGeneralError,
};

enum class WcOpcode { kSend, kRdmaWrite, kRecv, kRecvRdmaWithImm, kOther };

struct WorkCompletion {
  uint64_t wr_id = 0;
  WcStatus status = WcStatus::kSuccess;
  WcOpcode opcode = WcOpcode::kSend;
  uint32_t byte_len = 0;
  bool has_imm = false;
  uint32_t imm_data = 0;  // host byte order
  uint32_t qp_num = 0;
  uint32_t vendor_err = 0;
  int raw_status = 0;
  // UD receives: the sender's QP number, and whether the buffer's first 40 bytes hold
  // a GRH (on RoCE always: a UD receive buffer needs 40 bytes more than the payload).
  uint32_t src_qp = 0;
  bool has_grh = false;
  // The NIC's completion time in ns of its wall clock, from a CQ made by
  // CreateTimestampedCq; 0 when absent (never read a 0 as a time).
  uint64_t completion_timestamp_ns = 0;
};

// Bytes a UD receive buffer holds before the payload (the GRH, on RoCE v2 over IPv4
// with the IPv4 header in its last 20).
inline constexpr uint32_t kUdGrhBytes = 40;

// "IBV_WC_REM_ACCESS_ERR"-style names, as ibv_wc_status_str would print them.
absl::string_view WcStatusName(WcStatus status);
absl::string_view QpStateName(QpState state);
absl::string_view GidTypeName(GidType type);

// Resource handles. Implementations derive from these; a handle must only be passed
// back to the Verbs object that created it.
class VerbsContext {
 public:
  virtual ~VerbsContext() = default;
  virtual const std::string& device_name() const = 0;
};
class VerbsPd {
 public:
  virtual ~VerbsPd() = default;
};
class VerbsCompChannel {
 public:
  virtual ~VerbsCompChannel() = default;
};
class VerbsCq {
 public:
  virtual ~VerbsCq() = default;
};
class VerbsQp {
 public:
  virtual ~VerbsQp() = default;
  virtual uint32_t qp_num() const = 0;
};
// An address handle (ibv_ah): where a UD datagram goes, with its flow label and
// traffic class.
class VerbsAh {
 public:
  virtual ~VerbsAh() = default;
};
class VerbsMr {
 public:
  virtual ~VerbsMr() = default;
  virtual uint32_t lkey() const = 0;
  virtual uint32_t rkey() const = 0;
  virtual uint64_t addr() const = 0;
  virtual size_t length() const = 0;
};

class Verbs {
 public:
  virtual ~Verbs() = default;

  // ibv_get_device_list. An empty list is not an error: the node has no RDMA device.
  virtual absl::StatusOr<std::vector<DeviceInfo>> ListDevices() = 0;
  // ibv_open_device on the device named `name`; NOT_FOUND naming the devices present.
  virtual absl::StatusOr<std::unique_ptr<VerbsContext>> OpenDevice(absl::string_view name) = 0;
  // ibv_query_port.
  virtual absl::StatusOr<PortAttributes> QueryPort(VerbsContext* context, uint32_t port) = 0;
  // ibv_query_gid_table: the valid slots of every port.
  virtual absl::StatusOr<std::vector<GidEntry>> QueryGidTable(VerbsContext* context) = 0;
  // ibv_query_gid_ex: one slot; NOT_FOUND for an empty slot (ENODATA).
  virtual absl::StatusOr<GidEntry> QueryGid(VerbsContext* context, uint32_t port,
                                            uint32_t index) = 0;
  // ibv_alloc_pd.
  virtual absl::StatusOr<std::unique_ptr<VerbsPd>> AllocPd(VerbsContext* context) = 0;
  // ibv_create_comp_channel.
  virtual absl::StatusOr<std::unique_ptr<VerbsCompChannel>> CreateCompChannel(
      VerbsContext* context) = 0;
  // ibv_create_cq with room for `cqe` completions; `channel` may be null (polling only).
  virtual absl::StatusOr<std::unique_ptr<VerbsCq>> CreateCq(VerbsContext* context, int cqe,
                                                            VerbsCompChannel* channel) = 0;
  // ibv_req_notify_cq: the next completion on `cq` raises one event on its channel.
  virtual absl::Status RequestCqNotification(VerbsCq* cq) = 0;
  // ibv_get_cq_event (+ ibv_ack_cq_events): waits up to `timeout` for an event on
  // `channel`. Returns the CQ that raised it, or nullptr on timeout.
  virtual absl::StatusOr<VerbsCq*> WaitCqEvent(VerbsCompChannel* channel,
                                               absl::Duration timeout) = 0;
  // ibv_create_qp for an RC QP on `pd` with the given CQs; starts in RESET.
  virtual absl::StatusOr<std::unique_ptr<VerbsQp>> CreateRcQp(VerbsPd* pd, VerbsCq* send_cq,
                                                              VerbsCq* recv_cq,
                                                              const QpCapabilities& caps) = 0;
  // ibv_create_qp for a UD QP (datagrams, any peer, PostSend with an address handle);
  // starts in RESET. Its transitions: INIT needs STATE, PKEY_INDEX, PORT, QKEY; RTR
  // needs STATE; RTS needs STATE, SQ_PSN.
  virtual absl::StatusOr<std::unique_ptr<VerbsQp>> CreateUdQp(VerbsPd* pd, VerbsCq* send_cq,
                                                              VerbsCq* recv_cq,
                                                              const QpCapabilities& caps) = 0;
  // ibv_create_ah: on RoCE `av` must be global (dgid, sgid_index, traffic_class,
  // flow_label: the flow label picks the UDP source port, FlowLabelToUdpSourcePort).
  virtual absl::StatusOr<std::unique_ptr<VerbsAh>> CreateAh(VerbsPd* pd,
                                                            const AddressVector& av) = 0;
  // ibv_create_cq_ex with IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK: PollCq fills
  // WorkCompletion::completion_timestamp_ns. UNIMPLEMENTED (EOPNOTSUPP) when the device
  // cannot: use CreateCq and software time then.
  virtual absl::StatusOr<std::unique_ptr<VerbsCq>> CreateTimestampedCq(
      VerbsContext* context, int cqe, VerbsCompChannel* channel) = 0;
  // ibv_modify_qp with the fields of `attr` named by `attr_mask` (QpAttrMask bits).
  virtual absl::Status ModifyQp(VerbsQp* qp, const QpAttributes& attr, uint32_t attr_mask) = 0;
  // ibv_query_qp, state only.
  virtual absl::StatusOr<QpState> QueryQpState(VerbsQp* qp) = 0;
  // ibv_reg_mr over [addr, addr + length) with AccessFlag bits `access`.
  virtual absl::StatusOr<std::unique_ptr<VerbsMr>> RegisterMr(VerbsPd* pd, void* addr,
                                                              size_t length, uint32_t access) = 0;
  // ibv_post_send of `wrs` in order. On error, the ones before the failing one (named in
  // the message) were posted.
  virtual absl::Status PostSend(VerbsQp* qp, absl::Span<const SendWorkRequest> wrs) = 0;
  // ibv_post_recv, as PostSend.
  virtual absl::Status PostRecv(VerbsQp* qp, absl::Span<const RecvWorkRequest> wrs) = 0;
  // ibv_poll_cq: fills up to out.size() completions, returns how many.
  virtual absl::StatusOr<int> PollCq(VerbsCq* cq, absl::Span<WorkCompletion> out) = 0;
};

// Converts an errno value from a verbs call into a status: "<call>: <strerror> (errno N)",
// with the canonical code closest to the errno (ENOMEM -> RESOURCE_EXHAUSTED, EINVAL ->
// INVALID_ARGUMENT, ENODATA/ENOENT/ENODEV -> NOT_FOUND, EPERM/EACCES -> PERMISSION_DENIED,
// EAGAIN/EBUSY -> UNAVAILABLE, ENOSYS/EOPNOTSUPP -> UNIMPLEMENTED, else INTERNAL).
absl::Status VerbsErrnoToStatus(absl::string_view call, int errno_value);

// Path MTU in bytes <-> the ibv_mtu enum value (1 = 256 ... 5 = 4096). 0 when invalid.
int MtuBytesToEnum(uint32_t mtu_bytes);
uint32_t MtuEnumToBytes(int mtu_enum);

}  // namespace weft::rdma

#endif  // WEFT_RDMA_VERBS_H_
