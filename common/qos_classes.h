// QoS classes: the traffic classes a job may ask for and the DSCP and RoCE traffic
// class (the IP ToS byte of every RoCE v2 packet: NCCL_IB_TC, the GRH traffic_class of
// an RC QP) each maps to. One table for everything that needs the mapping: the
// placement engine's NCCL environment (placement/nccl_env.h), libweft's RC transport
// and the agent's job socket (agent/job_service.h). It has no dependency beyond
// Abseil, so libweft.so can use it without gRPC or protobuf.
//
// Classes (NCCL_IB_TC = DSCP << 2 with ECN bits 10 = ECT(0), so switches may mark
// instead of drop):
//   training  DSCP 26 -> traffic class 106. The common RoCE recipe: trust DSCP, DSCP 26
//             on priority 3, PFC on priority 3 only (lossless), ECN/DCQCN on.
//   storage   DSCP 24 (CS3) -> traffic class 98. The default DSCP-to-priority map
//             (DSCP >> 3) also puts it on lossless priority 3, but its own DSCP lets the
//             switches count, mark and shape storage apart from collectives.
//   control   DSCP 16 (CS2) -> traffic class 66. Priority 2, lossy and ECN-capable:
//             small latency-sensitive traffic that must never wait behind PFC pauses.
// CNPs keep DSCP 48 (priority 6) and are not a class a job can ask for.
//
// The table is constant today; the controller's QoS policy (controller/policy.h) is
// where the fabric's real DSCP plan lives and should eventually feed it.
//
// Pure functions over constant data; thread-safe.
#ifndef WEFT_COMMON_QOS_CLASSES_H_
#define WEFT_COMMON_QOS_CLASSES_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace weft {

struct QosClass {
  absl::string_view name;
  uint32_t dscp;
  uint32_t traffic_class;  // NCCL_IB_TC: dscp << 2 | ECT(0)
};

// The accepted classes, in the order error messages list them; the first is the
// default.
absl::Span<const QosClass> QosClasses();

// The class named `name` ("" means "training"). INVALID_ARGUMENT naming the accepted
// classes when unknown, e.g.
//   unknown qos_class 'bulk'; accepted: training, storage, control
absl::StatusOr<QosClass> FindQosClass(absl::string_view name);

}  // namespace weft

#endif  // WEFT_COMMON_QOS_CLASSES_H_
