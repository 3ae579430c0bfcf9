// Discovery through libibverbs, on top of what sysfs says. sysfs gives what verbs
// cannot (netdev, PCI address, NUMA node, link rate, netdev MTU); libibverbs gives what
// a job will actually get when it opens the device: whether a userspace provider
// exists for it at all, the port state, the path MTU and the GID table with its types.
// Where the two disagree, libibverbs wins and the NIC carries a discovery warning.
//
// A node whose libibverbs lists no device (no RDMA in the kernel, no rdma-core
// provider, or a fixture tree in tests) keeps its sysfs view, marked "sysfs", and the
// returned note says why.
#ifndef WEFT_AGENT_LINUX_VERBS_DISCOVERY_H_
#define WEFT_AGENT_LINUX_VERBS_DISCOVERY_H_

#include <functional>
#include <string>
#include <vector>

#include "rdma/verbs.h"
#include "proto/weft/v1/node.pb.h"

namespace weft::agent {

// Name of the netdev with this ifindex (if_indextoname in production); empty if none.
using IfindexToName = std::function<std::string(uint32_t ifindex)>;
// if_indextoname(3) in this process's network namespace.
std::string NetdevOfIfindex(uint32_t ifindex);

// Completes `nics` (from sysfs) with libibverbs' view: sets discovered_by, active_mtu,
// the port state and the GID table of every NIC libibverbs can open, and adds
// discovery_warnings for devices it cannot see or open and for disagreements.
// Returns a node-level note when libibverbs listed no device (`no_device_reason`
// explains why, e.g. IbvVerbs::NoDeviceReason()), else "".
std::string ApplyVerbsView(rdma::Verbs& verbs, const std::string& no_device_reason,
                           const IfindexToName& netdev_of, std::vector<weft::v1::Nic>* nics);

}  // namespace weft::agent

#endif  // WEFT_AGENT_LINUX_VERBS_DISCOVERY_H_
