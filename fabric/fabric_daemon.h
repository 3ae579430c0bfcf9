// FabricDaemon: weft-fabric's composition root. From a validated FabricConfig it builds
// the twin's cluster (the generated racks, or the racks and nodes of a static topology
// file), the twin (sim/twin.h) behind a TwinHost, the FabricService on listen_address
// (plaintext: the twin is a simulation its agents reach on loopback), the ticker that
// advances the twin by tick_ms every tick_ms of the Clock, and, when a controller is
// named, the job generator (fabric/job_generator.h) on its own period.
//
// Thread-safe after Create: Start once, Stop once (the destructor stops).
#ifndef WEFT_FABRIC_FABRIC_DAEMON_H_
#define WEFT_FABRIC_FABRIC_DAEMON_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/clock.h"
#include "common/periodic_task.h"
#include "fabric/fabric_service.h"
#include "fabric/job_generator.h"
#include "fabric/twin_host.h"
#include "grpcpp/server.h"
#include "proto/weft/v1/config.pb.h"
#include "proto/weft/v1/placement.grpc.pb.h"
#include "sim/twin.h"

namespace weft::fabric {

// The racks of the twin: those of config.topology_file when set (NOT_FOUND or
// INVALID_ARGUMENT as placement/topology.h says), else DemoRacks of the generated sizes.
absl::StatusOr<std::vector<sim::RackSpec>> RacksOf(const weft::v1::FabricConfig& config);

class FabricDaemon {
 public:
  // `clock` outlives the daemon. Fails on a topology that cannot be built or controller
  // credentials that cannot be read; nothing is started then.
  static absl::StatusOr<std::unique_ptr<FabricDaemon>> Create(const weft::v1::FabricConfig& config,
                                                              const Clock* clock);
  ~FabricDaemon();

  // Serves gRPC and starts the ticker and the job generator. UNAVAILABLE when the
  // listen address cannot be bound.
  absl::Status Start();
  void Stop();

  // The bound host:port (the port resolved when listen_address asked for :0).
  const std::string& listen_address() const { return listen_address_; }
  TwinHost& twin() { return *twin_; }
  JobGenerator* job_generator() { return job_generator_.get(); }

 private:
  FabricDaemon(const weft::v1::FabricConfig& config, const Clock* clock,
               std::unique_ptr<TwinHost> twin);

  const weft::v1::FabricConfig config_;
  const Clock* const clock_;
  std::unique_ptr<TwinHost> twin_;
  std::unique_ptr<weft::v1::PlacementService::StubInterface> placement_;
  std::unique_ptr<JobGenerator> job_generator_;
  std::unique_ptr<FabricServiceImpl> service_;
  std::unique_ptr<PeriodicTask> ticker_;
  std::unique_ptr<PeriodicTask> job_checker_;
  std::unique_ptr<grpc::Server> server_;
  std::string listen_address_;
};

}  // namespace weft::fabric

#endif  // WEFT_FABRIC_FABRIC_DAEMON_H_
