#include "agent/lldp.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "common/logging.h"

extern char** environ;

namespace weft::agent {
namespace {

struct RawNeighbor {
  weft::v1::LldpNeighbor neighbor;
  std::string port_ifname, port_local, port_descr, port_mac;
};

// Runs argv with stdout and stderr captured, killing it after `timeout`.
absl::StatusOr<std::string> RunCapture(const std::vector<std::string>& argv,
                                       absl::Duration timeout) {
  int out_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) {
    return absl::UnavailableError(absl::StrCat("pipe: ", std::strerror(errno)));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], STDERR_FILENO);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int spawned = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(out_pipe[1]);
  if (spawned != 0) {
    close(out_pipe[0]);
    return absl::UnavailableError(absl::StrCat(
        "cannot run ", argv[0], ": ", std::strerror(spawned),
        spawned == ENOENT ? " (install Debian's lldpd package, or set lldp: off)" : ""));
  }
  std::string output;
  const absl::Time deadline = absl::Now() + timeout;
  bool timed_out = false;
  while (true) {
    const int64_t left_ms = absl::ToInt64Milliseconds(deadline - absl::Now());
    if (left_ms <= 0) {
      timed_out = true;
      break;
    }
    pollfd pfd{out_pipe[0], POLLIN, 0};
    if (poll(&pfd, 1, static_cast<int>(left_ms)) <= 0) continue;
    char buf[4096];
    const ssize_t n = read(out_pipe[0], buf, sizeof(buf));
    if (n <= 0) break;
    output.append(buf, static_cast<size_t>(n));
  }
  close(out_pipe[0]);
  if (timed_out) kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  if (timed_out) {
    return absl::UnavailableError(absl::StrCat(argv[0], " did not answer within ",
                                               absl::FormatDuration(timeout), " (is lldpd running?)"));
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return absl::UnavailableError(absl::StrCat(argv[0], " failed: ",
                                               absl::StripAsciiWhitespace(output),
                                               " (is lldpd running?)"));
  }
  return output;
}

// Length of the well-formed UTF-8 sequence at the start of `s` (RFC 3629: no overlong
// forms, no surrogates, at most U+10FFFF), or 0 when it is not one.
size_t Utf8SequenceLength(absl::string_view s) {
  const auto byte = [&s](size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char b0 = byte(0);
  if (b0 < 0x80) return 1;
  size_t length;
  unsigned char low = 0x80, high = 0xBF;  // allowed range of the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    length = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    length = 3;
    if (b0 == 0xE0) low = 0xA0;
    if (b0 == 0xED) high = 0x9F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    length = 4;
    if (b0 == 0xF0) low = 0x90;
    if (b0 == 0xF4) high = 0x8F;
  } else {
    return 0;
  }
  if (s.size() < length || byte(1) < low || byte(1) > high) return 0;
  for (size_t i = 2; i < length; ++i) {
    if (byte(i) < 0x80 || byte(i) > 0xBF) return 0;
  }
  return length;
}

// Switches send what they like in LLDP TLVs; proto3 strings must be UTF-8, or the
// whole Register carrying them fails to parse at the controller. Bytes that are not
// UTF-8 become '?'.
std::string ToUtf8(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  while (!text.empty()) {
    const size_t length = Utf8SequenceLength(text);
    if (length == 0) {
      out.push_back('?');
      text.remove_prefix(1);
    } else {
      out.append(text.data(), length);
      text.remove_prefix(length);
    }
  }
  return out;
}

}  // namespace

absl::StatusOr<std::map<std::string, weft::v1::LldpNeighbor>> ParseLldpKeyValue(
    absl::string_view text) {
  std::map<std::string, RawNeighbor> raw;
  int line_no = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_no;
    line = absl::StripAsciiWhitespace(line);
    if (!absl::ConsumePrefix(&line, "lldp.")) continue;
    const size_t eq = line.find('=');
    if (eq == absl::string_view::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("lldpcli output line ", line_no, " has no '=': ", line));
    }
    const absl::string_view key = line.substr(0, eq);
    const std::string value = ToUtf8(line.substr(eq + 1));
    const size_t dot = key.find('.');
    if (dot == absl::string_view::npos) continue;
    const std::string ifname = ToUtf8(key.substr(0, dot));
    const absl::string_view field = key.substr(dot + 1);
    RawNeighbor& n = raw[ifname];
    if (field == "chassis.name") n.neighbor.set_chassis_name(value);
    else if (field == "chassis.mac" || field == "chassis.local") n.neighbor.set_chassis_id(value);
    else if (field == "port.ifname") n.port_ifname = value;
    else if (field == "port.local") n.port_local = value;
    else if (field == "port.descr") n.port_descr = value;
    else if (field == "port.mac") n.port_mac = value;
  }
  std::map<std::string, weft::v1::LldpNeighbor> out;
  for (auto& [ifname, n] : raw) {
    for (const std::string* id : {&n.port_ifname, &n.port_local, &n.port_descr, &n.port_mac}) {
      if (!id->empty()) {
        n.neighbor.set_port_id(*id);
        break;
      }
    }
    n.neighbor.set_port_description(n.port_descr);
    out[ifname] = n.neighbor;
  }
  return out;
}

LldpcliReader::LldpcliReader(std::string socket_path, absl::Duration timeout)
    : socket_path_(std::move(socket_path)), timeout_(timeout) {}

absl::StatusOr<std::map<std::string, weft::v1::LldpNeighbor>> LldpcliReader::Neighbors() {
  std::vector<std::string> argv = {"lldpcli"};
  if (!socket_path_.empty()) {
    argv.push_back("-u");
    argv.push_back(socket_path_);
  }
  for (const char* a : {"-f", "keyvalue", "show", "neighbors"}) argv.push_back(a);
  absl::StatusOr<std::string> output = RunCapture(argv, timeout_);
  if (!output.ok()) return output.status();
  return ParseLldpKeyValue(*output);
}

absl::StatusOr<NodeInventory> LldpNicBackend::Discover() {
  absl::StatusOr<NodeInventory> inventory = inner_->Discover();
  if (!inventory.ok()) return inventory;
  absl::StatusOr<std::map<std::string, weft::v1::LldpNeighbor>> neighbors = lldp_->Neighbors();
  std::string problem;
  if (!neighbors.ok()) {
    problem = std::string(neighbors.status().message());
  } else {
    int found = 0;
    for (weft::v1::Nic& nic : inventory->nics) {
      auto it = neighbors->find(nic.netdev());
      if (it == neighbors->end()) continue;
      *nic.mutable_lldp_neighbor() = it->second;
      ++found;
    }
    WEFT_LOG(INFO) << "lldp neighbors nics=" << inventory->nics.size() << " with_neighbor=" << found;
  }
  if (problem != last_problem_ && !problem.empty()) {
    WEFT_LOG(WARNING) << "lldp unavailable, reporting NICs without neighbors error=\"" << problem
                      << "\"";
  }
  last_problem_ = problem;
  return inventory;
}

}  // namespace weft::agent
