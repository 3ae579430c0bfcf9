// RC queue pair setup on RoCE: the attribute sets of the RESET -> INIT -> RTR -> RTS
// transitions (ibv_modify_qp(3)), with NCCL's defaults (roce-facts.md §5):
//   INIT  STATE, PKEY_INDEX, PORT, ACCESS_FLAGS
//   RTR   STATE, AV (is_global=1, dgid, sgid_index, hop_limit=255, traffic_class),
//         PATH_MTU, DEST_QPN, RQ_PSN, MAX_DEST_RD_ATOMIC, MIN_RNR_TIMER (12)
//   RTS   STATE, SQ_PSN, MAX_QP_RD_ATOMIC, RETRY_CNT (7), RNR_RETRY (7 = retry forever),
//         TIMEOUT (20: 4.096 µs × 2^20 ≈ 4.3 s)
// Pure functions plus one helper that applies them; thread-safe.
#ifndef WEFT_RDMA_QP_SETUP_H_
#define WEFT_RDMA_QP_SETUP_H_

#include <cstdint>

#include "absl/status/status.h"
#include "rdma/verbs.h"

namespace weft::rdma {

struct RcConnectionParams {
  uint8_t port = 1;
  uint32_t access_flags = kAccessLocalWrite | kAccessRemoteWrite;
  uint8_t sgid_index = 0;      // our RoCE v2 GID (rdma/gid_selection.h)
  Gid remote_gid;              // the peer's GID
  uint32_t remote_qp_num = 0;  // the peer's QP for us
  uint32_t local_psn = 0;      // our first send PSN (the peer's rq_psn)
  uint32_t remote_psn = 0;     // the peer's first send PSN (our rq_psn)
  uint32_t path_mtu_bytes = 1024;
  uint8_t traffic_class = 0;  // IP ToS byte: DSCP << 2 | ECN bits
  uint8_t timeout = 20;
  uint8_t retry_cnt = 7;
  uint8_t rnr_retry = 7;
  uint8_t min_rnr_timer = 12;
  uint8_t max_rd_atomic = 1;
};

struct QpTransition {
  QpAttributes attr;
  uint32_t attr_mask = 0;
};

QpTransition InitTransition(const RcConnectionParams& params);
QpTransition RtrTransition(const RcConnectionParams& params);
QpTransition RtsTransition(const RcConnectionParams& params);

// Takes `qp` from RESET to RTS; the error names the transition that failed.
absl::Status ConnectRcQp(Verbs& verbs, VerbsQp* qp, const RcConnectionParams& params);

// Takes a UD QP from RESET to RTS (INIT: STATE, PKEY_INDEX, PORT, QKEY; RTR: STATE;
// RTS: STATE, SQ_PSN) receiving datagrams that carry `qkey`.
absl::Status ActivateUdQp(Verbs& verbs, VerbsQp* qp, uint32_t qkey, uint8_t port = 1);

}  // namespace weft::rdma

#endif  // WEFT_RDMA_QP_SETUP_H_
