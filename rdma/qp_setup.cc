#include "rdma/qp_setup.h"

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace weft::rdma {

QpTransition InitTransition(const RcConnectionParams& params) {
  QpTransition t;
  t.attr.state = QpState::kInit;
  t.attr.pkey_index = 0;
  t.attr.port = params.port;
  t.attr.access_flags = params.access_flags;
  t.attr_mask = kQpAttrState | kQpAttrPkeyIndex | kQpAttrPort | kQpAttrAccessFlags;
  return t;
}

QpTransition RtrTransition(const RcConnectionParams& params) {
  QpTransition t;
  t.attr.state = QpState::kRtr;
  t.attr.av.is_global = true;
  t.attr.av.dgid = params.remote_gid;
  t.attr.av.sgid_index = params.sgid_index;
  t.attr.av.hop_limit = 255;
  t.attr.av.traffic_class = params.traffic_class;
  t.attr.av.port = params.port;
  t.attr.path_mtu_bytes = params.path_mtu_bytes;
  t.attr.dest_qp_num = params.remote_qp_num;
  t.attr.rq_psn = params.remote_psn;
  t.attr.max_dest_rd_atomic = params.max_rd_atomic;
  t.attr.min_rnr_timer = params.min_rnr_timer;
  t.attr_mask = kQpAttrState | kQpAttrAv | kQpAttrPathMtu | kQpAttrDestQpn | kQpAttrRqPsn |
                kQpAttrMaxDestRdAtomic | kQpAttrMinRnrTimer;
  return t;
}

QpTransition RtsTransition(const RcConnectionParams& params) {
  QpTransition t;
  t.attr.state = QpState::kRts;
  t.attr.sq_psn = params.local_psn;
  t.attr.max_rd_atomic = params.max_rd_atomic;
  t.attr.retry_cnt = params.retry_cnt;
  t.attr.rnr_retry = params.rnr_retry;
  t.attr.timeout = params.timeout;
  t.attr_mask = kQpAttrState | kQpAttrSqPsn | kQpAttrMaxQpRdAtomic | kQpAttrRetryCnt |
                kQpAttrRnrRetry | kQpAttrTimeout;
  return t;
}

absl::Status ConnectRcQp(Verbs& verbs, VerbsQp* qp, const RcConnectionParams& params) {
  for (const QpTransition& t :
       {InitTransition(params), RtrTransition(params), RtsTransition(params)}) {
    absl::Status status = verbs.ModifyQp(qp, t.attr, t.attr_mask);
    if (!status.ok()) {
      return absl::Status(
          status.code(), absl::StrCat("taking QP ", qp->qp_num(), " to ", QpStateName(t.attr.state),
                                      ": ", status.message()));
    }
  }
  return absl::OkStatus();
}

absl::Status ActivateUdQp(Verbs& verbs, VerbsQp* qp, uint32_t qkey, uint8_t port) {
  QpTransition init;
  init.attr.state = QpState::kInit;
  init.attr.pkey_index = 0;
  init.attr.port = port;
  init.attr.qkey = qkey;
  init.attr_mask = kQpAttrState | kQpAttrPkeyIndex | kQpAttrPort | kQpAttrQkey;
  QpTransition rtr;
  rtr.attr.state = QpState::kRtr;
  rtr.attr_mask = kQpAttrState;
  QpTransition rts;
  rts.attr.state = QpState::kRts;
  rts.attr.sq_psn = 0;
  rts.attr_mask = kQpAttrState | kQpAttrSqPsn;
  for (const QpTransition& t : {init, rtr, rts}) {
    absl::Status status = verbs.ModifyQp(qp, t.attr, t.attr_mask);
    if (!status.ok()) {
      return absl::Status(status.code(), absl::StrCat("taking UD QP ", qp->qp_num(), " to ",
                                                      QpStateName(t.attr.state), ": ",
                                                      status.message()));
    }
  }
  return absl::OkStatus();
}

}  // namespace weft::rdma
