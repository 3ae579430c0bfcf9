#include "pingmesh/two_tier_resolver.h"

#include "absl/strings/str_cat.h"

namespace weft::pingmesh {

void TwoTierResolver::SetNicTor(const std::string& node, const std::string& nic,
                                const std::string& tor) {
  nic_tor_[absl::StrCat(node, "/", nic)] = tor;
}

int TwoTierResolver::LinkId(const std::string& from, bool from_switch, const std::string& to,
                            bool to_switch) {
  std::string name = absl::StrCat(from, "->", to);
  auto [it, inserted] = link_ids_.try_emplace(name, static_cast<int>(links_.size()));
  if (inserted) links_.push_back(LinkInfo{std::move(name), from, to, from_switch, to_switch});
  return it->second;
}

absl::StatusOr<std::string> TwoTierResolver::TorOf(const std::string& node,
                                                   const std::string& nic) const {
  auto it = nic_tor_.find(absl::StrCat(node, "/", nic));
  if (it == nic_tor_.end()) {
    return absl::NotFoundError(absl::StrCat("pingmesh: no ToR is known for NIC ", node, "/",
                                            nic, " (it reported no LLDP neighbor and no rack)"));
  }
  return it->second;
}

absl::StatusOr<ProbePath> TwoTierResolver::Resolve(const ProbeKey& key) {
  if (key.src_node == key.dst_node && key.src_nic == key.dst_nic) {
    return absl::InvalidArgumentError(
        absl::StrCat("pingmesh: a probe stream from a NIC to itself: ", ProbeKeyName(key)));
  }
  absl::StatusOr<std::string> src_tor = TorOf(key.src_node, key.src_nic);
  if (!src_tor.ok()) return src_tor.status();
  absl::StatusOr<std::string> dst_tor = TorOf(key.dst_node, key.dst_nic);
  if (!dst_tor.ok()) return dst_tor.status();
  const std::string src = absl::StrCat(key.src_node, "/", key.src_nic);
  const std::string dst = absl::StrCat(key.dst_node, "/", key.dst_nic);

  // The devices in order, from the source NIC to the destination NIC.
  std::vector<std::pair<std::string, bool>> hops = {{src, false}, {*src_tor, true}};
  if (*src_tor != *dst_tor) {
    hops.push_back({kSpineLayer, true});
    hops.push_back({*dst_tor, true});
  }
  hops.push_back({dst, false});
  ProbePath path;
  for (size_t i = 0; i + 1 < hops.size(); ++i) {
    path.forward.push_back(
        LinkId(hops[i].first, hops[i].second, hops[i + 1].first, hops[i + 1].second));
  }
  for (size_t i = hops.size() - 1; i > 0; --i) {
    path.back.push_back(
        LinkId(hops[i].first, hops[i].second, hops[i - 1].first, hops[i - 1].second));
  }
  return path;
}

}  // namespace weft::pingmesh
