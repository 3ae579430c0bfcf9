// Test utilities for multi-process tests: start a binary with arguments, its stdout
// and stderr going to a log file; signal it; wait for it with a deadline; pick free
// loopback ports. Temporary paths are common/testing/temp_dir.h's; a whole cluster is
// tests/cluster_harness.h. testonly. A Subprocess is not thread-safe; the destructor
// kills (SIGKILL) and reaps a child still running, so a failing test leaves nothing
// behind.
#ifndef WEFT_TESTS_SUBPROCESS_H_
#define WEFT_TESTS_SUBPROCESS_H_

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
// Re-exported: the agent's sysfs/tunables/inspect tests still reach TempPath through
// this header; new code includes common/testing/temp_dir.h itself.
#include "common/testing/temp_dir.h"

namespace weft::testing {

class Subprocess {
 public:
  // Starts `argv[0]` (a path) with `argv`; output is appended to `log_path`.
  Subprocess(std::vector<std::string> argv, std::string log_path);
  ~Subprocess();
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;

  pid_t pid() const { return pid_; }
  bool running();
  void Signal(int signo);
  // Waits up to `timeout` for exit; returns the exit status (128+signal when killed),
  // or nullopt if still running.
  std::optional<int> Wait(absl::Duration timeout);
  // The log so far.
  std::string Log() const;

 private:
  pid_t pid_ = -1;
  std::optional<int> exit_status_;
  std::string log_path_;
};

// Runs a command to completion (up to `timeout`) and returns its exit status and
// stdout. stderr goes to `stderr_out` when non-null.
struct CommandResult {
  int exit_status = -1;
  std::string out;
  std::string err;
};
CommandResult RunCommand(const std::vector<std::string>& argv, absl::Duration timeout);

// A TCP port on 127.0.0.1 that was free a moment ago (bound to 0, then released).
int FreePort();

// Whether something accepts TCP connections on 127.0.0.1:`port` within `timeout`.
bool WaitForPort(int port, absl::Duration timeout);

}  // namespace weft::testing

#endif  // WEFT_TESTS_SUBPROCESS_H_
