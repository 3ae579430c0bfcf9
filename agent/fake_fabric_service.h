// FakeFabricService: a test double of weft-fabric's FabricService (fabric.proto) served
// over real gRPC on 127.0.0.1:0, so the fabric backend's tests go through a real
// channel, stub and status codes. It answers ReadNode for one node with the canned
// response a test sets, records each SetNicTunables request and, like the twin, gives
// the NIC that state in later ReadNode answers (NOT_FOUND for a NIC it lacks), and
// refuses what a test asks it to. The rest of the service is unimplemented (UNIMPLEMENTED).
//
// Thread-safe: gRPC calls handlers on its threads while the test thread sets answers.
#ifndef WEFT_AGENT_FAKE_FABRIC_SERVICE_H_
#define WEFT_AGENT_FAKE_FABRIC_SERVICE_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "grpcpp/server.h"
#include "proto/weft/v1/fabric.grpc.pb.h"

namespace weft::agent {

class FakeFabricService : public weft::v1::FabricService::Service {
 public:
  // Answers ReadNode for `node.node()`; any other node is NOT_FOUND.
  void set_node(weft::v1::ReadNodeResponse node) ABSL_LOCKS_EXCLUDED(mu_);
  // Non-OK: every SetNicTunables fails with it (nothing is recorded).
  void set_set_tunables_error(grpc::Status error) ABSL_LOCKS_EXCLUDED(mu_);
  std::vector<weft::v1::SetNicTunablesRequest> set_requests() const ABSL_LOCKS_EXCLUDED(mu_);
  int read_node_calls() const ABSL_LOCKS_EXCLUDED(mu_);

  grpc::Status ReadNode(grpc::ServerContext* context, const weft::v1::ReadNodeRequest* request,
                        weft::v1::ReadNodeResponse* response) override;
  grpc::Status SetNicTunables(grpc::ServerContext* context,
                              const weft::v1::SetNicTunablesRequest* request,
                              weft::v1::SetNicTunablesResponse* response) override;

 private:
  mutable absl::Mutex mu_;
  weft::v1::ReadNodeResponse node_ ABSL_GUARDED_BY(mu_);
  grpc::Status set_tunables_error_ ABSL_GUARDED_BY(mu_);
  std::vector<weft::v1::SetNicTunablesRequest> set_requests_ ABSL_GUARDED_BY(mu_);
  int read_node_calls_ ABSL_GUARDED_BY(mu_) = 0;
};

// A FakeFabricService on 127.0.0.1:<free port>.
class FakeFabricServer {
 public:
  FakeFabricServer();
  ~FakeFabricServer();
  FakeFabricService& service() { return service_; }
  const std::string& address() const { return address_; }
  // Stops serving: later calls find nothing listening (UNAVAILABLE).
  void Shutdown();

 private:
  FakeFabricService service_;
  std::unique_ptr<grpc::Server> server_;
  std::string address_;
};

}  // namespace weft::agent

#endif  // WEFT_AGENT_FAKE_FABRIC_SERVICE_H_
