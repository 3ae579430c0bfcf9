// Job path choice: which RDMA NIC, port and GID a rank of a local job should use, and
// the DSCP / traffic class of its QoS class. Pure logic over the agent's discovered
// NodeInventory (agent/nic_backend.h); agent/job_service.h serves it on the job socket.
//
// A usable port is ACTIVE, has link layer Ethernet (RoCE) and a RoCE v2 GID holding its
// netdev's IPv4-mapped address (rdma/gid_selection.h picks it; index 3 is common
// but never assumed). With a GPU given (index or PCI address), the GPU's closest NIC
// (Gpu.closest_nic, same PCIe switch then same NUMA node) wins when usable; otherwise,
// or without a GPU, the first usable port in discovery order. The answer's `reason`
// says which rule picked it and, on a fallback, what was wrong with the closest NIC.
//
// Errors: INVALID_ARGUMENT for an unknown QoS class (naming the accepted ones);
// NOT_FOUND for a GPU the node does not have (listing the ones it has);
// FAILED_PRECONDITION when no port is usable (saying why for each).
//
// Pure function; thread-safe.
#ifndef WEFT_AGENT_JOB_PATH_H_
#define WEFT_AGENT_JOB_PATH_H_

#include "absl/status/statusor.h"
#include "agent/nic_backend.h"
#include "proto/weft/v1/job.pb.h"

namespace weft::agent {

absl::StatusOr<weft::v1::ChoosePathResponse> ChooseJobPath(
    const NodeInventory& inventory, const weft::v1::ChoosePathRequest& request);

}  // namespace weft::agent

#endif  // WEFT_AGENT_JOB_PATH_H_
