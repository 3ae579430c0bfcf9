#include "rdma/verbs_ibv.h"

#include <arpa/inet.h>
#include <endian.h>
#include <infiniband/verbs.h>
#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/logging.h"

namespace weft::rdma {
namespace {

void LogReleaseFailure(absl::string_view call, int errno_value) {
  if (errno_value == 0) return;
  WEFT_LOG(WARNING) << VerbsErrnoToStatus(call, errno_value);
}

class IbvContext : public VerbsContext {
 public:
  IbvContext(ibv_context* context, std::string name) : context_(context), name_(std::move(name)) {}
  ~IbvContext() override { LogReleaseFailure("ibv_close_device", ibv_close_device(context_)); }
  const std::string& device_name() const override { return name_; }
  ibv_context* get() const { return context_; }

 private:
  ibv_context* context_;
  std::string name_;
};

class IbvPd : public VerbsPd {
 public:
  explicit IbvPd(ibv_pd* pd) : pd_(pd) {}
  ~IbvPd() override { LogReleaseFailure("ibv_dealloc_pd", ibv_dealloc_pd(pd_)); }
  ibv_pd* get() const { return pd_; }

 private:
  ibv_pd* pd_;
};

class IbvCompChannel : public VerbsCompChannel {
 public:
  explicit IbvCompChannel(ibv_comp_channel* channel) : channel_(channel) {}
  ~IbvCompChannel() override {
    LogReleaseFailure("ibv_destroy_comp_channel", ibv_destroy_comp_channel(channel_));
  }
  ibv_comp_channel* get() const { return channel_; }

 private:
  ibv_comp_channel* channel_;
};

class IbvCq : public VerbsCq {
 public:
  explicit IbvCq(ibv_cq* cq) : cq_(cq) { cq_->cq_context = this; }
  // An extended CQ (ibv_create_cq_ex), polled with ibv_start_poll for its timestamps.
  explicit IbvCq(ibv_cq_ex* cq) : cq_(ibv_cq_ex_to_cq(cq)), ex_(cq) { cq_->cq_context = this; }
  ~IbvCq() override { LogReleaseFailure("ibv_destroy_cq", ibv_destroy_cq(cq_)); }
  ibv_cq* get() const { return cq_; }
  ibv_cq_ex* ex() const { return ex_; }

 private:
  ibv_cq* cq_;
  ibv_cq_ex* ex_ = nullptr;
};

class IbvAh : public VerbsAh {
 public:
  explicit IbvAh(ibv_ah* ah) : ah_(ah) {}
  ~IbvAh() override { LogReleaseFailure("ibv_destroy_ah", ibv_destroy_ah(ah_)); }
  ibv_ah* get() const { return ah_; }

 private:
  ibv_ah* ah_;
};

class IbvQp : public VerbsQp {
 public:
  explicit IbvQp(ibv_qp* qp) : qp_(qp) {}
  ~IbvQp() override { LogReleaseFailure("ibv_destroy_qp", ibv_destroy_qp(qp_)); }
  uint32_t qp_num() const override { return qp_->qp_num; }
  ibv_qp* get() const { return qp_; }

 private:
  ibv_qp* qp_;
};

class IbvMr : public VerbsMr {
 public:
  explicit IbvMr(ibv_mr* mr) : mr_(mr) {}
  ~IbvMr() override { LogReleaseFailure("ibv_dereg_mr", ibv_dereg_mr(mr_)); }
  uint32_t lkey() const override { return mr_->lkey; }
  uint32_t rkey() const override { return mr_->rkey; }
  uint64_t addr() const override { return reinterpret_cast<uint64_t>(mr_->addr); }
  size_t length() const override { return mr_->length; }

 private:
  ibv_mr* mr_;
};

ibv_context* Raw(VerbsContext* c) { return static_cast<IbvContext*>(c)->get(); }
ibv_pd* Raw(VerbsPd* p) { return static_cast<IbvPd*>(p)->get(); }
ibv_comp_channel* Raw(VerbsCompChannel* c) { return static_cast<IbvCompChannel*>(c)->get(); }
ibv_cq* Raw(VerbsCq* c) { return static_cast<IbvCq*>(c)->get(); }
ibv_qp* Raw(VerbsQp* q) { return static_cast<IbvQp*>(q)->get(); }

GidType FromIbvGidType(uint32_t type) {
  switch (type) {
    case IBV_GID_TYPE_ROCE_V2:
      return GidType::kRoceV2;
    case IBV_GID_TYPE_ROCE_V1:
      return GidType::kRoceV1;
    default:
      return GidType::kIb;
  }
}

GidEntry FromIbvGidEntry(const ibv_gid_entry& entry) {
  GidEntry out;
  out.index = entry.gid_index;
  out.port = entry.port_num;
  std::memcpy(out.gid.bytes.data(), entry.gid.raw, 16);
  out.type = FromIbvGidType(entry.gid_type);
  out.ndev_ifindex = entry.ndev_ifindex;
  return out;
}

PortState FromIbvPortState(ibv_port_state state) {
  switch (state) {
    case IBV_PORT_DOWN:
      return PortState::kDown;
    case IBV_PORT_INIT:
      return PortState::kInit;
    case IBV_PORT_ARMED:
      return PortState::kArmed;
    case IBV_PORT_ACTIVE:
      return PortState::kActive;
    case IBV_PORT_ACTIVE_DEFER:
      return PortState::kActiveDefer;
    default:
      return PortState::kNop;
  }
}

ibv_qp_state ToIbvQpState(QpState state) {
  switch (state) {
    case QpState::kReset:
      return IBV_QPS_RESET;
    case QpState::kInit:
      return IBV_QPS_INIT;
    case QpState::kRtr:
      return IBV_QPS_RTR;
    case QpState::kRts:
      return IBV_QPS_RTS;
    case QpState::kSqd:
      return IBV_QPS_SQD;
    case QpState::kSqe:
      return IBV_QPS_SQE;
    case QpState::kError:
      return IBV_QPS_ERR;
  }
  return IBV_QPS_ERR;
}

QpState FromIbvQpState(ibv_qp_state state) {
  switch (state) {
    case IBV_QPS_RESET:
      return QpState::kReset;
    case IBV_QPS_INIT:
      return QpState::kInit;
    case IBV_QPS_RTR:
      return QpState::kRtr;
    case IBV_QPS_RTS:
      return QpState::kRts;
    case IBV_QPS_SQD:
      return QpState::kSqd;
    case IBV_QPS_SQE:
      return QpState::kSqe;
    default:
      return QpState::kError;
  }
}

WcStatus FromIbvWcStatus(ibv_wc_status status) {
  switch (status) {
    case IBV_WC_SUCCESS:
      return WcStatus::kSuccess;
    case IBV_WC_LOC_LEN_ERR:
      return WcStatus::kLocalLengthError;
    case IBV_WC_LOC_QP_OP_ERR:
      return WcStatus::kLocalQpOperationError;
    case IBV_WC_LOC_PROT_ERR:
      return WcStatus::kLocalProtectionError;
    case IBV_WC_WR_FLUSH_ERR:
      return WcStatus::kWrFlushError;
    case IBV_WC_BAD_RESP_ERR:
      return WcStatus::kBadResponseError;
    case IBV_WC_LOC_ACCESS_ERR:
      return WcStatus::kLocalAccessError;
    case IBV_WC_REM_INV_REQ_ERR:
      return WcStatus::kRemoteInvalidRequestError;
    case IBV_WC_REM_ACCESS_ERR:
      return WcStatus::kRemoteAccessError;
    case IBV_WC_REM_OP_ERR:
      return WcStatus::kRemoteOperationError;
    case IBV_WC_RETRY_EXC_ERR:
      return WcStatus::kRetryExceededError;
    case IBV_WC_RNR_RETRY_EXC_ERR:
      return WcStatus::kRnrRetryExceededError;
    case IBV_WC_FATAL_ERR:
      return WcStatus::kFatalError;
    default:
      return WcStatus::kGeneralError;
  }
}

WcOpcode FromIbvWcOpcode(ibv_wc_opcode opcode) {
  switch (opcode) {
    case IBV_WC_SEND:
      return WcOpcode::kSend;
    case IBV_WC_RDMA_WRITE:
      return WcOpcode::kRdmaWrite;
    case IBV_WC_RECV:
      return WcOpcode::kRecv;
    case IBV_WC_RECV_RDMA_WITH_IMM:
      return WcOpcode::kRecvRdmaWithImm;
    default:
      return WcOpcode::kOther;
  }
}

ibv_wr_opcode ToIbvOpcode(SendOpcode opcode) {
  switch (opcode) {
    case SendOpcode::kSend:
      return IBV_WR_SEND;
    case SendOpcode::kSendWithImm:
      return IBV_WR_SEND_WITH_IMM;
    case SendOpcode::kRdmaWrite:
      return IBV_WR_RDMA_WRITE;
    case SendOpcode::kRdmaWriteWithImm:
      return IBV_WR_RDMA_WRITE_WITH_IMM;
  }
  return IBV_WR_SEND;
}

}  // namespace

std::string IbvVerbs::NoDeviceReason() const {
  absl::MutexLock lock(&mu_);
  return no_device_reason_;
}

absl::StatusOr<std::vector<DeviceInfo>> IbvVerbs::ListDevices() {
  int num_devices = 0;
  errno = 0;
  ibv_device** list = ibv_get_device_list(&num_devices);
  if (list == nullptr) {
    const int error = errno;
    if (error == ENOSYS) {
      // rdma-core's answer when the kernel has no RDMA support at all.
      absl::MutexLock lock(&mu_);
      no_device_reason_ = absl::StrCat("ibv_get_device_list returned 0 devices (",
                                       std::strerror(error), ": the kernel has no RDMA support)");
      return std::vector<DeviceInfo>{};
    }
    return VerbsErrnoToStatus("ibv_get_device_list", error);
  }
  std::vector<DeviceInfo> devices;
  for (int i = 0; i < num_devices; ++i) {
    DeviceInfo info;
    info.name = ibv_get_device_name(list[i]);
    info.node_guid = be64toh(ibv_get_device_guid(list[i]));
    devices.push_back(std::move(info));
  }
  ibv_free_device_list(list);
  absl::MutexLock lock(&mu_);
  no_device_reason_ = devices.empty() ? "ibv_get_device_list returned 0 devices" : std::string();
  return devices;
}

absl::StatusOr<std::unique_ptr<VerbsContext>> IbvVerbs::OpenDevice(absl::string_view name) {
  int num_devices = 0;
  errno = 0;
  ibv_device** list = ibv_get_device_list(&num_devices);
  if (list == nullptr) {
    const int error = errno;
    if (error == ENOSYS) {
      return absl::NotFoundError(
          absl::StrCat("RDMA device '", name, "' not found: the kernel has no RDMA support"));
    }
    return VerbsErrnoToStatus("ibv_get_device_list", error);
  }
  std::vector<std::string> names;
  ibv_device* found = nullptr;
  for (int i = 0; i < num_devices; ++i) {
    names.push_back(ibv_get_device_name(list[i]));
    if (names.back() == name) found = list[i];
  }
  if (found == nullptr) {
    ibv_free_device_list(list);
    return absl::NotFoundError(absl::StrCat("RDMA device '", name, "' not found; present: [",
                                            absl::StrJoin(names, ", "), "]"));
  }
  errno = 0;
  ibv_context* context = ibv_open_device(found);
  const int error = errno;
  ibv_free_device_list(list);
  if (context == nullptr) {
    return VerbsErrnoToStatus(absl::StrCat("ibv_open_device(", name, ")"), error);
  }
  return std::unique_ptr<VerbsContext>(new IbvContext(context, std::string(name)));
}

absl::StatusOr<PortAttributes> IbvVerbs::QueryPort(VerbsContext* context, uint32_t port) {
  ibv_port_attr attr;
  std::memset(&attr, 0, sizeof(attr));
  const int rc = ibv_query_port(Raw(context), static_cast<uint8_t>(port), &attr);
  if (rc != 0) {
    return VerbsErrnoToStatus(
        absl::StrCat("ibv_query_port(", context->device_name(), ", port=", port, ")"), rc);
  }
  PortAttributes out;
  out.state = FromIbvPortState(attr.state);
  out.link_layer = attr.link_layer == IBV_LINK_LAYER_ETHERNET     ? LinkLayer::kEthernet
                   : attr.link_layer == IBV_LINK_LAYER_INFINIBAND ? LinkLayer::kInfiniBand
                                                                  : LinkLayer::kUnspecified;
  out.active_mtu_bytes = MtuEnumToBytes(attr.active_mtu);
  out.max_mtu_bytes = MtuEnumToBytes(attr.max_mtu);
  out.gid_table_len = attr.gid_tbl_len;
  out.max_msg_bytes = attr.max_msg_sz;
  return out;
}

absl::StatusOr<std::vector<GidEntry>> IbvVerbs::QueryGidTable(VerbsContext* context) {
  ibv_device_attr device_attr;
  std::memset(&device_attr, 0, sizeof(device_attr));
  int rc = ibv_query_device(Raw(context), &device_attr);
  if (rc != 0) {
    return VerbsErrnoToStatus(absl::StrCat("ibv_query_device(", context->device_name(), ")"), rc);
  }
  size_t max_entries = 0;
  for (uint32_t port = 1; port <= device_attr.phys_port_cnt; ++port) {
    ibv_port_attr port_attr;
    std::memset(&port_attr, 0, sizeof(port_attr));
    rc = ibv_query_port(Raw(context), static_cast<uint8_t>(port), &port_attr);
    if (rc != 0) {
      return VerbsErrnoToStatus(
          absl::StrCat("ibv_query_port(", context->device_name(), ", port=", port, ")"), rc);
    }
    max_entries += port_attr.gid_tbl_len;
  }
  std::vector<ibv_gid_entry> entries(max_entries);
  const ssize_t count = ibv_query_gid_table(Raw(context), entries.data(), entries.size(), 0);
  if (count < 0) {
    return VerbsErrnoToStatus(absl::StrCat("ibv_query_gid_table(", context->device_name(), ")"),
                              static_cast<int>(-count));
  }
  std::vector<GidEntry> out;
  out.reserve(count);
  for (ssize_t i = 0; i < count; ++i) out.push_back(FromIbvGidEntry(entries[i]));
  return out;
}

absl::StatusOr<GidEntry> IbvVerbs::QueryGid(VerbsContext* context, uint32_t port, uint32_t index) {
  ibv_gid_entry entry;
  std::memset(&entry, 0, sizeof(entry));
  const int rc = ibv_query_gid_ex(Raw(context), port, index, &entry, 0);
  if (rc != 0) {
    return VerbsErrnoToStatus(absl::StrCat("ibv_query_gid_ex(", context->device_name(),
                                           ", port=", port, ", index=", index, ")"),
                              rc);
  }
  return FromIbvGidEntry(entry);
}

absl::StatusOr<std::unique_ptr<VerbsPd>> IbvVerbs::AllocPd(VerbsContext* context) {
  errno = 0;
  ibv_pd* pd = ibv_alloc_pd(Raw(context));
  if (pd == nullptr) {
    return VerbsErrnoToStatus(absl::StrCat("ibv_alloc_pd(", context->device_name(), ")"), errno);
  }
  return std::unique_ptr<VerbsPd>(new IbvPd(pd));
}

absl::StatusOr<std::unique_ptr<VerbsCompChannel>> IbvVerbs::CreateCompChannel(
    VerbsContext* context) {
  errno = 0;
  ibv_comp_channel* channel = ibv_create_comp_channel(Raw(context));
  if (channel == nullptr) {
    return VerbsErrnoToStatus(absl::StrCat("ibv_create_comp_channel(", context->device_name(), ")"),
                              errno);
  }
  return std::unique_ptr<VerbsCompChannel>(new IbvCompChannel(channel));
}

absl::StatusOr<std::unique_ptr<VerbsCq>> IbvVerbs::CreateCq(VerbsContext* context, int cqe,
                                                            VerbsCompChannel* channel) {
  errno = 0;
  ibv_cq* cq =
      ibv_create_cq(Raw(context), cqe, nullptr, channel == nullptr ? nullptr : Raw(channel), 0);
  if (cq == nullptr) {
    return VerbsErrnoToStatus(
        absl::StrCat("ibv_create_cq(", context->device_name(), ", cqe=", cqe, ")"), errno);
  }
  return std::unique_ptr<VerbsCq>(new IbvCq(cq));
}

absl::Status IbvVerbs::RequestCqNotification(VerbsCq* cq) {
  const int rc = ibv_req_notify_cq(Raw(cq), 0);
  if (rc != 0) return VerbsErrnoToStatus("ibv_req_notify_cq", rc);
  return absl::OkStatus();
}

absl::StatusOr<VerbsCq*> IbvVerbs::WaitCqEvent(VerbsCompChannel* channel, absl::Duration timeout) {
  ibv_comp_channel* raw = Raw(channel);
  pollfd fd{raw->fd, POLLIN, 0};
  const int timeout_ms = timeout == absl::InfiniteDuration()
                             ? -1
                             : static_cast<int>(absl::ToInt64Milliseconds(timeout));
  const int ready = ::poll(&fd, 1, timeout_ms);
  if (ready < 0) {
    if (errno == EINTR) return nullptr;
    return VerbsErrnoToStatus("poll(completion channel)", errno);
  }
  if (ready == 0) return nullptr;
  ibv_cq* cq = nullptr;
  void* cq_context = nullptr;
  if (ibv_get_cq_event(raw, &cq, &cq_context) != 0) {
    return VerbsErrnoToStatus("ibv_get_cq_event", errno);
  }
  ibv_ack_cq_events(cq, 1);
  return static_cast<VerbsCq*>(static_cast<IbvCq*>(cq_context));
}

absl::StatusOr<std::unique_ptr<VerbsCq>> IbvVerbs::CreateTimestampedCq(VerbsContext* context,
                                                                       int cqe,
                                                                       VerbsCompChannel* channel) {
  ibv_cq_init_attr_ex attr;
  std::memset(&attr, 0, sizeof(attr));
  attr.cqe = static_cast<uint32_t>(cqe);
  attr.channel = channel == nullptr ? nullptr : Raw(channel);
  attr.wc_flags = IBV_WC_STANDARD_FLAGS | IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK;
  errno = 0;
  ibv_cq_ex* cq = ibv_create_cq_ex(Raw(context), &attr);
  if (cq == nullptr) {
    return VerbsErrnoToStatus(absl::StrCat("ibv_create_cq_ex(", context->device_name(), ", cqe=",
                                           cqe, ", COMPLETION_TIMESTAMP_WALLCLOCK)"),
                              errno);
  }
  return std::unique_ptr<VerbsCq>(new IbvCq(cq));
}

absl::StatusOr<std::unique_ptr<VerbsAh>> IbvVerbs::CreateAh(VerbsPd* pd, const AddressVector& av) {
  ibv_ah_attr attr;
  std::memset(&attr, 0, sizeof(attr));
  attr.is_global = av.is_global ? 1 : 0;
  std::memcpy(attr.grh.dgid.raw, av.dgid.bytes.data(), 16);
  attr.grh.sgid_index = av.sgid_index;
  attr.grh.hop_limit = av.hop_limit;
  attr.grh.traffic_class = av.traffic_class;
  attr.grh.flow_label = av.flow_label;
  attr.sl = av.service_level;
  attr.dlid = av.dlid;
  attr.port_num = av.port;
  errno = 0;
  ibv_ah* ah = ibv_create_ah(Raw(pd), &attr);
  if (ah == nullptr) {
    return VerbsErrnoToStatus(absl::StrCat("ibv_create_ah(dgid=", av.dgid.ToString(),
                                           ", flow_label=", av.flow_label, ")"),
                              errno);
  }
  return std::unique_ptr<VerbsAh>(new IbvAh(ah));
}

namespace {

absl::StatusOr<std::unique_ptr<VerbsQp>> CreateQp(ibv_pd* pd, ibv_cq* send_cq, ibv_cq* recv_cq,
                                                  const QpCapabilities& caps, ibv_qp_type type) {
  ibv_qp_init_attr init;
  std::memset(&init, 0, sizeof(init));
  init.send_cq = send_cq;
  init.recv_cq = recv_cq;
  init.qp_type = type;
  init.sq_sig_all = 0;
  init.cap.max_send_wr = caps.max_send_wr;
  init.cap.max_recv_wr = caps.max_recv_wr;
  init.cap.max_send_sge = caps.max_send_sge;
  init.cap.max_recv_sge = caps.max_recv_sge;
  init.cap.max_inline_data = caps.max_inline_data;
  errno = 0;
  ibv_qp* qp = ibv_create_qp(pd, &init);
  if (qp == nullptr) {
    return VerbsErrnoToStatus(absl::StrCat("ibv_create_qp(", type == IBV_QPT_UD ? "UD" : "RC",
                                           ", max_send_wr=", caps.max_send_wr,
                                           ", max_recv_wr=", caps.max_recv_wr, ")"),
                              errno);
  }
  return std::unique_ptr<VerbsQp>(new IbvQp(qp));
}

}  // namespace

absl::StatusOr<std::unique_ptr<VerbsQp>> IbvVerbs::CreateUdQp(VerbsPd* pd, VerbsCq* send_cq,
                                                              VerbsCq* recv_cq,
                                                              const QpCapabilities& caps) {
  return CreateQp(Raw(pd), Raw(send_cq), Raw(recv_cq), caps, IBV_QPT_UD);
}

absl::StatusOr<std::unique_ptr<VerbsQp>> IbvVerbs::CreateRcQp(VerbsPd* pd, VerbsCq* send_cq,
                                                              VerbsCq* recv_cq,
                                                              const QpCapabilities& caps) {
  return CreateQp(Raw(pd), Raw(send_cq), Raw(recv_cq), caps, IBV_QPT_RC);
}

absl::Status IbvVerbs::ModifyQp(VerbsQp* qp, const QpAttributes& attr, uint32_t attr_mask) {
  ibv_qp_attr raw;
  std::memset(&raw, 0, sizeof(raw));
  raw.qp_state = ToIbvQpState(attr.state);
  raw.pkey_index = attr.pkey_index;
  raw.port_num = attr.port;
  raw.qp_access_flags = attr.access_flags;
  raw.qkey = attr.qkey;
  raw.ah_attr.is_global = attr.av.is_global ? 1 : 0;
  std::memcpy(raw.ah_attr.grh.dgid.raw, attr.av.dgid.bytes.data(), 16);
  raw.ah_attr.grh.sgid_index = attr.av.sgid_index;
  raw.ah_attr.grh.hop_limit = attr.av.hop_limit;
  raw.ah_attr.grh.traffic_class = attr.av.traffic_class;
  raw.ah_attr.grh.flow_label = attr.av.flow_label;
  raw.ah_attr.sl = attr.av.service_level;
  raw.ah_attr.dlid = attr.av.dlid;
  raw.ah_attr.port_num = attr.av.port;
  raw.path_mtu = static_cast<ibv_mtu>(MtuBytesToEnum(attr.path_mtu_bytes));
  raw.dest_qp_num = attr.dest_qp_num;
  raw.rq_psn = attr.rq_psn;
  raw.max_dest_rd_atomic = attr.max_dest_rd_atomic;
  raw.min_rnr_timer = attr.min_rnr_timer;
  raw.sq_psn = attr.sq_psn;
  raw.max_rd_atomic = attr.max_rd_atomic;
  raw.retry_cnt = attr.retry_cnt;
  raw.rnr_retry = attr.rnr_retry;
  raw.timeout = attr.timeout;
  const int rc = ibv_modify_qp(Raw(qp), &raw, static_cast<int>(attr_mask));
  if (rc != 0) {
    return VerbsErrnoToStatus(
        absl::StrCat("ibv_modify_qp(qpn=", qp->qp_num(), ", to ", QpStateName(attr.state), ")"),
        rc);
  }
  return absl::OkStatus();
}

absl::StatusOr<QpState> IbvVerbs::QueryQpState(VerbsQp* qp) {
  ibv_qp_attr attr;
  ibv_qp_init_attr init;
  const int rc = ibv_query_qp(Raw(qp), &attr, IBV_QP_STATE, &init);
  if (rc != 0) {
    return VerbsErrnoToStatus(absl::StrCat("ibv_query_qp(qpn=", qp->qp_num(), ")"), rc);
  }
  return FromIbvQpState(attr.qp_state);
}

absl::StatusOr<std::unique_ptr<VerbsMr>> IbvVerbs::RegisterMr(VerbsPd* pd, void* addr,
                                                              size_t length, uint32_t access) {
  errno = 0;
  ibv_mr* mr = ibv_reg_mr(Raw(pd), addr, length, static_cast<int>(access));
  if (mr == nullptr) {
    return VerbsErrnoToStatus(absl::StrCat("ibv_reg_mr(len=", length, ")"), errno);
  }
  return std::unique_ptr<VerbsMr>(new IbvMr(mr));
}

absl::Status IbvVerbs::PostSend(VerbsQp* qp, absl::Span<const SendWorkRequest> wrs) {
  if (wrs.empty()) return absl::OkStatus();
  std::vector<ibv_send_wr> raw(wrs.size());
  std::vector<ibv_sge> sges(wrs.size() * 2);
  for (size_t i = 0; i < wrs.size(); ++i) {
    const SendWorkRequest& wr = wrs[i];
    if (wr.num_sge < 0 || wr.num_sge > static_cast<int>(wr.sg_list.size())) {
      // The request holds only sg_list.size() entries; libibverbs would read past them.
      return VerbsErrnoToStatus(absl::StrCat("ibv_post_send(qpn=", qp->qp_num(), ", wr ", i,
                                             " of ", wrs.size(), ", num_sge ", wr.num_sge, ")"),
                                EINVAL);
    }
    ibv_send_wr& out = raw[i];
    std::memset(&out, 0, sizeof(out));
    out.wr_id = wr.wr_id;
    out.opcode = ToIbvOpcode(wr.opcode);
    out.send_flags = wr.signaled ? IBV_SEND_SIGNALED : 0;
    for (int s = 0; s < wr.num_sge; ++s) {
      sges[2 * i + s] = ibv_sge{wr.sg_list[s].addr, wr.sg_list[s].length, wr.sg_list[s].lkey};
    }
    out.sg_list = wr.num_sge > 0 ? &sges[2 * i] : nullptr;
    out.num_sge = wr.num_sge;
    if (wr.opcode == SendOpcode::kSendWithImm || wr.opcode == SendOpcode::kRdmaWriteWithImm) {
      out.imm_data = htonl(wr.imm_data);
    }
    if (wr.ah != nullptr) {
      out.wr.ud.ah = static_cast<IbvAh*>(wr.ah)->get();
      out.wr.ud.remote_qpn = wr.remote_qpn;
      out.wr.ud.remote_qkey = wr.remote_qkey;
    } else {
      out.wr.rdma.remote_addr = wr.remote_addr;
      out.wr.rdma.rkey = wr.rkey;
    }
    out.next = i + 1 < wrs.size() ? &raw[i + 1] : nullptr;
  }
  ibv_send_wr* bad = nullptr;
  const int rc = ibv_post_send(Raw(qp), raw.data(), &bad);
  if (rc != 0) {
    const size_t bad_index = bad == nullptr ? 0 : static_cast<size_t>(bad - raw.data());
    return VerbsErrnoToStatus(absl::StrCat("ibv_post_send(qpn=", qp->qp_num(), ", wr ", bad_index,
                                           " of ", wrs.size(), ")"),
                              rc);
  }
  return absl::OkStatus();
}

absl::Status IbvVerbs::PostRecv(VerbsQp* qp, absl::Span<const RecvWorkRequest> wrs) {
  if (wrs.empty()) return absl::OkStatus();
  std::vector<ibv_recv_wr> raw(wrs.size());
  std::vector<ibv_sge> sges(wrs.size());
  for (size_t i = 0; i < wrs.size(); ++i) {
    if (wrs[i].num_sge < 0 || wrs[i].num_sge > static_cast<int>(wrs[i].sg_list.size())) {
      return VerbsErrnoToStatus(absl::StrCat("ibv_post_recv(qpn=", qp->qp_num(), ", wr ", i,
                                             " of ", wrs.size(), ", num_sge ", wrs[i].num_sge,
                                             ")"),
                                EINVAL);
    }
    ibv_recv_wr& out = raw[i];
    std::memset(&out, 0, sizeof(out));
    out.wr_id = wrs[i].wr_id;
    if (wrs[i].num_sge > 0) {
      sges[i] = ibv_sge{wrs[i].sg_list[0].addr, wrs[i].sg_list[0].length, wrs[i].sg_list[0].lkey};
      out.sg_list = &sges[i];
      out.num_sge = 1;
    }
    out.next = i + 1 < wrs.size() ? &raw[i + 1] : nullptr;
  }
  ibv_recv_wr* bad = nullptr;
  const int rc = ibv_post_recv(Raw(qp), raw.data(), &bad);
  if (rc != 0) {
    const size_t bad_index = bad == nullptr ? 0 : static_cast<size_t>(bad - raw.data());
    return VerbsErrnoToStatus(absl::StrCat("ibv_post_recv(qpn=", qp->qp_num(), ", wr ", bad_index,
                                           " of ", wrs.size(), ")"),
                              rc);
  }
  return absl::OkStatus();
}

namespace {

// Polls an extended CQ (one made with completion timestamps).
absl::StatusOr<int> PollCqEx(ibv_cq_ex* cq, absl::Span<WorkCompletion> out) {
  if (out.empty()) return 0;
  ibv_poll_cq_attr attr{};
  int rc = ibv_start_poll(cq, &attr);
  if (rc == ENOENT) return 0;
  if (rc != 0) return VerbsErrnoToStatus("ibv_start_poll", rc);
  int n = 0;
  while (true) {
    WorkCompletion& wc = out[n++];
    wc = WorkCompletion();
    wc.wr_id = cq->wr_id;
    wc.raw_status = cq->status;
    wc.status = FromIbvWcStatus(cq->status);
    wc.opcode = FromIbvWcOpcode(ibv_wc_read_opcode(cq));
    wc.byte_len = ibv_wc_read_byte_len(cq);
    const unsigned int flags = ibv_wc_read_wc_flags(cq);
    wc.has_imm = (flags & IBV_WC_WITH_IMM) != 0;
    wc.imm_data = wc.has_imm ? ntohl(ibv_wc_read_imm_data(cq)) : 0;
    wc.qp_num = ibv_wc_read_qp_num(cq);
    wc.src_qp = ibv_wc_read_src_qp(cq);
    wc.has_grh = (flags & IBV_WC_GRH) != 0;
    wc.vendor_err = ibv_wc_read_vendor_err(cq);
    wc.completion_timestamp_ns = ibv_wc_read_completion_wallclock_ns(cq);
    if (n == static_cast<int>(out.size())) break;
    rc = ibv_next_poll(cq);
    if (rc == ENOENT) break;
    if (rc != 0) {
      ibv_end_poll(cq);
      return VerbsErrnoToStatus("ibv_next_poll", rc);
    }
  }
  ibv_end_poll(cq);
  return n;
}

}  // namespace

absl::StatusOr<int> IbvVerbs::PollCq(VerbsCq* cq, absl::Span<WorkCompletion> out) {
  if (ibv_cq_ex* ex = static_cast<IbvCq*>(cq)->ex(); ex != nullptr) return PollCqEx(ex, out);
  constexpr int kBatch = 32;
  ibv_wc wcs[kBatch];
  const int want = static_cast<int>(std::min<size_t>(out.size(), kBatch));
  const int n = ibv_poll_cq(Raw(cq), want, wcs);
  if (n < 0) {
    return absl::InternalError(absl::StrCat("ibv_poll_cq: returned ", n));
  }
  for (int i = 0; i < n; ++i) {
    WorkCompletion& wc = out[i];
    wc.wr_id = wcs[i].wr_id;
    wc.raw_status = wcs[i].status;
    wc.status = FromIbvWcStatus(wcs[i].status);
    wc.opcode = FromIbvWcOpcode(wcs[i].opcode);
    wc.byte_len = wcs[i].byte_len;
    wc.has_imm = (wcs[i].wc_flags & IBV_WC_WITH_IMM) != 0;
    wc.imm_data = wc.has_imm ? ntohl(wcs[i].imm_data) : 0;
    wc.qp_num = wcs[i].qp_num;
    wc.vendor_err = wcs[i].vendor_err;
    wc.src_qp = wcs[i].src_qp;
    wc.has_grh = (wcs[i].wc_flags & IBV_WC_GRH) != 0;
    wc.completion_timestamp_ns = 0;
  }
  return n;
}

}  // namespace weft::rdma
