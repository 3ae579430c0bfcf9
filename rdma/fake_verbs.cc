#include "rdma/fake_verbs.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"

namespace weft::rdma {
namespace fake_internal {

struct Node {
  std::vector<FakeDeviceConfig> devices;
  std::unordered_map<std::string, int> fail_next;  // verb name -> errno
  std::unordered_map<uint32_t, WcStatus> inject;   // qpn -> status of its next send WR
  uint64_t register_mr_calls = 0;
};

struct Mr {
  int node = 0;
  uint64_t pd = 0;
  uint64_t addr = 0;
  size_t length = 0;
  uint32_t access = 0;
};

struct Cq {
  int node = 0;
  size_t capacity = 0;
  std::deque<WorkCompletion> entries;
  uint64_t channel = 0;  // 0: none
  bool armed = false;
  bool overrun = false;
  bool timestamps = false;  // made by CreateTimestampedCq
  VerbsCq* handle = nullptr;
};

struct Channel {
  std::deque<uint64_t> events;  // ids of the CQs that raised them
};

struct PendingSend {
  SendWorkRequest wr;
  std::vector<uint8_t> payload;
};

struct Qp {
  int node = 0;
  int device = 0;
  uint64_t pd = 0;
  uint64_t send_cq = 0;
  uint64_t recv_cq = 0;
  QpCapabilities caps;
  QpState state = QpState::kReset;
  QpAttributes attr;
  std::deque<RecvWorkRequest> recvs;
  std::deque<PendingSend> blocked;  // waiting for a receive at the peer (RNR)
  uint32_t outstanding_sends = 0;
  bool ud = false;
};

struct Ah {
  uint64_t pd = 0;
  AddressVector av;
};

struct FabricState {
  absl::Mutex mu;
  std::vector<std::unique_ptr<Node>> nodes ABSL_GUARDED_BY(mu);
  uint64_t next_id ABSL_GUARDED_BY(mu) = 1;
  uint32_t next_qpn ABSL_GUARDED_BY(mu) = 0x100;
  uint32_t next_key ABSL_GUARDED_BY(mu) = 0x1000;
  std::unordered_map<uint32_t, Qp> qps ABSL_GUARDED_BY(mu);
  std::unordered_map<uint32_t, Mr> mrs ABSL_GUARDED_BY(mu);
  std::unordered_map<uint64_t, Cq> cqs ABSL_GUARDED_BY(mu);
  std::unordered_map<uint64_t, Channel> channels ABSL_GUARDED_BY(mu);
  std::unordered_map<uint64_t, int> pds ABSL_GUARDED_BY(mu);  // id -> node
  std::unordered_map<uint64_t, Ah> ahs ABSL_GUARDED_BY(mu);
  // The NICs' wall clock (one for all: differences on one clock are what is used) and
  // what a UD datagram takes on the wire; a datagram advances the clock by it.
  uint64_t device_time_ns ABSL_GUARDED_BY(mu) = 1'000'000'000;
  uint64_t one_way_latency_ns ABSL_GUARDED_BY(mu) = 2000;
  std::set<uint16_t> dropped_sports ABSL_GUARDED_BY(mu);  // RoCE v2 UDP source ports
};

}  // namespace fake_internal

namespace {

using fake_internal::FabricState;
using fake_internal::Mr;
using fake_internal::PendingSend;
using fake_internal::Qp;

constexpr uint32_t kUdInitMask = kQpAttrState | kQpAttrPkeyIndex | kQpAttrPort | kQpAttrQkey;
constexpr uint32_t kUdRtrMask = kQpAttrState;
constexpr uint32_t kUdRtsMask = kQpAttrState | kQpAttrSqPsn;
constexpr uint32_t kInitMask = kQpAttrState | kQpAttrPkeyIndex | kQpAttrPort | kQpAttrAccessFlags;
constexpr uint32_t kRtrMask = kQpAttrState | kQpAttrAv | kQpAttrPathMtu | kQpAttrDestQpn |
                              kQpAttrRqPsn | kQpAttrMaxDestRdAtomic | kQpAttrMinRnrTimer;
constexpr uint32_t kRtsMask = kQpAttrState | kQpAttrSqPsn | kQpAttrMaxQpRdAtomic | kQpAttrRetryCnt |
                              kQpAttrRnrRetry | kQpAttrTimeout;

std::string MaskNames(uint32_t mask) {
  static const std::pair<uint32_t, const char*> kNames[] = {
      {kQpAttrState, "IBV_QP_STATE"},
      {kQpAttrAccessFlags, "IBV_QP_ACCESS_FLAGS"},
      {kQpAttrPkeyIndex, "IBV_QP_PKEY_INDEX"},
      {kQpAttrPort, "IBV_QP_PORT"},
      {kQpAttrQkey, "IBV_QP_QKEY"},
      {kQpAttrAv, "IBV_QP_AV"},
      {kQpAttrPathMtu, "IBV_QP_PATH_MTU"},
      {kQpAttrTimeout, "IBV_QP_TIMEOUT"},
      {kQpAttrRetryCnt, "IBV_QP_RETRY_CNT"},
      {kQpAttrRnrRetry, "IBV_QP_RNR_RETRY"},
      {kQpAttrRqPsn, "IBV_QP_RQ_PSN"},
      {kQpAttrMaxQpRdAtomic, "IBV_QP_MAX_QP_RD_ATOMIC"},
      {kQpAttrMinRnrTimer, "IBV_QP_MIN_RNR_TIMER"},
      {kQpAttrSqPsn, "IBV_QP_SQ_PSN"},
      {kQpAttrMaxDestRdAtomic, "IBV_QP_MAX_DEST_RD_ATOMIC"},
      {kQpAttrDestQpn, "IBV_QP_DEST_QPN"},
  };
  std::vector<std::string> names;
  for (const auto& [bit, name] : kNames) {
    if (mask & bit) names.push_back(name);
  }
  return absl::StrJoin(names, "|");
}

class FakeContext : public VerbsContext {
 public:
  FakeContext(int node, int device, std::string name)
      : node_(node), device_(device), name_(std::move(name)) {}
  const std::string& device_name() const override { return name_; }
  int node() const { return node_; }
  int device() const { return device_; }

 private:
  int node_;
  int device_;
  std::string name_;
};

class FakePd : public VerbsPd {
 public:
  FakePd(FabricState* fabric, uint64_t id, int device)
      : fabric_(fabric), id_(id), device_(device) {}
  ~FakePd() override {
    absl::MutexLock lock(&fabric_->mu);
    fabric_->pds.erase(id_);
  }
  uint64_t id() const { return id_; }
  int device() const { return device_; }

 private:
  FabricState* fabric_;
  uint64_t id_;
  int device_;
};

class FakeCompChannel : public VerbsCompChannel {
 public:
  FakeCompChannel(FabricState* fabric, uint64_t id) : fabric_(fabric), id_(id) {}
  ~FakeCompChannel() override {
    absl::MutexLock lock(&fabric_->mu);
    fabric_->channels.erase(id_);
  }
  uint64_t id() const { return id_; }

 private:
  FabricState* fabric_;
  uint64_t id_;
};

class FakeCq : public VerbsCq {
 public:
  FakeCq(FabricState* fabric, uint64_t id) : fabric_(fabric), id_(id) {}
  ~FakeCq() override {
    absl::MutexLock lock(&fabric_->mu);
    fabric_->cqs.erase(id_);
  }
  uint64_t id() const { return id_; }

 private:
  FabricState* fabric_;
  uint64_t id_;
};

class FakeQp : public VerbsQp {
 public:
  FakeQp(FabricState* fabric, uint32_t qpn) : fabric_(fabric), qpn_(qpn) {}
  ~FakeQp() override {
    absl::MutexLock lock(&fabric_->mu);
    fabric_->qps.erase(qpn_);
  }
  uint32_t qp_num() const override { return qpn_; }

 private:
  FabricState* fabric_;
  uint32_t qpn_;
};

class FakeAh : public VerbsAh {
 public:
  FakeAh(FabricState* fabric, uint64_t id) : fabric_(fabric), id_(id) {}
  ~FakeAh() override {
    absl::MutexLock lock(&fabric_->mu);
    fabric_->ahs.erase(id_);
  }
  uint64_t id() const { return id_; }

 private:
  FabricState* fabric_;
  uint64_t id_;
};

class FakeMr : public VerbsMr {
 public:
  FakeMr(FabricState* fabric, uint32_t key, uint64_t addr, size_t length)
      : fabric_(fabric), key_(key), addr_(addr), length_(length) {}
  ~FakeMr() override {
    absl::MutexLock lock(&fabric_->mu);
    fabric_->mrs.erase(key_);
  }
  uint32_t lkey() const override { return key_; }
  uint32_t rkey() const override { return key_; }
  uint64_t addr() const override { return addr_; }
  size_t length() const override { return length_; }

 private:
  FabricState* fabric_;
  uint32_t key_;
  uint64_t addr_;
  size_t length_;
};

// Everything below runs with fabric->mu held.

void PushCompletion(FabricState* f, uint64_t cq_id, const WorkCompletion& wc)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(f->mu) {
  auto it = f->cqs.find(cq_id);
  if (it == f->cqs.end()) return;  // the CQ was destroyed
  fake_internal::Cq& cq = it->second;
  if (cq.entries.size() >= cq.capacity) {
    cq.overrun = true;
    return;
  }
  cq.entries.push_back(wc);
  if (!cq.timestamps) {
    cq.entries.back().completion_timestamp_ns = 0;
  } else if (wc.completion_timestamp_ns == 0) {
    cq.entries.back().completion_timestamp_ns = f->device_time_ns;
  }
  if (cq.armed && cq.channel != 0) {
    cq.armed = false;
    auto ch = f->channels.find(cq.channel);
    if (ch != f->channels.end()) ch->second.events.push_back(cq_id);
  }
}

WcOpcode SendWcOpcode(SendOpcode opcode) {
  return opcode == SendOpcode::kRdmaWrite || opcode == SendOpcode::kRdmaWriteWithImm
             ? WcOpcode::kRdmaWrite
             : WcOpcode::kSend;
}

void CompleteSend(FabricState* f, uint32_t qpn, Qp& qp, const SendWorkRequest& wr, WcStatus status)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(f->mu) {
  if (qp.outstanding_sends > 0) --qp.outstanding_sends;
  if (!wr.signaled && status == WcStatus::kSuccess) return;
  WorkCompletion wc;
  wc.wr_id = wr.wr_id;
  wc.status = status;
  wc.opcode = SendWcOpcode(wr.opcode);
  wc.qp_num = qpn;
  PushCompletion(f, qp.send_cq, wc);
}

void MoveToError(FabricState* f, uint32_t qpn, Qp& qp) ABSL_EXCLUSIVE_LOCKS_REQUIRED(f->mu) {
  qp.state = QpState::kError;
  std::deque<PendingSend> blocked;
  blocked.swap(qp.blocked);
  for (const PendingSend& pending : blocked) {
    CompleteSend(f, qpn, qp, pending.wr, WcStatus::kWrFlushError);
  }
  std::deque<RecvWorkRequest> recvs;
  recvs.swap(qp.recvs);
  for (const RecvWorkRequest& recv : recvs) {
    WorkCompletion wc;
    wc.wr_id = recv.wr_id;
    wc.status = WcStatus::kWrFlushError;
    wc.opcode = WcOpcode::kRecv;
    wc.qp_num = qpn;
    PushCompletion(f, qp.recv_cq, wc);
  }
}

// Checks `sge` against its MR: key known, same PD, inside the region, and (for memory
// the device writes) LOCAL_WRITE access.
const Mr* CheckLocalSge(FabricState* f, const Qp& qp, const Sge& sge, bool device_writes)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(f->mu) {
  auto it = f->mrs.find(sge.lkey);
  if (it == f->mrs.end()) return nullptr;
  const Mr& mr = it->second;
  if (mr.pd != qp.pd) return nullptr;
  if (sge.addr < mr.addr || sge.addr + sge.length > mr.addr + mr.length) return nullptr;
  if (device_writes && (mr.access & kAccessLocalWrite) == 0) return nullptr;
  return &mr;
}

enum class ExecResult { kDone, kBlocked };

// Resolves the peer of an RC QP as the wire would: the QP numbered dest_qp_num on the
// node that owns the destination GID, itself pointing back at us, in RTR or RTS.
Qp* ResolvePeer(FabricState* f, uint32_t qpn, const Qp& qp) ABSL_EXCLUSIVE_LOCKS_REQUIRED(f->mu) {
  auto it = f->qps.find(qp.attr.dest_qp_num);
  if (it == f->qps.end()) return nullptr;
  Qp& peer = it->second;
  const FakeDeviceConfig& device = f->nodes[peer.node]->devices[peer.device];
  bool gid_matches = false;
  for (const GidEntry& entry : device.gids) {
    if (entry.gid == qp.attr.av.dgid) gid_matches = true;
  }
  if (!gid_matches) return nullptr;
  if (peer.attr.dest_qp_num != qpn) return nullptr;
  if (peer.state != QpState::kRtr && peer.state != QpState::kRts) return nullptr;
  return &peer;
}

ExecResult Execute(FabricState* f, uint32_t qpn, Qp& qp, const PendingSend& pending)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(f->mu) {
  const SendWorkRequest& wr = pending.wr;
  auto& inject = f->nodes[qp.node]->inject;
  if (auto it = inject.find(qpn); it != inject.end()) {
    const WcStatus status = it->second;
    inject.erase(it);
    CompleteSend(f, qpn, qp, wr, status);
    if (status != WcStatus::kSuccess) MoveToError(f, qpn, qp);
    return ExecResult::kDone;
  }
  Qp* peer = ResolvePeer(f, qpn, qp);
  if (peer == nullptr) {
    CompleteSend(f, qpn, qp, wr, WcStatus::kRetryExceededError);
    MoveToError(f, qpn, qp);
    return ExecResult::kDone;
  }
  const uint32_t peer_qpn = qp.attr.dest_qp_num;
  const bool consumes_recv = wr.opcode != SendOpcode::kRdmaWrite;
  if (consumes_recv && peer->recvs.empty()) {
    if (qp.attr.rnr_retry == 7) return ExecResult::kBlocked;
    CompleteSend(f, qpn, qp, wr, WcStatus::kRnrRetryExceededError);
    MoveToError(f, qpn, qp);
    return ExecResult::kDone;
  }
  const size_t length = pending.payload.size();
  if (wr.opcode == SendOpcode::kRdmaWrite || wr.opcode == SendOpcode::kRdmaWriteWithImm) {
    auto it = f->mrs.find(wr.rkey);
    const bool ok = it != f->mrs.end() && it->second.pd == peer->pd &&
                    (it->second.access & kAccessRemoteWrite) != 0 &&
                    (peer->attr.access_flags & kAccessRemoteWrite) != 0 &&
                    wr.remote_addr >= it->second.addr &&
                    wr.remote_addr + length <= it->second.addr + it->second.length;
    if (!ok) {
      CompleteSend(f, qpn, qp, wr, WcStatus::kRemoteAccessError);
      MoveToError(f, qpn, qp);
      return ExecResult::kDone;
    }
    if (length > 0) {
      std::memcpy(reinterpret_cast<void*>(wr.remote_addr), pending.payload.data(), length);
    }
    if (wr.opcode == SendOpcode::kRdmaWriteWithImm) {
      RecvWorkRequest recv = peer->recvs.front();
      peer->recvs.pop_front();
      WorkCompletion wc;
      wc.wr_id = recv.wr_id;
      wc.opcode = WcOpcode::kRecvRdmaWithImm;
      wc.byte_len = static_cast<uint32_t>(length);
      wc.has_imm = true;
      wc.imm_data = wr.imm_data;
      wc.qp_num = peer_qpn;
      PushCompletion(f, peer->recv_cq, wc);
    }
    CompleteSend(f, qpn, qp, wr, WcStatus::kSuccess);
    return ExecResult::kDone;
  }
  // SEND / SEND_WITH_IMM into the peer's next receive.
  RecvWorkRequest recv = peer->recvs.front();
  peer->recvs.pop_front();
  size_t capacity = 0;
  bool recv_ok = true;
  for (int i = 0; i < recv.num_sge; ++i) {
    capacity += recv.sg_list[i].length;
    if (CheckLocalSge(f, *peer, recv.sg_list[i], /*device_writes=*/true) == nullptr) {
      recv_ok = false;
    }
  }
  WorkCompletion wc;
  wc.wr_id = recv.wr_id;
  wc.opcode = WcOpcode::kRecv;
  wc.qp_num = peer_qpn;
  if (!recv_ok || length > capacity) {
    wc.status = recv_ok ? WcStatus::kLocalLengthError : WcStatus::kLocalProtectionError;
    PushCompletion(f, peer->recv_cq, wc);
    MoveToError(f, peer_qpn, *peer);
    CompleteSend(f, qpn, qp, wr,
                 recv_ok ? WcStatus::kRemoteInvalidRequestError : WcStatus::kRemoteOperationError);
    MoveToError(f, qpn, qp);
    return ExecResult::kDone;
  }
  size_t offset = 0;
  for (int i = 0; i < recv.num_sge && offset < length; ++i) {
    const size_t n = std::min<size_t>(recv.sg_list[i].length, length - offset);
    std::memcpy(reinterpret_cast<void*>(recv.sg_list[i].addr), pending.payload.data() + offset, n);
    offset += n;
  }
  wc.byte_len = static_cast<uint32_t>(length);
  if (wr.opcode == SendOpcode::kSendWithImm) {
    wc.has_imm = true;
    wc.imm_data = wr.imm_data;
  }
  PushCompletion(f, peer->recv_cq, wc);
  CompleteSend(f, qpn, qp, wr, WcStatus::kSuccess);
  return ExecResult::kDone;
}

// A UD datagram: sent (and completed at the sender) whatever becomes of it; delivered
// into the next receive of the QP numbered remote_qpn behind the AH's destination GID
// when that QP is UD, in RTR or RTS, its Q_Key matches and a receive is posted, else
// lost without a trace, as on a real fabric. The receive holds the 40-byte GRH, then
// the payload (byte_len counts both); one that is too small completes with
// IBV_WC_LOC_LEN_ERR and moves its QP to ERR.
void ExecuteUd(FabricState* f, uint32_t qpn, Qp& qp, const PendingSend& pending)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(f->mu) {
  const SendWorkRequest& wr = pending.wr;
  const fake_internal::Ah& ah = f->ahs.at(static_cast<FakeAh*>(wr.ah)->id());
  WorkCompletion sent;
  sent.wr_id = wr.wr_id;
  sent.opcode = WcOpcode::kSend;
  sent.qp_num = qpn;
  sent.completion_timestamp_ns = f->device_time_ns;
  if (qp.outstanding_sends > 0) --qp.outstanding_sends;
  if (wr.signaled) PushCompletion(f, qp.send_cq, sent);
  f->device_time_ns += f->one_way_latency_ns;  // on the wire
  const uint16_t sport =
      ah.av.flow_label != 0 ? FlowLabelToUdpSourcePort(ah.av.flow_label) : 0xC000;
  if (f->dropped_sports.count(sport) != 0) return;
  auto it = f->qps.find(wr.remote_qpn);
  if (it == f->qps.end()) return;
  Qp& peer = it->second;
  bool gid_matches = false;
  for (const GidEntry& entry : f->nodes[peer.node]->devices[peer.device].gids) {
    if (entry.gid == ah.av.dgid) gid_matches = true;
  }
  if (!gid_matches || !peer.ud || peer.attr.qkey != wr.remote_qkey ||
      (peer.state != QpState::kRtr && peer.state != QpState::kRts) || peer.recvs.empty()) {
    return;
  }
  RecvWorkRequest recv = peer.recvs.front();
  peer.recvs.pop_front();
  WorkCompletion wc;
  wc.wr_id = recv.wr_id;
  wc.opcode = WcOpcode::kRecv;
  wc.qp_num = wr.remote_qpn;
  wc.src_qp = qpn;
  wc.has_grh = true;
  wc.completion_timestamp_ns = f->device_time_ns;
  const size_t length = kUdGrhBytes + pending.payload.size();
  const bool fits = recv.num_sge == 1 && recv.sg_list[0].length >= length &&
                    CheckLocalSge(f, peer, recv.sg_list[0], /*device_writes=*/true) != nullptr;
  if (!fits) {
    wc.status = WcStatus::kLocalLengthError;
    PushCompletion(f, peer.recv_cq, wc);
    MoveToError(f, wr.remote_qpn, peer);
    return;
  }
  // The GRH: version 6, traffic class, flow label; the source and destination GIDs.
  uint8_t* grh = reinterpret_cast<uint8_t*>(recv.sg_list[0].addr);
  std::memset(grh, 0, kUdGrhBytes);
  grh[0] = static_cast<uint8_t>(0x60 | (ah.av.traffic_class >> 4));
  grh[1] = static_cast<uint8_t>((ah.av.traffic_class << 4) | ((ah.av.flow_label >> 16) & 0xF));
  grh[2] = static_cast<uint8_t>(ah.av.flow_label >> 8);
  grh[3] = static_cast<uint8_t>(ah.av.flow_label);
  for (const GidEntry& entry : f->nodes[qp.node]->devices[qp.device].gids) {
    if (entry.index == ah.av.sgid_index) std::memcpy(grh + 8, entry.gid.bytes.data(), 16);
  }
  std::memcpy(grh + 24, ah.av.dgid.bytes.data(), 16);
  if (!pending.payload.empty()) {
    std::memcpy(grh + kUdGrhBytes, pending.payload.data(), pending.payload.size());
  }
  wc.byte_len = static_cast<uint32_t>(length);
  if (wr.opcode == SendOpcode::kSendWithImm) {
    wc.has_imm = true;
    wc.imm_data = wr.imm_data;
  }
  PushCompletion(f, peer.recv_cq, wc);
}

void DrainBlocked(FabricState* f, uint32_t qpn, Qp& qp) ABSL_EXCLUSIVE_LOCKS_REQUIRED(f->mu) {
  while (!qp.blocked.empty() && qp.state == QpState::kRts) {
    PendingSend pending = std::move(qp.blocked.front());
    qp.blocked.pop_front();
    if (Execute(f, qpn, qp, pending) == ExecResult::kBlocked) {
      qp.blocked.push_front(std::move(pending));
      return;
    }
  }
}

}  // namespace

FakeFabric::FakeFabric() : state_(std::make_unique<fake_internal::FabricState>()) {}
FakeFabric::~FakeFabric() = default;

FakeDeviceConfig FakeDeviceConfig::Roce(std::string name, uint32_t ipv4_host_order,
                                        uint32_t ifindex) {
  FakeDeviceConfig config;
  config.name = std::move(name);
  config.node_guid = 0x0002c90300000000ULL | ipv4_host_order;
  config.port.state = PortState::kActive;
  config.port.link_layer = LinkLayer::kEthernet;
  config.port.active_mtu_bytes = 4096;
  config.port.max_mtu_bytes = 4096;
  config.port.gid_table_len = 16;
  config.port.max_msg_bytes = 1u << 30;
  Gid link_local;
  link_local.bytes[0] = 0xfe;
  link_local.bytes[1] = 0x80;
  for (int i = 0; i < 4; ++i) {
    link_local.bytes[12 + i] = static_cast<uint8_t>(ipv4_host_order >> (24 - 8 * i));
  }
  const Gid mapped = Gid::FromIpv4(ipv4_host_order);
  config.gids = {
      GidEntry{0, 1, link_local, GidType::kRoceV1, ifindex},
      GidEntry{1, 1, link_local, GidType::kRoceV2, ifindex},
      GidEntry{2, 1, mapped, GidType::kRoceV1, ifindex},
      GidEntry{3, 1, mapped, GidType::kRoceV2, ifindex},
  };
  return config;
}

FakeVerbs::FakeVerbs(FakeFabric* fabric, std::vector<FakeDeviceConfig> devices)
    : fabric_(fabric->state()) {
  absl::MutexLock lock(&fabric_->mu);
  auto node = std::make_unique<fake_internal::Node>();
  node->devices = std::move(devices);
  node_id_ = static_cast<int>(fabric_->nodes.size());
  fabric_->nodes.push_back(std::move(node));
}

FakeVerbs::~FakeVerbs() = default;

namespace {

// Consumes an injected failure of `call` on `node`; returns its errno or 0.
int TakeFailure(FabricState* f, int node, absl::string_view call)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(f->mu) {
  auto& fail = f->nodes[node]->fail_next;
  auto it = fail.find(std::string(call));
  if (it == fail.end()) return 0;
  const int error = it->second;
  fail.erase(it);
  return error;
}

}  // namespace

void FakeVerbs::FailNextCall(absl::string_view call, int errno_value) {
  absl::MutexLock lock(&fabric_->mu);
  fabric_->nodes[node_id_]->fail_next[std::string(call)] = errno_value;
}

void FakeVerbs::InjectCompletionError(uint32_t qp_num, WcStatus status) {
  absl::MutexLock lock(&fabric_->mu);
  fabric_->nodes[node_id_]->inject[qp_num] = status;
}

std::optional<QpAttributes> FakeVerbs::GetQpAttributes(uint32_t qp_num) const {
  absl::MutexLock lock(&fabric_->mu);
  auto it = fabric_->qps.find(qp_num);
  if (it == fabric_->qps.end()) return std::nullopt;
  QpAttributes attr = it->second.attr;
  attr.state = it->second.state;
  return attr;
}

int FakeVerbs::LiveMrCount() const {
  absl::MutexLock lock(&fabric_->mu);
  int count = 0;
  for (const auto& [key, mr] : fabric_->mrs) {
    if (mr.node == node_id_) ++count;
  }
  return count;
}

int FakeVerbs::LiveQpCount() const {
  absl::MutexLock lock(&fabric_->mu);
  int count = 0;
  for (const auto& [qpn, qp] : fabric_->qps) {
    if (qp.node == node_id_) ++count;
  }
  return count;
}

uint64_t FakeVerbs::RegisterMrCalls() const {
  absl::MutexLock lock(&fabric_->mu);
  return fabric_->nodes[node_id_]->register_mr_calls;
}

absl::StatusOr<std::vector<DeviceInfo>> FakeVerbs::ListDevices() {
  absl::MutexLock lock(&fabric_->mu);
  if (int error = TakeFailure(fabric_, node_id_, "ibv_get_device_list")) {
    return VerbsErrnoToStatus("ibv_get_device_list", error);
  }
  std::vector<DeviceInfo> out;
  for (const FakeDeviceConfig& device : fabric_->nodes[node_id_]->devices) {
    out.push_back(DeviceInfo{device.name, device.node_guid});
  }
  return out;
}

absl::StatusOr<std::unique_ptr<VerbsContext>> FakeVerbs::OpenDevice(absl::string_view name) {
  absl::MutexLock lock(&fabric_->mu);
  const auto& devices = fabric_->nodes[node_id_]->devices;
  std::vector<std::string> names;
  for (size_t i = 0; i < devices.size(); ++i) {
    names.push_back(devices[i].name);
    if (devices[i].name == name) {
      if (int error = TakeFailure(fabric_, node_id_, "ibv_open_device")) {
        return VerbsErrnoToStatus(absl::StrCat("ibv_open_device(", name, ")"), error);
      }
      return std::unique_ptr<VerbsContext>(
          new FakeContext(node_id_, static_cast<int>(i), std::string(name)));
    }
  }
  return absl::NotFoundError(absl::StrCat("RDMA device '", name, "' not found; present: [",
                                          absl::StrJoin(names, ", "), "]"));
}

absl::StatusOr<PortAttributes> FakeVerbs::QueryPort(VerbsContext* context, uint32_t port) {
  auto* c = static_cast<FakeContext*>(context);
  absl::MutexLock lock(&fabric_->mu);
  const std::string call = absl::StrCat("ibv_query_port(", c->device_name(), ", port=", port, ")");
  if (int error = TakeFailure(fabric_, node_id_, "ibv_query_port")) {
    return VerbsErrnoToStatus(call, error);
  }
  if (port != 1) return VerbsErrnoToStatus(call, EINVAL);
  return fabric_->nodes[node_id_]->devices[c->device()].port;
}

absl::StatusOr<std::vector<GidEntry>> FakeVerbs::QueryGidTable(VerbsContext* context) {
  auto* c = static_cast<FakeContext*>(context);
  absl::MutexLock lock(&fabric_->mu);
  if (int error = TakeFailure(fabric_, node_id_, "ibv_query_gid_table")) {
    return VerbsErrnoToStatus(absl::StrCat("ibv_query_gid_table(", c->device_name(), ")"), error);
  }
  return fabric_->nodes[node_id_]->devices[c->device()].gids;
}

absl::StatusOr<GidEntry> FakeVerbs::QueryGid(VerbsContext* context, uint32_t port, uint32_t index) {
  auto* c = static_cast<FakeContext*>(context);
  absl::MutexLock lock(&fabric_->mu);
  const FakeDeviceConfig& device = fabric_->nodes[node_id_]->devices[c->device()];
  const std::string call =
      absl::StrCat("ibv_query_gid_ex(", c->device_name(), ", port=", port, ", index=", index, ")");
  if (int error = TakeFailure(fabric_, node_id_, "ibv_query_gid_ex")) {
    return VerbsErrnoToStatus(call, error);
  }
  if (port != 1 || index >= device.port.gid_table_len) return VerbsErrnoToStatus(call, EINVAL);
  for (const GidEntry& entry : device.gids) {
    if (entry.index == index && entry.port == port) return entry;
  }
  return VerbsErrnoToStatus(call, ENODATA);
}

absl::StatusOr<std::unique_ptr<VerbsPd>> FakeVerbs::AllocPd(VerbsContext* context) {
  auto* c = static_cast<FakeContext*>(context);
  absl::MutexLock lock(&fabric_->mu);
  if (int error = TakeFailure(fabric_, node_id_, "ibv_alloc_pd")) {
    return VerbsErrnoToStatus(absl::StrCat("ibv_alloc_pd(", c->device_name(), ")"), error);
  }
  const uint64_t id = fabric_->next_id++;
  fabric_->pds[id] = node_id_;
  return std::unique_ptr<VerbsPd>(new FakePd(fabric_, id, c->device()));
}

absl::StatusOr<std::unique_ptr<VerbsCompChannel>> FakeVerbs::CreateCompChannel(
    VerbsContext* context) {
  absl::MutexLock lock(&fabric_->mu);
  if (int error = TakeFailure(fabric_, node_id_, "ibv_create_comp_channel")) {
    return VerbsErrnoToStatus(absl::StrCat("ibv_create_comp_channel(", context->device_name(), ")"),
                              error);
  }
  const uint64_t id = fabric_->next_id++;
  fabric_->channels[id];
  return std::unique_ptr<VerbsCompChannel>(new FakeCompChannel(fabric_, id));
}

absl::StatusOr<std::unique_ptr<VerbsCq>> FakeVerbs::CreateCq(VerbsContext* context, int cqe,
                                                             VerbsCompChannel* channel) {
  absl::MutexLock lock(&fabric_->mu);
  const std::string call =
      absl::StrCat("ibv_create_cq(", context->device_name(), ", cqe=", cqe, ")");
  if (int error = TakeFailure(fabric_, node_id_, "ibv_create_cq")) {
    return VerbsErrnoToStatus(call, error);
  }
  if (cqe <= 0) return VerbsErrnoToStatus(call, EINVAL);
  const uint64_t id = fabric_->next_id++;
  fake_internal::Cq& cq = fabric_->cqs[id];
  cq.node = node_id_;
  cq.capacity = static_cast<size_t>(cqe);
  cq.channel = channel == nullptr ? 0 : static_cast<FakeCompChannel*>(channel)->id();
  auto handle = std::make_unique<FakeCq>(fabric_, id);
  cq.handle = handle.get();
  return std::unique_ptr<VerbsCq>(std::move(handle));
}

absl::Status FakeVerbs::RequestCqNotification(VerbsCq* cq) {
  absl::MutexLock lock(&fabric_->mu);
  if (int error = TakeFailure(fabric_, node_id_, "ibv_req_notify_cq")) {
    return VerbsErrnoToStatus("ibv_req_notify_cq", error);
  }
  auto it = fabric_->cqs.find(static_cast<FakeCq*>(cq)->id());
  if (it == fabric_->cqs.end() || it->second.channel == 0) {
    return VerbsErrnoToStatus("ibv_req_notify_cq", EINVAL);
  }
  it->second.armed = true;
  return absl::OkStatus();
}

absl::StatusOr<VerbsCq*> FakeVerbs::WaitCqEvent(VerbsCompChannel* channel, absl::Duration timeout) {
  const uint64_t id = static_cast<FakeCompChannel*>(channel)->id();
  FabricState* f = fabric_;
  absl::MutexLock lock(&f->mu);
  auto has_event = [f, id]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(f->mu) {
    auto it = f->channels.find(id);
    return it == f->channels.end() || !it->second.events.empty();
  };
  f->mu.AwaitWithTimeout(absl::Condition(&has_event), timeout);
  auto it = f->channels.find(id);
  if (it == f->channels.end()) return VerbsErrnoToStatus("ibv_get_cq_event", EBADF);
  if (it->second.events.empty()) return nullptr;
  const uint64_t cq_id = it->second.events.front();
  it->second.events.pop_front();
  auto cq = f->cqs.find(cq_id);
  if (cq == f->cqs.end()) return nullptr;
  return cq->second.handle;
}

absl::StatusOr<std::unique_ptr<VerbsQp>> FakeVerbs::CreateRcQp(VerbsPd* pd, VerbsCq* send_cq,
                                                               VerbsCq* recv_cq,
                                                               const QpCapabilities& caps) {
  auto* fake_pd = static_cast<FakePd*>(pd);
  absl::MutexLock lock(&fabric_->mu);
  const std::string call = absl::StrCat("ibv_create_qp(RC, max_send_wr=", caps.max_send_wr,
                                        ", max_recv_wr=", caps.max_recv_wr, ")");
  if (int error = TakeFailure(fabric_, node_id_, "ibv_create_qp")) {
    return VerbsErrnoToStatus(call, error);
  }
  if (caps.max_send_wr == 0 || caps.max_send_wr > 16384 || caps.max_recv_wr > 16384 ||
      caps.max_send_sge > 2 || caps.max_recv_sge > 1) {
    return VerbsErrnoToStatus(call, EINVAL);
  }
  const uint32_t qpn = fabric_->next_qpn++;
  Qp& qp = fabric_->qps[qpn];
  qp.node = node_id_;
  qp.device = fake_pd->device();
  qp.pd = fake_pd->id();
  qp.send_cq = static_cast<FakeCq*>(send_cq)->id();
  qp.recv_cq = static_cast<FakeCq*>(recv_cq)->id();
  qp.caps = caps;
  return std::unique_ptr<VerbsQp>(new FakeQp(fabric_, qpn));
}

absl::StatusOr<std::unique_ptr<VerbsQp>> FakeVerbs::CreateUdQp(VerbsPd* pd, VerbsCq* send_cq,
                                                               VerbsCq* recv_cq,
                                                               const QpCapabilities& caps) {
  absl::StatusOr<std::unique_ptr<VerbsQp>> qp = CreateRcQp(pd, send_cq, recv_cq, caps);
  if (!qp.ok()) return qp;
  absl::MutexLock lock(&fabric_->mu);
  fabric_->qps.at((*qp)->qp_num()).ud = true;
  return qp;
}

absl::StatusOr<std::unique_ptr<VerbsAh>> FakeVerbs::CreateAh(VerbsPd* pd, const AddressVector& av) {
  auto* fake_pd = static_cast<FakePd*>(pd);
  absl::MutexLock lock(&fabric_->mu);
  const std::string call =
      absl::StrCat("ibv_create_ah(dgid=", av.dgid.ToString(), ", flow_label=", av.flow_label, ")");
  if (int error = TakeFailure(fabric_, node_id_, "ibv_create_ah")) {
    return VerbsErrnoToStatus(call, error);
  }
  const FakeDeviceConfig& device = fabric_->nodes[node_id_]->devices[fake_pd->device()];
  bool sgid_valid = false;
  for (const GidEntry& entry : device.gids) {
    if (entry.index == av.sgid_index) sgid_valid = true;
  }
  // RoCE has no LIDs: an AH without a GRH, or from an empty GID slot, is refused.
  if ((device.port.link_layer == LinkLayer::kEthernet && !av.is_global) || !sgid_valid ||
      av.flow_label > 0xFFFFF) {
    return VerbsErrnoToStatus(call, EINVAL);
  }
  const uint64_t id = fabric_->next_id++;
  fabric_->ahs[id] = fake_internal::Ah{fake_pd->id(), av};
  return std::unique_ptr<VerbsAh>(new FakeAh(fabric_, id));
}

absl::StatusOr<std::unique_ptr<VerbsCq>> FakeVerbs::CreateTimestampedCq(VerbsContext* context,
                                                                        int cqe,
                                                                        VerbsCompChannel* channel) {
  {
    absl::MutexLock lock(&fabric_->mu);
    auto* c = static_cast<FakeContext*>(context);
    if (!fabric_->nodes[node_id_]->devices[c->device()].completion_timestamps) {
      return VerbsErrnoToStatus(absl::StrCat("ibv_create_cq_ex(", context->device_name(),
                                             ", cqe=", cqe, ", COMPLETION_TIMESTAMP_WALLCLOCK)"),
                                EOPNOTSUPP);
    }
  }
  absl::StatusOr<std::unique_ptr<VerbsCq>> cq = CreateCq(context, cqe, channel);
  if (!cq.ok()) return cq;
  absl::MutexLock lock(&fabric_->mu);
  fabric_->cqs.at(static_cast<FakeCq*>(cq->get())->id()).timestamps = true;
  return cq;
}

void FakeFabric::SetOneWayLatency(absl::Duration latency) {
  absl::MutexLock lock(&state_->mu);
  state_->one_way_latency_ns = static_cast<uint64_t>(absl::ToInt64Nanoseconds(latency));
}

void FakeFabric::AdvanceDeviceTime(absl::Duration d) {
  absl::MutexLock lock(&state_->mu);
  state_->device_time_ns += static_cast<uint64_t>(absl::ToInt64Nanoseconds(d));
}

void FakeFabric::DropUdSourcePort(uint16_t port, bool drop) {
  absl::MutexLock lock(&state_->mu);
  if (drop) {
    state_->dropped_sports.insert(port);
  } else {
    state_->dropped_sports.erase(port);
  }
}

absl::Status FakeVerbs::ModifyQp(VerbsQp* handle, const QpAttributes& attr, uint32_t attr_mask) {
  const uint32_t qpn = handle->qp_num();
  absl::MutexLock lock(&fabric_->mu);
  Qp& qp = fabric_->qps.at(qpn);
  const std::string transition = absl::StrCat(QpStateName(qp.state), "->", QpStateName(attr.state));
  auto fail = [&](absl::string_view why) {
    return VerbsErrnoToStatus(
        absl::StrCat("ibv_modify_qp(qpn=", qpn, ", ", transition, ", ", why, ")"), EINVAL);
  };
  if (int error = TakeFailure(fabric_, node_id_, "ibv_modify_qp")) {
    return VerbsErrnoToStatus(absl::StrCat("ibv_modify_qp(qpn=", qpn, ", ", transition, ")"),
                              error);
  }
  if ((attr_mask & kQpAttrState) == 0) return fail("IBV_QP_STATE not set");
  auto require = [&](uint32_t required) -> absl::Status {
    const uint32_t missing = required & ~attr_mask;
    if (missing != 0) return fail(absl::StrCat("missing ", MaskNames(missing)));
    const uint32_t extra = attr_mask & ~required;
    if (extra != 0) return fail(absl::StrCat("attribute not allowed: ", MaskNames(extra)));
    return absl::OkStatus();
  };
  const FakeDeviceConfig& device = fabric_->nodes[node_id_]->devices[qp.device];
  switch (attr.state) {
    case QpState::kReset:
      qp.recvs.clear();
      qp.blocked.clear();
      qp.outstanding_sends = 0;
      qp.attr = QpAttributes();
      qp.state = QpState::kReset;
      return absl::OkStatus();
    case QpState::kError:
      MoveToError(fabric_, qpn, qp);
      return absl::OkStatus();
    case QpState::kInit: {
      if (qp.state != QpState::kReset) return fail("illegal transition");
      if (qp.ud) {
        if (absl::Status s = require(kUdInitMask); !s.ok()) return s;
        if (attr.port != 1) return fail(absl::StrCat("no port ", attr.port));
        qp.attr.pkey_index = attr.pkey_index;
        qp.attr.port = attr.port;
        qp.attr.qkey = attr.qkey;
        qp.state = QpState::kInit;
        return absl::OkStatus();
      }
      if (absl::Status s = require(kInitMask); !s.ok()) return s;
      if (attr.port != 1) return fail(absl::StrCat("no port ", attr.port));
      qp.attr.pkey_index = attr.pkey_index;
      qp.attr.port = attr.port;
      qp.attr.access_flags = attr.access_flags;
      qp.state = QpState::kInit;
      return absl::OkStatus();
    }
    case QpState::kRtr: {
      if (qp.state != QpState::kInit) return fail("illegal transition");
      if (qp.ud) {
        if (absl::Status s = require(kUdRtrMask); !s.ok()) return s;
        qp.state = QpState::kRtr;
        return absl::OkStatus();
      }
      if (absl::Status s = require(kRtrMask); !s.ok()) return s;
      if (device.port.link_layer == LinkLayer::kEthernet && !attr.av.is_global) {
        return fail("RoCE needs a global route header (is_global=1)");
      }
      bool sgid_valid = false;
      for (const GidEntry& entry : device.gids) {
        if (entry.index == attr.av.sgid_index) sgid_valid = true;
      }
      if (!sgid_valid) return fail(absl::StrCat("sgid_index ", attr.av.sgid_index, " is empty"));
      if (MtuBytesToEnum(attr.path_mtu_bytes) == 0 ||
          attr.path_mtu_bytes > device.port.active_mtu_bytes) {
        return fail(absl::StrCat("path_mtu ", attr.path_mtu_bytes, " above the port's ",
                                 device.port.active_mtu_bytes));
      }
      qp.attr.av = attr.av;
      qp.attr.path_mtu_bytes = attr.path_mtu_bytes;
      qp.attr.dest_qp_num = attr.dest_qp_num;
      qp.attr.rq_psn = attr.rq_psn;
      qp.attr.max_dest_rd_atomic = attr.max_dest_rd_atomic;
      qp.attr.min_rnr_timer = attr.min_rnr_timer;
      qp.state = QpState::kRtr;
      return absl::OkStatus();
    }
    case QpState::kRts: {
      if (qp.state != QpState::kRtr) return fail("illegal transition");
      if (qp.ud) {
        if (absl::Status s = require(kUdRtsMask); !s.ok()) return s;
        qp.attr.sq_psn = attr.sq_psn;
        qp.state = QpState::kRts;
        return absl::OkStatus();
      }
      if (absl::Status s = require(kRtsMask); !s.ok()) return s;
      qp.attr.sq_psn = attr.sq_psn;
      qp.attr.max_rd_atomic = attr.max_rd_atomic;
      qp.attr.retry_cnt = attr.retry_cnt;
      qp.attr.rnr_retry = attr.rnr_retry;
      qp.attr.timeout = attr.timeout;
      qp.state = QpState::kRts;
      return absl::OkStatus();
    }
    default:
      return fail("illegal transition");
  }
}

absl::StatusOr<QpState> FakeVerbs::QueryQpState(VerbsQp* qp) {
  absl::MutexLock lock(&fabric_->mu);
  return fabric_->qps.at(qp->qp_num()).state;
}

absl::StatusOr<std::unique_ptr<VerbsMr>> FakeVerbs::RegisterMr(VerbsPd* pd, void* addr,
                                                               size_t length, uint32_t access) {
  absl::MutexLock lock(&fabric_->mu);
  ++fabric_->nodes[node_id_]->register_mr_calls;
  const std::string call = absl::StrCat("ibv_reg_mr(len=", length, ")");
  if (int error = TakeFailure(fabric_, node_id_, "ibv_reg_mr")) {
    return VerbsErrnoToStatus(call, error);
  }
  // Remote write without local write is refused by libibverbs too.
  if ((access & (kAccessRemoteWrite | kAccessRemoteAtomic)) != 0 &&
      (access & kAccessLocalWrite) == 0) {
    return VerbsErrnoToStatus(call, EINVAL);
  }
  if (addr == nullptr && length > 0) return VerbsErrnoToStatus(call, EFAULT);
  const uint32_t key = fabric_->next_key++;
  Mr& mr = fabric_->mrs[key];
  mr.node = node_id_;
  mr.pd = static_cast<FakePd*>(pd)->id();
  mr.addr = reinterpret_cast<uint64_t>(addr);
  mr.length = length;
  mr.access = access;
  return std::unique_ptr<VerbsMr>(new FakeMr(fabric_, key, mr.addr, length));
}

absl::Status FakeVerbs::PostSend(VerbsQp* handle, absl::Span<const SendWorkRequest> wrs) {
  const uint32_t qpn = handle->qp_num();
  absl::MutexLock lock(&fabric_->mu);
  Qp& qp = fabric_->qps.at(qpn);
  for (size_t i = 0; i < wrs.size(); ++i) {
    const SendWorkRequest& wr = wrs[i];
    const std::string call = absl::StrCat("ibv_post_send(qpn=", qpn, ", wr ", i, " of ", wrs.size(),
                                          ", QP in ", QpStateName(qp.state), ")");
    if (int error = TakeFailure(fabric_, node_id_, "ibv_post_send")) {
      return VerbsErrnoToStatus(call, error);
    }
    if (qp.state == QpState::kError) {
      ++qp.outstanding_sends;
      CompleteSend(fabric_, qpn, qp, wr, WcStatus::kWrFlushError);
      continue;
    }
    if (qp.state != QpState::kRts) return VerbsErrnoToStatus(call, EINVAL);
    if (qp.outstanding_sends >= qp.caps.max_send_wr) return VerbsErrnoToStatus(call, ENOMEM);
    if (wr.num_sge < 0 || static_cast<uint32_t>(wr.num_sge) > qp.caps.max_send_sge) {
      return VerbsErrnoToStatus(call, EINVAL);
    }
    if (qp.ud && (wr.ah == nullptr || wr.opcode == SendOpcode::kRdmaWrite ||
                  wr.opcode == SendOpcode::kRdmaWriteWithImm)) {
      return VerbsErrnoToStatus(absl::StrCat(call, ": UD needs an address handle and SEND"),
                                EINVAL);
    }
    ++qp.outstanding_sends;
    PendingSend pending;
    pending.wr = wr;
    bool local_ok = true;
    for (int s = 0; s < wr.num_sge; ++s) {
      const Sge& sge = wr.sg_list[s];
      if (CheckLocalSge(fabric_, qp, sge, /*device_writes=*/false) == nullptr) {
        local_ok = false;
        break;
      }
      const uint8_t* src = reinterpret_cast<const uint8_t*>(sge.addr);
      pending.payload.insert(pending.payload.end(), src, src + sge.length);
    }
    if (!local_ok) {
      CompleteSend(fabric_, qpn, qp, wr, WcStatus::kLocalProtectionError);
      MoveToError(fabric_, qpn, qp);
      continue;
    }
    if (qp.ud) {
      const uint32_t mtu = fabric_->nodes[node_id_]->devices[qp.device].port.active_mtu_bytes;
      if (pending.payload.size() > mtu) {
        CompleteSend(fabric_, qpn, qp, wr, WcStatus::kLocalLengthError);
        MoveToError(fabric_, qpn, qp);
        continue;
      }
      ExecuteUd(fabric_, qpn, qp, pending);
      continue;
    }
    if (!qp.blocked.empty() || Execute(fabric_, qpn, qp, pending) == ExecResult::kBlocked) {
      qp.blocked.push_back(std::move(pending));
    }
  }
  return absl::OkStatus();
}

absl::Status FakeVerbs::PostRecv(VerbsQp* handle, absl::Span<const RecvWorkRequest> wrs) {
  const uint32_t qpn = handle->qp_num();
  absl::MutexLock lock(&fabric_->mu);
  Qp& qp = fabric_->qps.at(qpn);
  for (size_t i = 0; i < wrs.size(); ++i) {
    const std::string call = absl::StrCat("ibv_post_recv(qpn=", qpn, ", wr ", i, " of ", wrs.size(),
                                          ", QP in ", QpStateName(qp.state), ")");
    if (int error = TakeFailure(fabric_, node_id_, "ibv_post_recv")) {
      return VerbsErrnoToStatus(call, error);
    }
    if (qp.state == QpState::kReset) return VerbsErrnoToStatus(call, EINVAL);
    if (qp.state == QpState::kError) {
      WorkCompletion wc;
      wc.wr_id = wrs[i].wr_id;
      wc.status = WcStatus::kWrFlushError;
      wc.opcode = WcOpcode::kRecv;
      wc.qp_num = qpn;
      PushCompletion(fabric_, qp.recv_cq, wc);
      continue;
    }
    if (qp.recvs.size() >= qp.caps.max_recv_wr) return VerbsErrnoToStatus(call, ENOMEM);
    if (wrs[i].num_sge < 0 || static_cast<uint32_t>(wrs[i].num_sge) > qp.caps.max_recv_sge) {
      return VerbsErrnoToStatus(call, EINVAL);
    }
    qp.recvs.push_back(wrs[i]);
  }
  // A sender that found no receive (RNR) retries now.
  if (qp.state == QpState::kRtr || qp.state == QpState::kRts) {
    auto it = fabric_->qps.find(qp.attr.dest_qp_num);
    if (it != fabric_->qps.end() && it->second.attr.dest_qp_num == qpn) {
      DrainBlocked(fabric_, it->first, it->second);
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<int> FakeVerbs::PollCq(VerbsCq* cq_handle, absl::Span<WorkCompletion> out) {
  absl::MutexLock lock(&fabric_->mu);
  fake_internal::Cq& cq = fabric_->cqs.at(static_cast<FakeCq*>(cq_handle)->id());
  if (cq.overrun) {
    return absl::InternalError(absl::StrCat("ibv_poll_cq: CQ overrun (more than ", cq.capacity,
                                            " completions outstanding; the CQ is too small)"));
  }
  int n = 0;
  while (n < static_cast<int>(out.size()) && !cq.entries.empty()) {
    out[n++] = cq.entries.front();
    cq.entries.pop_front();
  }
  return n;
}

}  // namespace weft::rdma
