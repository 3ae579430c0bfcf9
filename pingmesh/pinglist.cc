#include "pingmesh/pinglist.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace weft::pingmesh {
namespace {

uint64_t Fnv1a(absl::string_view text) {
  uint64_t hash = 1469598103934665603ull;
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  // splitmix64 finalizer: every output bit depends on every input bit.
  hash ^= hash >> 30;
  hash *= 0xbf58476d1ce4e5b9ull;
  hash ^= hash >> 27;
  hash *= 0x94d049bb133111ebull;
  return hash ^ (hash >> 31);
}

std::string NicId(absl::string_view node, absl::string_view nic) {
  return absl::StrCat(node, "/", nic);
}

// The i-th source port of a stream, from its names only: stable when others come and go.
uint16_t PortOf(const ProbeKey& key, int i) {
  uint64_t h = Fnv1a(absl::StrCat(key.src_node, "/", key.src_nic, ">", key.dst_node, "/",
                                  key.dst_nic, "#", i));
  return static_cast<uint16_t>(kMinProbeUdpSourcePort | (h & 0x3FFF));
}

absl::Status CheckOptions(const PinglistOptions& o) {
  if (!(o.gray_loss_rate > 0 && o.gray_loss_rate < 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("pinglist: gray_loss_rate ", o.gray_loss_rate, " must be in (0, 1)"));
  }
  if (!(o.localiser_delay_s >= 0 && o.gray_detect_s > o.localiser_delay_s)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "pinglist: gray_detect_s ", o.gray_detect_s, " must exceed localiser_delay_s ",
        o.localiser_delay_s, ", which must be >= 0"));
  }
  if (!(o.min_probes_per_stream_per_s >= 0)) {
    return absl::InvalidArgumentError(absl::StrCat("pinglist: min_probes_per_stream_per_s ",
                                                   o.min_probes_per_stream_per_s,
                                                   " must be >= 0"));
  }
  if (!(o.detect_probability > 0 && o.detect_probability < 1) ||
      !(o.cover_probability > 0 && o.cover_probability < 1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "pinglist: detect_probability ", o.detect_probability, " and cover_probability ",
        o.cover_probability, " must be in (0, 1)"));
  }
  if (o.min_losses < 1 || o.max_ports_per_pair < 1 || o.probe_wire_bytes < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "pinglist: min_losses ", o.min_losses, ", max_ports_per_pair ", o.max_ports_per_pair,
        " and probe_wire_bytes ", o.probe_wire_bytes, " must be >= 1"));
  }
  if (!(o.max_probes_per_node_per_s > 0) ||
      !(o.max_nic_capacity_share > 0 && o.max_nic_capacity_share <= 1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "pinglist: max_probes_per_node_per_s ", o.max_probes_per_node_per_s,
        " must be > 0 and max_nic_capacity_share ", o.max_nic_capacity_share,
        " in (0, 1]"));
  }
  return absl::OkStatus();
}

struct NicRef {
  const NodeSpec* node;
  const NicSpec* nic;
};

}  // namespace

int ProbesToCover(int paths, double probability) {
  if (paths <= 1) return 1;
  for (int k = paths;; ++k) {
    double miss = 0;  // P(some path is never taken)
    if (paths <= 64) {
      double binom = 1;
      for (int i = 1; i <= paths; ++i) {
        binom = binom * (paths - i + 1) / i;
        double term = binom * std::pow(1.0 - static_cast<double>(i) / paths, k);
        miss += (i % 2 == 1) ? term : -term;
      }
    } else {
      miss = paths * std::pow(1.0 - 1.0 / paths, k);  // union bound: never too few
    }
    if (miss <= 1 - probability) return k;
  }
}

double FewestStreamsPerPath(int streams, int paths, double probability) {
  if (paths <= 1) return streams;
  // P(Binomial(streams, 1/paths) = i), in logs: (1 − 1/paths)^streams underflows.
  const double q = 1.0 / paths;
  const double log_n = std::lgamma(streams + 1.0);
  double below = 0;  // P(X < k)
  int k = 0;
  for (; k <= streams; ++k) {
    double pmf = std::exp(log_n - std::lgamma(k + 1.0) - std::lgamma(streams - k + 1.0) +
                          k * std::log(q) + (streams - k) * std::log1p(-q));
    if (paths * (below + pmf) > 1 - probability) break;
    below += pmf;
  }
  return k;
}

double LinkProbesPerSecondForDetection(double loss_rate, double seconds, double probability,
                                       int min_losses) {
  // P(Poisson(λ) >= c) grows with λ: bisect for the smallest λ reaching `probability`.
  auto tail = [min_losses](double lambda) {
    double term = std::exp(-lambda), below = 0;
    for (int i = 0; i < min_losses; ++i) {
      below += term;
      term *= lambda / (i + 1);
    }
    return 1 - below;
  };
  double lo = 0, hi = 1;
  while (tail(hi) < probability) hi *= 2;
  for (int i = 0; i < 100; ++i) {
    double mid = (lo + hi) / 2;
    (tail(mid) >= probability ? hi : lo) = mid;
  }
  return hi / (loss_rate * seconds);
}

absl::StatusOr<PinglistPlan> BuildPinglists(const FabricInventory& inventory,
                                            const PinglistOptions& options) {
  if (absl::Status s = CheckOptions(options); !s.ok()) return s;
  std::map<std::string, const TorSpec*> tors;
  for (const TorSpec& tor : inventory.tors) {
    if (tor.uplinks < 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "pinglist: ToR ", tor.name, " has ", tor.uplinks, " uplinks; it needs at least 1"));
    }
    tors[tor.name] = &tor;
  }
  std::map<std::string, const NodeSpec*> nodes;  // sorted by name: deterministic order
  for (const NodeSpec& node : inventory.nodes) {
    if (!nodes.emplace(node.name, &node).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("pinglist: node ", node.name, " is listed twice"));
    }
    std::set<std::string> nic_names;
    for (const NicSpec& nic : node.nics) {
      if (!nic_names.insert(nic.name).second) {
        return absl::InvalidArgumentError(
            absl::StrCat("pinglist: node ", node.name, " lists NIC ", nic.name, " twice"));
      }
      if (!tors.count(nic.tor)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "pinglist: NIC ", node.name, "/", nic.name, " is cabled to ToR '", nic.tor,
            "', which the inventory does not list"));
      }
      if (!(nic.bps > 0)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "pinglist: NIC ", node.name, "/", nic.name, " has line rate ", nic.bps,
            " b/s; it must be > 0"));
      }
    }
  }

  // Streams with one port each, by kind; rack-to-rack pairs get their ports below.
  std::map<ProbeKey, StreamKind> streams;
  auto add = [&](const NicRef& src, const NicRef& dst, StreamKind kind) {
    ProbeKey key{src.node->name, src.nic->name, dst.node->name, dst.nic->name, 0,
                 options.traffic_class};
    streams.emplace(key, kind);
  };
  // ToR mesh: same-rail NICs of different nodes under one ToR.
  std::map<std::pair<std::string, int>, std::vector<NicRef>> by_tor_rail;
  std::map<std::string, std::vector<const NodeSpec*>> by_rack;
  for (const auto& [name, node] : nodes) {
    by_rack[node->rack].push_back(node);
    for (const NicSpec& nic : node->nics) by_tor_rail[{nic.tor, nic.rail}].push_back({node, &nic});
  }
  for (const auto& [tor_rail, nics] : by_tor_rail) {
    for (const NicRef& a : nics) {
      for (const NicRef& b : nics) {
        if (a.node != b.node) add(a, b, StreamKind::kTorMesh);
      }
    }
  }
  // Rack to rack: each node probes its rendezvous partner in every other rack, rail to rail.
  for (const auto& [rack, members] : by_rack) {
    for (const NodeSpec* src : members) {
      for (const auto& [other_rack, others] : by_rack) {
        if (other_rack == rack) continue;
        const NodeSpec* partner = nullptr;
        uint64_t best = 0;
        for (const NodeSpec* candidate : others) {
          uint64_t weight = Fnv1a(absl::StrCat(src->name, "|", candidate->name));
          if (partner == nullptr || weight > best) best = weight, partner = candidate;
        }
        for (const NicSpec& nic : src->nics) {
          for (const NicSpec& peer : partner->nics) {
            if (peer.rail == nic.rail) {
              add({src, &nic}, {partner, &peer}, StreamKind::kRackToRack);
              break;
            }
          }
        }
      }
    }
  }
  // Across rails inside a node.
  for (const auto& [name, node] : nodes) {
    for (const NicSpec& a : node->nics) {
      for (const NicSpec& b : node->nics) {
        if (&a != &b) add({node, &a}, {node, &b}, StreamKind::kCrossRail);
      }
    }
  }

  absl::flat_hash_map<std::string, const NicSpec*> nic_of;
  for (const auto& [name, node] : nodes) {
    for (const NicSpec& nic : node->nics) nic_of[NicId(name, nic.name)] = &nic;
  }
  auto tor_of = [&](absl::string_view node, absl::string_view nic) -> const std::string& {
    return nic_of.at(NicId(node, nic))->tor;
  };
  // Ports per rack-to-rack stream, per source ToR: enough streams leave the ToR to cross
  // each of its uplinks with probability cover_probability.
  std::map<std::string, int> leaving;
  for (const auto& [key, kind] : streams) {
    const std::string& src_tor = tor_of(key.src_node, key.src_nic);
    if (src_tor != tor_of(key.dst_node, key.dst_nic)) ++leaving[src_tor];
  }
  std::map<std::string, int> ports_per_pair;
  for (const auto& [name, tor] : tors) {
    int needed = ProbesToCover(tor->uplinks, options.cover_probability);
    int have = std::max(1, leaving[name]);
    ports_per_pair[name] =
        std::clamp((needed + have - 1) / have, 1, options.max_ports_per_pair);
  }

  std::map<std::string, std::vector<PinglistEntry>> per_node;
  // Streams through each NIC's cable (both ways; those it sends), inside its ToR and
  // through the spines.
  struct NicStreams {
    int local = 0, local_out = 0, crossing = 0, crossing_out = 0;
  };
  std::map<std::string, NicStreams> nic_streams;
  std::map<std::string, int> crossing;  // per ToR
  for (const auto& [base, kind] : streams) {
    int ports = kind == StreamKind::kRackToRack
                    ? ports_per_pair[tor_of(base.src_node, base.src_nic)]
                    : 1;
    std::set<uint16_t> used;
    for (int i = 0; static_cast<int>(used.size()) < ports; ++i) {
      ProbeKey key = base;
      key.udp_src_port = PortOf(base, i);
      if (!used.insert(key.udp_src_port).second) continue;
      per_node[key.src_node].push_back({key, kind, 0});
      const std::string& src_tor = tor_of(key.src_node, key.src_nic);
      const std::string& dst_tor = tor_of(key.dst_node, key.dst_nic);
      NicStreams& src = nic_streams[NicId(key.src_node, key.src_nic)];
      NicStreams& dst = nic_streams[NicId(key.dst_node, key.dst_nic)];
      if (src_tor != dst_tor) {
        ++crossing[src_tor], ++crossing[dst_tor];
        ++src.crossing, ++src.crossing_out, ++dst.crossing;
      } else {
        ++src.local, ++src.local_out, ++dst.local;
      }
    }
  }

  PinglistPlan plan;
  plan.required_link_probes_per_s = LinkProbesPerSecondForDetection(
      options.gray_loss_rate, options.gray_detect_s - options.localiser_delay_s,
      options.detect_probability, options.min_losses);
  const double required = plan.required_link_probes_per_s;
  // Two rates: streams that cross the spines (the only probes an uplink sees) and streams
  // inside a ToR (which only NIC cables see). One rate for all made the ToR mesh, the
  // most streams, pay for the uplinks.
  // Uplinks: a ToR's crossing streams land on its uplinks by the switches' ECMP hash, so
  // the least-loaded uplink gets fewer than the mean; size for the fewest streams any of
  // them gets with probability cover_probability (each direction half of the miss).
  double fewest_uplink_streams = -1;
  for (const auto& [name, count] : crossing) {
    double fewest = FewestStreamsPerPath(count, tors.at(name)->uplinks,
                                         1 - (1 - options.cover_probability) / 2);
    if (fewest_uplink_streams < 0 || fewest < fewest_uplink_streams) {
      fewest_uplink_streams = fewest;
    }
  }
  double crossing_rate = options.min_probes_per_stream_per_s;
  if (fewest_uplink_streams > 0) {
    crossing_rate = std::max(crossing_rate, required / fewest_uplink_streams);
  }
  // NIC cables: a NIC's streams both ways cross its cable once each way; a NIC with no
  // stream inside its ToR leans on the crossing rate alone.
  for (const auto& [id, streams] : nic_streams) {
    if (streams.local == 0 && streams.crossing > 0) {
      crossing_rate = std::max(crossing_rate, required / streams.crossing);
    }
  }
  crossing_rate = std::ceil(crossing_rate);
  double local_rate = options.min_probes_per_stream_per_s;
  for (const auto& [id, streams] : nic_streams) {
    if (streams.local > 0) {
      local_rate =
          std::max(local_rate, (required - streams.crossing * crossing_rate) / streams.local);
    }
  }
  local_rate = std::ceil(local_rate);
  // Budgets: the busiest sender, and each NIC's busier direction (a probe out, two answers
  // back per probe it answers). Over budget, both rates shrink by the same factor.
  auto node_probes = [&](const std::vector<PinglistEntry>& entries, double local,
                         double cross) {
    double sum = 0;
    for (const PinglistEntry& e : entries) {
      sum += tor_of(e.key.src_node, e.key.src_nic) == tor_of(e.key.dst_node, e.key.dst_nic)
                 ? local
                 : cross;
    }
    return sum;
  };
  auto nic_share = [&](const std::string& id, double bps, double local, double cross) {
    const NicStreams& n = nic_streams[id];
    double out = n.local_out * local + n.crossing_out * cross;
    double in = (n.local - n.local_out) * local + (n.crossing - n.crossing_out) * cross;
    return std::max(out + 2 * in, in + 2 * out) * options.probe_wire_bytes * 8 / bps;
  };
  double scale = 1;
  for (const auto& [node, entries] : per_node) {
    double probes = node_probes(entries, local_rate, crossing_rate);
    if (probes > 0) scale = std::min(scale, options.max_probes_per_node_per_s / probes);
  }
  for (const auto& [name, node] : nodes) {
    for (const NicSpec& nic : node->nics) {
      double share = nic_share(NicId(name, nic.name), nic.bps, local_rate, crossing_rate);
      if (share > 0) scale = std::min(scale, options.max_nic_capacity_share / share);
    }
  }
  local_rate *= scale;
  crossing_rate *= scale;
  plan.local_probes_per_s = local_rate;
  plan.crossing_probes_per_s = crossing_rate;
  bool have_nic = false;
  for (const auto& [id, streams] : nic_streams) {
    double probes = streams.local * local_rate + streams.crossing * crossing_rate;
    if (probes == 0) continue;
    if (!have_nic || probes < plan.min_nic_link_probes_per_s) {
      plan.min_nic_link_probes_per_s = probes, have_nic = true;
    }
  }
  plan.min_uplink_probes_per_s = std::max(0.0, fewest_uplink_streams) * crossing_rate;
  // 1e-9: the rates were rounded up, and a budget's factor may land exactly on the need.
  plan.meets_detection_target =
      plan.min_nic_link_probes_per_s >= required * (1 - 1e-9) &&
      (crossing.empty() || plan.min_uplink_probes_per_s >= required * (1 - 1e-9));
  for (auto& [node, entries] : per_node) {
    for (PinglistEntry& entry : entries) {
      entry.probes_per_s = tor_of(entry.key.src_node, entry.key.src_nic) ==
                                   tor_of(entry.key.dst_node, entry.key.dst_nic)
                               ? local_rate
                               : crossing_rate;
    }
    std::sort(entries.begin(), entries.end(),
              [](const PinglistEntry& a, const PinglistEntry& b) { return a.key < b.key; });
    plan.streams += entries.size();
    plan.max_node_probes_per_s =
        std::max(plan.max_node_probes_per_s, node_probes(entries, local_rate, crossing_rate));
  }
  for (const auto& [name, node] : nodes) {
    for (const NicSpec& nic : node->nics) {
      plan.max_nic_capacity_share =
          std::max(plan.max_nic_capacity_share,
                   nic_share(NicId(name, nic.name), nic.bps, local_rate, crossing_rate));
    }
    plan.pinglists.push_back({name, std::move(per_node[name])});
  }
  return plan;
}

PinglistDiff DiffPinglists(const PinglistPlan& before, const PinglistPlan& after) {
  std::map<ProbeKey, const PinglistEntry*> old_entries, new_entries;
  for (const Pinglist& list : before.pinglists) {
    for (const PinglistEntry& e : list.entries) old_entries[e.key] = &e;
  }
  for (const Pinglist& list : after.pinglists) {
    for (const PinglistEntry& e : list.entries) new_entries[e.key] = &e;
  }
  PinglistDiff diff;
  for (const auto& [key, entry] : new_entries) {
    auto it = old_entries.find(key);
    if (it == old_entries.end()) {
      diff.added.push_back(*entry);
    } else if (it->second->probes_per_s != entry->probes_per_s) {
      diff.rerated.push_back(*entry);
    }
  }
  for (const auto& [key, entry] : old_entries) {
    if (!new_entries.count(key)) diff.removed.push_back(*entry);
  }
  return diff;
}

}  // namespace weft::pingmesh
