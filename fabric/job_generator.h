// JobGenerator: the fabric twin's scheduler. It runs the configured synthetic training
// jobs (FabricJobConfig) on the twin on nodes placed through the controller's
// PlacementService, as Slurm or Kubernetes would with Weft: Place (job_id = the job's
// name), start the job on the twin on the reserved nodes in rank order, report each new
// iteration with ReportJobProgress, Renew the lease when half of it is gone. When a node
// of a running job is drained (the controller's GetTopology says so) or gone, or the
// reservation is, the job is stopped, its reservation released and the job placed again:
// a training job restarting from its checkpoint on healthy nodes. A job the controller
// cannot place yet waits and is asked for again every round. Like a scheduler brought up
// with its cluster, nothing is placed until every node of the twin has registered with
// the controller, or `cluster_grace` has passed since the generator was made (so jobs are
// not packed onto the first nodes to come up, nor held back forever by a dead one).
//
// Check() does one round; weft-fabric runs it every job_check_interval_ms. Thread-safe:
// rounds run one at a time and may wait on the controller (up to rpc_timeout per call);
// ListJobs never waits for a round, it answers with the state the last round ended in.
#ifndef WEFT_FABRIC_JOB_GENERATOR_H_
#define WEFT_FABRIC_JOB_GENERATOR_H_

#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "fabric/twin_host.h"
#include "proto/weft/v1/config.pb.h"
#include "proto/weft/v1/fabric.pb.h"
#include "proto/weft/v1/placement.grpc.pb.h"
#include "sim/training_job.h"

namespace weft::fabric {

// The twin's job for a configured one (nodes left empty: placement fills them).
sim::TrainingJobSpec TrainingJobOf(const weft::v1::FabricJobConfig& job);

// The placement request a scheduler would send for `job`.
weft::v1::PlacementRequest PlacementRequestOf(const weft::v1::FabricJobConfig& job);

// The progress report of a twin job's newest iteration (iterations_done 0 and no
// times before the first one completes).
weft::v1::JobProgress ProgressOf(const sim::TwinJobStatus& status, const std::string& model);

// The twin's own jobs, without reservations (weft-fabric without a controller).
weft::v1::ListFabricJobsResponse TwinJobs(const TwinHost& twin);

class JobGenerator {
 public:
  // `twin`, `placement` and `clock` outlive this. Names in `jobs` are distinct
  // (ValidateFabricConfig).
  JobGenerator(std::vector<weft::v1::FabricJobConfig> jobs, TwinHost* twin,
               weft::v1::PlacementService::StubInterface* placement, const Clock* clock,
               absl::Duration cluster_grace = absl::Seconds(30),
               absl::Duration rpc_timeout = absl::Seconds(5));

  void Check() ABSL_LOCKS_EXCLUDED(round_mu_, mu_);

  weft::v1::ListFabricJobsResponse ListJobs() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Running {
    weft::v1::FabricJobConfig config;
    weft::v1::PlacementResponse reservation;  // empty id: not placed
    absl::Time renewed_at;
    uint32_t placements = 0;
    int64_t reported_iterations = -1;
    std::string state;
  };

  void PlaceIfWaiting(Running& job) ABSL_EXCLUSIVE_LOCKS_REQUIRED(round_mu_);
  // Why a running job must be placed again ("" when it need not).
  std::string ReasonToReplace(const Running& job, const weft::v1::ClusterSnapshot& snapshot,
                              const weft::v1::ListReservationsResponse& reservations) const;
  void Unplace(Running& job, const std::string& why) ABSL_EXCLUSIVE_LOCKS_REQUIRED(round_mu_);
  void ReportAndRenew(Running& job, const std::vector<TwinHost::JobView>& views)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(round_mu_);
  void Configure(grpc::ClientContext* context) const;
  // "" once placement may start; else why not yet.
  std::string WaitingForCluster(const weft::v1::ClusterSnapshot& snapshot) const;

  TwinHost* const twin_;
  weft::v1::PlacementService::StubInterface* const placement_;
  const Clock* const clock_;
  const absl::Duration rpc_timeout_;
  const absl::Time cluster_deadline_;
  // Held for a whole round, calls to the controller included.
  absl::Mutex round_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  std::vector<Running> jobs_ ABSL_GUARDED_BY(round_mu_);
  // What ListJobs shows: jobs_ as the last round left it.
  mutable absl::Mutex mu_;
  std::vector<Running> published_ ABSL_GUARDED_BY(mu_);
};

}  // namespace weft::fabric

#endif  // WEFT_FABRIC_JOB_GENERATOR_H_
