// The tunables of one RDMA port on a real Linux node, put together from what the node
// has (roce-facts.md §2-§3):
//  - DCQCN scalars from debugfs cc_params when present (current kernels), else from the
//    MLNX_OFED ecn sysfs tree; the per-priority switches only from the ecn tree;
//  - ETS / PFC / DSCP trust and map over DCB netlink on the port's netdev;
//  - default_roce_tos from the rdma_cm configfs.
// A parameter the node has no place for reads and writes as UNIMPLEMENTED with the
// reason (e.g. debugfs not mounted), so a desired state that needs it is NACKed saying
// so. Thread-compatible.
#ifndef WEFT_AGENT_TUNABLES_LINUX_TUNABLES_H_
#define WEFT_AGENT_TUNABLES_LINUX_TUNABLES_H_

#include <memory>
#include <string>

#include "agent/tunables/dcb_client.h"
#include "agent/tunables/nic_tunables.h"
#include "proto/weft/v1/node.pb.h"

namespace weft::agent {

// `root` holds sys/ ("/" on a node); `dcb` (may be null: no DCB parameters) must
// outlive the result. Uses nic.device, port, pci_address and netdev.
std::unique_ptr<NicTunables> MakeLinuxNicTunables(const std::string& root,
                                                  const weft::v1::Nic& nic, DcbClient* dcb);

}  // namespace weft::agent

#endif  // WEFT_AGENT_TUNABLES_LINUX_TUNABLES_H_
