// TwinHost: the fabric twin (sim/twin.h) as weft-fabric serves it. It owns the Twin
// behind a mutex and speaks names and protos (fabric.proto): a node's NICs with their
// inventory, counters and tunables for its agent, faults by cable and NIC name, links,
// jobs. The gRPC adapter (fabric/fabric_service.h), the ticker and the job generator
// (fabric/job_generator.h) all go through it. Thread-safe.
//
// Inventory of a twin node, as a host with ConnectX NICs would report it: NIC i is
// mlx5_i, port 1, netdev ens<i+1>np0, Ethernet, MTU 4200, on NUMA node 0 for the first
// half of the NICs and 1 for the rest; GIDs 0/1 link-local RoCE v1/v2 and 2/3 the NIC's
// IPv4 (the twin's 10.0.0.0/8 address) mapped, v1/v2; GPU i is closest to NIC
// i·nics/gpus.
#ifndef WEFT_FABRIC_TWIN_HOST_H_
#define WEFT_FABRIC_TWIN_HOST_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "proto/weft/v1/fabric.pb.h"
#include "sim/twin.h"

namespace weft::fabric {

class TwinHost {
 public:
  TwinHost(sim::Twin twin, int gpus_per_node);

  // FabricService's calls. NOT_FOUND names an unknown node, NIC, cable or fault;
  // INVALID_ARGUMENT what the twin refuses (a value out of range, a fault missing the
  // field its kind needs). A dead node reads as UNAVAILABLE (its agent cannot read its
  // NICs), naming the fault.
  absl::StatusOr<weft::v1::ReadNodeResponse> ReadNode(absl::string_view node) const;
  absl::Status SetNicTunables(const weft::v1::SetNicTunablesRequest& request);
  absl::StatusOr<weft::v1::FabricFault> InjectFault(const weft::v1::FabricFault& fault);
  absl::Status ClearFault(absl::string_view id);  // "all" clears every fault
  weft::v1::ListFaultsResponse ListFaults() const;
  weft::v1::ListLinksResponse ListLinks(const weft::v1::ListLinksRequest& request) const;

  // Jobs, by node name (the job generator). `job.nodes` is ignored and replaced by
  // `nodes`, in rank order.
  absl::Status StartJob(sim::TrainingJobSpec job, const std::vector<std::string>& nodes);
  absl::Status StopJob(absl::string_view name);
  struct JobView {
    sim::TwinJobStatus status;
    std::vector<std::string> nodes;
    std::vector<std::string> racks;  // in order of first appearance
    std::string hottest_link;        // "from->to"; "" before it first communicated
  };
  std::vector<JobView> Jobs() const;
  // Whether the twin has a node of that name.
  bool HasNode(absl::string_view node) const;
  std::vector<std::string> NodeNames() const;

  // Moves the twin forward by `seconds`.
  absl::Status Advance(double seconds);
  double time_s() const;

 private:
  absl::StatusOr<weft::v1::FabricFault> ToProto(const sim::TwinFault& fault) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<sim::TwinFault> FromProto(const weft::v1::FabricFault& fault) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<int> NicOf(absl::string_view node, absl::string_view device) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::string DeadNodeFault(int node) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const int gpus_per_node_;
  mutable absl::Mutex mu_;
  sim::Twin twin_ ABSL_GUARDED_BY(mu_);
};

// "f<id>", as FabricFault.id spells a twin fault id; and back (NOT_FOUND for another form).
std::string FaultIdName(int id);
absl::StatusOr<int> ParseFaultId(absl::string_view id);

}  // namespace weft::fabric

#endif  // WEFT_FABRIC_TWIN_HOST_H_
