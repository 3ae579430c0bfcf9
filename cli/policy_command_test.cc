#include "cli/policy_command.h"

#include <fstream>
#include <sstream>
#include <string>

#include "cli/command_context.h"
#include "cli/controller_client.h"
#include "common/file.h"
#include "grpcpp/grpcpp.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace weft {
namespace {

using ::testing::HasSubstr;

constexpr char kExample[] = "deploy/examples/policy.yaml";

std::string TempFile(const std::string& name, const std::string& text) {
  const char* dir = std::getenv("TEST_TMPDIR");
  const std::string path = std::string(dir != nullptr ? dir : "/tmp") + "/" + name;
  std::ofstream(path) << text;
  return path;
}

class PolicyCommandTest : public ::testing::Test {
 protected:
  int Run(const std::vector<std::string>& args) {
    out_.str("");
    err_.str("");
    return RunPolicyCommand(args, CommandContext{out_, err_, options_, controller_, "USAGE"});
  }

  // Validate never calls the controller: nothing listens on port 1.
  ControllerClient controller_{
      grpc::CreateChannel("127.0.0.1:1", grpc::InsecureChannelCredentials()), "127.0.0.1:1",
      /*timeout_ms=*/500};
  WeftctlOptions options_;
  std::ostringstream out_;
  std::ostringstream err_;
};

TEST_F(PolicyCommandTest, ValidateTheExampleOffline) {
  ASSERT_EQ(Run({"policy", "validate", kExample}), 0) << err_.str();
  EXPECT_THAT(out_.str(), HasSubstr("policy.yaml: valid"));
  EXPECT_THAT(out_.str(), HasSubstr("trust TRUST_MODE_DSCP, PFC on priorities 3, default RoCE ToS 106"));
  EXPECT_THAT(out_.str(), HasSubstr("training (roce)"));
  EXPECT_THAT(out_.str(), HasSubstr("DCQCN profiles: default, fast-recovery, gentle; 2 assignments"));
  EXPECT_THAT(out_.str(), HasSubstr("canary 1 per rack, bake 300 s"));
}

TEST_F(PolicyCommandTest, ValidateJsonIsThePolicy) {
  options_.output = "json";
  ASSERT_EQ(Run({"policy", "validate", kExample}), 0) << err_.str();
  EXPECT_THAT(out_.str(), HasSubstr("\"default_profile\": \"default\""));
}

TEST_F(PolicyCommandTest, InvalidPolicyExitsOneNamingTheProblem) {
  std::string yaml = ReadWholeFile(kExample).value();
  yaml.replace(yaml.find("bandwidth_percent: 40"), 21, "bandwidth_percent: 45");
  const std::string path = TempFile("bad.yaml", yaml);
  EXPECT_EQ(Run({"policy", "validate", path}), 1);
  EXPECT_THAT(err_.str(), HasSubstr("bad.yaml: qos.traffic_classes.bandwidth_percent: the ETS "
                                    "shares of tc 0,2,3 sum to 105"));
  EXPECT_EQ(Run({"policy", "validate", TempFile("typo.yaml", "qos:\n  trst: dscp\n")}), 1);
  EXPECT_THAT(err_.str(), HasSubstr("typo.yaml:2:3"));
  EXPECT_EQ(Run({"policy", "validate", "/nonexistent/p.yaml"}), 1);
  EXPECT_THAT(err_.str(), HasSubstr("/nonexistent/p.yaml"));
}

TEST_F(PolicyCommandTest, UsageErrors) {
  EXPECT_EQ(Run({"policy"}), 2);
  EXPECT_EQ(Run({"policy", "apply", kExample}), 2);
  EXPECT_THAT(err_.str(), HasSubstr("policy validate FILE"));
}

TEST_F(PolicyCommandTest, DiffAgainstAnUnreachableControllerSaysSo) {
  EXPECT_EQ(Run({"policy", "diff", kExample}), 1);
  EXPECT_THAT(err_.str(), HasSubstr("cannot reach the controller at 127.0.0.1:1"));
}

TEST(FormatPolicyDiffTest, OneRowPerChange) {
  weft::v1::DiffPolicyResponse diff;
  diff.set_nodes_total(6);
  diff.set_nodes_changed(4);
  weft::v1::ParameterChange* c = diff.add_changes();
  c->set_parameter("dcqcn.rp_ai_rate");
  c->set_from("5");
  c->set_to("20");
  c->set_nodes(4);
  c = diff.add_changes();
  c->set_parameter("qos.trust");
  c->set_to("TRUST_MODE_DSCP");
  c->set_nodes(1);
  const std::string text = FormatPolicyDiff(diff);
  EXPECT_THAT(text, HasSubstr("4 of 6 nodes would change\n"));
  EXPECT_THAT(text, HasSubstr("dcqcn.rp_ai_rate  5       20"));
  EXPECT_THAT(text, HasSubstr("qos.trust         (none)  TRUST_MODE_DSCP  1"));
}

}  // namespace
}  // namespace weft
