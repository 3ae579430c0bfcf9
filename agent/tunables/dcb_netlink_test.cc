#include "agent/tunables/dcb_netlink.h"

#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <sched.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <string>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "agent/tunables/applier.h"
#include "agent/tunables/dcb_client.h"
#include "agent/tunables/dcb_qos.h"
#include "agent/tunables/nic_tunables.h"
#include "common/tunable_ranges.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace weft::agent {
namespace {

using ::testing::HasSubstr;

// Hex with spaces and '|' field separators (for reading) -> bytes.
std::string Bytes(absl::string_view hex) {
  return absl::HexStringToBytes(absl::StrReplaceAll(hex, {{" ", ""}, {"|", ""}, {"\n", ""}}));
}

std::string Hex(absl::string_view bytes) { return absl::BytesToHexString(bytes); }

// The kernel's layouts the messages depend on (include/uapi/linux/dcbnl.h).
TEST(DcbNetlinkTest, KernelStructLayouts) {
  EXPECT_EQ(offsetof(ieee_ets, tc_tx_bw), 3u);
  EXPECT_EQ(offsetof(ieee_ets, tc_tsa), 19u);
  EXPECT_EQ(offsetof(ieee_ets, prio_tc), 27u);
  EXPECT_EQ(offsetof(ieee_pfc, delay), 4u);
  EXPECT_EQ(offsetof(ieee_pfc, requests), 8u);
  EXPECT_EQ(offsetof(dcb_app, protocol), 2u);
  EXPECT_EQ(DCB_CMD_IEEE_SET, 20);
  EXPECT_EQ(DCB_CMD_IEEE_GET, 21);
  EXPECT_EQ(DCB_CMD_IEEE_DEL, 27);
  EXPECT_EQ(DCB_ATTR_IEEE, 13);
  EXPECT_EQ(RTM_GETDCB, 78);
  EXPECT_EQ(IEEE_8021QAZ_APP_SEL_DSCP, 5);
}

TEST(DcbNetlinkTest, IeeeGetIsByteExact) {
  EXPECT_EQ(Hex(EncodeIeeeGet("eth0", 7)),
            Hex(Bytes("20000000 | 4e00 | 0100 | 07000000 | 00000000"  // nlmsghdr: len 32, RTM_GETDCB, REQUEST, seq 7
                      "00 | 15 | 0000"                                 // dcbmsg: AF_UNSPEC, DCB_CMD_IEEE_GET
                      "0900 0100 65746830 00 000000")));               // DCB_ATTR_IFNAME "eth0\0" + pad
}

TEST(DcbNetlinkTest, IeeeSetEtsIsByteExact) {
  ieee_ets ets{};
  const uint8_t bw[8] = {50, 0, 0, 50, 0, 0, 0, 0};
  const uint8_t tsa[8] = {2, 0, 0, 2, 0, 0, 0, 0};
  const uint8_t prio_tc[8] = {0, 0, 0, 3, 0, 0, 6, 0};
  std::memcpy(ets.tc_tx_bw, bw, 8);
  std::memcpy(ets.tc_tsa, tsa, 8);
  std::memcpy(ets.prio_tc, prio_tc, 8);
  ets.ets_cap = 8;
  EXPECT_EQ(Hex(EncodeIeeeSetEts("eth0", ets, 9)),
            Hex(Bytes("64000000 | 4f00 | 0100 | 09000000 | 00000000"  // len 100, RTM_SETDCB
                      "00 | 14 | 0000"                                 // DCB_CMD_IEEE_SET
                      "0900 0100 65746830 00 000000"                   // ifname
                      "4400 0d00"                                      // DCB_ATTR_IEEE, len 68
                      "3f00 0100"                                      // DCB_ATTR_IEEE_ETS, len 4 + 59
                      "00 08 00"                                       // willing, ets_cap, cbs
                      "3200003200000000"                               // tc_tx_bw
                      "0000000000000000"                               // tc_rx_bw
                      "0200000200000000"                               // tc_tsa
                      "0000000300000600"                               // prio_tc
                      "0000000000000000 0000000000000000 0000000000000000"  // reco_*
                      "00")));                                         // pad to 4
}

TEST(DcbNetlinkTest, IeeeSetPfcIsByteExact) {
  ieee_pfc pfc{};
  pfc.pfc_cap = 8;
  pfc.pfc_en = 1 << 3;
  pfc.delay = 0x1234;
  std::string expected = Bytes(
      "b0000000 | 4f00 | 0100 | 0a000000 | 00000000"  // len 176
      "00 | 14 | 0000"
      "0900 0100 65746830 00 000000"
      "9000 0d00"       // DCB_ATTR_IEEE, len 144
      "8c00 0200"       // DCB_ATTR_IEEE_PFC, len 4 + 136
      "08 08 00 | 00 | 3412 | 0000");  // pfc_cap, pfc_en (prio 3), mbc, pad, delay, pad
  expected += std::string(128, '\0');  // requests[8], indications[8]
  EXPECT_EQ(Hex(EncodeIeeeSetPfc("eth0", pfc, 10)), Hex(expected));
}

TEST(DcbNetlinkTest, DscpAppSetAndDelAreByteExact) {
  dcb_app app{};
  app.selector = IEEE_8021QAZ_APP_SEL_DSCP;
  app.priority = 3;
  app.protocol = 26;
  const std::string tail =
      "0900 0100 65746830 00 000000"
      "1000 0d00"    // DCB_ATTR_IEEE, len 16
      "0c00 0300"    // DCB_ATTR_IEEE_APP_TABLE, len 12
      "0800 0100"    // DCB_ATTR_IEEE_APP, len 8
      "05 03 1a00";  // selector DSCP, priority 3, protocol 26
  EXPECT_EQ(Hex(EncodeIeeeSetApps("eth0", {app}, 11)),
            Hex(Bytes(absl::StrCat("30000000 4f00 0100 0b000000 00000000 00 14 0000", tail))));
  EXPECT_EQ(Hex(EncodeIeeeDelApps("eth0", {app}, 12)),
            Hex(Bytes(absl::StrCat("30000000 4f00 0100 0c000000 00000000 00 1b 0000", tail))));
}

// A reply as dcbnl_ieee_fill() writes it, built with the same kernel structs.
std::string GetReply(uint32_t seq) {
  ieee_ets ets{};
  ets.prio_tc[3] = 3;
  ets.tc_tsa[0] = IEEE_8021QAZ_TSA_ETS;
  ets.tc_tsa[3] = IEEE_8021QAZ_TSA_ETS;
  ets.tc_tx_bw[0] = 50;
  ets.tc_tx_bw[3] = 50;
  ieee_pfc pfc{};
  pfc.pfc_en = 0x08;
  pfc.mbc = 1;
  dcb_app dscp{IEEE_8021QAZ_APP_SEL_DSCP, 3, 26};
  dcb_app ethertype{IEEE_8021QAZ_APP_SEL_ETHERTYPE, 4, 0x8906};
  std::string ieee;
  auto attr = [](uint16_t type, const void* data, size_t len) {
    nlattr a{static_cast<uint16_t>(NLA_HDRLEN + len), type};
    std::string out(reinterpret_cast<const char*>(&a), sizeof(a));
    out.append(static_cast<const char*>(data), len);
    out.resize(NLA_ALIGN(out.size()), '\0');
    return out;
  };
  ieee += attr(DCB_ATTR_IEEE_ETS, &ets, sizeof(ets));
  ieee += attr(DCB_ATTR_IEEE_PFC, &pfc, sizeof(pfc));
  std::string apps = attr(DCB_ATTR_IEEE_APP, &dscp, sizeof(dscp)) +
                     attr(DCB_ATTR_IEEE_APP, &ethertype, sizeof(ethertype));
  ieee += attr(DCB_ATTR_IEEE_APP_TABLE, apps.data(), apps.size());
  uint8_t dcbx = DCB_CAP_DCBX_VER_IEEE;
  std::string body = attr(DCB_ATTR_IFNAME, "eth0", 5) + attr(DCB_ATTR_IEEE, ieee.data(), ieee.size()) +
                     attr(DCB_ATTR_DCBX, &dcbx, 1);
  dcbmsg dcb{AF_UNSPEC, DCB_CMD_IEEE_GET, 0};
  nlmsghdr header{static_cast<uint32_t>(NLMSG_HDRLEN + sizeof(dcb) + body.size()), RTM_GETDCB, 0, seq, 0};
  return std::string(reinterpret_cast<const char*>(&header), sizeof(header)) +
         std::string(reinterpret_cast<const char*>(&dcb), sizeof(dcb)) + body;
}

TEST(DcbNetlinkTest, ParsesTheKernelsIeeeGetReply) {
  absl::StatusOr<DcbIeeeState> state = ParseIeeeGetReply(GetReply(5), 5);
  ASSERT_TRUE(state.ok()) << state.status();
  ASSERT_TRUE(state->has_ets);
  EXPECT_EQ(state->ets.prio_tc[3], 3);
  EXPECT_EQ(state->ets.tc_tx_bw[3], 50);
  ASSERT_TRUE(state->has_pfc);
  EXPECT_EQ(state->pfc.pfc_en, 0x08);
  EXPECT_EQ(state->pfc.mbc, 1);
  ASSERT_EQ(state->apps.size(), 2u);
  EXPECT_EQ(state->apps[0].selector, IEEE_8021QAZ_APP_SEL_DSCP);
  EXPECT_EQ(state->apps[0].protocol, 26);
  EXPECT_EQ(state->apps[1].protocol, 0x8906);
}

TEST(DcbNetlinkTest, MalformedRepliesAreRefusedNamingTheProblem) {
  EXPECT_THAT(ParseIeeeGetReply(GetReply(5), 6).status().message(), HasSubstr("sequence 5, expected 6"));
  std::string truncated = GetReply(5);
  truncated.resize(40);
  EXPECT_EQ(ParseIeeeGetReply(truncated, 5).status().code(), absl::StatusCode::kInternal);
  EXPECT_THAT(ParseIeeeGetReply("abc", 5).status().message(), HasSubstr("shorter than a netlink header"));
}

std::string ErrorReply(int error, uint32_t seq) {
  nlmsgerr err{};
  err.error = error;
  nlmsghdr header{static_cast<uint32_t>(NLMSG_HDRLEN + sizeof(err)), NLMSG_ERROR, 0, seq, 0};
  return std::string(reinterpret_cast<const char*>(&header), sizeof(header)) +
         std::string(reinterpret_cast<const char*>(&err), sizeof(err));
}

TEST(DcbNetlinkTest, KernelRefusalsBecomeActionableErrors) {
  absl::Status no_dcb = ParseIeeeGetReply(ErrorReply(-EOPNOTSUPP, 3), 3).status();
  EXPECT_EQ(no_dcb.code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(no_dcb.message(), HasSubstr("Operation not supported"));
  EXPECT_THAT(no_dcb.message(), HasSubstr("no DCB support"));
  EXPECT_EQ(ParseIeeeSetReply(ErrorReply(-EPERM, 3), 3).code(), absl::StatusCode::kPermissionDenied);
  EXPECT_TRUE(ParseIeeeSetReply(ErrorReply(0, 3), 3).ok());
}

TEST(DcbNetlinkTest, DriverRefusalInTheIeeeStatusByte) {
  auto reply = [](uint8_t status) {
    nlattr a{NLA_HDRLEN + 1, DCB_ATTR_IEEE};
    std::string body(reinterpret_cast<const char*>(&a), sizeof(a));
    body += static_cast<char>(status);
    body.resize(8, '\0');
    dcbmsg dcb{AF_UNSPEC, DCB_CMD_IEEE_SET, 0};
    nlmsghdr header{static_cast<uint32_t>(NLMSG_HDRLEN + sizeof(dcb) + body.size()), RTM_SETDCB, 0, 4, 0};
    return std::string(reinterpret_cast<const char*>(&header), sizeof(header)) +
           std::string(reinterpret_cast<const char*>(&dcb), sizeof(dcb)) + body;
  };
  EXPECT_TRUE(ParseIeeeSetReply(reply(0), 4).ok());
  absl::Status refused = ParseIeeeSetReply(reply(static_cast<uint8_t>(-EINVAL)), 4);
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.message(), HasSubstr("Invalid argument"));
}

// The real socket, against the real kernel, in a network namespace of this test's own.
// veth has no dcbnl ops, so the kernel answers EOPNOTSUPP; an unknown netdev ENODEV.
class DcbNetlinkKernelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (unshare(CLONE_NEWNET) != 0) {
      GTEST_SKIP() << "skipped: cannot create a network namespace (unshare(CLONE_NEWNET): "
                   << std::strerror(errno) << "); the DCB netlink test needs root";
    }
    if (std::system("ip link add weftd0 type veth peer name weftd1") != 0) {
      GTEST_SKIP() << "skipped: 'ip link add ... type veth' failed (no iproute2 or no veth)";
    }
  }
};

TEST_F(DcbNetlinkKernelTest, VethAnswersNotSupportedAndUnknownNetdevNotFound) {
  absl::StatusOr<std::unique_ptr<NetlinkDcbClient>> client = NetlinkDcbClient::Open();
  ASSERT_TRUE(client.ok()) << client.status();
  absl::StatusOr<DcbIeeeState> veth = (*client)->GetIeee("weftd0");
  EXPECT_EQ(veth.status().code(), absl::StatusCode::kUnimplemented) << veth.status();
  EXPECT_THAT(veth.status().message(), HasSubstr("weftd0"));
  EXPECT_THAT(veth.status().message(), HasSubstr("no DCB support"));

  absl::Status set = (*client)->SetPfc("weftd0", ieee_pfc{});
  EXPECT_EQ(set.code(), absl::StatusCode::kUnimplemented) << set;

  absl::StatusOr<DcbIeeeState> missing = (*client)->GetIeee("nosuch0");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound) << missing.status();
  // The socket stays usable after refusals (replies matched by sequence).
  EXPECT_EQ((*client)->GetIeee("weftd1").status().code(), absl::StatusCode::kUnimplemented);
}

// The applier over the real socket: each DCB parameter of a desired state is NACKed
// with the kernel's answer, naming NIC and parameter, before anything is written.
TEST_F(DcbNetlinkKernelTest, ApplyingQosToVethNacksEachParameterWithTheKernelsReason) {
  absl::StatusOr<std::unique_ptr<NetlinkDcbClient>> client = NetlinkDcbClient::Open();
  ASSERT_TRUE(client.ok()) << client.status();
  std::vector<std::unique_ptr<NicTunables>> parts;
  parts.push_back(std::make_unique<DcbQosTunables>("veth_rdma0", "weftd0", client->get()));
  RoutedNicTunables nic("veth_rdma0", std::move(parts), {});
  weft::v1::DesiredState state;
  state.set_version(1);
  *state.mutable_qos() = RecipeQos();
  state.mutable_qos()->clear_default_roce_tos();  // DCB only here
  ApplyOutcome outcome = ApplyDesiredState(state, {&nic}, /*dry_run=*/false);
  EXPECT_FALSE(outcome.accepted);
  ASSERT_EQ(outcome.errors.size(), 4u);
  const char* parameters[] = {"ets", "pfc_priorities", "dscp_to_priority", "trust"};
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(outcome.errors[i].device(), "veth_rdma0");
    EXPECT_EQ(outcome.errors[i].parameter(), parameters[i]);
    EXPECT_THAT(outcome.errors[i].reason(),
                HasSubstr("weftd0: RTM_GETDCB DCB_CMD_IEEE_GET: Operation not supported (the "
                          "netdev's driver has no DCB support: no dcbnl ops)"));
  }
  EXPECT_TRUE(outcome.changes.empty());
}

}  // namespace
}  // namespace weft::agent
