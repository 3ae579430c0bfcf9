// Pinglists: which probe streams every node sends, and at what rate, computed from the
// inventory (nodes in racks, NICs on rails cabled to ToRs). Three meshes, as Pingmesh
// and the pre-job checks of large RoCE clusters do:
//   - ToR mesh: every pair of same-rail NICs of different nodes under one ToR, both ways;
//   - rack to rack: for every ordered pair of racks, each node probes one node of the
//     other rack, NIC of rail r to NIC of rail r (Pingmesh's "server k of ToR i to server
//     k of ToR j"; the partner is chosen by rendezvous hashing of the names instead of by
//     position, so a node coming or going changes only the pairs it is in);
//   - across rails inside a node: every ordered pair of its NICs (a NIC and its ToR are
//     told apart only with these when few NICs share a ToR).
// Source ports are derived from the stream's names (stable across recomputations); a
// rack-to-rack pair gets more than one when its ToR has few streams leaving it, so that
// every uplink is crossed by some stream with probability `cover_probability`.
// Two rates, rounded up to whole probes/s: one for the streams that cross the spines, sized
// so the least-loaded ToR uplink (the fewest streams ECMP gives any uplink, with
// probability `cover_probability`) carries enough probes to see gray loss of
// `gray_loss_rate` within `gray_detect_s` with probability `detect_probability`; one for
// the streams inside a ToR, sized so every NIC cable (which both kinds cross) does too.
// "Within gray_detect_s" leaves the localiser `localiser_delay_s` to raise its verdict
// after the `min_losses`-th loss. Both rates are at least `min_probes_per_stream_per_s`,
// and both shrink by one factor where the per-node budget or `max_nic_capacity_share` of
// a NIC's line rate would be exceeded.
//
// Pure logic, deterministic: the same inventory gives the same pinglists.
#ifndef WEFT_PINGMESH_PINGLIST_H_
#define WEFT_PINGMESH_PINGLIST_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "pingmesh/probe.h"

namespace weft::pingmesh {

struct NicSpec {
  std::string name;  // mlx5_0
  int rail = 0;
  std::string tor;  // the switch its cable goes to
  double bps = 0;   // line rate, bits per second
};

struct NodeSpec {
  std::string name;
  std::string rack;
  std::vector<NicSpec> nics;
};

struct TorSpec {
  std::string name;
  int uplinks = 1;  // equal-cost links towards the spines
};

struct FabricInventory {
  std::vector<NodeSpec> nodes;
  std::vector<TorSpec> tors;  // every ToR a NIC names
};

struct PinglistOptions {
  uint8_t traffic_class = 3;
  // Detection target the rates are sized for (issue 22: 1e-3 within 5 s at p95), and the
  // losses the localiser needs before it blames a link (LocaliserOptions::min_losses).
  double gray_loss_rate = 1e-3;
  double gray_detect_s = 5;
  double detect_probability = 0.95;
  int min_losses = 4;
  // The localiser raises a link at the end of the window after the one in which the
  // min_losses-th loss came (LocaliserOptions::raise_after = 2 windows of 250 ms), so the
  // losses must be in this much before gray_detect_s.
  double localiser_delay_s = 0.5;
  // R-Pingmesh's ToR-mesh rate: a NIC fault shows within 100 ms on every stream.
  double min_probes_per_stream_per_s = 10;
  // Budgets: probes sent per node per second, and the probe traffic's share of a NIC's
  // line rate (a probe and its two answers, `probe_wire_bytes` each on the wire).
  double max_probes_per_node_per_s = 8000;
  double max_nic_capacity_share = 0.01;
  int probe_wire_bytes = 150;  // 40-byte UD payload, GRH, BTH, DETH, UDP, IP, Ethernet, ICRC
  double cover_probability = 0.99;
  int max_ports_per_pair = 8;
};

enum class StreamKind { kTorMesh, kRackToRack, kCrossRail };

struct PinglistEntry {
  ProbeKey key;
  StreamKind kind = StreamKind::kTorMesh;
  double probes_per_s = 0;
};

struct Pinglist {
  std::string node;
  std::vector<PinglistEntry> entries;  // sorted by key
};

struct PinglistPlan {
  std::vector<Pinglist> pinglists;  // one per node, sorted by node name
  double local_probes_per_s = 0;     // each stream inside a ToR
  double crossing_probes_per_s = 0;  // each stream through the spines
  // What the plan gives: the least-probed NIC cable and ToR uplink (probes per second per
  // direction; an uplink's from the fewest streams ECMP gives it with probability
  // cover_probability), the busiest node and NIC.
  double required_link_probes_per_s = 0;
  double min_nic_link_probes_per_s = 0;
  double min_uplink_probes_per_s = 0;
  double max_node_probes_per_s = 0;
  double max_nic_capacity_share = 0;
  // False when a budget capped the rate below what the detection target needs.
  bool meets_detection_target = true;
  size_t streams = 0;
};

// Fails (InvalidArgument) on duplicate node names, a NIC naming an unknown ToR, a ToR
// with no uplinks or bad options, naming the thing and the accepted range.
absl::StatusOr<PinglistPlan> BuildPinglists(const FabricInventory& inventory,
                                            const PinglistOptions& options);

// What the agents must change to go from `before` to `after`.
struct PinglistDiff {
  std::vector<PinglistEntry> added;
  std::vector<PinglistEntry> removed;
  std::vector<PinglistEntry> rerated;  // same stream, new rate (the new entry)
};
PinglistDiff DiffPinglists(const PinglistPlan& before, const PinglistPlan& after);

// The fewest probes over `paths` equal ECMP paths (uniform, independent choices) that
// cover them all with probability `probability`: the smallest k with
// Σ_{i=1..N} (−1)^(i+1)·C(N,i)·(1 − i/N)^k ≤ 1 − probability (R-Pingmesh, P = 0.99).
int ProbesToCover(int paths, double probability);

// The fewest of `streams` streams, each hashed onto one of `paths` equal ECMP paths
// (uniform, independent), that every path gets with probability `probability`: the
// largest k with paths·P(Binomial(streams, 1/paths) < k) ≤ 1 − probability (union bound).
double FewestStreamsPerPath(int streams, int paths, double probability);

// The fewest probes per second a link must carry so that a loss rate `loss_rate` yields at
// least `min_losses` losses within `seconds` with probability `probability` (Poisson).
double LinkProbesPerSecondForDetection(double loss_rate, double seconds, double probability,
                                       int min_losses);

}  // namespace weft::pingmesh

#endif  // WEFT_PINGMESH_PINGLIST_H_
