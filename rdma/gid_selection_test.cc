#include "rdma/gid_selection.h"

#include <vector>

#include "gtest/gtest.h"

namespace weft::rdma {
namespace {

Gid LinkLocal() {
  Gid gid;
  gid.bytes[0] = 0xfe;
  gid.bytes[1] = 0x80;
  gid.bytes[15] = 1;
  return gid;
}

// What a dual-port ConnectX with one IPv4 address per netdev shows in sysfs.
std::vector<GidEntry> Table() {
  return {
      {0, 1, LinkLocal(), GidType::kRoceV1, 4},
      {1, 1, LinkLocal(), GidType::kRoceV2, 4},
      {2, 1, Gid::FromIpv4(0x0a000001), GidType::kRoceV1, 4},
      {3, 1, Gid::FromIpv4(0x0a000001), GidType::kRoceV2, 4},
      {0, 2, LinkLocal(), GidType::kRoceV1, 5},
      {1, 2, LinkLocal(), GidType::kRoceV2, 5},
      {2, 2, Gid::FromIpv4(0x0a010001), GidType::kRoceV1, 5},
      {3, 2, Gid::FromIpv4(0x0a010001), GidType::kRoceV2, 5},
  };
}

TEST(SelectRoceV2GidTest, PicksTheIpv4MappedRoceV2Slot) {
  absl::StatusOr<GidEntry> gid = SelectRoceV2Gid(Table(), {1, 4, std::nullopt});
  ASSERT_TRUE(gid.ok()) << gid.status();
  EXPECT_EQ(gid->index, 3u);
  EXPECT_EQ(gid->gid, Gid::FromIpv4(0x0a000001));
}

TEST(SelectRoceV2GidTest, HonoursPortAndNetdev) {
  absl::StatusOr<GidEntry> gid = SelectRoceV2Gid(Table(), {2, 5, std::nullopt});
  ASSERT_TRUE(gid.ok()) << gid.status();
  EXPECT_EQ(gid->port, 2u);
  EXPECT_EQ(gid->gid.Ipv4(), 0x0a010001u);
  // Port 1 is not on netdev 5.
  EXPECT_EQ(SelectRoceV2Gid(Table(), {1, 5, std::nullopt}).status().code(),
            absl::StatusCode::kNotFound);
}

TEST(SelectRoceV2GidTest, IndexThreeIsNotAssumed) {
  // A second address on the netdev lands at slots 4/5; a reordered table puts the
  // v2 slot first. Neither matters: the type and address decide.
  std::vector<GidEntry> table = {
      {5, 1, Gid::FromIpv4(0xc0a80001), GidType::kRoceV2, 4},
      {4, 1, Gid::FromIpv4(0xc0a80001), GidType::kRoceV1, 4},
      {0, 1, LinkLocal(), GidType::kRoceV1, 4},
      {1, 1, LinkLocal(), GidType::kRoceV2, 4},
      {3, 1, Gid::FromIpv4(0x0a000001), GidType::kRoceV2, 4},
  };
  absl::StatusOr<GidEntry> any = SelectRoceV2Gid(table, {1, 4, std::nullopt});
  ASSERT_TRUE(any.ok());
  EXPECT_EQ(any->index, 3u);  // lowest matching index
  absl::StatusOr<GidEntry> wanted = SelectRoceV2Gid(table, {1, 4, 0xc0a80001});
  ASSERT_TRUE(wanted.ok());
  EXPECT_EQ(wanted->index, 5u);
}

TEST(SelectRoceV2GidTest, NoV2SlotExplainsWhatIsThere) {
  std::vector<GidEntry> v1_only = {
      {0, 1, LinkLocal(), GidType::kRoceV1, 4},
      {2, 1, Gid::FromIpv4(0x0a000001), GidType::kRoceV1, 4},
  };
  absl::StatusOr<GidEntry> gid = SelectRoceV2Gid(v1_only, {1, 4, 0x0a000001});
  ASSERT_EQ(gid.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(gid.status().message().find("for 10.0.0.1"), absl::string_view::npos) << gid.status();
  EXPECT_NE(gid.status().message().find("2 0000:0000:0000:0000:0000:ffff:0a00:0001 RoCE v1"),
            absl::string_view::npos)
      << gid.status();
}

TEST(SelectRoceV2GidTest, IgnoresIpv6OnlyV2Slots) {
  std::vector<GidEntry> table = {{1, 1, LinkLocal(), GidType::kRoceV2, 4}};
  EXPECT_EQ(SelectRoceV2Gid(table, {1, 0, std::nullopt}).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(SelectRoceV2Gid({}, {1, 0, std::nullopt}).status().message(),
            "no RoCE v2 GID with an IPv4-mapped address on port 1; the port has no GIDs");
}

TEST(FormatIpv4Test, DottedQuad) { EXPECT_EQ(FormatIpv4(0xc0a80a01), "192.168.10.1"); }

}  // namespace
}  // namespace weft::rdma
