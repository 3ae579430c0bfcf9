#include "rdma/verbs.h"

#include <cerrno>

#include "gtest/gtest.h"

namespace weft::rdma {
namespace {

// rdma-core's ibv_flow_label_to_udp_sport (libibverbs verbs.h), which mlx5 applies.
TEST(FlowLabelTest, ChosenLabelGivesTheChosenRoceSourcePort) {
  for (uint32_t port = 0xC001; port <= 0xFFFF; ++port) {
    const uint32_t fl = FlowLabelForUdpSourcePort(static_cast<uint16_t>(port));
    ASSERT_NE(fl, 0u) << port;
    ASSERT_EQ(FlowLabelToUdpSourcePort(fl), port);
  }
  // The upper six bits of a 20-bit label fold into the low ones.
  EXPECT_EQ(FlowLabelToUdpSourcePort(0x4001), 0xC000 | (0x0001 ^ 0x1));
  EXPECT_EQ(FlowLabelToUdpSourcePort(0xFFFFF), 0xC000 | (0x3FFF ^ 0x3F));
  EXPECT_EQ(FlowLabelForUdpSourcePort(0xC000), 0u);  // left to the device
}

TEST(GidTest, Ipv4MappedRoundTrip) {
  Gid gid = Gid::FromIpv4(0x0a000001);  // 10.0.0.1
  EXPECT_TRUE(gid.IsIpv4Mapped());
  EXPECT_EQ(gid.Ipv4(), 0x0a000001u);
  EXPECT_EQ(gid.ToString(), "0000:0000:0000:0000:0000:ffff:0a00:0001");
}

TEST(GidTest, ParsesSysfsForm) {
  absl::StatusOr<Gid> gid = Gid::Parse("fe80:0000:0000:0000:0202:c9ff:fe00:0001");
  ASSERT_TRUE(gid.ok()) << gid.status();
  EXPECT_FALSE(gid->IsIpv4Mapped());
  EXPECT_EQ(gid->bytes[0], 0xfe);
  EXPECT_EQ(gid->bytes[15], 0x01);
  EXPECT_EQ(gid->ToString(), "fe80:0000:0000:0000:0202:c9ff:fe00:0001");
}

TEST(GidTest, RejectsMalformedText) {
  for (const char* text :
       {"", "::ffff:10.0.0.1", "0000:0000", "zzzz:0000:0000:0000:0000:ffff:0a00:0001",
        "0000:0000:0000:0000:0000:ffff:0a00:00001"}) {
    absl::StatusOr<Gid> gid = Gid::Parse(text);
    EXPECT_EQ(gid.status().code(), absl::StatusCode::kInvalidArgument) << text;
  }
}

TEST(GidTest, ZeroGid) {
  EXPECT_TRUE(Gid().IsZero());
  EXPECT_FALSE(Gid().IsIpv4Mapped());
  EXPECT_FALSE(Gid::FromIpv4(1).IsZero());
}

TEST(VerbsErrnoToStatusTest, NamesCallAndStrerror) {
  absl::Status status = VerbsErrnoToStatus("ibv_reg_mr(len=4096)", ENOMEM);
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(status.message(), "ibv_reg_mr(len=4096): Cannot allocate memory (errno 12)");
  EXPECT_EQ(VerbsErrnoToStatus("ibv_query_gid_ex", ENODATA).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(VerbsErrnoToStatus("ibv_modify_qp", EINVAL).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(VerbsErrnoToStatus("ibv_post_send", EIO).code(), absl::StatusCode::kInternal);
}

TEST(MtuTest, EnumMapping) {
  EXPECT_EQ(MtuBytesToEnum(4096), 5);
  EXPECT_EQ(MtuBytesToEnum(256), 1);
  EXPECT_EQ(MtuBytesToEnum(1500), 0);
  EXPECT_EQ(MtuEnumToBytes(3), 1024u);
  EXPECT_EQ(MtuEnumToBytes(0), 0u);
}

TEST(NamesTest, MatchLibibverbsSpelling) {
  EXPECT_EQ(WcStatusName(WcStatus::kRemoteAccessError), "IBV_WC_REM_ACCESS_ERR");
  EXPECT_EQ(WcStatusName(WcStatus::kWrFlushError), "IBV_WC_WR_FLUSH_ERR");
  EXPECT_EQ(QpStateName(QpState::kRts), "RTS");
  EXPECT_EQ(GidTypeName(GidType::kRoceV2), "RoCE v2");
}

}  // namespace
}  // namespace weft::rdma
