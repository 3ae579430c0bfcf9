#include "pingmesh/traced_resolver.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include "absl/strings/str_cat.h"

namespace weft::pingmesh {
namespace {

bool IsNumericAddress(const std::string& text) {
  in6_addr scratch;
  return inet_pton(AF_INET, text.c_str(), &scratch) == 1 ||
         inet_pton(AF_INET6, text.c_str(), &scratch) == 1;
}

}  // namespace

void TracedResolver::SetNicTor(const std::string& node, const std::string& nic,
                               const std::string& tor) {
  two_tier_.SetNicTor(node, nic, tor);
}

absl::Status TracedResolver::SetSwitches(const std::vector<SwitchAddresses>& switches) {
  absl::flat_hash_map<std::string, std::string> configured;
  for (const SwitchAddresses& s : switches) {
    if (s.name.empty()) {
      return absl::InvalidArgumentError("pingmesh.switches: a switch has an empty name");
    }
    for (const std::string& address : s.addresses) {
      if (!IsNumericAddress(address)) {
        return absl::InvalidArgumentError(absl::StrCat("pingmesh.switches: switch ", s.name,
                                                       " address '", address,
                                                       "' is not a numeric IPv4 or IPv6 address"));
      }
      auto [it, inserted] = configured.emplace(address, s.name);
      if (!inserted) {
        return absl::InvalidArgumentError(absl::StrCat("pingmesh.switches: address ", address,
                                                       " is claimed by both ", it->second, " and ",
                                                       s.name, "; each address names one switch"));
      }
    }
  }
  configured_ = std::move(configured);
  return absl::OkStatus();
}

std::string TracedResolver::SwitchOf(const std::string& address) const {
  if (auto it = configured_.find(address); it != configured_.end()) return it->second;
  if (auto it = learnt_.find(address); it != learnt_.end()) return it->second;
  return address;
}

absl::StatusOr<bool> TracedResolver::AddTrace(const PathTrace& trace) {
  const ProbeKey& key = trace.key;
  auto refuse = [&](absl::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("pingmesh: trace of ", ProbeKeyName(key), " refused: ", why));
  };
  if (key.src_node.empty() || key.src_nic.empty() || key.dst_node.empty() || key.dst_nic.empty()) {
    return refuse("source and destination node and NIC must all be set");
  }
  if (key.src_node == key.dst_node && key.src_nic == key.dst_nic) {
    return refuse("it is from a NIC to itself");
  }
  if (key.udp_src_port == 0) return refuse("source_port must be in 1..65535");
  if (trace.hops.size() > static_cast<size_t>(kMaxTraceHops)) {
    return refuse(absl::StrCat(trace.hops.size(), " hops; at most ", kMaxTraceHops));
  }
  for (size_t i = 0; i < trace.hops.size(); ++i) {
    if (!trace.hops[i].empty() && !IsNumericAddress(trace.hops[i])) {
      return refuse(absl::StrCat("hop ", i + 1, " '", trace.hops[i].substr(0, 64),
                                 "' is not a numeric IPv4 or IPv6 address"));
    }
  }
  if (!trace.reached || trace.hops.empty()) return false;
  for (const std::string& hop : trace.hops) {
    if (hop.empty()) return false;
  }
  // The first router is the source NIC's ToR, the last the destination NIC's.
  absl::StatusOr<std::string> src_tor = two_tier_.TorOf(key.src_node, key.src_nic);
  if (src_tor.ok() && !configured_.contains(trace.hops.front())) {
    learnt_[trace.hops.front()] = *src_tor;
  }
  absl::StatusOr<std::string> dst_tor = two_tier_.TorOf(key.dst_node, key.dst_nic);
  if (dst_tor.ok() && !configured_.contains(trace.hops.back())) {
    learnt_[trace.hops.back()] = *dst_tor;
  }
  std::vector<std::string>& hops = traced_[key];
  if (hops == trace.hops) return false;
  hops = trace.hops;
  return true;
}

absl::StatusOr<ProbePath> TracedResolver::Resolve(const ProbeKey& key) {
  absl::StatusOr<ProbePath> bundles = two_tier_.Resolve(key);
  if (!bundles.ok()) return bundles;
  auto traced = traced_.find(key);
  if (traced == traced_.end()) return bundles;
  const std::vector<std::string>& hops = traced->second;
  const std::string src_tor = *two_tier_.TorOf(key.src_node, key.src_nic);
  const std::string dst_tor = *two_tier_.TorOf(key.dst_node, key.dst_nic);
  // Under one ToR a trace has that ToR alone; between ToRs at least both of them.
  if ((src_tor == dst_tor) != (hops.size() == 1)) return bundles;
  std::vector<std::string> devices = {absl::StrCat(key.src_node, "/", key.src_nic), src_tor};
  for (size_t i = 1; i + 1 < hops.size(); ++i) devices.push_back(SwitchOf(hops[i]));
  if (src_tor != dst_tor) devices.push_back(dst_tor);
  devices.push_back(absl::StrCat(key.dst_node, "/", key.dst_nic));
  ProbePath path;
  for (size_t i = 0; i + 1 < devices.size(); ++i) {
    path.forward.push_back(
        two_tier_.LinkId(devices[i], i > 0, devices[i + 1], i + 2 < devices.size()));
  }
  path.back = std::move(bundles->back);
  return path;
}

}  // namespace weft::pingmesh
