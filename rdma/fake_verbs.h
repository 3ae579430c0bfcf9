// FakeVerbs: an in-process Verbs implementation for tests, with the semantics the data
// path depends on:
//   - the RC QP state machine: RESET -> INIT -> RTR -> RTS with the attribute masks
//     ibv_modify_qp(3) requires for each transition (a missing attribute or an illegal
//     transition fails with EINVAL); posting a send before RTS or a receive in RESET
//     fails; posting to a QP in ERR completes the request with IBV_WC_WR_FLUSH_ERR;
//   - memory keys: local SGEs are checked against their MR (key, PD, bounds: else
//     IBV_WC_LOC_PROT_ERR); RDMA writes against the remote MR (rkey, PD, REMOTE_WRITE
//     access, bounds: else IBV_WC_REM_ACCESS_ERR at the requester);
//   - completions in order with status; after an error completion the QP is in ERR and
//     every later or outstanding work request completes with IBV_WC_WR_FLUSH_ERR;
//   - bytes really move: QPs of FakeVerbs objects that share one FakeFabric are wired
//     by (GID, QP number) at RTR, and SEND / RDMA WRITE (with immediate) copy memory
//     between them, so transports run over it unchanged;
//   - receiver not ready: a SEND or WRITE_WITH_IMM that finds no posted receive waits
//     (as hardware retries forever with rnr_retry = 7) and is delivered, in order with
//     what the QP posts after it, when the peer posts one; with a smaller rnr_retry it
//     fails with IBV_WC_RNR_RETRY_EXC_ERR;
//   - an unreachable peer (no QP with that number behind that GID, or a peer not in
//     RTR/RTS) fails with IBV_WC_RETRY_EXC_ERR, as the ACK timeout would;
//   - completion channels: RequestCqNotification arms a CQ; its next completion queues
//     one event that WaitCqEvent returns;
//   - UD QPs: INIT needs STATE|PKEY_INDEX|PORT|QKEY, RTR STATE, RTS STATE|SQ_PSN; a
//     send needs an address handle (global on RoCE, a valid sgid_index) and completes
//     at once; the datagram reaches the QP named by remote_qpn behind the AH's GID only
//     when its Q_Key matches, the QP is in RTR/RTS and has a receive posted (else it is
//     lost silently, no RNR); the receive gets the 40-byte GRH before the payload;
//   - completion timestamps: CQs made by CreateTimestampedCq carry the NICs' clock
//     (ns); a datagram's receive is stamped one wire latency after its send.
// Injectable failures: a verb that fails with an errno (FailNextCall), a work request
// that completes with an error status (InjectCompletionError), an empty device list.
//
// Work requests execute synchronously inside PostSend/PostRecv. Completions count
// against the send queue when generated (not when polled).
//
// Thread-safety: thread-safe; one mutex per fabric serializes every verb of every
// FakeVerbs on it (memory copies included), which is what lets ranks on different
// threads write into each other's buffers.
#ifndef WEFT_RDMA_FAKE_VERBS_H_
#define WEFT_RDMA_FAKE_VERBS_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "rdma/verbs.h"

namespace weft::rdma {

namespace fake_internal {
struct FabricState;
}  // namespace fake_internal

// The wire between FakeVerbs objects (one per simulated node). Must outlive them.
class FakeFabric {
 public:
  FakeFabric();
  ~FakeFabric();
  FakeFabric(const FakeFabric&) = delete;
  FakeFabric& operator=(const FakeFabric&) = delete;

  fake_internal::FabricState* state() { return state_.get(); }

  // UD datagrams: the time one spends on the wire (default 2 µs), moving the NICs'
  // shared completion clock on; a step of that clock (as a busy responder's would);
  // a black hole for every datagram whose RoCE v2 UDP source port (from its AH's flow
  // label) is `port`.
  void SetOneWayLatency(absl::Duration latency);
  void AdvanceDeviceTime(absl::Duration d);
  void DropUdSourcePort(uint16_t port, bool drop = true);

 private:
  std::unique_ptr<fake_internal::FabricState> state_;
};

struct FakeDeviceConfig {
  std::string name = "mlx5_0";
  uint64_t node_guid = 0;
  PortAttributes port;  // port 1 (the only port)
  std::vector<GidEntry> gids;
  // Whether CreateTimestampedCq works (else EOPNOTSUPP, as on a device without it).
  bool completion_timestamps = true;

  // An active RoCE port on netdev `ifindex` with address `ipv4_host_order`, and the GID
  // table such a port has on Linux: 0 link-local RoCE v1, 1 link-local RoCE v2,
  // 2 ::ffff:ipv4 RoCE v1, 3 ::ffff:ipv4 RoCE v2.
  static FakeDeviceConfig Roce(std::string name, uint32_t ipv4_host_order, uint32_t ifindex = 2);
};

class FakeVerbs : public Verbs {
 public:
  FakeVerbs(FakeFabric* fabric, std::vector<FakeDeviceConfig> devices);
  ~FakeVerbs() override;

  // The next call of `call` (the libibverbs name, e.g. "ibv_reg_mr", "ibv_create_qp",
  // "ibv_modify_qp", "ibv_post_send", "ibv_get_device_list") fails with `errno_value`.
  void FailNextCall(absl::string_view call, int errno_value);
  // The next send work request executed on QP `qp_num` completes with `status`, which
  // moves the QP to ERR (and flushes everything after it).
  void InjectCompletionError(uint32_t qp_num, WcStatus status);

  // Inspection for tests.
  std::optional<QpAttributes> GetQpAttributes(uint32_t qp_num) const;
  int LiveMrCount() const;
  int LiveQpCount() const;
  uint64_t RegisterMrCalls() const;

  absl::StatusOr<std::vector<DeviceInfo>> ListDevices() override;
  absl::StatusOr<std::unique_ptr<VerbsContext>> OpenDevice(absl::string_view name) override;
  absl::StatusOr<PortAttributes> QueryPort(VerbsContext* context, uint32_t port) override;
  absl::StatusOr<std::vector<GidEntry>> QueryGidTable(VerbsContext* context) override;
  absl::StatusOr<GidEntry> QueryGid(VerbsContext* context, uint32_t port, uint32_t index) override;
  absl::StatusOr<std::unique_ptr<VerbsPd>> AllocPd(VerbsContext* context) override;
  absl::StatusOr<std::unique_ptr<VerbsCompChannel>> CreateCompChannel(
      VerbsContext* context) override;
  absl::StatusOr<std::unique_ptr<VerbsCq>> CreateCq(VerbsContext* context, int cqe,
                                                    VerbsCompChannel* channel) override;
  absl::Status RequestCqNotification(VerbsCq* cq) override;
  absl::StatusOr<VerbsCq*> WaitCqEvent(VerbsCompChannel* channel, absl::Duration timeout) override;
  absl::StatusOr<std::unique_ptr<VerbsQp>> CreateRcQp(VerbsPd* pd, VerbsCq* send_cq,
                                                      VerbsCq* recv_cq,
                                                      const QpCapabilities& caps) override;
  absl::StatusOr<std::unique_ptr<VerbsQp>> CreateUdQp(VerbsPd* pd, VerbsCq* send_cq,
                                                      VerbsCq* recv_cq,
                                                      const QpCapabilities& caps) override;
  absl::StatusOr<std::unique_ptr<VerbsAh>> CreateAh(VerbsPd* pd, const AddressVector& av) override;
  absl::StatusOr<std::unique_ptr<VerbsCq>> CreateTimestampedCq(VerbsContext* context, int cqe,
                                                               VerbsCompChannel* channel) override;
  absl::Status ModifyQp(VerbsQp* qp, const QpAttributes& attr, uint32_t attr_mask) override;
  absl::StatusOr<QpState> QueryQpState(VerbsQp* qp) override;
  absl::StatusOr<std::unique_ptr<VerbsMr>> RegisterMr(VerbsPd* pd, void* addr, size_t length,
                                                      uint32_t access) override;
  absl::Status PostSend(VerbsQp* qp, absl::Span<const SendWorkRequest> wrs) override;
  absl::Status PostRecv(VerbsQp* qp, absl::Span<const RecvWorkRequest> wrs) override;
  absl::StatusOr<int> PollCq(VerbsCq* cq, absl::Span<WorkCompletion> out) override;

 private:
  fake_internal::FabricState* fabric_;
  int node_id_;
};

}  // namespace weft::rdma

#endif  // WEFT_RDMA_FAKE_VERBS_H_
