#include "controller/api/rendezvous_service.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/logging.h"
#include "common/grpc_status.h"
#include "security/identity.h"

namespace weft::controller {
namespace {

constexpr const char* kResults[] = {"ok",     "timeout",   "invalid", "conflict", "exhausted",
                                    "denied", "cancelled", "error"};

const char* ResultLabel(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kOk:
      return "ok";
    case absl::StatusCode::kDeadlineExceeded:
      return "timeout";
    case absl::StatusCode::kInvalidArgument:
      return "invalid";
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kAlreadyExists:
      return "conflict";
    case absl::StatusCode::kResourceExhausted:
      return "exhausted";
    case absl::StatusCode::kPermissionDenied:
    case absl::StatusCode::kUnauthenticated:
      return "denied";
    case absl::StatusCode::kCancelled:
      return "cancelled";
    default:
      return "error";
  }
}

}  // namespace

// One call waiting in the table. It is finished exactly once, by the table's callback;
// gRPC cancelling the call turns into RendezvousTable::Cancel, whose callback finishes
// it. Deleted by gRPC's OnDone, which follows Finish.
class RendezvousServiceImpl::Reactor final : public grpc::ServerUnaryReactor {
 public:
  Reactor(RendezvousServiceImpl* service, weft::v1::RendezvousResponse* response)
      : service_(service), response_(response) {}

  void Start(const weft::v1::RendezvousRequest& request) {
    std::optional<RendezvousTable::WaiterId> id = service_->table_.Join(
        request, [this](absl::StatusOr<std::vector<std::string>> endpoints) {
          Complete(std::move(endpoints));
        });
    bool cancel_now = false;
    {
      absl::MutexLock lock(&mu_);
      waiter_ = id;
      cancel_now = cancelled_ && id.has_value();  // OnCancel ran before the id was known
    }
    if (cancel_now) service_->table_.Cancel(*id);
  }

  void OnCancel() override {
    std::optional<RendezvousTable::WaiterId> id;
    {
      absl::MutexLock lock(&mu_);
      cancelled_ = true;
      id = waiter_;
    }
    if (id.has_value()) service_->table_.Cancel(*id);
  }

  void OnDone() override { delete this; }

 private:
  void Complete(absl::StatusOr<std::vector<std::string>> endpoints) {
    service_->Count(endpoints.status());
    if (!endpoints.ok()) {
      Finish(ToGrpcStatus(endpoints.status()));
      return;
    }
    for (std::string& endpoint : *endpoints) response_->add_endpoints(std::move(endpoint));
    Finish(grpc::Status::OK);
  }

  RendezvousServiceImpl* const service_;
  weft::v1::RendezvousResponse* const response_;
  absl::Mutex mu_;
  std::optional<RendezvousTable::WaiterId> waiter_ ABSL_GUARDED_BY(mu_);
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
};

RendezvousServiceImpl::RendezvousServiceImpl(const Clock* clock, prometheus::Registry& registry,
                                             RendezvousServiceOptions options)
    : options_(options),
      table_(clock, options_.table),
      calls_(prometheus::BuildCounter()
                 .Name("weft_controller_rendezvous_total")
                 .Help("Rendezvous calls relayed by agents, by result (ok, timeout, invalid, "
                       "conflict, exhausted, cancelled, error).")
                 .Register(registry)),
      exchanges_(prometheus::BuildGauge()
                     .Name("weft_controller_rendezvous_exchanges")
                     .Help("Rendezvous exchanges the controller holds (waiting or kept for "
                           "retries until they expire).")
                     .Register(registry)
                     .Add({})),
      sweeper_(clock, options_.sweep_period, [this] {
        table_.Sweep();
        exchanges_.Set(static_cast<double>(table_.exchange_count()));
      }) {
  for (const char* result : kResults) calls_.Add({{"result", result}});
}

RendezvousServiceImpl::~RendezvousServiceImpl() { Stop(); }

void RendezvousServiceImpl::Start() {
  if (started_) return;
  started_ = true;
  sweeper_.Start();
}

void RendezvousServiceImpl::Stop() {
  sweeper_.Stop();
  table_.FailAll(absl::UnavailableError(
      "the controller is shutting down; the job must rendezvous again once it is back"));
}

void RendezvousServiceImpl::Count(const absl::Status& status) {
  calls_.Add({{"result", ResultLabel(status)}}).Increment();
  if (status.code() == absl::StatusCode::kDeadlineExceeded) {
    WEFT_LOG(WARNING) << "rendezvous timed out: " << status.message();
  }
}

grpc::ServerUnaryReactor* RendezvousServiceImpl::Rendezvous(
    grpc::CallbackServerContext* context, const weft::v1::RendezvousRequest* request,
    weft::v1::RendezvousResponse* response) {
  if (options_.verify_node_identity) {
    const absl::Status identity = security::CheckClaimedNode(
        security::PeerCommonName(*context->auth_context()), request->node());
    if (!identity.ok()) {
      const absl::Status refused(
          identity.code(), absl::StrCat("rendezvous of job '", request->job_id(), "' key '",
                                        request->key(), "' rank ", request->rank(), ": ",
                                        identity.message()));
      WEFT_LOG(WARNING) << "rendezvous refused peer=" << context->peer() << " reason=\""
                        << refused.message() << "\"";
      Count(refused);
      grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
      reactor->Finish(ToGrpcStatus(refused));
      return reactor;
    }
  }
  auto* reactor = new Reactor(this, response);
  reactor->Start(*request);
  return reactor;
}

}  // namespace weft::controller
