#include "datapath/transport/rc_transport.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "common/logging.h"
#include "common/status_macros.h"
#include "rdma/qp_setup.h"

namespace weft::datapath {

using rdma::Gid;
using rdma::InitTransition;
using rdma::kAccessLocalWrite;
using rdma::kAccessRemoteWrite;
using rdma::PortAttributes;
using rdma::QpCapabilities;
using rdma::QpTransition;
using rdma::RcConnectionParams;
using rdma::RecvWorkRequest;
using rdma::RtrTransition;
using rdma::RtsTransition;
using rdma::SendOpcode;
using rdma::SendWorkRequest;
using rdma::Sge;
using rdma::Verbs;
using rdma::VerbsCq;
using rdma::WcStatus;
using rdma::WcStatusName;
using rdma::WorkCompletion;

namespace {

// Immediate data layout.
constexpr uint32_t kTypeEager = 0;
constexpr uint32_t kTypeRendezvousDone = 1;
constexpr uint32_t kTypeReadyToReceive = 2;
constexpr uint32_t kTypeCredit = 3;

uint32_t MakeImm(uint32_t type, uint32_t credits) { return (type << 30) | (credits & 0xffff); }
uint32_t ImmType(uint32_t imm) { return imm >> 30; }
uint32_t ImmCredits(uint32_t imm) { return imm & 0xffff; }

// wr_id: peer in the high half, bit 31 set for receives, slot in the low bits.
constexpr uint64_t kRecvBit = 1ull << 31;
uint64_t MakeWrId(int peer, bool recv, uint32_t slot) {
  return (static_cast<uint64_t>(peer) << 32) | (recv ? kRecvBit : 0) | slot;
}

// The ready-to-receive payload.
struct ReadyWire {
  uint64_t addr;
  uint64_t num_bytes;
  uint32_t rkey;
  uint32_t reserved;
};
static_assert(sizeof(ReadyWire) == 24);

uint32_t Psn(int from, int to) {
  return static_cast<uint32_t>((static_cast<uint64_t>(from) * 7919u + to * 104729u + 1) & 0xffffff);
}

char* AllocateRegion(size_t num_bytes) {
  const size_t rounded = (std::max<size_t>(num_bytes, 1) + 4095) & ~size_t{4095};
  char* p = static_cast<char*>(std::aligned_alloc(4096, rounded));
  if (p != nullptr) std::memset(p, 0, rounded);
  return p;
}

struct Endpoint {
  Gid gid;
  uint32_t mtu_bytes = 0;
  uint32_t credits = 0;
  uint64_t eager_bytes = 0;
  uint64_t slots_addr = 0;
  uint32_t slots_rkey = 0;
  std::vector<uint32_t> qpns;
};

std::string EncodeEndpoint(const Endpoint& e) {
  return absl::StrCat("gid=", e.gid.ToString(), ";mtu=", e.mtu_bytes, ";credits=", e.credits,
                      ";eager=", e.eager_bytes, ";addr=", e.slots_addr, ";rkey=", e.slots_rkey,
                      ";qpn=", absl::StrJoin(e.qpns, ","));
}

absl::StatusOr<Endpoint> DecodeEndpoint(absl::string_view text, int from_rank) {
  Endpoint e;
  bool ok = true;
  int fields = 0;
  for (absl::string_view field : absl::StrSplit(text, ';')) {
    std::pair<absl::string_view, absl::string_view> kv = absl::StrSplit(field, '=');
    ++fields;
    if (kv.first == "gid") {
      absl::StatusOr<Gid> gid = Gid::Parse(kv.second);
      ok &= gid.ok();
      if (gid.ok()) e.gid = *gid;
    } else if (kv.first == "mtu") {
      ok &= absl::SimpleAtoi(kv.second, &e.mtu_bytes);
    } else if (kv.first == "credits") {
      ok &= absl::SimpleAtoi(kv.second, &e.credits);
    } else if (kv.first == "eager") {
      ok &= absl::SimpleAtoi(kv.second, &e.eager_bytes);
    } else if (kv.first == "addr") {
      ok &= absl::SimpleAtoi(kv.second, &e.slots_addr);
    } else if (kv.first == "rkey") {
      ok &= absl::SimpleAtoi(kv.second, &e.slots_rkey);
    } else if (kv.first == "qpn") {
      for (absl::string_view q : absl::StrSplit(kv.second, ',')) {
        uint32_t qpn = 0;
        ok &= absl::SimpleAtoi(q, &qpn);
        e.qpns.push_back(qpn);
      }
    } else {
      --fields;
    }
  }
  if (!ok || fields != 7) {
    return absl::InvalidArgumentError(
        absl::StrCat("rank ", from_rank, " published a malformed RC endpoint: '", text, "'"));
  }
  return e;
}

}  // namespace

absl::StatusOr<std::unique_ptr<RcTransport>> RcTransport::Create(
    int rank, int size, Verbs& verbs, Rendezvous& rendezvous, const RcTransportOptions& options) {
  if (size < 1 || rank < 0 || rank >= size) {
    return absl::InvalidArgumentError(
        absl::StrCat("rank ", rank, " is not in a job of ", size, " ranks"));
  }
  if (options.credits < 4 || options.credits > 4096) {
    return absl::InvalidArgumentError(
        absl::StrCat("credits ", options.credits, " is outside 4..4096"));
  }
  if (options.eager_bytes < sizeof(ReadyWire) || options.eager_bytes > (1u << 20)) {
    return absl::InvalidArgumentError(
        absl::StrCat("eager_bytes ", options.eager_bytes, " is outside 24..1048576"));
  }
  std::unique_ptr<RcTransport> transport(new RcTransport(rank, size, verbs, options));
  RETURN_IF_ERROR(transport->Setup(rendezvous));
  return transport;
}

RcTransport::RcTransport(int rank, int size, Verbs& verbs, const RcTransportOptions& options)
    : rank_(rank), size_(size), verbs_(verbs), options_(options), peers_(size) {}

RcTransport::~RcTransport() = default;

char* RcTransport::LocalSlot(int peer, uint64_t seq) const {
  return recv_region_.get() +
         (static_cast<size_t>(peer) * options_.credits + seq % options_.credits) *
             options_.eager_bytes;
}

char* RcTransport::StagingSlot(int peer, uint64_t seq) const {
  return staging_region_.get() +
         (static_cast<size_t>(peer) * options_.credits + seq % options_.credits) *
             options_.eager_bytes;
}

absl::Status RcTransport::Setup(Rendezvous& rendezvous) {
  ASSIGN_OR_RETURN(path_, ChooseRdmaPath(verbs_, options_.path));
  ASSIGN_OR_RETURN(context_, verbs_.OpenDevice(path_.device));
  const PortAttributes& port = path_.port_attributes;
  if (port.max_msg_bytes > 0) max_write_bytes_ = std::min<uint32_t>(port.max_msg_bytes, 1u << 30);

  // Verbs resources.
  ASSIGN_OR_RETURN(pd_, verbs_.AllocPd(context_.get()));
  if (options_.completion_mode == CompletionMode::kEvent) {
    ASSIGN_OR_RETURN(channel_, verbs_.CreateCompChannel(context_.get()));
  }
  const int cqe = static_cast<int>((size_ - 1) * (max_send_wr() + options_.credits) + 64);
  ASSIGN_OR_RETURN(cq_, verbs_.CreateCq(context_.get(), cqe, channel_.get()));
  const size_t region_bytes = static_cast<size_t>(size_) * options_.credits * options_.eager_bytes;
  recv_region_ = std::unique_ptr<char, void (*)(void*)>(AllocateRegion(region_bytes), &std::free);
  staging_region_ =
      std::unique_ptr<char, void (*)(void*)>(AllocateRegion(region_bytes), &std::free);
  if (recv_region_ == nullptr || staging_region_ == nullptr) {
    return absl::ResourceExhaustedError(
        absl::StrCat("cannot allocate 2 x ", region_bytes, " bytes of RC slots"));
  }
  ASSIGN_OR_RETURN(recv_mr_, verbs_.RegisterMr(pd_.get(), recv_region_.get(), region_bytes,
                                               kAccessLocalWrite | kAccessRemoteWrite));
  ASSIGN_OR_RETURN(staging_mr_, verbs_.RegisterMr(pd_.get(), staging_region_.get(), region_bytes,
                                                  kAccessLocalWrite));
  RegistrationCache::Options cache_options;
  cache_options.cache_transient = options_.cache_registrations;
  cache_options.max_cached_bytes = options_.registration_cache_bytes;
  registrations_ = std::make_unique<RegistrationCache>(verbs_, pd_.get(), cache_options);

  // One QP per peer, receives posted before anyone can send.
  QpCapabilities caps;
  caps.max_send_wr = max_send_wr();
  caps.max_recv_wr = options_.credits;
  caps.max_send_sge = 1;
  caps.max_recv_sge = 1;
  Endpoint local;
  local.gid = path_.gid.gid;
  local.mtu_bytes = port.active_mtu_bytes;
  local.credits = options_.credits;
  local.eager_bytes = options_.eager_bytes;
  local.slots_addr = reinterpret_cast<uint64_t>(recv_region_.get());
  local.slots_rkey = recv_mr_->rkey();
  local.qpns.assign(size_, 0);
  RcConnectionParams base;
  base.port = static_cast<uint8_t>(path_.port);
  base.sgid_index = static_cast<uint8_t>(path_.gid.index);
  base.traffic_class = options_.traffic_class;
  for (int peer = 0; peer < size_; ++peer) {
    if (peer == rank_) continue;
    Peer& p = peers_[peer];
    ASSIGN_OR_RETURN(p.qp, verbs_.CreateRcQp(pd_.get(), cq_.get(), cq_.get(), caps));
    const QpTransition init = InitTransition(base);
    RETURN_IF_ERROR(verbs_.ModifyQp(p.qp.get(), init.attr, init.attr_mask));
    for (uint32_t slot = 0; slot < options_.credits; ++slot) {
      RETURN_IF_ERROR(RepostReceive(peer, slot));
    }
    p.staging_busy.assign(options_.credits, false);
    p.send_credits = options_.credits;
    local.qpns[peer] = p.qp->qp_num();
  }

  const std::string key = options_.rendezvous_key;
  ASSIGN_OR_RETURN(
      std::vector<std::string> published,
      ExchangeAll(rendezvous, key, rank_, size_, EncodeEndpoint(local), options_.connect_timeout));
  for (int peer = 0; peer < size_; ++peer) {
    if (peer == rank_) continue;
    ASSIGN_OR_RETURN(Endpoint remote, DecodeEndpoint(published[peer], peer));
    if (remote.credits != options_.credits || remote.eager_bytes != options_.eager_bytes ||
        remote.qpns.size() != static_cast<size_t>(size_)) {
      return absl::FailedPreconditionError(
          absl::StrCat("rank ", peer, " runs the RC transport with credits=", remote.credits,
                       " eager_bytes=", remote.eager_bytes, " for ", remote.qpns.size(),
                       " ranks; rank ", rank_, " with credits=", options_.credits,
                       " eager_bytes=", options_.eager_bytes, " for ", size_));
    }
    Peer& p = peers_[peer];
    p.remote_slots_addr =
        remote.slots_addr + static_cast<uint64_t>(rank_) * options_.credits * options_.eager_bytes;
    p.remote_slots_rkey = remote.slots_rkey;
    RcConnectionParams params = base;
    params.remote_gid = remote.gid;
    params.remote_qp_num = remote.qpns[rank_];
    params.local_psn = Psn(rank_, peer);
    params.remote_psn = Psn(peer, rank_);
    params.path_mtu_bytes = std::min(local.mtu_bytes, remote.mtu_bytes);
    for (const QpTransition& t : {RtrTransition(params), RtsTransition(params)}) {
      absl::Status status = verbs_.ModifyQp(p.qp.get(), t.attr, t.attr_mask);
      if (!status.ok()) {
        return absl::Status(status.code(),
                            absl::StrCat("connecting rank ", rank_, " to rank ", peer, " (",
                                         remote.gid.ToString(), "): ", status.message()));
      }
    }
  }
  // Nobody sends before every QP of the job is ready to receive.
  RETURN_IF_ERROR(
      ExchangeAll(rendezvous, key + "/ready", rank_, size_, "1", options_.connect_timeout)
          .status());
  WEFT_LOG(DEBUG) << "rc transport up rank=" << rank_ << " device=" << path_.device
                  << " gid_index=" << path_.gid.index << " gid=" << path_.gid.gid.ToString()
                  << " traffic_class=" << int{options_.traffic_class};
  return absl::OkStatus();
}

absl::Status RcTransport::RepostReceive(int peer, uint32_t slot) {
  RecvWorkRequest wr;
  wr.wr_id = MakeWrId(peer, /*recv=*/true, slot);
  wr.sg_list[0] = Sge{reinterpret_cast<uint64_t>(LocalSlot(peer, slot)),
                      static_cast<uint32_t>(options_.eager_bytes), recv_mr_->lkey()};
  wr.num_sge = 1;
  return verbs_.PostRecv(peers_[peer].qp.get(), {wr});
}

absl::Status RcTransport::RegisterMemory(void* data, size_t num_bytes) {
  return registrations_->AddPersistent(data, num_bytes);
}

absl::Status RcTransport::UnregisterMemory(void* data) {
  return registrations_->RemovePersistent(data);
}

RcTransport::Stats RcTransport::stats() const {
  Stats out = stats_;
  out.registrations = registrations_->stats();
  return out;
}

RcTransport::Request* RcTransport::NewRequest(bool is_send, int peer, char* data,
                                              size_t num_bytes) {
  std::unique_ptr<Request> request;
  if (free_requests_.empty()) {
    request = std::make_unique<Request>();
  } else {
    request = std::move(free_requests_.back());
    free_requests_.pop_back();
    *request = Request();
  }
  request->id = next_id_++;
  request->is_send = is_send;
  request->peer = peer;
  request->data = data;
  request->num_bytes = num_bytes;
  request->rendezvous = num_bytes > options_.eager_bytes;
  Request* raw = request.get();
  requests_[raw->id] = std::move(request);
  return raw;
}

absl::StatusOr<Transport::RequestId> RcTransport::PostSend(int peer, const void* data,
                                                           size_t num_bytes) {
  RETURN_IF_ERROR(CheckPeer(peer));
  if (!broken_.ok()) return broken_;
  Request* request =
      NewRequest(true, peer, const_cast<char*>(static_cast<const char*>(data)), num_bytes);
  if (request->rendezvous) {
    absl::StatusOr<RegistrationCache::Handle> registration =
        registrations_->Acquire(data, num_bytes);
    if (!registration.ok()) {
      requests_.erase(request->id);
      return registration.status();
    }
    request->registration = std::move(*registration);
  }
  peers_[peer].sends.push_back(request);
  PumpSends(peer);
  return request->id;
}

absl::StatusOr<Transport::RequestId> RcTransport::PostRecv(int peer, void* data, size_t num_bytes) {
  RETURN_IF_ERROR(CheckPeer(peer));
  if (!broken_.ok()) return broken_;
  Peer& p = peers_[peer];
  Request* request = NewRequest(false, peer, static_cast<char*>(data), num_bytes);
  if (!p.unexpected.empty()) {
    // The message is already here (it came before this receive was posted).
    std::vector<char>& message = p.unexpected.front();
    if (request->rendezvous || message.size() != num_bytes) {
      Break(absl::InternalError(absl::StrCat("message size mismatch: rank ", peer, " sent ",
                                             message.size(), " bytes where rank ", rank_,
                                             " posted a receive of ", num_bytes, " bytes")));
      request->complete = true;
      request->status = broken_;
      return request->id;
    }
    if (num_bytes > 0) std::memcpy(data, message.data(), num_bytes);
    p.unexpected.pop_front();
    request->complete = true;
    return request->id;
  }
  if (request->rendezvous) {
    absl::StatusOr<RegistrationCache::Handle> registration =
        registrations_->Acquire(data, num_bytes);
    if (!registration.ok()) {
      requests_.erase(request->id);
      return registration.status();
    }
    p.ready_to_send.push_back(
        RemoteBuffer{reinterpret_cast<uint64_t>(data), registration->rkey(), num_bytes});
    request->registration = std::move(*registration);
  }
  p.recvs.push_back(request);
  PumpSends(peer);
  return request->id;
}

absl::Status RcTransport::PostMessage(int peer, uint32_t type, const SendWorkRequest& wr,
                                      const Inflight& inflight) {
  Peer& p = peers_[peer];
  SendWorkRequest posted = wr;
  posted.wr_id = MakeWrId(peer, /*recv=*/false, 0);
  posted.signaled = true;
  if (posted.opcode == SendOpcode::kRdmaWriteWithImm || posted.opcode == SendOpcode::kSendWithImm) {
    posted.imm_data = MakeImm(type, p.owed_credits);
  }
  p.inflight.push_back(inflight);
  ++p.outstanding_wrs;
  absl::Status status = verbs_.PostSend(p.qp.get(), {posted});
  if (!status.ok()) {
    p.inflight.pop_back();
    --p.outstanding_wrs;
    return status;
  }
  if (posted.opcode == SendOpcode::kRdmaWriteWithImm || posted.opcode == SendOpcode::kSendWithImm) {
    p.owed_credits = 0;
    --p.send_credits;
    ++p.send_seq;
  }
  return absl::OkStatus();
}

void RcTransport::PumpSends(int peer) {
  Peer& p = peers_[peer];
  // Data and ready-to-receive messages keep one credit back for a credit message.
  auto can_send = [&](uint32_t wrs) {
    return broken_.ok() && p.send_credits >= 2 && p.outstanding_wrs + wrs <= max_send_wr();
  };
  while (broken_.ok()) {
    if (!p.ready_to_send.empty()) {
      const uint32_t slot = p.send_seq % options_.credits;
      if (!can_send(1) || p.staging_busy[slot]) break;
      const RemoteBuffer& buffer = p.ready_to_send.front();
      ReadyWire wire{buffer.addr, buffer.num_bytes, buffer.rkey, 0};
      char* staging = StagingSlot(peer, p.send_seq);
      std::memcpy(staging, &wire, sizeof(wire));
      SendWorkRequest wr;
      wr.opcode = SendOpcode::kSendWithImm;
      wr.sg_list[0] = Sge{reinterpret_cast<uint64_t>(staging), sizeof(wire), staging_mr_->lkey()};
      wr.num_sge = 1;
      p.staging_busy[slot] = true;
      absl::Status status =
          PostMessage(peer, kTypeReadyToReceive, wr, Inflight{nullptr, static_cast<int>(slot)});
      if (!status.ok()) {
        p.staging_busy[slot] = false;
        Break(status);
        return;
      }
      ++stats_.ready_to_receive_messages;
      p.ready_to_send.pop_front();
      continue;
    }
    if (p.sends.empty()) break;
    Request* request = p.sends.front();
    if (!request->rendezvous) {
      const uint32_t slot = p.send_seq % options_.credits;
      if (!can_send(1) || p.staging_busy[slot]) break;
      char* staging = StagingSlot(peer, p.send_seq);
      if (request->num_bytes > 0) std::memcpy(staging, request->data, request->num_bytes);
      SendWorkRequest wr;
      wr.opcode = SendOpcode::kRdmaWriteWithImm;
      if (request->num_bytes > 0) {
        wr.sg_list[0] = Sge{reinterpret_cast<uint64_t>(staging),
                            static_cast<uint32_t>(request->num_bytes), staging_mr_->lkey()};
        wr.num_sge = 1;
      }
      wr.remote_addr = p.remote_slots_addr + slot * options_.eager_bytes;
      wr.rkey = p.remote_slots_rkey;
      p.staging_busy[slot] = true;
      absl::Status status =
          PostMessage(peer, kTypeEager, wr, Inflight{nullptr, static_cast<int>(slot)});
      if (!status.ok()) {
        p.staging_busy[slot] = false;
        Break(status);
        return;
      }
      ++stats_.eager_messages;
      // The bytes are in the staging slot: the caller's buffer is free again.
      request->complete = true;
      p.sends.pop_front();
      continue;
    }
    // Rendezvous: needs the receiver's buffer.
    if (p.ready.empty()) break;
    const uint32_t chunks =
        static_cast<uint32_t>((request->num_bytes + max_write_bytes_ - 1) / max_write_bytes_);
    if (!can_send(chunks)) break;
    const RemoteBuffer target = p.ready.front();
    if (target.num_bytes != request->num_bytes) {
      Break(absl::InternalError(absl::StrCat("message size mismatch: rank ", rank_, " sends ",
                                             request->num_bytes, " bytes where rank ", peer,
                                             " posted a receive of ", target.num_bytes, " bytes")));
      return;
    }
    for (uint32_t chunk = 0; chunk < chunks; ++chunk) {
      const uint64_t offset = static_cast<uint64_t>(chunk) * max_write_bytes_;
      const uint32_t length =
          static_cast<uint32_t>(std::min<uint64_t>(max_write_bytes_, request->num_bytes - offset));
      const bool last = chunk + 1 == chunks;
      SendWorkRequest wr;
      wr.opcode = last ? SendOpcode::kRdmaWriteWithImm : SendOpcode::kRdmaWrite;
      wr.sg_list[0] = Sge{reinterpret_cast<uint64_t>(request->data) + offset, length,
                          request->registration.lkey()};
      wr.num_sge = 1;
      wr.remote_addr = target.addr + offset;
      wr.rkey = target.rkey;
      absl::Status status =
          PostMessage(peer, kTypeRendezvousDone, wr, Inflight{last ? request : nullptr, -1});
      if (!status.ok()) {
        Break(status);
        return;
      }
    }
    ++stats_.rendezvous_messages;
    p.ready.pop_front();
    p.sends.pop_front();
  }
  // Nothing to carry the credits back: send them on their own once half are owed.
  if (broken_.ok() && p.owed_credits >= options_.credits / 2 && p.send_credits >= 1 &&
      p.outstanding_wrs < max_send_wr()) {
    SendWorkRequest wr;
    wr.opcode = SendOpcode::kSendWithImm;
    absl::Status status = PostMessage(peer, kTypeCredit, wr, Inflight{});
    if (!status.ok()) {
      Break(status);
      return;
    }
    ++stats_.credit_messages;
  }
}

void RcTransport::HandleCompletion(const WorkCompletion& wc) {
  const int peer = static_cast<int>(wc.wr_id >> 32);
  const bool is_recv = (wc.wr_id & kRecvBit) != 0;
  if (peer < 0 || peer >= size_ || peer == rank_) {
    Break(absl::InternalError(absl::StrCat("completion with unknown wr_id ", wc.wr_id)));
    return;
  }
  Peer& p = peers_[peer];
  if (wc.status != WcStatus::kSuccess) {
    if (!broken_.ok()) return;  // flushed after the first error
    const char* what = is_recv ? "receive from" : "send to";
    Break(absl::UnavailableError(absl::StrCat(
        "rank ", rank_, ": RDMA ", what, " rank ", peer, " failed with ", WcStatusName(wc.status),
        " (vendor_err 0x", absl::Hex(wc.vendor_err), ", qpn ", wc.qp_num, ")")));
    return;
  }
  if (is_recv) {
    HandleReceive(peer, wc);
    return;
  }
  if (p.inflight.empty()) {
    Break(absl::InternalError(
        absl::StrCat("send completion from rank ", peer, " without a posted send")));
    return;
  }
  const Inflight done = p.inflight.front();
  p.inflight.pop_front();
  --p.outstanding_wrs;
  if (done.staging_slot >= 0) p.staging_busy[done.staging_slot] = false;
  if (done.request != nullptr) {
    done.request->complete = true;
    done.request->registration.Release();
  }
  PumpSends(peer);
}

void RcTransport::HandleReceive(int peer, const WorkCompletion& wc) {
  Peer& p = peers_[peer];
  const uint32_t slot = static_cast<uint32_t>(wc.wr_id & (kRecvBit - 1));
  if (slot != p.recv_seq % options_.credits || !wc.has_imm) {
    Break(absl::InternalError(absl::StrCat("rank ", rank_, ": message ", p.recv_seq, " from rank ",
                                           peer, " arrived in slot ", slot)));
    return;
  }
  const uint32_t type = ImmType(wc.imm_data);
  p.send_credits += ImmCredits(wc.imm_data);
  const char* data = LocalSlot(peer, p.recv_seq);
  switch (type) {
    case kTypeEager: {
      if (p.recvs.empty()) {
        p.unexpected.emplace_back(data, data + wc.byte_len);
        ++stats_.unexpected_messages;
        break;
      }
      Request* request = p.recvs.front();
      if (request->rendezvous || request->num_bytes != wc.byte_len) {
        Break(absl::InternalError(absl::StrCat(
            "message size mismatch: rank ", peer, " sent ", wc.byte_len, " bytes where rank ",
            rank_, " posted a receive of ", request->num_bytes, " bytes")));
        return;
      }
      if (wc.byte_len > 0) std::memcpy(request->data, data, wc.byte_len);
      request->complete = true;
      p.recvs.pop_front();
      break;
    }
    case kTypeRendezvousDone: {
      if (p.recvs.empty() || !p.recvs.front()->rendezvous) {
        Break(absl::InternalError(absl::StrCat("rank ", rank_, ": rendezvous data from rank ", peer,
                                               " without a matching receive")));
        return;
      }
      Request* request = p.recvs.front();
      request->complete = true;
      request->registration.Release();
      p.recvs.pop_front();
      break;
    }
    case kTypeReadyToReceive: {
      ReadyWire wire;
      std::memcpy(&wire, data, sizeof(wire));
      p.ready.push_back(RemoteBuffer{wire.addr, wire.rkey, wire.num_bytes});
      break;
    }
    case kTypeCredit:
      break;
  }
  ++p.recv_seq;
  ++p.owed_credits;
  absl::Status status = RepostReceive(peer, slot);
  if (!status.ok()) {
    Break(status);
    return;
  }
  PumpSends(peer);
}

void RcTransport::Break(const absl::Status& status) {
  if (broken_.ok()) {
    broken_ = status;
    WEFT_LOG(WARNING) << "rc transport broken rank=" << rank_ << ": " << status;
  }
  for (Peer& p : peers_) {
    for (Request* r : p.sends) {
      r->complete = true;
      r->status = broken_;
    }
    for (Request* r : p.recvs) {
      r->complete = true;
      r->status = broken_;
    }
    for (Inflight& inflight : p.inflight) {
      if (inflight.request != nullptr) {
        inflight.request->complete = true;
        inflight.request->status = broken_;
        inflight.request = nullptr;
      }
    }
    p.sends.clear();
    p.recvs.clear();
  }
}

std::string RcTransport::DescribePending() const {
  std::vector<std::string> parts;
  for (int peer = 0; peer < size_ && parts.size() < 8; ++peer) {
    const Peer& p = peers_[peer];
    for (const Request* r : p.recvs) {
      parts.push_back(absl::StrCat("receive of ", r->num_bytes, " bytes from rank ", peer));
    }
    for (const Request* r : p.sends) {
      parts.push_back(absl::StrCat(
          "send of ", r->num_bytes, " bytes to rank ", peer,
          r->rendezvous && p.ready.empty() ? " (waiting for its receive to be posted)" : ""));
    }
    for (const Inflight& inflight : p.inflight) {
      if (inflight.request != nullptr) {
        parts.push_back(absl::StrCat("RDMA write to rank ", peer, " in flight"));
      }
    }
  }
  return absl::StrJoin(parts, ", ");
}

void RcTransport::Progress() {
  if (!broken_.ok()) return;
  WorkCompletion wcs[32];
  absl::StatusOr<int> n = verbs_.PollCq(cq_.get(), absl::MakeSpan(wcs));
  if (!n.ok()) {
    Break(n.status());
    return;
  }
  for (int i = 0; i < *n; ++i) HandleCompletion(wcs[i]);
}

absl::Status RcTransport::Wait(RequestId id) {
  auto it = requests_.find(id);
  if (it == requests_.end()) {
    return absl::InvalidArgumentError(absl::StrCat("unknown or already waited request ", id));
  }
  Request* request = it->second.get();
  WorkCompletion wcs[32];
  bool stalled = false;
  absl::Time stalled_since;
  bool armed = false;
  uint64_t empty_polls = 0;
  while (!request->complete) {
    absl::StatusOr<int> n = verbs_.PollCq(cq_.get(), absl::MakeSpan(wcs));
    if (!n.ok()) {
      Break(n.status());
      break;
    }
    if (*n > 0) {
      for (int i = 0; i < *n; ++i) HandleCompletion(wcs[i]);
      stalled = false;
      armed = false;
      continue;
    }
    const absl::Time now = absl::Now();
    if (!stalled) {
      stalled = true;
      stalled_since = now;
    } else if (now - stalled_since >= options_.progress_timeout) {
      Break(absl::DeadlineExceededError(absl::StrCat(
          "rank ", rank_, ": no RDMA completion for ",
          absl::FormatDuration(options_.progress_timeout), " waiting on: ", DescribePending())));
      break;
    }
    if (options_.completion_mode == CompletionMode::kBusyPoll) {
      // Spin; every so often let another runnable thread have the core.
      if (++empty_polls % 64 == 0) std::this_thread::yield();
      continue;
    }
    if (!armed) {
      // Arm, then poll once more: a completion that landed before the arm raises no
      // event.
      absl::Status status = verbs_.RequestCqNotification(cq_.get());
      if (!status.ok()) {
        Break(status);
        break;
      }
      armed = true;
      continue;
    }
    const absl::Duration left = stalled_since + options_.progress_timeout - now;
    absl::StatusOr<VerbsCq*> event =
        verbs_.WaitCqEvent(channel_.get(), std::min(left, absl::Milliseconds(100)));
    if (!event.ok()) {
      Break(event.status());
      break;
    }
    if (*event != nullptr) armed = false;
  }
  absl::Status status = request->status;
  request->registration.Release();
  free_requests_.push_back(std::move(it->second));
  requests_.erase(it);
  return status;
}

}  // namespace weft::datapath
