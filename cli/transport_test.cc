#include "cli/transport.h"

#include <cstdlib>
#include <fstream>
#include <string>

#include "gtest/gtest.h"

namespace weft {
namespace {

std::string WriteFile(const std::string& name, const std::string& text) {
  const std::string path = std::string(std::getenv("TEST_TMPDIR")) + "/" + name;
  std::ofstream(path) << text;
  return path;
}

TEST(TransportTest, PlaintextOnlyToLoopbackUnlessInsecure) {
  TransportFlags flags;
  flags.controller = "127.0.0.1:7400";
  EXPECT_TRUE(WeftctlCredentials(flags).ok());
  flags.controller = "10.1.2.3:7400";
  absl::Status refused = WeftctlCredentials(flags).status();
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(refused.message().find("not a loopback address"), std::string::npos) << refused;
  flags.insecure = true;
  EXPECT_TRUE(WeftctlCredentials(flags).ok());
}

TEST(TransportTest, TokensNeedTlsAndFilesMustExist) {
  TransportFlags flags;
  flags.controller = "127.0.0.1:7400";
  flags.token = "abc";
  EXPECT_NE(WeftctlCredentials(flags).status().message().find("a token needs TLS"),
            std::string::npos);
  flags.tls_ca = "/nonexistent/ca.crt";
  absl::Status missing = WeftctlCredentials(flags).status();
  EXPECT_EQ(missing.code(), absl::StatusCode::kNotFound);
  EXPECT_NE(missing.message().find("/nonexistent/ca.crt"), std::string::npos);
  flags.tls_ca = WriteFile("ca.crt", "-----BEGIN CERTIFICATE-----\n");
  EXPECT_TRUE(WeftctlCredentials(flags).ok());
  flags.token_file = WriteFile("token", "abc\n");
  EXPECT_NE(WeftctlCredentials(flags).status().message().find("not both"), std::string::npos);
  flags.token.clear();
  EXPECT_TRUE(WeftctlCredentials(flags).ok());
  flags.insecure = true;
  EXPECT_NE(WeftctlCredentials(flags).status().message().find("--insecure contradicts"),
            std::string::npos);
}

}  // namespace
}  // namespace weft
