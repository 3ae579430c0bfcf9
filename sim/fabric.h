// The fabric twin's graph (issue 20): GPU nodes with NICs, ToR/leaf and spine switches,
// and directed links with a capacity and a propagation delay. Two builders give the
// layouts Weft's clusters use: leaf-spine with one ToR per rack and a configurable
// oversubscription, and rail-optimised (NIC i of every node in a group on rail leaf i).
// EcmpPath routes a flow over equal-cost shortest paths by hashing its RoCE v2 5-tuple
// at every switch, as the switches do, so the same tuple always takes the same path and
// the UDP source port is the entropy.
//
// Vertices are NICs and switches; a node is a group of NICs (no link inside a node). Every
// cable is two directed links, one per direction, created one after the other (link id
// 2k and 2k + 1). Link ids, switch ids and NIC ids are dense indices.
//
// Pure logic. A Fabric is immutable once built; EcmpPath keeps a per-destination-switch
// distance cache, so it is not thread-safe: one thread routes on it (or one Fabric per
// thread).
//
// Example:
//   LeafSpineOptions options;
//   options.racks = 4; options.nodes_per_rack = 16; options.nics_per_node = 8;
//   options.nic_bps = 400e9; options.uplinks_per_tor = 8; options.oversubscription = 2;
//   ASSIGN_OR_RETURN(Fabric fabric, BuildLeafSpine(options));
//   ASSIGN_OR_RETURN(std::vector<int> links, fabric.EcmpPath({.src_nic = 0, .dst_nic = 200,
//                                                           .udp_src_port = 49152}));
#ifndef WEFT_SIM_FABRIC_H_
#define WEFT_SIM_FABRIC_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace weft::sim {

// RoCE v2 runs over UDP to this destination port; the source port is the flow's entropy.
inline constexpr uint16_t kRoceV2UdpPort = 4791;
inline constexpr uint8_t kUdpProtocol = 17;

enum class SwitchTier { kLeaf, kSpine };

struct Nic {
  int node = 0;   // the GPU node it sits in
  int index = 0;  // its index inside the node (the rail in a rail-optimised fabric)
  double bps = 0;
  uint32_t ipv4 = 0;  // 10.0.0.0/8, 10.0.0.1 for NIC 0 (NicAddress)
  int uplink = -1;    // the link NIC → its leaf
  int downlink = -1;  // the link leaf → NIC
  int leaf = -1;      // the switch it is cabled to
};

struct Switch {
  SwitchTier tier = SwitchTier::kLeaf;
  std::string name;  // "tor3", "rail2.1" (rail 2 of group 1), "spine0"
};

// An endpoint of a link: a NIC or a switch.
struct Vertex {
  enum class Kind { kNic, kSwitch } kind = Kind::kNic;
  int id = 0;
  bool operator==(const Vertex& other) const { return kind == other.kind && id == other.id; }
};

struct Link {
  Vertex from;
  Vertex to;
  double capacity_bps = 0;
  double propagation_delay_s = 0;
};

// A RoCE v2 flow's 5-tuple, less what is fixed (UDP, destination port 4791): the source
// and destination NICs give the addresses.
struct FlowTuple {
  int src_nic = 0;
  int dst_nic = 0;
  uint16_t udp_src_port = 0;
};

// The ECMP hash a switch applies: FNV-1a (64-bit) over the 13 bytes of the 5-tuple in
// network order (source IPv4, destination IPv4, protocol 17, source port, destination
// port 4791), seeded by folding the switch id in first, then the splitmix64 finalizer so
// low bits depend on every input bit; the next hop is hash mod (number of equal-cost
// links), over those links in id order. The per-switch seed keeps consecutive tiers from
// making the same choice (hash polarization).
uint64_t EcmpHash(uint32_t src_ipv4, uint32_t dst_ipv4, uint16_t udp_src_port, int switch_id);

// 10.0.0.0/8 address of NIC `nic` (10.0.0.1 for NIC 0).
uint32_t NicAddress(int nic);

class Fabric {
 public:
  Fabric() = default;

  const std::vector<Nic>& nics() const { return nics_; }
  const std::vector<Switch>& switches() const { return switches_; }
  const std::vector<Link>& links() const { return links_; }
  int num_nodes() const { return num_nodes_; }

  // The links of the flow's path from its source NIC to its destination NIC: the NIC's
  // uplink, then at each switch the equal-cost next hop EcmpHash picks among the links
  // that lower the hop count to the destination. Fails (InvalidArgument) on an unknown
  // NIC or a flow to itself, NotFound if the destination cannot be reached.
  absl::StatusOr<std::vector<int>> EcmpPath(const FlowTuple& flow);
  // The same walk over the links that are up (`link_down`, one entry per link): ECMP
  // picks among the next hops left, by hop counts over the links left (not cached).
  // NotFound when the flow's own NIC link is down or no path is left.
  absl::StatusOr<std::vector<int>> EcmpPath(const FlowTuple& flow,
                                            const std::vector<bool>& link_down);

  // Sum of propagation delays along `path`.
  double PathDelaySeconds(const std::vector<int>& path) const;

  // Builder interface (the builders below use it; tests may build small graphs).
  int AddNode() { return num_nodes_++; }
  int AddNic(int node, int index, double bps);
  int AddSwitch(SwitchTier tier, std::string name);
  // A cable: two directed links, a → b (the returned id) and b → a (the id + 1).
  int AddCable(Vertex a, Vertex b, double capacity_bps, double propagation_delay_s);

 private:
  // Hop counts from every switch to switch `dst`, over switch-to-switch links (cached).
  const std::vector<int>& DistancesTo(int dst_switch);
  // The same over the links not in `link_down` (nullptr: every link).
  std::vector<int> Distances(int dst_switch, const std::vector<bool>* link_down) const;
  // EcmpPath over the links not in `link_down` (nullptr: every link is up).
  absl::StatusOr<std::vector<int>> Walk(const FlowTuple& flow, const std::vector<bool>* link_down);

  int num_nodes_ = 0;
  std::vector<Nic> nics_;
  std::vector<Switch> switches_;
  std::vector<Link> links_;
  std::vector<std::vector<int>> switch_out_links_;  // per switch, ascending link id
  std::vector<std::vector<int>> distance_cache_;    // per destination switch; empty = not yet
};

// Leaf-spine: `racks` racks of `nodes_per_rack` nodes with `nics_per_node` NICs of
// `nic_bps`, every NIC on its rack's ToR. Each ToR has `uplinks_per_tor` uplinks spread
// round-robin over `spines` spines (a ToR may have several parallel links to one spine;
// ECMP treats them as separate next hops), each of
//   nodes_per_rack · nics_per_node · nic_bps / (oversubscription · uplinks_per_tor),
// so oversubscription = 1 is non-blocking and 3 means 3:1.
struct LeafSpineOptions {
  int racks = 2;
  int nodes_per_rack = 4;
  int nics_per_node = 1;
  double nic_bps = 100e9;
  int uplinks_per_tor = 4;
  int spines = 0;  // 0: one spine per uplink (uplinks_per_tor spines)
  double oversubscription = 1;
  double nic_link_delay_s = 1e-7;     // ~20 m of fibre and the serdes
  double fabric_link_delay_s = 5e-7;  // ~100 m
};
absl::StatusOr<Fabric> BuildLeafSpine(const LeafSpineOptions& options);

// Rail-optimised: nodes are grouped `nodes_per_group` at a time (a scalable unit); in each
// group NIC i of every node is cabled to rail leaf i of the group, so same-rail traffic
// inside a group crosses one leaf. Every rail leaf has `uplinks_per_leaf` uplinks spread
// round-robin over `spines` spines, sized like the leaf-spine's (nodes_per_group · nic_bps
// / (oversubscription · uplinks_per_leaf)). The last group may be partial.
struct RailOptions {
  int nodes = 8;
  int nodes_per_group = 8;
  int nics_per_node = 8;
  double nic_bps = 400e9;
  int uplinks_per_leaf = 4;
  int spines = 0;  // 0: uplinks_per_leaf spines
  double oversubscription = 1;
  double nic_link_delay_s = 1e-7;
  double fabric_link_delay_s = 5e-7;
};
absl::StatusOr<Fabric> BuildRailOptimized(const RailOptions& options);

}  // namespace weft::sim

#endif  // WEFT_SIM_FABRIC_H_
