// NCCL environment for a placed job: the per-node variables NCCL reads to pick its
// NICs, GID and traffic class. Used by the engine when it answers a placement. The QoS
// classes a job may ask for (and the traffic class each maps to) live in
// common/qos_classes.h; they are re-exported here under their old names.
//
// Pure functions; thread-safe.
#ifndef WEFT_PLACEMENT_NCCL_ENV_H_
#define WEFT_PLACEMENT_NCCL_ENV_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "common/qos_classes.h"
#include "placement/topology.h"
#include "proto/weft/v1/placement.pb.h"

namespace weft::placement {

using QosClass = weft::QosClass;
using weft::FindQosClass;
using weft::QosClasses;

// The environment of `node` (with GPUs and NICs `hardware`) when its ranks use the NICs
// `nic_indices` (indices into hardware.nics, ascending, no repeats):
//   NCCL_IB_HCA        "=mlx5_0:1,mlx5_3:1" — '=' makes NCCL match names exactly, so
//                      mlx5_1 does not also select mlx5_10; omitted without NICs
//   NCCL_IB_GID_INDEX  the RoCE v2 GID index when all those NICs report the same one;
//                      omitted otherwise (NCCL then picks a RoCE v2 GID itself)
//   NCCL_IB_TC         `traffic_class`
//   NCCL_SOCKET_IFNAME node.socket_ifname, else "=" + the first NIC's netdev; omitted
//                      when neither is known
weft::v1::NodeEnv BuildNodeEnv(const TopoNode& node, const NodeHardware& hardware,
                               absl::Span<const int> nic_indices, uint32_t traffic_class);

}  // namespace weft::placement

#endif  // WEFT_PLACEMENT_NCCL_ENV_H_
