#include "security/tokens.h"

#include <string>

#include "gtest/gtest.h"

namespace weft::security {
namespace {

TEST(TokensTest, Sha256MatchesAKnownVector) {
  // SHA-256("abc"), FIPS 180-2 appendix B.1.
  EXPECT_EQ(Sha256Hex("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(TokensTest, FindsTokensByHashWithNameAndRole) {
  const std::string text = "# operators\n\nalice operator sha256:" + Sha256Hex("s3cret") +
                           "\nslurm\tscheduler  sha256:" + Sha256Hex("t0ken") + "\n";
  absl::StatusOr<TokenTable> table = TokenTable::Parse(text, "tokens");
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_EQ(table->size(), 2u);
  std::optional<Principal> alice = table->Find("s3cret");
  ASSERT_TRUE(alice.has_value());
  EXPECT_EQ(alice->name, "alice");
  EXPECT_EQ(alice->role, Role::kOperator);
  EXPECT_EQ(alice->source, "token");
  EXPECT_EQ(table->Find("t0ken")->role, Role::kScheduler);
  EXPECT_FALSE(table->Find("S3cret").has_value());
  EXPECT_FALSE(table->Find("").has_value());
}

TEST(TokensTest, BadLinesNameTheLineAndWhatIsAccepted) {
  const std::string hash = "sha256:" + Sha256Hex("x");
  absl::Status status = TokenTable::Parse("a viewer " + hash + "\nb root " + hash, "t").status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message().substr(0, 40), "t:2: 'root' is not a role a token can ho");
  EXPECT_NE(TokenTable::Parse("a agent " + hash, "t").status().message().find("'agent'"),
            std::string::npos);
  EXPECT_NE(TokenTable::Parse("a viewer sha256:abc", "t").status().message().find(
                "is not a SHA-256 hash"),
            std::string::npos);
  EXPECT_NE(TokenTable::Parse("a viewer " + hash + "\na admin sha256:" + Sha256Hex("y"), "t")
                .status()
                .message()
                .find("t:2: token name 'a' appears twice"),
            std::string::npos);
  EXPECT_NE(TokenTable::Parse("a viewer", "t").status().message().find("expected 3 fields"),
            std::string::npos);
  EXPECT_EQ(TokenTable::LoadFile("/nonexistent/tokens").status().code(),
            absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace weft::security
