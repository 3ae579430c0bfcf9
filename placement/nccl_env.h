// NCCL environment for a placed job: the QoS classes a job may ask for (and the RoCE
// traffic class each maps to), and the per-node variables NCCL reads to pick its NICs,
// GID and traffic class. Used by the engine when it answers a placement.
//
// QoS classes (DSCP in the IP header; NCCL_IB_TC is the whole ToS byte, DSCP << 2 with
// ECN bits 10 = ECT(0) so switches may mark instead of drop):
//   training  DSCP 26 -> NCCL_IB_TC 106. The common RoCE recipe: trust DSCP, DSCP 26 on
//             priority 3, PFC on priority 3 only (lossless), ECN/DCQCN on.
//   storage   DSCP 24 (CS3) -> NCCL_IB_TC 98. The default DSCP-to-priority map
//             (DSCP >> 3) also puts it on lossless priority 3, but its own DSCP lets the
//             switches count, mark and shape storage apart from collectives.
//   control   DSCP 16 (CS2) -> NCCL_IB_TC 66. Priority 2, lossy and ECN-capable: small
//             latency-sensitive traffic that must never wait behind PFC pauses.
// CNPs keep DSCP 48 (priority 6) and are not a class a job can ask for.
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
#include "placement/topology.h"
#include "proto/weft/v1/placement.pb.h"

namespace weft::placement {

struct QosClass {
  absl::string_view name;
  uint32_t dscp;
  uint32_t traffic_class;  // NCCL_IB_TC: dscp << 2 | ECT(0)
};

// The accepted classes, in the order error messages list them.
absl::Span<const QosClass> QosClasses();

// The class named `name` ("" means "training"). INVALID_ARGUMENT naming the accepted
// classes when unknown, e.g.
//   unknown qos_class 'bulk'; accepted: training, storage, control
absl::StatusOr<QosClass> FindQosClass(absl::string_view name);

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
