// EtcdClient: the thin etcd v3 client under Weft's replicated store (issue 23). Only
// the calls Weft needs, over etcd's own gRPC API (//proto/etcd): KV Range, Put,
// DeleteRange and Txn; Watch from a revision with reconnect (etcd_watch.h); Lease
// Grant, one KeepAlive round trip and Revoke; Maintenance Status of one member; the
// Election service's Campaign, Leader and Resign (leader_election.h builds on them).
//
// Endpoints and failover: one channel per member ("host:port"). A call goes to the
// member that answered last and moves to the next one when that member cannot serve:
//   * reads (Range, Status, Leader, KeepAlive) on UNAVAILABLE or DEADLINE_EXCEEDED;
//   * any call when the member is not connected within 500 ms (nothing was sent);
//   * writes otherwise only when the member said "no leader" (nothing applied). A
//     write that timed out or died on a live connection may have been applied, or
//     may still be (raft applies a proposal in the leader's log once quorum returns),
//     so it is returned, never replayed, and its error says "outcome unknown".
// Every attempt at a member carries a deadline: `call_timeout` (Campaign: the caller's).
// Errors keep etcd's code (no leader: UNAVAILABLE; database full: RESOURCE_EXHAUSTED)
// and name the call and every member tried with what each said, e.g.
//   "etcd Txn failed on every member: 127.0.0.1:2379: UNAVAILABLE: etcdserver: no
//    leader; 127.0.0.1:2381: UNAVAILABLE: failed to connect to all addresses"
//
// Thread-safe: every method may be called from any thread at once.
#ifndef WEFT_STORE_ETCD_ETCD_CLIENT_H_
#define WEFT_STORE_ETCD_ETCD_CLIENT_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "grpcpp/channel.h"
#include "grpcpp/client_context.h"
#include "proto/etcd/rpc.grpc.pb.h"
#include "proto/grpc/health/v1/health.grpc.pb.h"
#include "proto/etcd/v3election.grpc.pb.h"

namespace weft::store::etcd {

// etcd's limits that the client checks before sending (etcd 3.4 defaults).
inline constexpr int kMaxTxnOps = 128;                       // --max-txn-ops
inline constexpr int64_t kMaxRequestBytes = 1536 * 1024;     // --max-request-bytes

struct ClientOptions {
  // Members' client URLs as host:port (an "http://" prefix is accepted and dropped).
  std::vector<std::string> endpoints;
  // Deadline of each attempt at each member.
  absl::Duration call_timeout = absl::Seconds(2);
};

// Cancels a long call (Campaign) from another thread: the call registers its context
// here while it runs; Cancel ends it (now, or as soon as it starts) with CANCELLED.
class CallCanceller {
 public:
  void Cancel();
  bool cancelled() const;

 private:
  friend class EtcdClient;
  // Registers `context` (nullptr: unregisters); false when already cancelled.
  bool Attach(grpc::ClientContext* context);

  mutable absl::Mutex mu_;
  grpc::ClientContext* context_ ABSL_GUARDED_BY(mu_) = nullptr;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
};

class EtcdClient {
 public:
  // INVALID_ARGUMENT when no endpoint is given, one is not host:port, or the timeout is
  // not positive. Connects lazily: a member that is down is found out by the first call.
  static absl::StatusOr<std::unique_ptr<EtcdClient>> Create(ClientOptions options);

  EtcdClient(const EtcdClient&) = delete;
  EtcdClient& operator=(const EtcdClient&) = delete;

  // KV. Txn refuses (INVALID_ARGUMENT, nothing sent) more than kMaxTxnOps compares or
  // operations in one list, or a request over kMaxRequestBytes, naming count and limit.
  absl::StatusOr<etcdserverpb::RangeResponse> Range(const etcdserverpb::RangeRequest& request);
  absl::StatusOr<etcdserverpb::PutResponse> Put(const etcdserverpb::PutRequest& request);
  absl::StatusOr<etcdserverpb::DeleteRangeResponse> DeleteRange(
      const etcdserverpb::DeleteRangeRequest& request);
  absl::StatusOr<etcdserverpb::TxnResponse> Txn(const etcdserverpb::TxnRequest& request);

  // Leases. LeaseKeepAliveOnce renews once and returns the TTL etcd restarted the lease
  // with; NOT_FOUND when the lease no longer exists (expired or revoked).
  absl::StatusOr<etcdserverpb::LeaseGrantResponse> LeaseGrant(int64_t ttl_s);
  absl::StatusOr<int64_t> LeaseKeepAliveOnce(int64_t lease_id);
  absl::Status LeaseRevoke(int64_t lease_id);

  // Maintenance Status of the member at `endpoint` (one of the endpoints), no failover.
  absl::StatusOr<etcdserverpb::StatusResponse> MemberStatus(const std::string& endpoint);

  // Election service. Campaign blocks until this lease's key leads `election` (or
  // `timeout`, or `canceller` cancels it; then its key is withdrawn by etcd). Leader:
  // NOT_FOUND when nobody leads.
  absl::StatusOr<v3electionpb::LeaderKey> Campaign(const std::string& election,
                                                   int64_t lease_id, const std::string& value,
                                                   absl::Duration timeout,
                                                   CallCanceller* canceller);
  absl::StatusOr<mvccpb::KeyValue> Leader(const std::string& election);
  absl::Status Resign(const v3electionpb::LeaderKey& leader);

  const std::vector<std::string>& endpoints() const { return endpoints_; }
  absl::Duration call_timeout() const { return call_timeout_; }

  // For etcd_watch.cc: the member to try first and its Watch stub, and reporting
  // which member served or failed.
  struct Member {
    std::string endpoint;
    std::shared_ptr<grpc::Channel> channel;
    std::unique_ptr<etcdserverpb::KV::Stub> kv;
    std::unique_ptr<etcdserverpb::Watch::Stub> watch;
    std::unique_ptr<etcdserverpb::Lease::Stub> lease;
    std::unique_ptr<etcdserverpb::Maintenance::Stub> maintenance;
    std::unique_ptr<v3electionpb::Election::Stub> election;
    std::unique_ptr<grpc::health::v1::Health::Stub> health;
  };
  size_t preferred() const;
  void Served(size_t member);
  Member& member(size_t i) { return *members_[i]; }
  size_t member_count() const { return members_.size(); }

 private:
  enum class Replay { kRead, kWrite };
  EtcdClient(std::vector<std::string> endpoints, absl::Duration call_timeout);

  // Runs `attempt` on the members in failover order (see the header comment).
  absl::Status Call(const char* what, Replay replay, absl::Duration timeout,
                    const std::function<grpc::Status(Member&, grpc::ClientContext*)>& attempt,
                    CallCanceller* canceller = nullptr);

  const std::vector<std::string> endpoints_;
  const absl::Duration call_timeout_;
  std::vector<std::unique_ptr<Member>> members_;
  mutable absl::Mutex mu_;
  size_t preferred_ ABSL_GUARDED_BY(mu_) = 0;
};

// The stream metadata that makes a member without a raft leader end Watch and
// LeaseKeepAlive streams with "no leader" instead of leaving them silent.
void RequireLeader(grpc::ClientContext* context);

// The key range of every key starting with `prefix` (RangeRequest.range_end).
std::string PrefixEnd(const std::string& prefix);

}  // namespace weft::store::etcd

#endif  // WEFT_STORE_ETCD_ETCD_CLIENT_H_
