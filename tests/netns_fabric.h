// NetnsFabric: a small leaf-spine RoCE-style fabric made of real Linux network
// namespaces, for tests that must see real packets take real ECMP paths (pingmesh and
// fault localisation, issue 22). Hosts, ToRs and spines are each a namespace; every
// cable is a veth pair; ToRs and spines route with the kernel's multipath routes, hashing
// on the 5-tuple (fib_multipath_hash_policy 1), so a UDP source port pins a path as a
// RoCE v2 source port does on a real fabric. Faults are injected the ways this kernel
// allows (no netem here): random loss and a black hole for one UDP source port with
// nftables, a throttled cable with tc tbf, a cable set down. Every router answers
// traceroute (ICMP time-exceeded, not rate-limited per destination).
//
// Names follow the twin (sim/twin.h): hosts gpu-a01, gpu-a02, ... under tor-a, tor-b,
// ...; spines spine-0, spine-1, ...; cables "gpu-a01--tor-a" and "tor-a--spine-0"
// (lower tier first). Inside every namespace the interface towards a peer is named after
// the peer, so `ip -n <ns of tor-a> -s link show spine-0` is tor-a's port to spine-0.
//
// Addressing (inside the namespaces only): host i of ToR j is 10.j.i.2/30 (ToR side
// 10.j.i.1); ToR j to spine k is 10.(100+k).j.2/30 (spine side .1). Each ToR has a
// multipath route to every other ToR's 10.j.0.0/16 over all spines; each spine a route to
// each ToR's. With `management`, every host also has a veth to the test's own namespace
// (an out-of-band management network, as real clusters have), so processes in a host
// namespace reach daemons listening on 0.0.0.0 at host(i).management_gateway.
//
// A cable set down: its two ends stop using it at once (the kernel marks their nexthops
// over it dead), while routers further away keep hashing onto paths through it, which are
// lost, as on a fabric before routing has converged: that is what a pingmesh must notice
// and name.
//
// Needs root, iproute2 and, for loss and black holes, nft: Create fails with a message
// saying which, and tests GTEST_SKIP with it. Namespaces carry the test's pid in their
// names, so tests may run at once; the destructor deletes everything it made.
//
// Example:
//   absl::StatusOr<std::unique_ptr<NetnsFabric>> fabric = NetnsFabric::Create({});
//   if (!fabric.ok()) GTEST_SKIP() << fabric.status().message();
//   (*fabric)->DropRandom("tor-a", "spine-0", 0.01);  // 1 % of tor-a -> spine-0 lost
//   (*fabric)->Exec("gpu-a01", "ping -c1 10.1.1.2");
#ifndef WEFT_TESTS_NETNS_FABRIC_H_
#define WEFT_TESTS_NETNS_FABRIC_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace weft::testing {

struct NetnsFabricSpec {
  int spines = 2;
  int tors = 2;            // at most 26 (tor-a .. tor-z)
  int hosts_per_tor = 2;   // at most 99
  bool management = true;  // a veth from each host to the test's namespace
};

struct NetnsHost {
  std::string name;  // gpu-a01
  std::string tor;   // tor-a
  std::string ns;    // the namespace it lives in
  std::string fabric_ip;           // 10.j.i.2, on its interface named after its ToR
  std::string management_ip;       // its end of the management veth ("" without)
  std::string management_gateway;  // the test namespace's end: where daemons listen
};

class NetnsFabric {
 public:
  static absl::StatusOr<std::unique_ptr<NetnsFabric>> Create(const NetnsFabricSpec& spec);
  ~NetnsFabric();
  NetnsFabric(const NetnsFabric&) = delete;
  NetnsFabric& operator=(const NetnsFabric&) = delete;

  const std::vector<NetnsHost>& hosts() const { return hosts_; }
  const NetnsHost& host(absl::string_view name) const;
  // Every cable, "gpu-a01--tor-a" and "tor-a--spine-0" forms.
  const std::vector<std::string>& cables() const { return cables_; }
  // The namespace of a host, ToR or spine by its name.
  std::string NamespaceOf(absl::string_view device) const;
  // argv prefix running a command inside `device`'s namespace.
  std::vector<std::string> Wrapper(absl::string_view device) const;

  // Runs `command` with /bin/sh inside `device`'s namespace; its stdout, or an error with
  // the command, exit status and stderr.
  absl::StatusOr<std::string> Exec(absl::string_view device, absl::string_view command) const;

  // A new socket (AF_INET, `type` e.g. SOCK_DGRAM) in `device`'s namespace, usable from
  // any thread of the test; the caller closes it.
  absl::StatusOr<int> SocketIn(absl::string_view device, int type) const;
  // Runs `fn` on a thread inside `device`'s namespace and waits for it: sockets it makes
  // are that namespace's, usable from any thread afterwards. An error (fn not run) when
  // the namespace cannot be joined.
  absl::Status RunIn(absl::string_view device, const std::function<void()>& fn) const;
  // `device`'s fabric addresses, one per cable, in creation order: a switch answers
  // traceroute from the one facing the prober (a spine: one per ToR).
  std::vector<std::string> AddressesOf(absl::string_view device) const;

  // Packets `from` sends to its peer `to` (one direction of a cable) are dropped with
  // probability `share` (0..1], or those with UDP source port `port`; nftables at
  // `to`'s ingress from `from`.
  absl::Status DropRandom(absl::string_view from, absl::string_view to, double share);
  absl::Status BlackHoleUdpSourcePort(absl::string_view from, absl::string_view to, int port);
  // `from`'s port towards `to` sends at most `rate_bps` (tc tbf).
  absl::Status Throttle(absl::string_view from, absl::string_view to, double rate_bps);
  // Both ends of the cable between `a` and `b` down (or up again).
  absl::Status SetCableDown(absl::string_view a, absl::string_view b, bool down);
  // Removes every fault of the cable between `a` and `b`, both directions, and sets it up.
  absl::Status ClearCable(absl::string_view a, absl::string_view b);

  // Packets `device`'s port towards `peer` has sent and received (ip -s link).
  struct PortCounters {
    int64_t tx_packets = 0;
    int64_t rx_packets = 0;
  };
  absl::StatusOr<PortCounters> Counters(absl::string_view device, absl::string_view peer) const;

 private:
  explicit NetnsFabric(std::string prefix) : prefix_(std::move(prefix)) {}
  absl::Status Build(const NetnsFabricSpec& spec);
  absl::Status AddDevice(const std::string& device);
  absl::Status Cable(const std::string& a, const std::string& a_ip, const std::string& b,
                     const std::string& b_ip);
  // `ip route replace <route>` in `device`'s namespace, remembered to restore it.
  absl::Status AddRoute(const std::string& device, const std::string& route);
  absl::Status CheckPeers(absl::string_view from, absl::string_view to) const;
  // Adds a rule to `to`'s chain for traffic from `from` (creating the chain).
  absl::Status AddIngressRule(absl::string_view from, absl::string_view to,
                              const std::string& rule);

  const std::string prefix_;  // "w<pid>-"
  std::vector<std::string> devices_;  // in creation order
  std::vector<std::string> management_links_;  // in the test's namespace
  std::vector<NetnsHost> hosts_;
  std::vector<std::string> cables_;
  absl::flat_hash_map<std::string, std::vector<std::string>> peers_;
  absl::flat_hash_map<std::string, std::vector<std::string>> routes_;
  absl::flat_hash_map<std::string, std::vector<std::string>> addresses_;
};

}  // namespace weft::testing

#endif  // WEFT_TESTS_NETNS_FABRIC_H_
