// RdmaPath: which NIC, port and GID a rank's RDMA traffic uses. A job either names the
// device (as NCCL_IB_HCA would) or takes the first device with an active port, then the
// RoCE v2 GID of the port's netdev (rdma/gid_selection.h) unless a fixed GID index
// is given (as NCCL_IB_GID_INDEX would). The RC transport builds its QPs on the
// result; a job can also ask for it directly to log or report what it will use.
//
// Thread-safety: thread-safe (as the Verbs passed in).
#ifndef WEFT_DATAPATH_TRANSPORT_RDMA_PATH_H_
#define WEFT_DATAPATH_TRANSPORT_RDMA_PATH_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "rdma/verbs.h"

namespace weft::datapath {

struct RdmaPathQuery {
  // e.g. "mlx5_0"; empty takes the first device whose port is active.
  std::string device;
  uint32_t port = 1;
  // The GID must belong to this netdev (0: any) and map this IPv4 address (if set).
  uint32_t netdev_ifindex = 0;
  std::optional<uint32_t> ipv4_host_order;
  // A fixed GID index instead of searching the table.
  std::optional<uint32_t> gid_index;
};

struct RdmaPath {
  std::string device;
  uint32_t port = 1;
  rdma::PortAttributes port_attributes;
  rdma::GidEntry gid;
};

// FAILED_PRECONDITION when there is no device, no active port, or the port is not
// Ethernet (RoCE); NOT_FOUND when no suitable GID exists (naming the device and what
// its table holds); the verbs' errors otherwise.
absl::StatusOr<RdmaPath> ChooseRdmaPath(rdma::Verbs& verbs, const RdmaPathQuery& query);

}  // namespace weft::datapath

#endif  // WEFT_DATAPATH_TRANSPORT_RDMA_PATH_H_
