// TracedResolver: probe paths from the agents' traceroutes where there are some, and
// from the two-tier topology (pingmesh/two_tier_resolver.h) otherwise. A traceroute with
// a stream's own 5-tuple (weft.v1.ProbePathTrace) lists the routers ECMP picked for its
// source port, so the stream's forward path names the exact spine ("rack-a/tor->spine-0",
// "spine-0->rack-b/tor") instead of the ToRs' uplink bundles. The answer's path (the
// reverse 5-tuple, hashed by the destination's ToR) is not traced and stays the bundles.
//
// Hop address → switch name: the configured switches' addresses first (SetSwitches: every
// address a switch answers from, since a spine answers from the port facing the tracing
// ToR and all of them must name one device, or the tomography sees one link as several);
// then ToR addresses learnt from traces (the first hop of a trace is the source NIC's ToR,
// the last hop of a trace that reached its destination is the destination NIC's ToR, as
// SetNicTor knows them); else the address itself ("10.100.0.1").
//
// A trace is used when it reached the destination and every router answered; a trace that
// stops short (the fault being traced may drop it) or has a silent hop leaves the stream's
// previous path as it was. AddTrace says when a stream's path changed, so the caller can
// have the localiser resolve it again (Localiser::ResolveAgain): paths resolved before
// keep their links until then.
//
// Thread-compatible: one thread (the controller's pingmesh ticker) calls it.
//
// Example:
//   TracedResolver resolver;
//   resolver.SetNicTor("gpu-a01", "mlx5_0", "rack-a/tor");
//   RETURN_IF_ERROR(resolver.SetSwitches({{"spine-0", {"10.100.0.1", "10.100.1.1"}}}));
//   ASSIGN_OR_RETURN(bool changed, resolver.AddTrace(trace));
//   if (changed) localiser.ResolveAgain(trace.key).IgnoreError();
#ifndef WEFT_PINGMESH_TRACED_RESOLVER_H_
#define WEFT_PINGMESH_TRACED_RESOLVER_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "pingmesh/path_resolver.h"
#include "pingmesh/probe.h"
#include "pingmesh/two_tier_resolver.h"

namespace weft::pingmesh {

// One traceroute of a stream, as the controller reads a weft.v1.ProbePathTrace.
struct PathTrace {
  ProbeKey key;
  std::vector<std::string> hops;  // the router answering TTL i + 1; "" when none did
  bool reached = false;           // the destination answered
};

// A switch and every address it answers traceroute from.
struct SwitchAddresses {
  std::string name;
  std::vector<std::string> addresses;
};

// Longest trace accepted (TTL 1..64).
inline constexpr int kMaxTraceHops = 64;

class TracedResolver final : public PathResolver {
 public:
  // As TwoTierResolver::SetNicTor.
  void SetNicTor(const std::string& node, const std::string& nic, const std::string& tor);

  // Replaces the configured switches. INVALID_ARGUMENT (nothing changes) for an empty
  // name, an address that is not a numeric IPv4/IPv6 address, or one claimed twice.
  absl::Status SetSwitches(const std::vector<SwitchAddresses>& switches);

  // Checks and records a trace. INVALID_ARGUMENT naming the stream and the field for an
  // empty node or NIC, a stream from a NIC to itself, a source port outside 1..65535,
  // more than kMaxTraceHops hops, or a hop that is neither "" nor a numeric address.
  // Otherwise true when the stream's traced path is new or differs from the one before
  // (false when the trace is not used: see the header comment).
  absl::StatusOr<bool> AddTrace(const PathTrace& trace);

  // The switch a hop address names (see the header comment).
  std::string SwitchOf(const std::string& address) const;

  absl::StatusOr<ProbePath> Resolve(const ProbeKey& key) override;
  const LinkInfo& Link(int id) const override { return two_tier_.Link(id); }

  size_t traced_streams() const { return traced_.size(); }

 private:
  TwoTierResolver two_tier_;                                  // NICs' ToRs and the one link table
  absl::flat_hash_map<std::string, std::string> configured_;  // address → switch
  absl::flat_hash_map<std::string, std::string> learnt_;      // address → ToR
  absl::flat_hash_map<ProbeKey, std::vector<std::string>> traced_;  // hops of a used trace
};

}  // namespace weft::pingmesh

#endif  // WEFT_PINGMESH_TRACED_RESOLVER_H_
