#include "bench/ingest/process_stats.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/file.h"

namespace weft::bench {

absl::StatusOr<double> ParseProcStatCpuSeconds(absl::string_view stat, long ticks_per_second) {
  const size_t close = stat.rfind(')');
  if (close == absl::string_view::npos || ticks_per_second <= 0) {
    return absl::InvalidArgumentError("not a /proc/<pid>/stat line (no ')' after comm)");
  }
  // After "pid (comm) ": state is field 3, utime field 14, stime field 15.
  std::vector<absl::string_view> fields =
      absl::StrSplit(stat.substr(close + 1), ' ', absl::SkipEmpty());
  constexpr size_t kUtime = 14 - 3, kStime = 15 - 3;
  uint64_t utime = 0, stime = 0;
  if (fields.size() <= kStime || !absl::SimpleAtoi(fields[kUtime], &utime) ||
      !absl::SimpleAtoi(fields[kStime], &stime)) {
    return absl::InvalidArgumentError("not a /proc/<pid>/stat line (utime/stime missing)");
  }
  return static_cast<double>(utime + stime) / static_cast<double>(ticks_per_second);
}

absl::StatusOr<long> ParseVmRssKib(absl::string_view status) {
  for (absl::string_view line : absl::StrSplit(status, '\n')) {
    if (!absl::ConsumePrefix(&line, "VmRSS:")) continue;
    line = absl::StripAsciiWhitespace(line);
    absl::ConsumeSuffix(&line, "kB");
    long kib = 0;
    if (absl::SimpleAtoi(absl::StripAsciiWhitespace(line), &kib)) return kib;
  }
  return absl::NotFoundError("no VmRSS line");
}

absl::StatusOr<double> ParseProcStatTreeCpuSeconds(absl::string_view stat,
                                                   long ticks_per_second) {
  const size_t close = stat.rfind(')');
  if (close == absl::string_view::npos || ticks_per_second <= 0) {
    return absl::InvalidArgumentError("not a /proc/<pid>/stat line (no ')' after comm)");
  }
  std::vector<absl::string_view> fields =
      absl::StrSplit(stat.substr(close + 1), ' ', absl::SkipEmpty());
  uint64_t total = 0;
  // utime, stime, cutime, cstime: fields 14..17, counted from 3 after the comm.
  for (size_t field = 14; field <= 17; ++field) {
    int64_t ticks = 0;
    if (fields.size() <= field - 3 || !absl::SimpleAtoi(fields[field - 3], &ticks)) {
      return absl::InvalidArgumentError("not a /proc/<pid>/stat line (times missing)");
    }
    total += static_cast<uint64_t>(std::max<int64_t>(0, ticks));
  }
  return static_cast<double>(total) / static_cast<double>(ticks_per_second);
}

double MachineCpuSeconds() {
  const long ticks = sysconf(_SC_CLK_TCK);
  double total = 0;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return 0;
  while (dirent* entry = readdir(proc)) {
    int pid = 0;
    if (!absl::SimpleAtoi(entry->d_name, &pid)) continue;
    absl::StatusOr<std::string> stat = ReadWholeFile(absl::StrCat("/proc/", pid, "/stat"));
    if (!stat.ok()) continue;  // gone meanwhile
    absl::StatusOr<double> seconds = ParseProcStatTreeCpuSeconds(*stat, ticks);
    if (seconds.ok()) total += *seconds;
  }
  closedir(proc);
  return total;
}

absl::StatusOr<double> ProcessCpuSeconds(int pid) {
  absl::StatusOr<std::string> stat = ReadWholeFile(absl::StrCat("/proc/", pid, "/stat"));
  if (!stat.ok()) return stat.status();
  return ParseProcStatCpuSeconds(*stat, sysconf(_SC_CLK_TCK));
}

absl::StatusOr<long> ProcessRssKib(int pid) {
  absl::StatusOr<std::string> status = ReadWholeFile(absl::StrCat("/proc/", pid, "/status"));
  if (!status.ok()) return status.status();
  return ParseVmRssKib(*status);
}

std::map<std::string, double> SumSeriesByName(absl::string_view exposition) {
  std::map<std::string, double> sums;
  for (absl::string_view line : absl::StrSplit(exposition, '\n', absl::SkipEmpty())) {
    if (line.empty() || line[0] == '#') continue;
    const size_t name_end = line.find_first_of("{ ");
    if (name_end == absl::string_view::npos) continue;
    const size_t value_start =
        line[name_end] == '{' ? line.find("} ", name_end) : name_end;
    if (value_start == absl::string_view::npos) continue;
    absl::string_view rest = absl::StripAsciiWhitespace(
        line.substr(value_start + (line[value_start] == '}' ? 2 : 1)));
    // An optional timestamp follows the value.
    rest = rest.substr(0, rest.find(' '));
    double value = 0;
    if (!absl::SimpleAtod(rest, &value)) continue;
    sums[std::string(line.substr(0, name_end))] += value;
  }
  return sums;
}

absl::StatusOr<std::string> FetchMetrics(const std::string& host_port) {
  const size_t colon = host_port.rfind(':');
  int port = 0;
  if (colon == std::string::npos || !absl::SimpleAtoi(host_port.substr(colon + 1), &port)) {
    return absl::InvalidArgumentError(absl::StrCat("'", host_port, "' is not host:port"));
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (inet_pton(AF_INET, host_port.substr(0, colon).c_str(), &addr.sin_addr) != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", host_port, "': the host must be an IPv4 address"));
  }
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::UnavailableError(absl::StrCat("socket: ", strerror(errno)));
  timeval timeout{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
  auto fail = [fd, &host_port](absl::string_view what) {
    const std::string error = strerror(errno);
    close(fd);
    return absl::UnavailableError(absl::StrCat(what, " ", host_port, ": ", error));
  };
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    return fail("connect");
  }
  const std::string request =
      absl::StrCat("GET /metrics HTTP/1.0\r\nHost: ", host_port, "\r\n\r\n");
  if (send(fd, request.data(), request.size(), MSG_NOSIGNAL) !=
      static_cast<ssize_t>(request.size())) {
    return fail("send to");
  }
  std::string response;
  char buffer[65536];
  while (true) {
    const ssize_t n = recv(fd, buffer, sizeof buffer, 0);
    if (n < 0) return fail("recv from");
    if (n == 0) break;
    response.append(buffer, static_cast<size_t>(n));
  }
  close(fd);
  const size_t body = response.find("\r\n\r\n");
  if (response.rfind("HTTP/1.", 0) != 0 || body == std::string::npos ||
      response.find(" 200 ") > response.find("\r\n")) {
    return absl::UnavailableError(
        absl::StrCat("GET http://", host_port, "/metrics: unexpected response '",
                     response.substr(0, response.find("\r\n")), "'"));
  }
  return response.substr(body + 4);
}

}  // namespace weft::bench
