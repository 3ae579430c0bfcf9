#include "common/text_output.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/weft/v1/node.pb.h"

namespace weft {
namespace {

TEST(TextOutputTest, TablePadsColumnsToTheWidestCell) {
  EXPECT_EQ(FormatTable({{"NAME", "N"}, {"mlx5_10", "8"}, {"a", "12345"}}),
            "NAME     N\n"
            "mlx5_10  8\n"
            "a        12345\n");
  EXPECT_EQ(FormatTable({}), "");
}

TEST(TextOutputTest, JsonKeepsFieldNamesAndZeroValuesAndEndsInNewline) {
  weft::v1::Nic nic;
  nic.set_device("mlx5_0");
  const std::string json = FormatJson(nic);
  EXPECT_THAT(json, ::testing::HasSubstr("\"device\": \"mlx5_0\""));
  EXPECT_THAT(json, ::testing::HasSubstr("\"numa_node\": 0"));
  EXPECT_THAT(json, ::testing::HasSubstr("\"pci_address\": \"\""));
  EXPECT_EQ(json.back(), '\n');
}

}  // namespace
}  // namespace weft

namespace weft {
namespace {

TEST(FormatUnixMicrosTest, UtcSecondsOrADashForUnset) {
  EXPECT_EQ(FormatUnixMicros(0), "-");
  EXPECT_EQ(FormatUnixMicros(1'800'000'000'250'000), "2027-01-15T08:00:00Z");
}

}  // namespace
}  // namespace weft
