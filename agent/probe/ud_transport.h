// UdProbeTransport: pingmesh over RDMA UD (R-Pingmesh's design), through the rdma/
// verbs layer. One UD QP per NIC is both prober and responder: it sends probes to a
// peer's (GID, UD QP number) with Q_Key kProbeQkey, and answers the probes it
// receives with ACK1 (carrying nothing yet) and, once ACK1's send completion is
// stamped, ACK2 carrying T4 − T3 (agent/probe/probe_transport.h has the arithmetic).
//
// Path pinning: each probe's address handle carries flow label = source port & 0x3FFF,
// which mlx5 turns into exactly that RoCE v2 UDP source port
// (rdma::FlowLabelToUdpSourcePort); the traffic class is the flow's DSCP << 2.
// Replies use the prober's source port and class, named in the probe.
//
// Timestamps: the CQs are made with completion timestamps (the NIC's wall clock, ns)
// where the device has them; otherwise userspace clock reads at poll stand in (the
// measurements then say "user"). A zero timestamp counts as missing.
//
// Work requests: a send slot is never reused while its request may be in flight
// (slots outnumber max_send_wr), every receive is reposted after it completes, and
// what is pending is registered before ibv_post_send (R-Pingmesh's pitfalls).
//
// Thread-safety: see ProbeTransport; every verb is called under one mutex (one QP).
#ifndef WEFT_AGENT_PROBE_UD_TRANSPORT_H_
#define WEFT_AGENT_PROBE_UD_TRANSPORT_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "agent/probe/probe_transport.h"
#include "rdma/verbs.h"

namespace weft::agent::probe {

// "WEFT": the Q_Key of every pingmesh UD QP (probe.proto).
inline constexpr uint32_t kProbeQkey = 0x57454654;

struct UdTransportOptions {
  std::string device;       // e.g. mlx5_0
  uint8_t port = 1;
  uint8_t sgid_index = 3;   // this NIC's RoCE v2 GID (rdma/gid_selection.h)
  rdma::Gid local_gid;      // the GID in that slot: replies are sent to it
  int recv_buffers = 128;
};

class UdProbeTransport : public ProbeTransport {
 public:
  // Opens the device and brings up the CQs (timestamped where possible), the UD QP
  // and the buffers, with receives posted. The error names the verb that failed.
  static absl::StatusOr<std::unique_ptr<UdProbeTransport>> Create(rdma::Verbs* verbs,
                                                                  UdTransportOptions options);
  ~UdProbeTransport() override;

  // The QP number peers probe (Nic.probe_ud_qpn).
  uint32_t qp_num() const { return qp_->qp_num(); }
  // Whether the CQs carry the NIC's completion timestamps.
  bool hardware_timestamps() const { return hardware_timestamps_; }
  uint64_t probes_answered() const { return answered_.load(); }

  absl::Status Send(const ProbeFlow& flow, uint64_t seq) override;
  std::vector<ProbeMeasurement> Receive(absl::Duration timeout) override;
  void Forget(uint64_t seq) override;
  void Wake() override;

 private:
  struct InFlight {
    int64_t t1_user_ns = 0;
    uint64_t t2_nic_ns = 0;  // the probe's send completion (0 until polled)
    int64_t t2_user_ns = 0;  // when that completion was polled
    bool have_ack1 = false;
    ProbeMeasurement ack1;
    int64_t net_span_ns = 0;
    int64_t user_span_ns = 0;
    TimestampSource source = TimestampSource::kUser;
  };
  struct Answer {  // an ACK1 waiting for its send completion, to send ACK2
    uint64_t seq = 0;
    rdma::Gid gid;
    uint32_t qpn = 0;
    uint16_t sport = 0;
    uint8_t tclass = 0;
    uint64_t t3_nic_ns = 0;
    int64_t t3_user_ns = 0;
  };

  UdProbeTransport(rdma::Verbs* verbs, UdTransportOptions options);
  absl::Status Init();
  absl::StatusOr<rdma::VerbsAh*> AhFor(const rdma::Gid& gid, uint16_t sport, uint8_t tclass)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Copies `payload` into the next send slot and posts it.
  absl::Status PostDatagram(uint64_t wr_id, const uint8_t* payload, const rdma::Gid& gid,
                            uint32_t qpn, uint16_t sport, uint8_t tclass)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void DrainSendCq() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void DrainRecvCq(std::vector<ProbeMeasurement>* out) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status PostRecv(uint64_t index) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  rdma::Verbs* const verbs_;
  const UdTransportOptions options_;
  bool hardware_timestamps_ = false;
  std::unique_ptr<rdma::VerbsContext> context_;
  std::unique_ptr<rdma::VerbsPd> pd_;
  std::unique_ptr<rdma::VerbsCompChannel> channel_;
  std::unique_ptr<rdma::VerbsCq> send_cq_;
  std::unique_ptr<rdma::VerbsCq> recv_cq_;
  std::unique_ptr<rdma::VerbsQp> qp_;
  std::vector<uint8_t> buffer_;
  std::unique_ptr<rdma::VerbsMr> mr_;
  std::atomic<bool> woken_{false};
  std::atomic<uint64_t> answered_{0};

  absl::Mutex mu_;
  std::map<std::tuple<std::array<uint8_t, 16>, uint16_t, uint8_t>, std::unique_ptr<rdma::VerbsAh>>
      ahs_
      ABSL_GUARDED_BY(mu_);
  std::map<uint64_t, InFlight> in_flight_ ABSL_GUARDED_BY(mu_);
  std::map<uint64_t, Answer> answers_ ABSL_GUARDED_BY(mu_);
  uint64_t next_answer_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t next_slot_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace weft::agent::probe

#endif  // WEFT_AGENT_PROBE_UD_TRANSPORT_H_
