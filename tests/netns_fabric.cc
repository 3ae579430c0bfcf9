#include "tests/netns_fabric.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "common/status_macros.h"
#include "tests/subprocess.h"

namespace weft::testing {
namespace {

constexpr char kIp[] = "/usr/sbin/ip";
constexpr absl::Duration kCommandTimeout = absl::Seconds(20);

absl::StatusOr<std::string> Sh(absl::string_view command) {
  CommandResult result = RunCommand({"/bin/sh", "-c", std::string(command)}, kCommandTimeout);
  if (result.exit_status != 0) {
    return absl::InternalError(absl::StrCat("`", command, "` exited ", result.exit_status, ": ",
                                            result.err));
  }
  return result.out;
}

std::string TorName(int j) { return absl::StrCat("tor-", std::string(1, 'a' + j)); }
std::string SpineName(int k) { return absl::StrCat("spine-", k); }
std::string HostName(int j, int i) {
  return absl::StrFormat("gpu-%c%02d", static_cast<char>('a' + j), i);
}

// nft chain names allow letters, digits and '_'.
std::string ChainFor(absl::string_view peer) {
  std::string chain = absl::StrCat("from_", peer);
  std::replace(chain.begin(), chain.end(), '-', '_');
  return chain;
}

}  // namespace

absl::StatusOr<std::unique_ptr<NetnsFabric>> NetnsFabric::Create(const NetnsFabricSpec& spec) {
  if (spec.spines < 1 || spec.tors < 1 || spec.tors > 26 || spec.hosts_per_tor < 1 ||
      spec.hosts_per_tor > 99) {
    return absl::InvalidArgumentError(absl::StrCat(
        "NetnsFabric: spines ", spec.spines, ", tors ", spec.tors, ", hosts_per_tor ",
        spec.hosts_per_tor, ": need spines >= 1, 1 <= tors <= 26, 1 <= hosts_per_tor <= 99"));
  }
  if (geteuid() != 0) {
    return absl::FailedPreconditionError(
        "NetnsFabric needs root to create network namespaces");
  }
  if (access(kIp, X_OK) != 0) {
    return absl::FailedPreconditionError("NetnsFabric needs iproute2 (/usr/sbin/ip)");
  }
  std::unique_ptr<NetnsFabric> fabric(new NetnsFabric(absl::StrCat("w", getpid(), "-")));
  if (absl::Status built = fabric->Build(spec); !built.ok()) {
    return absl::Status(built.code(),
                        absl::StrCat("NetnsFabric: building the fabric failed: ",
                                     built.message()));
  }
  return fabric;
}

NetnsFabric::~NetnsFabric() {
  for (const std::string& link : management_links_) {
    RunCommand({kIp, "link", "del", link}, kCommandTimeout);
  }
  for (auto it = devices_.rbegin(); it != devices_.rend(); ++it) {
    RunCommand({kIp, "netns", "del", prefix_ + *it}, kCommandTimeout);
  }
}

const NetnsHost& NetnsFabric::host(absl::string_view name) const {
  for (const NetnsHost& h : hosts_) {
    if (h.name == name) return h;
  }
  std::fprintf(stderr, "NetnsFabric: no host %s\n", std::string(name).c_str());
  std::abort();
}

std::string NetnsFabric::NamespaceOf(absl::string_view device) const {
  return absl::StrCat(prefix_, device);
}

std::vector<std::string> NetnsFabric::Wrapper(absl::string_view device) const {
  return {kIp, "netns", "exec", NamespaceOf(device)};
}

absl::StatusOr<std::string> NetnsFabric::Exec(absl::string_view device,
                                              absl::string_view command) const {
  if (!peers_.contains(device)) {
    return absl::NotFoundError(absl::StrCat("NetnsFabric: no device '", device, "'"));
  }
  std::vector<std::string> argv = Wrapper(device);
  argv.insert(argv.end(), {"/bin/sh", "-c", std::string(command)});
  CommandResult result = RunCommand(argv, kCommandTimeout);
  if (result.exit_status != 0) {
    return absl::InternalError(absl::StrCat("`", command, "` in ", device, " exited ",
                                            result.exit_status, ": ", result.err));
  }
  return result.out;
}

absl::Status NetnsFabric::RunIn(absl::string_view device, const std::function<void()>& fn) const {
  if (!peers_.contains(device)) {
    return absl::NotFoundError(absl::StrCat("NetnsFabric: no device '", device, "'"));
  }
  const std::string path = absl::StrCat("/var/run/netns/", NamespaceOf(device));
  absl::Status status;
  std::thread runner([&] {
    const int ns = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (ns < 0) {
      status = absl::InternalError(absl::StrCat("open ", path, ": ", std::strerror(errno)));
      return;
    }
    if (setns(ns, CLONE_NEWNET) != 0) {
      status = absl::InternalError(absl::StrCat("setns ", path, ": ", std::strerror(errno)));
    }
    close(ns);
    if (status.ok()) fn();
  });
  runner.join();
  return status;
}

absl::StatusOr<int> NetnsFabric::SocketIn(absl::string_view device, int type) const {
  // A socket belongs to the namespace of the thread that made it: make it on a thread
  // that joined `device`'s namespace, and use it from anywhere.
  absl::StatusOr<int> made = absl::InternalError("not run");
  RETURN_IF_ERROR(RunIn(device, [&] {
    if (const int fd = socket(AF_INET, type | SOCK_CLOEXEC, 0); fd < 0) {
      made = absl::InternalError(absl::StrCat("socket in ", device, ": ", std::strerror(errno)));
    } else {
      made = fd;
    }
  }));
  return made;
}

std::vector<std::string> NetnsFabric::AddressesOf(absl::string_view device) const {
  auto it = addresses_.find(device);
  return it == addresses_.end() ? std::vector<std::string>{} : it->second;
}

absl::Status NetnsFabric::AddDevice(const std::string& device) {
  const std::string ns = NamespaceOf(device);
  RETURN_IF_ERROR(Sh(absl::StrCat(kIp, " netns add ", ns)).status());
  devices_.push_back(device);
  peers_[device];
  // Routers forward and hash ECMP on the 5-tuple; nobody drops asymmetric return paths.
  // ICMP errors (traceroute's time-exceeded) are not limited per destination (the
  // default sends a host one a second after a burst of 6, too few for an agent tracing
  // its flows); the namespace's overall limit (icmp_msgs_per_sec) stays.
  return Sh(absl::StrCat(kIp, " -n ", ns, " link set lo up && ", kIp, " netns exec ", ns,
                         " sysctl -qw net.ipv4.ip_forward=1 net.ipv4.fib_multipath_hash_policy=1"
                         " net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.default.rp_filter=0"
                         " net.ipv4.icmp_ratelimit=0"))
      .status();
}

absl::Status NetnsFabric::Cable(const std::string& a, const std::string& a_ip,
                                const std::string& b, const std::string& b_ip) {
  // Created inside a's namespace with its peer in b's: nothing in the test's namespace.
  const std::string ns_a = NamespaceOf(a), ns_b = NamespaceOf(b);
  RETURN_IF_ERROR(Sh(absl::StrCat(kIp, " -n ", ns_a, " link add ", b, " type veth peer name ",
                                  a, " netns ", ns_b, " && ", kIp, " -n ", ns_a, " addr add ",
                                  a_ip, "/30 dev ", b, " && ", kIp, " -n ", ns_b, " addr add ",
                                  b_ip, "/30 dev ", a, " && ", kIp, " -n ", ns_a,
                                  " link set ", b, " up && ", kIp, " -n ", ns_b, " link set ",
                                  a, " up"))
                      .status());
  peers_[a].push_back(b);
  peers_[b].push_back(a);
  addresses_[a].push_back(a_ip);
  addresses_[b].push_back(b_ip);
  cables_.push_back(absl::StrCat(a, "--", b));
  return absl::OkStatus();
}

absl::Status NetnsFabric::Build(const NetnsFabricSpec& spec) {
  for (int k = 0; k < spec.spines; ++k) RETURN_IF_ERROR(AddDevice(SpineName(k)));
  for (int j = 0; j < spec.tors; ++j) {
    RETURN_IF_ERROR(AddDevice(TorName(j)));
    for (int k = 0; k < spec.spines; ++k) {
      RETURN_IF_ERROR(Cable(TorName(j), absl::StrCat("10.", 100 + k, ".", j, ".2"),
                            SpineName(k), absl::StrCat("10.", 100 + k, ".", j, ".1")));
      RETURN_IF_ERROR(AddRoute(SpineName(k),
                               absl::StrCat("10.", j, ".0.0/16 via 10.", 100 + k, ".", j, ".2")));
    }
  }
  for (int j = 0; j < spec.tors; ++j) {
    for (int other = 0; other < spec.tors; ++other) {
      if (other == j) continue;
      std::string route = absl::StrCat("10.", other, ".0.0/16");
      for (int k = 0; k < spec.spines; ++k) {
        absl::StrAppend(&route, " nexthop via 10.", 100 + k, ".", j, ".1 dev ", SpineName(k),
                        " weight 1");
      }
      RETURN_IF_ERROR(AddRoute(TorName(j), route));
    }
  }
  // A management /30 per host from 100.64.0.0/10, its third octet the host's index and
  // its second from the pid, so tests running at once do not collide.
  const int management_octet = 64 + getpid() % 64;
  int index = 0;
  for (int j = 0; j < spec.tors; ++j) {
    for (int i = 1; i <= spec.hosts_per_tor; ++i, ++index) {
      NetnsHost host;
      host.name = HostName(j, i);
      host.tor = TorName(j);
      host.ns = NamespaceOf(host.name);
      host.fabric_ip = absl::StrCat("10.", j, ".", i, ".2");
      RETURN_IF_ERROR(AddDevice(host.name));
      RETURN_IF_ERROR(Cable(host.name, host.fabric_ip, host.tor, absl::StrCat("10.", j, ".", i,
                                                                            ".1")));
      RETURN_IF_ERROR(
          AddRoute(host.name, absl::StrCat("10.0.0.0/8 via 10.", j, ".", i, ".1 dev ", host.tor)));
      if (spec.management) {
        const std::string link = absl::StrCat("wm", getpid() % 100000, "-", index);
        host.management_gateway = absl::StrCat("100.", management_octet, ".", index / 64, ".",
                                               (index % 64) * 4 + 1);
        host.management_ip = absl::StrCat("100.", management_octet, ".", index / 64, ".",
                                          (index % 64) * 4 + 2);
        RETURN_IF_ERROR(Sh(absl::StrCat(kIp, " link add ", link, " type veth peer name mgmt netns ",
                                        host.ns, " && ", kIp, " addr add ",
                                        host.management_gateway, "/30 dev ", link, " && ", kIp,
                                        " link set ", link, " up && ", kIp, " -n ", host.ns,
                                        " addr add ", host.management_ip, "/30 dev mgmt && ",
                                        kIp, " -n ", host.ns, " link set mgmt up"))
                            .status());
        management_links_.push_back(link);
      }
      hosts_.push_back(std::move(host));
    }
  }
  return absl::OkStatus();
}

absl::Status NetnsFabric::AddRoute(const std::string& device, const std::string& route) {
  routes_[device].push_back(route);
  return Sh(absl::StrCat(kIp, " -n ", NamespaceOf(device), " route replace ", route)).status();
}

absl::Status NetnsFabric::CheckPeers(absl::string_view from, absl::string_view to) const {
  auto it = peers_.find(from);
  if (it == peers_.end()) {
    return absl::NotFoundError(absl::StrCat("NetnsFabric: no device '", from, "'"));
  }
  if (std::find(it->second.begin(), it->second.end(), to) == it->second.end()) {
    return absl::NotFoundError(
        absl::StrCat("NetnsFabric: no cable between '", from, "' and '", to, "'"));
  }
  return absl::OkStatus();
}

absl::Status NetnsFabric::AddIngressRule(absl::string_view from, absl::string_view to,
                                         const std::string& rule) {
  RETURN_IF_ERROR(CheckPeers(from, to));
  if (access("/usr/sbin/nft", X_OK) != 0) {
    return absl::FailedPreconditionError("NetnsFabric: loss needs nftables (/usr/sbin/nft)");
  }
  const std::string chain = ChainFor(from);
  return Sh(absl::StrCat(kIp, " netns exec ", NamespaceOf(to),
                         " nft -f - <<'EOF'\n"
                         "table inet weft_faults {\n"
                         "  chain ", chain, " { type filter hook prerouting priority 0; }\n"
                         "}\n"
                         "add rule inet weft_faults ", chain, " iifname \"", from, "\" ", rule,
                         "\nEOF"))
      .status();
}

absl::Status NetnsFabric::DropRandom(absl::string_view from, absl::string_view to,
                                     double share) {
  if (!(share > 0 && share <= 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("NetnsFabric: drop share ", share, " is not in (0, 1]"));
  }
  const int64_t per_million = std::llround(share * 1e6);
  if (per_million >= 1'000'000) return AddIngressRule(from, to, "drop");
  return AddIngressRule(from, to,
                        absl::StrCat("numgen random mod 1000000 < ", per_million, " drop"));
}

absl::Status NetnsFabric::BlackHoleUdpSourcePort(absl::string_view from, absl::string_view to,
                                                 int port) {
  if (port < 1 || port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("NetnsFabric: UDP port ", port, " is not in 1..65535"));
  }
  return AddIngressRule(from, to, absl::StrCat("udp sport ", port, " drop"));
}

absl::Status NetnsFabric::Throttle(absl::string_view from, absl::string_view to,
                                   double rate_bps) {
  RETURN_IF_ERROR(CheckPeers(from, to));
  if (!(rate_bps >= 8000)) {
    return absl::InvalidArgumentError(
        absl::StrCat("NetnsFabric: throttle rate ", rate_bps, " b/s is below 8 kb/s"));
  }
  return Sh(absl::StrCat(kIp, " netns exec ", NamespaceOf(from), " tc qdisc replace dev ", to,
                         " root tbf rate ", std::llround(rate_bps / 1000),
                         "kbit burst 16kb latency 50ms"))
      .status();
}

absl::Status NetnsFabric::SetCableDown(absl::string_view a, absl::string_view b, bool down) {
  RETURN_IF_ERROR(CheckPeers(a, b));
  const char* state = down ? "down" : "up";
  RETURN_IF_ERROR(Sh(absl::StrCat(kIp, " -n ", NamespaceOf(a), " link set ", b, " ", state,
                                  " && ", kIp, " -n ", NamespaceOf(b), " link set ", a, " ",
                                  state))
                      .status());
  if (down) return absl::OkStatus();
  // The kernel deleted the single-path routes over the cable when it went down (multipath
  // ones only lose the nexthop while it is down): put every route of both ends back, as a
  // routing protocol would once the link is up.
  for (absl::string_view end : {a, b}) {
    for (const std::string& route : routes_[std::string(end)]) {
      RETURN_IF_ERROR(
          Sh(absl::StrCat(kIp, " -n ", NamespaceOf(end), " route replace ", route)).status());
    }
  }
  return absl::OkStatus();
}

absl::Status NetnsFabric::ClearCable(absl::string_view a, absl::string_view b) {
  RETURN_IF_ERROR(CheckPeers(a, b));
  for (auto [from, to] : {std::pair{a, b}, std::pair{b, a}}) {
    // Each may have no chain or qdisc: nothing to clear then.
    Sh(absl::StrCat(kIp, " netns exec ", NamespaceOf(to), " nft delete chain inet weft_faults ",
                    ChainFor(from), " 2>/dev/null"))
        .IgnoreError();
    Sh(absl::StrCat(kIp, " netns exec ", NamespaceOf(from), " tc qdisc del dev ", to,
                    " root 2>/dev/null"))
        .IgnoreError();
  }
  return SetCableDown(a, b, false);
}

absl::StatusOr<NetnsFabric::PortCounters> NetnsFabric::Counters(absl::string_view device,
                                                                absl::string_view peer) const {
  RETURN_IF_ERROR(CheckPeers(device, peer));
  ASSIGN_OR_RETURN(const std::string text,
                   Sh(absl::StrCat(kIp, " netns exec ", NamespaceOf(device), " cat /sys/class/net/",
                                   peer, "/statistics/tx_packets /sys/class/net/", peer,
                                   "/statistics/rx_packets")));
  const std::vector<std::string> values =
      absl::StrSplit(absl::StripAsciiWhitespace(text), '\n');
  PortCounters counters;
  if (values.size() != 2 || !absl::SimpleAtoi(values[0], &counters.tx_packets) ||
      !absl::SimpleAtoi(values[1], &counters.rx_packets)) {
    return absl::InternalError(absl::StrCat("NetnsFabric: ", device, " port ", peer,
                                            " packet counters are not two numbers: '", text,
                                            "'"));
  }
  return counters;
}

}  // namespace weft::testing
