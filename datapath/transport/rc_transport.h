// RcTransport: the Transport (datapath/transport.h) over verbs Reliable Connected QPs
// on RoCE v2, one QP per pair of ranks, all through the Verbs interface (so it runs
// over libibverbs or, in tests, over FakeVerbs).
//
// Protocol. Every message consumes one "credit": one receive work request and one
// eager slot at the peer, so the receiver never runs out of posted receives (no RNR
// waits) and slots are reused in order (message k uses slot k mod credits).
//   - eager (size <= eager_bytes): the sender copies the bytes into a registered
//     staging slot and posts RDMA WRITE WITH IMMEDIATE into the peer's slot; the
//     receiver copies them out into the posted receive (or, if none is posted yet,
//     into an unexpected-message queue), which frees the slot at once.
//   - rendezvous (larger): the receiver registers its buffer (registration cache) and
//     SENDs a ready-to-receive (address, rkey, length); the sender RDMA WRITEs straight
//     from its buffer into the receiver's, the last write WITH IMMEDIATE. Zero copies.
//   - credits flow back in the immediate data of every message; when a peer has
//     nothing to send, an explicit credit SEND goes once half the credits are owed.
//     One credit is held back for that message, so credits can always return.
// Immediate data: bits 31..30 message type (eager, rendezvous done, ready-to-receive,
// credit), bits 15..0 credits returned.
//
// Setup: choose the device, port and RoCE v2 GID (datapath/rdma_path.h), create the PD, CQ
// and one QP per peer, post the receives, exchange endpoints through the Rendezvous,
// take each QP to RTS with the job's traffic class (rdma/qp_setup.h), and meet
// again so no rank sends to a QP that is not yet ready.
//
// Completion: busy-polling the CQ (lowest latency; yields the core every 64 empty
// polls) or event-driven (arm the CQ, block on the completion channel).
//
// Thread-safety: as Transport: one thread at a time.
#ifndef WEFT_DATAPATH_TRANSPORT_RC_TRANSPORT_H_
#define WEFT_DATAPATH_TRANSPORT_RC_TRANSPORT_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/time/time.h"
#include "datapath/rendezvous.h"
#include "datapath/transport.h"
#include "datapath/transport/rdma_path.h"
#include "datapath/transport/registration_cache.h"
#include "rdma/verbs.h"

namespace weft::datapath {

enum class CompletionMode { kBusyPoll, kEvent };

struct RcTransportOptions {
  // Which device, port and GID (datapath/rdma_path.h).
  RdmaPathQuery path;
  // The IP ToS byte of every packet: the job's QoS class (106 = DSCP 26, ECT(0)).
  uint8_t traffic_class = 106;
  CompletionMode completion_mode = CompletionMode::kBusyPoll;
  // Messages in flight per pair of ranks and direction (4..4096).
  uint32_t credits = 32;
  // Messages up to this size are copied through slots; larger ones are written
  // directly into the receiver's buffer.
  size_t eager_bytes = 8192;
  // Keep registrations of callers' buffers after use (see registration_cache.h for
  // when that is safe).
  bool cache_registrations = false;
  size_t registration_cache_bytes = size_t{1} << 30;
  std::string rendezvous_key = "rc";
  absl::Duration connect_timeout = absl::Seconds(60);
  // A Wait that sees no completion for this long fails with DEADLINE_EXCEEDED.
  absl::Duration progress_timeout = absl::Minutes(5);
};

class RcTransport : public Transport {
 public:
  struct Stats {
    uint64_t eager_messages = 0;
    uint64_t rendezvous_messages = 0;
    uint64_t ready_to_receive_messages = 0;
    uint64_t credit_messages = 0;
    uint64_t unexpected_messages = 0;
    RegistrationCache::Stats registrations;
  };

  static absl::StatusOr<std::unique_ptr<RcTransport>> Create(int rank, int size, rdma::Verbs& verbs,
                                                             Rendezvous& rendezvous,
                                                             const RcTransportOptions& options);
  ~RcTransport() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  absl::string_view name() const override { return "rc"; }
  absl::Status RegisterMemory(void* data, size_t num_bytes) override;
  absl::Status UnregisterMemory(void* data) override;
  absl::StatusOr<RequestId> PostSend(int peer, const void* data, size_t num_bytes) override;
  absl::StatusOr<RequestId> PostRecv(int peer, void* data, size_t num_bytes) override;
  absl::Status Wait(RequestId id) override;
  void Progress() override;

  Stats stats() const;
  const std::string& device_name() const { return path_.device; }
  const rdma::GidEntry& local_gid() const { return path_.gid; }
  // The QP connected to `peer` (for inspection in tests).
  uint32_t qp_num(int peer) const { return peers_[peer].qp->qp_num(); }

 private:
  struct Request {
    RequestId id = 0;
    bool is_send = false;
    bool rendezvous = false;
    int peer = 0;
    char* data = nullptr;
    size_t num_bytes = 0;
    bool complete = false;
    absl::Status status;
    RegistrationCache::Handle registration;
  };
  struct RemoteBuffer {
    uint64_t addr = 0;
    uint32_t rkey = 0;
    uint64_t num_bytes = 0;
  };
  // One posted send work request, in posting order (= completion order on the QP).
  struct Inflight {
    Request* request = nullptr;  // completed by this WR (rendezvous data), else null
    int staging_slot = -1;       // staging slot freed by this WR, else -1
  };
  struct Peer {
    std::unique_ptr<rdma::VerbsQp> qp;
    uint64_t remote_slots_addr = 0;
    uint32_t remote_slots_rkey = 0;
    uint32_t send_credits = 0;
    uint32_t owed_credits = 0;
    uint64_t send_seq = 0;
    uint64_t recv_seq = 0;
    uint32_t outstanding_wrs = 0;
    std::vector<bool> staging_busy;
    std::deque<Inflight> inflight;
    std::deque<Request*> sends;              // not yet (fully) posted
    std::deque<RemoteBuffer> ready;          // the peer's buffers for our rendezvous sends
    std::deque<Request*> recvs;              // posted, waiting for their message
    std::deque<RemoteBuffer> ready_to_send;  // our buffers to announce to the peer
    std::deque<std::vector<char>> unexpected;
  };

  RcTransport(int rank, int size, rdma::Verbs& verbs, const RcTransportOptions& options);
  absl::Status Setup(Rendezvous& rendezvous);
  Request* NewRequest(bool is_send, int peer, char* data, size_t num_bytes);
  char* LocalSlot(int peer, uint64_t seq) const;
  char* StagingSlot(int peer, uint64_t seq) const;

  // Posts whatever peer's queues, credits and send queue room allow.
  void PumpSends(int peer);
  // Posts one message (type, payload from a staging slot or a registered buffer).
  absl::Status PostMessage(int peer, uint32_t type, const rdma::SendWorkRequest& wr,
                           const Inflight& inflight);
  void HandleCompletion(const rdma::WorkCompletion& wc);
  void HandleReceive(int peer, const rdma::WorkCompletion& wc);
  absl::Status RepostReceive(int peer, uint32_t slot);
  void Break(const absl::Status& status);
  std::string DescribePending() const;
  uint32_t max_send_wr() const { return options_.credits + 32; }

  const int rank_;
  const int size_;
  rdma::Verbs& verbs_;
  const RcTransportOptions options_;
  RdmaPath path_;
  uint32_t max_write_bytes_ = 1u << 30;

  // Declared in release order's reverse: QPs go first, the context last.
  std::unique_ptr<rdma::VerbsContext> context_;
  std::unique_ptr<rdma::VerbsPd> pd_;
  std::unique_ptr<rdma::VerbsCompChannel> channel_;
  std::unique_ptr<rdma::VerbsCq> cq_;
  std::unique_ptr<char, void (*)(void*)> recv_region_{nullptr, nullptr};
  std::unique_ptr<char, void (*)(void*)> staging_region_{nullptr, nullptr};
  std::unique_ptr<rdma::VerbsMr> recv_mr_;
  std::unique_ptr<rdma::VerbsMr> staging_mr_;
  std::unique_ptr<RegistrationCache> registrations_;
  std::vector<Peer> peers_;

  absl::flat_hash_map<RequestId, std::unique_ptr<Request>> requests_;
  std::vector<std::unique_ptr<Request>> free_requests_;
  RequestId next_id_ = 1;
  absl::Status broken_;
  Stats stats_;
};

}  // namespace weft::datapath

#endif  // WEFT_DATAPATH_TRANSPORT_RC_TRANSPORT_H_
