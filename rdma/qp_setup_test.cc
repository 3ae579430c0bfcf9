#include "rdma/qp_setup.h"

#include "gtest/gtest.h"

namespace weft::rdma {
namespace {

RcConnectionParams Params() {
  RcConnectionParams params;
  params.sgid_index = 3;
  params.remote_gid = Gid::FromIpv4(0x0a000002);
  params.remote_qp_num = 0x1234;
  params.local_psn = 11;
  params.remote_psn = 22;
  params.path_mtu_bytes = 4096;
  params.traffic_class = 106;
  return params;
}

TEST(QpSetupTest, InitCarriesExactlyTheRequiredAttributes) {
  QpTransition t = InitTransition(Params());
  EXPECT_EQ(t.attr_mask, kQpAttrState | kQpAttrPkeyIndex | kQpAttrPort | kQpAttrAccessFlags);
  EXPECT_EQ(t.attr.state, QpState::kInit);
  EXPECT_EQ(t.attr.port, 1);
  EXPECT_EQ(t.attr.access_flags, kAccessLocalWrite | kAccessRemoteWrite);
}

TEST(QpSetupTest, RtrUsesAGlobalRouteWithTheTrafficClass) {
  QpTransition t = RtrTransition(Params());
  EXPECT_EQ(t.attr_mask, kQpAttrState | kQpAttrAv | kQpAttrPathMtu | kQpAttrDestQpn | kQpAttrRqPsn |
                             kQpAttrMaxDestRdAtomic | kQpAttrMinRnrTimer);
  EXPECT_TRUE(t.attr.av.is_global);
  EXPECT_EQ(t.attr.av.dgid, Gid::FromIpv4(0x0a000002));
  EXPECT_EQ(t.attr.av.sgid_index, 3);
  EXPECT_EQ(t.attr.av.hop_limit, 255);
  EXPECT_EQ(t.attr.av.traffic_class, 106);
  EXPECT_EQ(t.attr.path_mtu_bytes, 4096u);
  EXPECT_EQ(t.attr.dest_qp_num, 0x1234u);
  EXPECT_EQ(t.attr.rq_psn, 22u);
  EXPECT_EQ(t.attr.min_rnr_timer, 12);
  EXPECT_EQ(t.attr.max_dest_rd_atomic, 1) << "NCCL's value; RDMA READ is never used";
}

TEST(QpSetupTest, RtsUsesNcclRetryDefaults) {
  QpTransition t = RtsTransition(Params());
  EXPECT_EQ(t.attr_mask, kQpAttrState | kQpAttrSqPsn | kQpAttrMaxQpRdAtomic | kQpAttrRetryCnt |
                             kQpAttrRnrRetry | kQpAttrTimeout);
  EXPECT_EQ(t.attr.sq_psn, 11u);
  EXPECT_EQ(t.attr.retry_cnt, 7);
  EXPECT_EQ(t.attr.rnr_retry, 7);
  EXPECT_EQ(t.attr.timeout, 20);  // 4.096 µs × 2^20 ≈ 4.3 s
  EXPECT_EQ(t.attr.max_rd_atomic, 1);
}

}  // namespace
}  // namespace weft::rdma
