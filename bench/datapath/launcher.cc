#include "bench/datapath/launcher.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"

namespace weft::bench {
namespace {

// Reads `fd` to EOF or the deadline. False on timeout.
bool ReadAll(int fd, absl::Time deadline, std::string* out) {
  char buffer[65536];
  while (true) {
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) return false;
    pollfd p{fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(absl::ToInt64Milliseconds(left)) + 1);
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;
    const ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return true;
    out->append(buffer, static_cast<size_t>(n));
  }
}

std::string DescribeExit(int status) {
  if (WIFEXITED(status)) return absl::StrCat("exit ", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return absl::StrCat("signal ", WTERMSIG(status));
  return "unknown";
}

}  // namespace

absl::StatusOr<std::string> RunRankProcesses(int ranks, const std::function<int(int, int)>& body,
                                             absl::Duration timeout) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return absl::InternalError("pipe2 failed");
  std::vector<pid_t> pids;
  for (int rank = 0; rank < ranks; ++rank) {
    const pid_t pid = ::fork();
    if (pid < 0) {
      for (pid_t started : pids) ::kill(started, SIGKILL);
      return absl::InternalError(absl::StrCat("fork: ", std::strerror(errno)));
    }
    if (pid == 0) {
      ::close(fds[0]);
      int result_fd = fds[1];
      if (rank != 0) {
        ::close(fds[1]);
        result_fd = -1;
      }
      ::_exit(body(rank, result_fd));
    }
    pids.push_back(pid);
  }
  ::close(fds[1]);
  std::string output;
  const bool finished = ReadAll(fds[0], absl::Now() + timeout, &output);
  ::close(fds[0]);
  if (!finished) {
    for (pid_t pid : pids) ::kill(pid, SIGKILL);
  }
  std::vector<std::string> failures;
  for (int rank = 0; rank < ranks; ++rank) {
    int status = 0;
    ::waitpid(pids[rank], &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      failures.push_back(absl::StrCat("rank ", rank, " (", DescribeExit(status), ")"));
    }
  }
  if (!finished) {
    return absl::DeadlineExceededError(
        absl::StrCat("ranks ran past ", absl::FormatDuration(timeout), " and were killed"));
  }
  if (!failures.empty()) {
    return absl::InternalError(absl::StrCat("failed: ", absl::StrJoin(failures, ", ")));
  }
  return output;
}

absl::StatusOr<std::string> RunCommand(const std::vector<std::string>& argv,
                                       absl::Duration timeout) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return absl::InternalError("pipe2 failed");
  const pid_t pid = ::fork();
  if (pid < 0) return absl::InternalError(absl::StrCat("fork: ", std::strerror(errno)));
  if (pid == 0) {
    ::dup2(fds[1], STDOUT_FILENO);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execvp(args[0], args.data());
    ::_exit(127);
  }
  ::close(fds[1]);
  std::string output;
  const bool finished = ReadAll(fds[0], absl::Now() + timeout, &output);
  ::close(fds[0]);
  if (!finished) ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!finished) {
    return absl::DeadlineExceededError(
        absl::StrCat(argv[0], " ran past ", absl::FormatDuration(timeout)));
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return absl::InternalError(absl::StrCat(absl::StrJoin(argv, " "), ": ", DescribeExit(status)));
  }
  return output;
}

}  // namespace weft::bench
