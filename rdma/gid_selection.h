// GID selection: which GID table slot a RoCE v2 QP should use as its source GID. On an
// IPv4 fabric that is the slot of type RoCE v2, on the port and netdev the job was
// given, holding the IPv4-mapped address ::ffff:a.b.c.d of that netdev. Slot 3 is the
// usual answer on Linux but never guaranteed (roce-facts.md §5), so the table is
// searched. Pure function over a table from Verbs::QueryGidTable; thread-safe.
//
// Example:
//   ASSIGN_OR_RETURN(std::vector<GidEntry> table, verbs.QueryGidTable(context));
//   ASSIGN_OR_RETURN(GidEntry gid, SelectRoceV2Gid(table, {.port = 1,
//                                                  .netdev_ifindex = if_nametoindex("ens1np0")}));
#ifndef WEFT_RDMA_GID_SELECTION_H_
#define WEFT_RDMA_GID_SELECTION_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "rdma/verbs.h"

namespace weft::rdma {

struct GidQuery {
  uint32_t port = 1;
  // The netdev whose address the GID must carry; 0 accepts any netdev.
  uint32_t netdev_ifindex = 0;
  // The IPv4 address (host byte order) the GID must map, when the netdev has several.
  std::optional<uint32_t> ipv4_host_order;
};

// The lowest-index slot matching `query`. NOT_FOUND when none does, listing the slots of
// that port so the operator sees what the NIC has (e.g. only RoCE v1, or an IPv6 GID).
absl::StatusOr<GidEntry> SelectRoceV2Gid(absl::Span<const GidEntry> table, const GidQuery& query);

// "10.0.0.1" from host byte order.
std::string FormatIpv4(uint32_t ipv4_host_order);

}  // namespace weft::rdma

#endif  // WEFT_RDMA_GID_SELECTION_H_
