#include "pingmesh/probe.h"

#include <tuple>

#include "absl/strings/str_cat.h"

namespace weft::pingmesh {

bool ProbeKey::operator<(const ProbeKey& other) const {
  return std::tie(src_node, src_nic, dst_node, dst_nic, udp_src_port, traffic_class) <
         std::tie(other.src_node, other.src_nic, other.dst_node, other.dst_nic,
                  other.udp_src_port, other.traffic_class);
}

std::string ProbeKeyName(const ProbeKey& key) {
  return absl::StrCat(key.src_node, "/", key.src_nic, " -> ", key.dst_node, "/", key.dst_nic,
                      " sport ", key.udp_src_port, " tc ", key.traffic_class);
}

}  // namespace weft::pingmesh
