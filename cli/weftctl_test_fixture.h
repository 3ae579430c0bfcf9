// WeftctlTest: a gtest fixture that runs weftctl commands as main() does (RunWeftctl:
// the table's dispatch, the clients, the handlers) on string streams, against test
// doubles of the services it calls served by a real grpc::Server on 127.0.0.1 port 0.
// A test's fixture passes its doubles to StartServing in SetUp and points the option
// it needs (--controller, --fabric) at address(). testonly; one test thread.
#ifndef WEFT_CLI_WEFTCTL_TEST_FIXTURE_H_
#define WEFT_CLI_WEFTCTL_TEST_FIXTURE_H_

#include <initializer_list>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "cli/command_context.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"

namespace weft {

class WeftctlTest : public ::testing::Test {
 protected:
  // Serves `services` (which must outlive the fixture) on a free loopback port.
  // Check with ASSERT_NO_FATAL_FAILURE: it fails the test when the server cannot start.
  void StartServing(std::initializer_list<grpc::Service*> services);

  void TearDown() override;

  // "127.0.0.1:PORT" of the server StartServing started.
  const std::string& address() const { return address_; }

  // Runs one command line (without argv[0]) with `options_`; `out_` and `err_` hold what
  // it printed. Returns the exit status.
  int Run(const std::vector<std::string>& args);

  WeftctlOptions options_;
  std::ostringstream out_;
  std::ostringstream err_;

 private:
  std::unique_ptr<grpc::Server> server_;
  std::string address_;
};

}  // namespace weft

#endif  // WEFT_CLI_WEFTCTL_TEST_FIXTURE_H_
