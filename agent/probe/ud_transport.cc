#include "agent/probe/ud_transport.h"

#include <time.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "agent/probe/probe_wire.h"
#include "rdma/qp_setup.h"

namespace weft::agent::probe {
namespace {

constexpr uint32_t kMagic = 0x57465455;  // "WFTU"
constexpr uint32_t kPayloadBytes = 64;
constexpr uint32_t kRecvSlotBytes = rdma::kUdGrhBytes + kPayloadBytes;
// Send slots outnumber the send queue, so a slot is free again before its turn comes.
constexpr uint32_t kSendWr = 128;
constexpr uint32_t kSendSlots = 2 * kSendWr;
// What a wr_id's top two bits say.
constexpr uint64_t kWrRecv = 0, kWrProbe = 1, kWrAck1 = 2, kWrAck2 = 3;
constexpr int kWrShift = 62;
constexpr uint64_t kWrLow = (uint64_t{1} << kWrShift) - 1;
// Answers remembered for their ACK1's send completion before the oldest are dropped.
constexpr size_t kMaxAnswers = 4096;

// Header fields on this transport: dscp and port = the prober's class and source port
// (replies use them too); after the header, the prober's GID (16 bytes), where replies
// go.
struct Payload {
  ProbeHeader header;
  rdma::Gid reply_gid;
};

void Encode(const Payload& p, uint8_t* out) {
  std::memset(out, 0, kPayloadBytes);
  EncodeProbeHeader(kMagic, p.header, out);
  std::memcpy(out + kProbeHeaderBytes, p.reply_gid.bytes.data(), 16);
}

bool Decode(const uint8_t* in, uint32_t len, Payload* p) {
  if (len < kProbeHeaderBytes + 16 || !DecodeProbeHeader(kMagic, in, len, &p->header)) {
    return false;
  }
  std::memcpy(p->reply_gid.bytes.data(), in + kProbeHeaderBytes, 16);
  return true;
}

}  // namespace

absl::StatusOr<std::unique_ptr<UdProbeTransport>> UdProbeTransport::Create(
    rdma::Verbs* verbs, UdTransportOptions options) {
  std::unique_ptr<UdProbeTransport> transport(new UdProbeTransport(verbs, std::move(options)));
  if (absl::Status init = transport->Init(); !init.ok()) {
    return absl::Status(init.code(), absl::StrCat("pingmesh UD on ", transport->options_.device,
                                                  ": ", init.message()));
  }
  return transport;
}

UdProbeTransport::UdProbeTransport(rdma::Verbs* verbs, UdTransportOptions options)
    : verbs_(verbs), options_(std::move(options)) {}

UdProbeTransport::~UdProbeTransport() {
  // Children before parents (rdma/verbs.h).
  ahs_.clear();
  qp_.reset();
  mr_.reset();
  send_cq_.reset();
  recv_cq_.reset();
  channel_.reset();
  pd_.reset();
  context_.reset();
}

absl::Status UdProbeTransport::Init() {
  absl::StatusOr<std::unique_ptr<rdma::VerbsContext>> context = verbs_->OpenDevice(options_.device);
  if (!context.ok()) return context.status();
  context_ = *std::move(context);
  absl::StatusOr<std::unique_ptr<rdma::VerbsPd>> pd = verbs_->AllocPd(context_.get());
  if (!pd.ok()) return pd.status();
  pd_ = *std::move(pd);
  absl::StatusOr<std::unique_ptr<rdma::VerbsCompChannel>> channel =
      verbs_->CreateCompChannel(context_.get());
  if (!channel.ok()) return channel.status();
  channel_ = *std::move(channel);
  // Completion timestamps where the device has them; EOPNOTSUPP: software time.
  bool stamped = true;
  auto make_cq = [this, &stamped](int cqe, rdma::VerbsCompChannel* channel)
      -> absl::StatusOr<std::unique_ptr<rdma::VerbsCq>> {
    absl::StatusOr<std::unique_ptr<rdma::VerbsCq>> cq =
        verbs_->CreateTimestampedCq(context_.get(), cqe, channel);
    if (cq.ok() || cq.status().code() != absl::StatusCode::kUnimplemented) return cq;
    stamped = false;
    return verbs_->CreateCq(context_.get(), cqe, channel);
  };
  absl::StatusOr<std::unique_ptr<rdma::VerbsCq>> send_cq = make_cq(2 * kSendWr, nullptr);
  if (!send_cq.ok()) return send_cq.status();
  send_cq_ = *std::move(send_cq);
  absl::StatusOr<std::unique_ptr<rdma::VerbsCq>> recv_cq =
      make_cq(2 * options_.recv_buffers, channel_.get());
  if (!recv_cq.ok()) return recv_cq.status();
  recv_cq_ = *std::move(recv_cq);
  hardware_timestamps_ = stamped;
  rdma::QpCapabilities caps;
  caps.max_send_wr = kSendWr;
  caps.max_recv_wr = static_cast<uint32_t>(options_.recv_buffers);
  caps.max_send_sge = 1;
  caps.max_recv_sge = 1;
  absl::StatusOr<std::unique_ptr<rdma::VerbsQp>> qp =
      verbs_->CreateUdQp(pd_.get(), send_cq_.get(), recv_cq_.get(), caps);
  if (!qp.ok()) return qp.status();
  qp_ = *std::move(qp);
  {
    // Receive slots, then send slots, in one registered buffer.
    buffer_.assign(static_cast<size_t>(options_.recv_buffers) * kRecvSlotBytes +
                       kSendSlots * kPayloadBytes,
                   0);
    absl::StatusOr<std::unique_ptr<rdma::VerbsMr>> mr =
        verbs_->RegisterMr(pd_.get(), buffer_.data(), buffer_.size(), rdma::kAccessLocalWrite);
    if (!mr.ok()) return mr.status();
    mr_ = *std::move(mr);
  }
  if (absl::Status up = rdma::ActivateUdQp(*verbs_, qp_.get(), kProbeQkey, options_.port);
      !up.ok()) {
    return up;
  }
  absl::MutexLock lock(&mu_);
  for (int i = 0; i < options_.recv_buffers; ++i) {
    if (absl::Status posted = PostRecv(static_cast<uint64_t>(i)); !posted.ok()) return posted;
  }
  return verbs_->RequestCqNotification(recv_cq_.get());
}

absl::Status UdProbeTransport::PostRecv(uint64_t index) {
  rdma::RecvWorkRequest wr;
  wr.wr_id = (kWrRecv << kWrShift) | index;
  wr.num_sge = 1;
  wr.sg_list[0] = rdma::Sge{reinterpret_cast<uint64_t>(buffer_.data() + index * kRecvSlotBytes),
                            kRecvSlotBytes, mr_->lkey()};
  return verbs_->PostRecv(qp_.get(), {wr});
}

absl::StatusOr<rdma::VerbsAh*> UdProbeTransport::AhFor(const rdma::Gid& gid, uint16_t sport,
                                                       uint8_t tclass) {
  const auto key = std::make_tuple(gid.bytes, sport, tclass);
  auto it = ahs_.find(key);
  if (it != ahs_.end()) return it->second.get();
  rdma::AddressVector av;
  av.is_global = true;
  av.dgid = gid;
  av.sgid_index = options_.sgid_index;
  av.hop_limit = 64;
  av.traffic_class = tclass;
  av.flow_label = rdma::FlowLabelForUdpSourcePort(sport);
  av.port = options_.port;
  absl::StatusOr<std::unique_ptr<rdma::VerbsAh>> ah = verbs_->CreateAh(pd_.get(), av);
  if (!ah.ok()) return ah.status();
  rdma::VerbsAh* raw = ah->get();
  ahs_[key] = *std::move(ah);
  return raw;
}

absl::Status UdProbeTransport::PostDatagram(uint64_t wr_id, const uint8_t* payload,
                                            const rdma::Gid& gid, uint32_t qpn, uint16_t sport,
                                            uint8_t tclass) {
  absl::StatusOr<rdma::VerbsAh*> ah = AhFor(gid, sport, tclass);
  if (!ah.ok()) return ah.status();
  uint8_t* slot = buffer_.data() + static_cast<size_t>(options_.recv_buffers) * kRecvSlotBytes +
                  (next_slot_++ % kSendSlots) * kPayloadBytes;
  std::memcpy(slot, payload, kPayloadBytes);
  rdma::SendWorkRequest wr;
  wr.wr_id = wr_id;
  wr.opcode = rdma::SendOpcode::kSend;
  wr.num_sge = 1;
  wr.sg_list[0] = rdma::Sge{reinterpret_cast<uint64_t>(slot), kPayloadBytes, mr_->lkey()};
  wr.signaled = true;
  wr.ah = *ah;
  wr.remote_qpn = qpn;
  wr.remote_qkey = kProbeQkey;
  return verbs_->PostSend(qp_.get(), {wr});
}

absl::Status UdProbeTransport::Send(const ProbeFlow& flow, uint64_t seq) {
  absl::StatusOr<rdma::Gid> gid = rdma::Gid::Parse(flow.peer_gid);
  if (!gid.ok()) return gid.status();
  Payload probe;
  probe.header.kind = kProbe;
  probe.header.seq = seq;
  probe.header.port = flow.source_port;
  probe.header.dscp = flow.dscp;
  probe.reply_gid = options_.local_gid;
  uint8_t bytes[kPayloadBytes];
  Encode(probe, bytes);
  absl::MutexLock lock(&mu_);
  // Registered before the post: the completion may be polled at once.
  InFlight& f = in_flight_[seq];
  f.t1_user_ns = RealtimeNs();
  absl::Status posted = PostDatagram((kWrProbe << kWrShift) | (seq & kWrLow), bytes, *gid,
                                     flow.peer_qpn, flow.source_port,
                                     static_cast<uint8_t>(flow.dscp << 2));
  if (!posted.ok()) {
    in_flight_.erase(seq);
    return posted;
  }
  DrainSendCq();
  return absl::OkStatus();
}

void UdProbeTransport::DrainSendCq() {
  rdma::WorkCompletion wcs[32];
  while (true) {
    absl::StatusOr<int> n = verbs_->PollCq(send_cq_.get(), absl::MakeSpan(wcs));
    if (!n.ok() || *n == 0) return;
    const int64_t now = RealtimeNs();
    for (int i = 0; i < *n; ++i) {
      const rdma::WorkCompletion& wc = wcs[i];
      const uint64_t kind = wc.wr_id >> kWrShift;
      const uint64_t low = wc.wr_id & kWrLow;
      if (kind == kWrProbe) {
        auto it = in_flight_.find(low);
        if (it != in_flight_.end()) {
          it->second.t2_nic_ns = wc.completion_timestamp_ns;
          it->second.t2_user_ns = now;
        }
      } else if (kind == kWrAck1) {
        auto it = answers_.find(low);
        if (it == answers_.end()) continue;
        const Answer answer = it->second;
        answers_.erase(it);
        if (wc.status != rdma::WcStatus::kSuccess) continue;
        Payload ack2;
        ack2.header.kind = kAck2;
        ack2.header.seq = answer.seq;
        ack2.header.port = answer.sport;
        ack2.header.dscp = static_cast<uint8_t>(answer.tclass >> 2);
        // T4 − T3 on the NIC's clock when both completions carry it.
        if (answer.t3_nic_ns != 0 && wc.completion_timestamp_ns != 0) {
          ack2.header.delay_ns =
              static_cast<int64_t>(wc.completion_timestamp_ns - answer.t3_nic_ns);
          ack2.header.source = kWireHardware;
        } else {
          ack2.header.delay_ns = now - answer.t3_user_ns;
          ack2.header.source = kWireUser;
        }
        uint8_t bytes[kPayloadBytes];
        Encode(ack2, bytes);
        PostDatagram(kWrAck2 << kWrShift, bytes, answer.gid, answer.qpn, answer.sport,
                     answer.tclass)
            .IgnoreError();  // a lost ACK2 leaves ACK1's estimate: counted, not lost
      }
    }
  }
}

void UdProbeTransport::DrainRecvCq(std::vector<ProbeMeasurement>* out) {
  rdma::WorkCompletion wcs[32];
  while (true) {
    absl::StatusOr<int> n = verbs_->PollCq(recv_cq_.get(), absl::MakeSpan(wcs));
    if (!n.ok() || *n == 0) return;
    const int64_t t6 = RealtimeNs();
    bool answered = false;
    for (int i = 0; i < *n; ++i) {
      const rdma::WorkCompletion& wc = wcs[i];
      const uint64_t index = wc.wr_id & kWrLow;
      Payload p;
      const bool valid = wc.status == rdma::WcStatus::kSuccess &&
                         wc.byte_len > rdma::kUdGrhBytes &&
                         Decode(buffer_.data() + index * kRecvSlotBytes + rdma::kUdGrhBytes,
                                wc.byte_len - rdma::kUdGrhBytes, &p);
      PostRecv(index).IgnoreError();  // the slot is free again whatever it held
      if (!valid) continue;
      const ProbeHeader& h = p.header;
      if (h.kind == kProbe) {
        Answer answer;
        answer.seq = h.seq;
        answer.gid = p.reply_gid;
        answer.qpn = wc.src_qp;
        answer.sport = h.port;
        answer.tclass = static_cast<uint8_t>(h.dscp << 2);
        answer.t3_nic_ns = wc.completion_timestamp_ns;
        answer.t3_user_ns = t6;
        Payload ack1;
        ack1.header.kind = kAck1;
        ack1.header.seq = h.seq;
        ack1.header.port = h.port;
        ack1.header.dscp = h.dscp;
        // Until ACK2: the userspace estimate, when there is one to make.
        ack1.header.delay_ns = answer.t3_nic_ns != 0 ? 0 : RealtimeNs() - t6;
        uint8_t bytes[kPayloadBytes];
        Encode(ack1, bytes);
        const uint64_t id = next_answer_++ & kWrLow;
        answers_[id] = answer;
        if (answers_.size() > kMaxAnswers) answers_.erase(answers_.begin());
        if (PostDatagram((kWrAck1 << kWrShift) | id, bytes, answer.gid, answer.qpn, answer.sport,
                         answer.tclass)
                .ok()) {
          answered_.fetch_add(1);
          answered = true;
        } else {
          answers_.erase(id);
        }
        continue;
      }
      auto it = in_flight_.find(h.seq);
      if (it == in_flight_.end()) continue;
      InFlight& f = it->second;
      if (h.kind == kAck1 && !f.have_ack1) {
        f.user_span_ns = t6 - f.t1_user_ns;
        if (f.t2_nic_ns != 0 && wc.completion_timestamp_ns != 0) {
          f.net_span_ns = static_cast<int64_t>(wc.completion_timestamp_ns - f.t2_nic_ns);
          f.source = TimestampSource::kHardware;
        } else {
          f.net_span_ns = f.user_span_ns;
          f.source = TimestampSource::kUser;
        }
        f.ack1.seq = h.seq;
        f.ack1.dscp_at_responder = h.dscp;
        f.ack1.source_port_at_responder = h.port;
        f.have_ack1 = true;
      } else if (h.kind != kAck2 || !f.have_ack1) {
        continue;
      }
      const ProbeMeasurement m =
          CompleteMeasurement(f.ack1, h, f.net_span_ns, f.user_span_ns, f.source);
      out->push_back(m);
      if (m.final) in_flight_.erase(it);
    }
    // ACK1s just posted: their completions (T4) let ACK2 go now.
    if (answered) DrainSendCq();
  }
}

std::vector<ProbeMeasurement> UdProbeTransport::Receive(absl::Duration timeout) {
  std::vector<ProbeMeasurement> out;
  const absl::Time deadline = absl::Now() + timeout;
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      DrainSendCq();
      DrainRecvCq(&out);
      verbs_->RequestCqNotification(recv_cq_.get()).IgnoreError();
      DrainRecvCq(&out);  // what came before the CQ was armed
    }
    if (!out.empty() || woken_.exchange(false)) return out;
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) return out;
    // Short waits: a Wake() is seen within 10 ms, and ACK1s' send completions (which
    // raise no event) are polled at least that often.
    verbs_->WaitCqEvent(channel_.get(), std::min(left, absl::Milliseconds(10))).IgnoreError();
  }
}

void UdProbeTransport::Forget(uint64_t seq) {
  absl::MutexLock lock(&mu_);
  in_flight_.erase(seq);
}

void UdProbeTransport::Wake() { woken_ = true; }

}  // namespace weft::agent::probe
