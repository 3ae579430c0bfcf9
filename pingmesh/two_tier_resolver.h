// TwoTierResolver: probe paths on a leaf-spine fabric as the controller knows it without
// traceroute: each NIC's cable to its ToR (from LLDP, or the rack's ToR), and the ToRs'
// uplinks to the spine layer as one bundle per ToR and direction. A probe between NICs
// under one ToR crosses the two NIC cables; between ToRs it also crosses the source
// ToR's uplink bundle ("tor-a->spines") and the destination ToR's downlink bundle
// ("spines->tor-b"), because which spine ECMP picked is not known. A lossy leaf-spine
// link is therefore named by its ToR's bundle until traceroute pins the spine.
//
// Thread-compatible: Resolve interns links, so one thread (the localiser's) calls it.
#ifndef WEFT_PINGMESH_TWO_TIER_RESOLVER_H_
#define WEFT_PINGMESH_TWO_TIER_RESOLVER_H_

#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "pingmesh/path_resolver.h"
#include "pingmesh/probe.h"

namespace weft::pingmesh {

// The pseudo-device standing for every spine.
inline constexpr char kSpineLayer[] = "spines";

class TwoTierResolver final : public PathResolver {
 public:
  // Sets (or moves) the ToR a NIC is cabled to. Paths resolved before keep their links.
  void SetNicTor(const std::string& node, const std::string& nic, const std::string& tor);

  absl::StatusOr<ProbePath> Resolve(const ProbeKey& key) override;
  const LinkInfo& Link(int id) const override { return links_[id]; }

  // The id of the directed link from → to, created on first use (for a resolver that
  // builds on this one, pingmesh/traced_resolver.h, so both share one link table).
  int LinkId(const std::string& from, bool from_switch, const std::string& to,
             bool to_switch);
  // The ToR SetNicTor gave the NIC; NotFound naming it otherwise.
  absl::StatusOr<std::string> TorOf(const std::string& node, const std::string& nic) const;

 private:

  absl::flat_hash_map<std::string, std::string> nic_tor_;  // "node/nic" → ToR
  absl::flat_hash_map<std::string, int> link_ids_;         // link name → id
  std::vector<LinkInfo> links_;
};

}  // namespace weft::pingmesh

#endif  // WEFT_PINGMESH_TWO_TIER_RESOLVER_H_
