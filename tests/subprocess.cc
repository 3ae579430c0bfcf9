#include "tests/subprocess.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "absl/time/clock.h"
#include "common/file.h"
#include "common/testing/temp_dir.h"

namespace weft::testing {
namespace {

int DecodeWaitStatus(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

pid_t Spawn(const std::vector<std::string>& argv, int out_fd, int err_fd) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(out_fd, STDOUT_FILENO);
    dup2(err_fd, STDERR_FILENO);
    execv(args[0], args.data());
    _exit(127);
  }
  return pid;
}

std::optional<int> WaitPid(pid_t pid, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (true) {
    int status = 0;
    const pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) return DecodeWaitStatus(status);
    if (r < 0) return -1;
    if (absl::Now() >= deadline) return std::nullopt;
    absl::SleepFor(absl::Milliseconds(10));
  }
}

std::string ReadAll(const std::string& path) {
  return ReadWholeFile(path).value_or("");
}

}  // namespace

Subprocess::Subprocess(std::vector<std::string> argv, std::string log_path)
    : log_path_(std::move(log_path)) {
  const int fd = open(log_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  pid_ = Spawn(argv, fd, fd);
  close(fd);
}

Subprocess::~Subprocess() {
  if (running()) {
    kill(pid_, SIGKILL);
    Wait(absl::Seconds(5));
  }
}

bool Subprocess::running() {
  if (exit_status_.has_value() || pid_ <= 0) return false;
  return !Wait(absl::ZeroDuration()).has_value();
}

void Subprocess::Signal(int signo) {
  if (!exit_status_.has_value() && pid_ > 0) kill(pid_, signo);
}

std::optional<int> Subprocess::Wait(absl::Duration timeout) {
  if (exit_status_.has_value()) return exit_status_;
  if (pid_ <= 0) return -1;
  exit_status_ = WaitPid(pid_, timeout);
  return exit_status_;
}

std::string Subprocess::Log() const { return ReadAll(log_path_); }

CommandResult RunCommand(const std::vector<std::string>& argv, absl::Duration timeout) {
  static int counter = 0;
  const std::string base = TempPath("cmd." + std::to_string(getpid()) + "." +
                                    std::to_string(counter++));
  const int out_fd = open((base + ".out").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  const int err_fd = open((base + ".err").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  const pid_t pid = Spawn(argv, out_fd, err_fd);
  close(out_fd);
  close(err_fd);
  CommandResult result;
  std::optional<int> status = WaitPid(pid, timeout);
  if (!status.has_value()) {
    kill(pid, SIGKILL);
    status = WaitPid(pid, absl::Seconds(5));
    result.err = "(timed out) ";
  }
  result.exit_status = status.value_or(-1);
  result.out = ReadAll(base + ".out");
  result.err += ReadAll(base + ".err");
  return result;
}

int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

bool WaitForPort(int port, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (true) {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(port));
    const bool connected = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
    close(fd);
    if (connected) return true;
    if (absl::Now() >= deadline) return false;
    absl::SleepFor(absl::Milliseconds(20));
  }
}

}  // namespace weft::testing
