#include "store/etcd/etcd_client.h"

#include <algorithm>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/support/channel_arguments.h"

namespace weft::store::etcd {
namespace {

std::string StripScheme(std::string endpoint) {
  if (absl::StartsWith(endpoint, "http://")) endpoint.erase(0, 7);
  return endpoint;
}

absl::Status ValidEndpoint(const std::string& endpoint) {
  std::vector<std::string> parts = absl::StrSplit(endpoint, absl::MaxSplits(':', 1));
  int port = 0;
  if (parts.size() != 2 || parts[0].empty() || !absl::SimpleAtoi(parts[1], &port) ||
      port < 1 || port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat(
        "etcd endpoint '", endpoint, "' is not host:port with a port in 1..65535"));
  }
  return absl::OkStatus();
}

std::shared_ptr<grpc::Channel> MakeChannel(const std::string& endpoint) {
  grpc::ChannelArguments args;
  // etcd answers pings more often than every 5 s with GOAWAY too_many_pings.
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 10000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 5000);
  args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  // A member that comes back is found within 2 s, not gRPC's default of up to 120 s.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 250);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 2000);
  // etcd's own request limit, plus room for the reply's header.
  args.SetMaxReceiveMessageSize(static_cast<int>(kMaxRequestBytes) * 4);
  // Each endpoint is its own subchannel, never shared with another EtcdClient, so a
  // test's client does not reuse a connection another client saw fail.
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  return grpc::CreateCustomChannel(endpoint, grpc::InsecureChannelCredentials(), args);
}

std::string Describe(const grpc::Status& status) {
  return absl::StrCat(absl::StatusCodeToString(static_cast<absl::StatusCode>(status.error_code())),
                      ": ", status.error_message());
}

// Whether a failed write certainly was not applied, so another member may take it.
bool NotApplied(const grpc::Status& status) {
  return status.error_code() == grpc::StatusCode::UNAVAILABLE &&
         absl::StrContains(status.error_message(), "no leader");
}

// Waits until the member's channel is connected or `deadline`. A fail-fast call on a
// channel in TRANSIENT_FAILURE (a member that was down) fails at once without waiting
// for the reconnect; this probe waits for it (wait_for_ready), so a member that came
// back is used again, and a member that stays down costs at most `deadline`. The probe
// is a gRPC health check, which etcd serves; any answer means connected.
bool Connected(EtcdClient::Member& m, absl::Time deadline) {
  if (m.channel->GetState(/*try_to_connect=*/true) == GRPC_CHANNEL_READY) return true;
  grpc::ClientContext context;
  context.set_wait_for_ready(true);
  context.set_deadline(absl::ToChronoTime(deadline));
  grpc::health::v1::HealthCheckRequest request;
  grpc::health::v1::HealthCheckResponse response;
  const grpc::Status s = m.health->Check(&context, request, &response);
  return s.error_code() != grpc::StatusCode::DEADLINE_EXCEEDED &&
         s.error_code() != grpc::StatusCode::UNAVAILABLE;
}

// How long a call waits for a member that is not connected before trying the next.
constexpr absl::Duration kConnectTimeout = absl::Milliseconds(500);

bool ReadMayMove(const grpc::Status& status) {
  return status.error_code() == grpc::StatusCode::UNAVAILABLE ||
         status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED;
}

}  // namespace

void CallCanceller::Cancel() {
  absl::MutexLock lock(&mu_);
  cancelled_ = true;
  if (context_ != nullptr) context_->TryCancel();
}

bool CallCanceller::cancelled() const {
  absl::MutexLock lock(&mu_);
  return cancelled_;
}

bool CallCanceller::Attach(grpc::ClientContext* context) {
  absl::MutexLock lock(&mu_);
  context_ = context;
  return !cancelled_;
}

void RequireLeader(grpc::ClientContext* context) {
  context->AddMetadata("hasleader", "true");
}

std::string PrefixEnd(const std::string& prefix) {
  std::string end = prefix;
  while (!end.empty()) {
    if (static_cast<unsigned char>(end.back()) < 0xff) {
      end.back() = static_cast<char>(static_cast<unsigned char>(end.back()) + 1);
      return end;
    }
    end.pop_back();
  }
  return std::string(1, '\0');  // every key
}

absl::StatusOr<std::unique_ptr<EtcdClient>> EtcdClient::Create(ClientOptions options) {
  if (options.endpoints.empty()) {
    return absl::InvalidArgumentError("etcd: no endpoint given (need host:port of 1+ members)");
  }
  if (options.call_timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "etcd call_timeout ", absl::FormatDuration(options.call_timeout), " must be positive"));
  }
  std::vector<std::string> endpoints;
  for (const std::string& e : options.endpoints) {
    endpoints.push_back(StripScheme(e));
    if (absl::Status s = ValidEndpoint(endpoints.back()); !s.ok()) return s;
  }
  return std::unique_ptr<EtcdClient>(new EtcdClient(std::move(endpoints), options.call_timeout));
}

EtcdClient::EtcdClient(std::vector<std::string> endpoints, absl::Duration call_timeout)
    : endpoints_(std::move(endpoints)), call_timeout_(call_timeout) {
  for (const std::string& endpoint : endpoints_) {
    auto m = std::make_unique<Member>();
    m->endpoint = endpoint;
    m->channel = MakeChannel(endpoint);
    m->kv = etcdserverpb::KV::NewStub(m->channel);
    m->watch = etcdserverpb::Watch::NewStub(m->channel);
    m->lease = etcdserverpb::Lease::NewStub(m->channel);
    m->maintenance = etcdserverpb::Maintenance::NewStub(m->channel);
    m->election = v3electionpb::Election::NewStub(m->channel);
    m->health = grpc::health::v1::Health::NewStub(m->channel);
    members_.push_back(std::move(m));
  }
}

size_t EtcdClient::preferred() const {
  absl::MutexLock lock(&mu_);
  return preferred_;
}

void EtcdClient::Served(size_t member) {
  absl::MutexLock lock(&mu_);
  preferred_ = member;
}

absl::Status EtcdClient::Call(
    const char* what, Replay replay, absl::Duration timeout,
    const std::function<grpc::Status(Member&, grpc::ClientContext*)>& attempt,
    CallCanceller* canceller) {
  const size_t first = preferred();
  std::vector<std::string> failures;
  grpc::Status last;
  for (size_t i = 0; i < members_.size(); ++i) {
    const size_t index = (first + i) % members_.size();
    Member& m = *members_[index];
    const absl::Time deadline = absl::Now() + timeout;
    if (!Connected(m, std::min(deadline, absl::Now() + kConnectTimeout))) {
      // Nothing was sent: any call, write or not, may go to the next member.
      last = grpc::Status(grpc::StatusCode::UNAVAILABLE,
                          absl::StrCat("not connected within ", absl::FormatDuration(kConnectTimeout)));
      failures.push_back(absl::StrCat(m.endpoint, ": ", Describe(last)));
      if (canceller != nullptr && canceller->cancelled()) {
        return absl::CancelledError(absl::StrCat("etcd ", what, ": cancelled"));
      }
      continue;
    }
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(deadline));
    if (canceller != nullptr && !canceller->Attach(&context)) {
      return absl::CancelledError(absl::StrCat("etcd ", what, ": cancelled"));
    }
    last = attempt(m, &context);
    if (canceller != nullptr) canceller->Attach(nullptr);
    if (last.ok()) {
      Served(index);
      return absl::OkStatus();
    }
    failures.push_back(absl::StrCat(m.endpoint, ": ", Describe(last)));
    const bool move = replay == Replay::kRead ? ReadMayMove(last) : NotApplied(last);
    if (!move || (canceller != nullptr && canceller->cancelled())) {
      // A write that reached a member and then failed may still commit: raft keeps a
      // proposal in the leader's log and applies it once quorum is back.
      const bool unknown = replay == Replay::kWrite &&
                           (last.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED ||
                            last.error_code() == grpc::StatusCode::UNAVAILABLE ||
                            last.error_code() == grpc::StatusCode::CANCELLED);
      return absl::Status(
          static_cast<absl::StatusCode>(last.error_code()),
          absl::StrCat("etcd ", what, " at ", failures.back(),
                       unknown ? "; outcome unknown: it may have been applied or may still "
                                 "be (read back before retrying)"
                               : ""));
    }
  }
  return absl::Status(
      static_cast<absl::StatusCode>(last.error_code()),
      absl::StrCat("etcd ", what, " failed on every member: ", absl::StrJoin(failures, "; ")));
}

absl::StatusOr<etcdserverpb::RangeResponse> EtcdClient::Range(
    const etcdserverpb::RangeRequest& request) {
  etcdserverpb::RangeResponse response;
  absl::Status s = Call("Range", Replay::kRead, call_timeout_,
                        [&](Member& m, grpc::ClientContext* c) {
                          return m.kv->Range(c, request, &response);
                        });
  if (!s.ok()) return s;
  return response;
}

absl::StatusOr<etcdserverpb::PutResponse> EtcdClient::Put(const etcdserverpb::PutRequest& request) {
  etcdserverpb::PutResponse response;
  absl::Status s = Call("Put", Replay::kWrite, call_timeout_,
                        [&](Member& m, grpc::ClientContext* c) {
                          return m.kv->Put(c, request, &response);
                        });
  if (!s.ok()) return s;
  return response;
}

absl::StatusOr<etcdserverpb::DeleteRangeResponse> EtcdClient::DeleteRange(
    const etcdserverpb::DeleteRangeRequest& request) {
  etcdserverpb::DeleteRangeResponse response;
  absl::Status s = Call("DeleteRange", Replay::kWrite, call_timeout_,
                        [&](Member& m, grpc::ClientContext* c) {
                          return m.kv->DeleteRange(c, request, &response);
                        });
  if (!s.ok()) return s;
  return response;
}

absl::StatusOr<etcdserverpb::TxnResponse> EtcdClient::Txn(const etcdserverpb::TxnRequest& request) {
  // etcd counts compares, success and failure operations each against --max-txn-ops.
  const int ops = std::max({request.compare_size(), request.success_size(), request.failure_size()});
  if (ops > kMaxTxnOps) {
    return absl::InvalidArgumentError(absl::StrCat(
        "etcd Txn: ", ops, " compares or operations in one list; etcd accepts at most ",
        kMaxTxnOps, " (--max-txn-ops); split the write"));
  }
  if (static_cast<int64_t>(request.ByteSizeLong()) > kMaxRequestBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "etcd Txn: request of ", request.ByteSizeLong(), " bytes; etcd accepts at most ",
        kMaxRequestBytes, " bytes (--max-request-bytes, 1.5 MiB); split the write"));
  }
  etcdserverpb::TxnResponse response;
  absl::Status s = Call("Txn", Replay::kWrite, call_timeout_,
                        [&](Member& m, grpc::ClientContext* c) {
                          return m.kv->Txn(c, request, &response);
                        });
  if (!s.ok()) return s;
  return response;
}

absl::StatusOr<etcdserverpb::LeaseGrantResponse> EtcdClient::LeaseGrant(int64_t ttl_s) {
  etcdserverpb::LeaseGrantRequest request;
  request.set_ttl(ttl_s);
  etcdserverpb::LeaseGrantResponse response;
  absl::Status s = Call("LeaseGrant", Replay::kWrite, call_timeout_,
                        [&](Member& m, grpc::ClientContext* c) {
                          return m.lease->LeaseGrant(c, request, &response);
                        });
  if (!s.ok()) return s;
  if (!response.error().empty()) {
    return absl::FailedPreconditionError(absl::StrCat("etcd LeaseGrant: ", response.error()));
  }
  return response;
}

absl::StatusOr<int64_t> EtcdClient::LeaseKeepAliveOnce(int64_t lease_id) {
  etcdserverpb::LeaseKeepAliveRequest request;
  request.set_id(lease_id);
  etcdserverpb::LeaseKeepAliveResponse response;
  absl::Status s = Call(
      "LeaseKeepAlive", Replay::kRead, call_timeout_, [&](Member& m, grpc::ClientContext* c) {
        RequireLeader(c);
        auto stream = m.lease->LeaseKeepAlive(c);
        if (!stream->Write(request) || !stream->Read(&response)) {
          c->TryCancel();
          grpc::Status ended = stream->Finish();
          return ended.ok() ? grpc::Status(grpc::StatusCode::UNAVAILABLE, "keepalive stream ended")
                            : ended;
        }
        stream->WritesDone();
        return stream->Finish();
      });
  if (!s.ok()) return s;
  if (response.ttl() <= 0) {
    return absl::NotFoundError(
        absl::StrCat("etcd lease ", absl::Hex(lease_id), " no longer exists (expired or revoked)"));
  }
  return response.ttl();
}

absl::Status EtcdClient::LeaseRevoke(int64_t lease_id) {
  etcdserverpb::LeaseRevokeRequest request;
  request.set_id(lease_id);
  etcdserverpb::LeaseRevokeResponse response;
  return Call("LeaseRevoke", Replay::kWrite, call_timeout_,
              [&](Member& m, grpc::ClientContext* c) {
                return m.lease->LeaseRevoke(c, request, &response);
              });
}

absl::StatusOr<etcdserverpb::StatusResponse> EtcdClient::MemberStatus(const std::string& endpoint) {
  const std::string wanted = StripScheme(endpoint);
  for (auto& m : members_) {
    if (m->endpoint != wanted) continue;
    const absl::Time deadline = absl::Now() + call_timeout_;
    if (!Connected(*m, std::min(deadline, absl::Now() + kConnectTimeout))) {
      return absl::UnavailableError(absl::StrCat("etcd Status at ", wanted, ": not connected within ",
                                                 absl::FormatDuration(kConnectTimeout)));
    }
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(deadline));
    etcdserverpb::StatusResponse response;
    grpc::Status s = m->maintenance->Status(&context, etcdserverpb::StatusRequest(), &response);
    if (!s.ok()) {
      return absl::Status(static_cast<absl::StatusCode>(s.error_code()),
                          absl::StrCat("etcd Status at ", wanted, ": ", Describe(s)));
    }
    return response;
  }
  return absl::InvalidArgumentError(absl::StrCat("etcd Status: '", endpoint,
                                                 "' is not one of the endpoints ",
                                                 absl::StrJoin(endpoints_, ", ")));
}

absl::StatusOr<v3electionpb::LeaderKey> EtcdClient::Campaign(const std::string& election,
                                                             int64_t lease_id,
                                                             const std::string& value,
                                                             absl::Duration timeout,
                                                             CallCanceller* canceller) {
  v3electionpb::CampaignRequest request;
  request.set_name(election);
  request.set_lease(lease_id);
  request.set_value(value);
  v3electionpb::CampaignResponse response;
  // Campaigning again with the same lease is idempotent in etcd, so a member that
  // failed may be replaced by the next one.
  absl::Status s = Call("Campaign", Replay::kRead, timeout,
                        [&](Member& m, grpc::ClientContext* c) {
                          return m.election->Campaign(c, request, &response);
                        },
                        canceller);
  if (!s.ok()) return s;
  return response.leader();
}

absl::StatusOr<mvccpb::KeyValue> EtcdClient::Leader(const std::string& election) {
  v3electionpb::LeaderRequest request;
  request.set_name(election);
  v3electionpb::LeaderResponse response;
  absl::Status s = Call("Leader", Replay::kRead, call_timeout_,
                        [&](Member& m, grpc::ClientContext* c) {
                          return m.election->Leader(c, request, &response);
                        });
  if (!s.ok()) {
    // etcd says "election: no leader" with UNKNOWN; a caller wants NOT_FOUND.
    if (absl::StrContains(s.message(), "election: no leader")) {
      return absl::NotFoundError(absl::StrCat("nobody leads election '", election, "'"));
    }
    return s;
  }
  return response.kv();
}

absl::Status EtcdClient::Resign(const v3electionpb::LeaderKey& leader) {
  v3electionpb::ResignRequest request;
  *request.mutable_leader() = leader;
  v3electionpb::ResignResponse response;
  return Call("Resign", Replay::kWrite, call_timeout_,
              [&](Member& m, grpc::ClientContext* c) {
                return m.election->Resign(c, request, &response);
              });
}

}  // namespace weft::store::etcd
