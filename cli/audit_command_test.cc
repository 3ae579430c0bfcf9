#include "cli/audit_command.h"

#include "gtest/gtest.h"

namespace weft {
namespace {

TEST(MakeAuditRequestTest, CarriesFiltersAndSinceRules) {
  auto request = MakeAuditRequest("alice", "DrainNode", "90s", 5);
  ASSERT_TRUE(request.ok()) << request.status();
  EXPECT_EQ(request->who(), "alice");
  EXPECT_EQ(request->method(), "DrainNode");
  EXPECT_EQ(request->within_ms(), 90000u);
  EXPECT_EQ(request->since_us(), 0);
  EXPECT_EQ(request->limit(), 5u);

  auto at = MakeAuditRequest("", "", "2026-11-30T06:00:00Z", 0);
  ASSERT_TRUE(at.ok());
  EXPECT_EQ(at->since_us(), 1796018400000000);
  EXPECT_EQ(at->within_ms(), 0u);
}

TEST(MakeAuditRequestTest, RefusesBadSinceAndNegativeLimit) {
  auto bad = MakeAuditRequest("", "", "yesterday", 0);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("--since 'yesterday'"), std::string::npos);
  EXPECT_EQ(MakeAuditRequest("", "", "", -1).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(FormatAuditTableTest, OneRowPerEntryWithShortMethod) {
  weft::v1::ListAuditResponse response;
  EXPECT_EQ(FormatAuditTable(response), "no audit entries match\n");
  weft::v1::AuditLogEntry* entry = response.add_entries();
  entry->set_time_us(1796018400123000);
  entry->set_who("alice");
  entry->set_role("operator");
  entry->set_method("/weft.v1.AdminService/DrainNode");
  entry->set_target("gpu-a01");
  entry->set_result("OK");
  entry = response.add_entries();
  entry->set_time_us(1796018401000000);
  entry->set_who("bob");
  entry->set_method("/weft.v1.AdminService/UndrainNode");
  entry->set_result("PERMISSION_DENIED: role viewer may not call UndrainNode");
  const std::string table = FormatAuditTable(response);
  EXPECT_NE(table.find("TIME"), std::string::npos);
  EXPECT_NE(table.find("2026-11-30T06:00:00.123Z  alice  operator  DrainNode    gpu-a01  OK"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("bob    -         UndrainNode  -        PERMISSION_DENIED"),
            std::string::npos)
      << table;
}

}  // namespace
}  // namespace weft
