#include "rdma/gid_selection.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace weft::rdma {

std::string FormatIpv4(uint32_t ipv4_host_order) {
  return absl::StrCat(ipv4_host_order >> 24, ".", (ipv4_host_order >> 16) & 0xff, ".",
                      (ipv4_host_order >> 8) & 0xff, ".", ipv4_host_order & 0xff);
}

absl::StatusOr<GidEntry> SelectRoceV2Gid(absl::Span<const GidEntry> table, const GidQuery& query) {
  const GidEntry* best = nullptr;
  std::vector<std::string> seen;
  for (const GidEntry& entry : table) {
    if (entry.port != query.port) continue;
    seen.push_back(absl::StrCat(entry.index, " ", entry.gid.ToString(), " ",
                                GidTypeName(entry.type), " ifindex ", entry.ndev_ifindex));
    if (entry.type != GidType::kRoceV2) continue;
    if (query.netdev_ifindex != 0 && entry.ndev_ifindex != query.netdev_ifindex) continue;
    if (!entry.gid.IsIpv4Mapped()) continue;
    if (query.ipv4_host_order.has_value() && entry.gid.Ipv4() != *query.ipv4_host_order) {
      continue;
    }
    if (best == nullptr || entry.index < best->index) best = &entry;
  }
  if (best != nullptr) return *best;
  std::string wanted =
      absl::StrCat("no RoCE v2 GID with an IPv4-mapped address on port ", query.port);
  if (query.netdev_ifindex != 0)
    absl::StrAppend(&wanted, " of netdev ifindex ", query.netdev_ifindex);
  if (query.ipv4_host_order.has_value()) {
    absl::StrAppend(&wanted, " for ", FormatIpv4(*query.ipv4_host_order));
  }
  return absl::NotFoundError(
      absl::StrCat(wanted, "; the port has ",
                   seen.empty() ? std::string("no GIDs") : absl::StrJoin(seen, "; ")));
}

}  // namespace weft::rdma
