// RendezvousServiceImpl: weft.v1.RendezvousService (job.proto), where agents relay the
// rendezvous of their local ranks (agent/job_service.h). A thin callback-API adapter
// over a RendezvousTable (controller/rendezvous/rendezvous_table.h). With verify_node_identity
// (mTLS) a call is refused before it reaches the table unless the relaying agent's
// certificate names the node the request says the rank runs on (RendezvousRequest.node:
// an agent relays only its own node's ranks), PERMISSION_DENIED naming both nodes. A
// call's reactor waits in the table without holding a thread, and is finished by whichever join completes the
// exchange, by the sweeper thread when its timeout passes (within `sweep_period`), or
// by gRPC cancelling it. Codes and messages pass through from the table.
//
// Metrics (on the controller's registry):
//   weft_controller_rendezvous_total{result}  counter, one per call:
//     ok         every rank arrived; the call got all endpoints
//     timeout    DEADLINE_EXCEEDED: some ranks never arrived
//     invalid    INVALID_ARGUMENT: a bad request
//     conflict   FAILED_PRECONDITION / ALREADY_EXISTS: another world size or endpoint
//     exhausted  RESOURCE_EXHAUSTED: too many exchanges held
//     denied     PERMISSION_DENIED / UNAUTHENTICATED: an agent relaying for another
//                node (verify_node_identity)
//     cancelled  the caller went away
//     error      anything else (UNAVAILABLE on shutdown)
//   weft_controller_rendezvous_exchanges      gauge, exchanges held (refreshed by sweeps)
//
// Threading: handlers run on gRPC callback threads and never block; Start() runs the
// sweeper thread, Stop() fails waiting calls with UNAVAILABLE and joins it. Call Stop()
// before shutting the gRPC server down, so waiting calls end at once.
#ifndef WEFT_CONTROLLER_API_RENDEZVOUS_SERVICE_H_
#define WEFT_CONTROLLER_API_RENDEZVOUS_SERVICE_H_


#include "absl/status/status.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "common/periodic_task.h"
#include "controller/rendezvous/rendezvous_table.h"
#include "grpcpp/grpcpp.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/registry.h"
#include "proto/weft/v1/job.grpc.pb.h"
#include "proto/weft/v1/job.pb.h"

namespace weft::controller {

struct RendezvousServiceOptions {
  RendezvousTableOptions table;
  absl::Duration sweep_period = absl::Milliseconds(100);
  // mTLS: the request's node must be the CN of the caller's certificate. Off on a
  // plaintext listener, where there is no certificate.
  bool verify_node_identity = false;
};

class RendezvousServiceImpl final : public weft::v1::RendezvousService::CallbackService {
 public:
  // `clock` and `registry` must outlive the service.
  RendezvousServiceImpl(const Clock* clock, prometheus::Registry& registry,
                        RendezvousServiceOptions options = {});
  ~RendezvousServiceImpl() override;  // Stop()s.

  RendezvousServiceImpl(const RendezvousServiceImpl&) = delete;
  RendezvousServiceImpl& operator=(const RendezvousServiceImpl&) = delete;

  // Starts the sweeper thread. Idempotent.
  void Start();
  // Ends waiting calls with UNAVAILABLE and joins the sweeper. Idempotent.
  void Stop();

  grpc::ServerUnaryReactor* Rendezvous(grpc::CallbackServerContext* context,
                                       const weft::v1::RendezvousRequest* request,
                                       weft::v1::RendezvousResponse* response) override;

  RendezvousTable& table() { return table_; }

 private:
  class Reactor;

  void Count(const absl::Status& status);

  const RendezvousServiceOptions options_;
  RendezvousTable table_;
  prometheus::Family<prometheus::Counter>& calls_;
  prometheus::Gauge& exchanges_;
  PeriodicTask sweeper_;  // on the clock: a FakeClock steps it in tests
  bool started_ = false;  // Start/Stop run on one thread
};

}  // namespace weft::controller

#endif  // WEFT_CONTROLLER_API_RENDEZVOUS_SERVICE_H_
