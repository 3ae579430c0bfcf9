#include "cli/weftctl_test_fixture.h"

#include "absl/strings/str_cat.h"
#include "cli/command_table.h"

namespace weft {

void WeftctlTest::StartServing(std::initializer_list<grpc::Service*> services) {
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  for (grpc::Service* service : services) builder.RegisterService(service);
  server_ = builder.BuildAndStart();
  ASSERT_NE(server_, nullptr);
  ASSERT_NE(port, 0);
  address_ = absl::StrCat("127.0.0.1:", port);
}

void WeftctlTest::TearDown() {
  if (server_ != nullptr) server_->Shutdown();
}

int WeftctlTest::Run(const std::vector<std::string>& args) {
  out_.str("");
  err_.str("");
  return RunWeftctl(args, options_, out_, err_);
}

}  // namespace weft
