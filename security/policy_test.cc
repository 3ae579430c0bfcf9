#include "security/policy.h"

#include <filesystem>
#include <string>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/file.h"
#include "gtest/gtest.h"

namespace weft::security {
namespace {

// "/package.Service/Method" of every rpc declared in a .proto file's text.
std::vector<std::string> MethodsDeclaredIn(const std::string& path) {
  const std::string text = ReadWholeFile(path).value();
  std::string package;
  std::string service;
  std::vector<std::string> methods;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    line = absl::StripAsciiWhitespace(line);
    if (absl::ConsumePrefix(&line, "package ")) {
      package = std::string(absl::StripSuffix(line, ";"));
    } else if (absl::ConsumePrefix(&line, "service ")) {
      service = std::string(absl::StripAsciiWhitespace(line.substr(0, line.find('{'))));
    } else if (absl::ConsumePrefix(&line, "rpc ")) {
      methods.push_back(
          absl::StrCat("/", package, ".", service, "/",
                       absl::StripAsciiWhitespace(line.substr(0, line.find('(')))));
    }
  }
  return methods;
}

// Fails when someone adds a service or method to the wire API without deciding which
// role may call it (the controller would refuse it: default deny).
TEST(PolicyTest, EveryMethodOfEveryServiceHasARule) {
  std::vector<std::string> files;
  for (const char* dir : {"proto/weft/v1", "proto/grpc/health/v1"}) {
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      if (entry.path().extension() == ".proto") files.push_back(entry.path().string());
    }
  }
  int methods = 0;
  for (const std::string& file : files) {
    for (const std::string& method : MethodsDeclaredIn(file)) {
      const std::string service = method.substr(1, method.rfind('/') - 1);
      if (absl::c_linear_search(ServicesNotOnTheController(), service)) continue;
      ++methods;
      EXPECT_NE(FindMethodRule(method), nullptr)
          << method << " (declared in " << file
          << ") has no rule in security/policy.cc: add one with the role it needs";
    }
  }
  // agent (2), admin (6+), placement (5), health (2) at least.
  EXPECT_GE(methods, 15);
}

TEST(PolicyTest, UnknownMethodsAreDenied) {
  Principal admin{"root", Role::kAdmin, "certificate"};
  absl::Status denied = Authorize("/weft.v1.AdminService/FormatDisks", admin);
  EXPECT_EQ(denied.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_NE(denied.message().find("has no rule"), std::string::npos) << denied;
}

TEST(PolicyTest, RolesIncludeTheOnesBelowAndAgentsStandApart) {
  EXPECT_TRUE(RoleAllows(Role::kAdmin, Role::kOperator));
  EXPECT_TRUE(RoleAllows(Role::kOperator, Role::kScheduler));
  EXPECT_TRUE(RoleAllows(Role::kScheduler, Role::kViewer));
  EXPECT_FALSE(RoleAllows(Role::kViewer, Role::kScheduler));
  EXPECT_FALSE(RoleAllows(Role::kScheduler, Role::kOperator));
  EXPECT_FALSE(RoleAllows(Role::kOperator, Role::kAdmin));
  EXPECT_FALSE(RoleAllows(Role::kAdmin, Role::kAgent));
  EXPECT_FALSE(RoleAllows(Role::kAgent, Role::kViewer));
  EXPECT_TRUE(RoleAllows(Role::kAgent, Role::kAgent));
  EXPECT_FALSE(RoleAllows(Role::kNone, Role::kViewer));
  EXPECT_TRUE(RoleAllows(Role::kNone, Role::kNone));
}

TEST(PolicyTest, RefusalsNameTheRoleNeeded) {
  Principal viewer{"carol", Role::kViewer, "token"};
  absl::Status denied = Authorize("/weft.v1.AdminService/DrainNode", viewer);
  EXPECT_EQ(denied.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(denied.message(), "token 'carol' has role viewer; DrainNode needs role operator");
  EXPECT_TRUE(Authorize("/weft.v1.AdminService/ListNodes", viewer).ok());

  absl::Status anonymous = Authorize("/weft.v1.PlacementService/Place", Principal());
  EXPECT_EQ(anonymous.code(), absl::StatusCode::kUnauthenticated);
  EXPECT_NE(anonymous.message().find("Place needs role scheduler"), std::string::npos);
  EXPECT_TRUE(Authorize("/grpc.health.v1.Health/Check", Principal()).ok());
}

TEST(PolicyTest, JobProgressIsTheSchedulersAndJobsAreForEveryone) {
  const MethodRule* report = FindMethodRule("/weft.v1.PlacementService/ReportJobProgress");
  ASSERT_NE(report, nullptr);
  EXPECT_EQ(report->required, FindMethodRule("/weft.v1.PlacementService/Place")->required);
  EXPECT_FALSE(report->mutating);  // a report per iteration: telemetry, not audited
  Principal viewer{"carol", Role::kViewer, "token"};
  EXPECT_EQ(Authorize("/weft.v1.PlacementService/ReportJobProgress", viewer).code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_TRUE(Authorize("/weft.v1.PlacementService/ListJobs", viewer).ok());
}

TEST(PolicyTest, MutatingMethodsNameTheirTarget) {
  for (const MethodRule& rule : AllMethodRules()) {
    if (rule.mutating) {
      EXPECT_FALSE(rule.target_field.empty()) << rule.method;
    }
    EXPECT_EQ(FindMethodRule(rule.method), &rule) << rule.method << " listed twice";
  }
}

TEST(PolicyTest, RoleNamesRoundTrip) {
  for (Role role : {Role::kViewer, Role::kScheduler, Role::kOperator, Role::kAdmin,
                    Role::kAgent}) {
    EXPECT_EQ(ParseRole(RoleName(role)), role);
  }
  EXPECT_EQ(ParseRole("root"), std::nullopt);
  EXPECT_EQ(ParseRole("none"), std::nullopt);
}

}  // namespace
}  // namespace weft::security
