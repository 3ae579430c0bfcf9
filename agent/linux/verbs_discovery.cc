#include "agent/linux/verbs_discovery.h"

#include <net/if.h>

#include <map>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"

namespace weft::agent {
namespace {

using rdma::GidEntry;
using rdma::GidType;
using rdma::PortState;

weft::v1::PortState ToProto(PortState state) {
  switch (state) {
    case PortState::kNop: return weft::v1::PORT_STATE_UNSPECIFIED;
    case PortState::kDown: return weft::v1::PORT_STATE_DOWN;
    case PortState::kInit: return weft::v1::PORT_STATE_INIT;
    case PortState::kArmed: return weft::v1::PORT_STATE_ARMED;
    case PortState::kActive: return weft::v1::PORT_STATE_ACTIVE;
    case PortState::kActiveDefer: return weft::v1::PORT_STATE_ACTIVE_DEFER;
  }
  return weft::v1::PORT_STATE_UNSPECIFIED;
}

// sysfs has one slot type for IB and RoCE v1 ("IB/RoCE v1"), and so does the proto.
weft::v1::GidType ToProto(GidType type) {
  return type == GidType::kRoceV2 ? weft::v1::GID_TYPE_ROCE_V2 : weft::v1::GID_TYPE_IB_ROCE_V1;
}

std::string Describe(const weft::v1::GidEntry& entry) {
  return absl::StrCat(entry.gid(), " ",
                      entry.type() == weft::v1::GID_TYPE_ROCE_V2 ? "RoCE v2" : "IB/RoCE v1");
}

// Replaces the NIC's GID table by verbs' entries of its port, warning about every slot
// where sysfs said something else.
void ApplyGidTable(const std::vector<GidEntry>& verbs_gids, const IfindexToName& netdev_of,
                   weft::v1::Nic* nic) {
  std::map<uint32_t, weft::v1::GidEntry> from_sysfs;
  for (const weft::v1::GidEntry& entry : nic->gids()) from_sysfs[entry.index()] = entry;
  nic->clear_gids();
  for (const GidEntry& verbs_entry : verbs_gids) {
    if (verbs_entry.port != nic->port() || verbs_entry.gid.IsZero()) continue;
    weft::v1::GidEntry* entry = nic->add_gids();
    entry->set_index(verbs_entry.index);
    entry->set_gid(verbs_entry.gid.ToString());
    entry->set_type(ToProto(verbs_entry.type));
    std::string netdev = verbs_entry.ndev_ifindex != 0 ? netdev_of(verbs_entry.ndev_ifindex) : "";
    auto sysfs = from_sysfs.find(verbs_entry.index);
    if (netdev.empty() && sysfs != from_sysfs.end()) netdev = sysfs->second.netdev();
    entry->set_netdev(netdev);
    if (sysfs == from_sysfs.end()) {
      nic->add_discovery_warnings(absl::StrCat("GID ", entry->index(), " (", Describe(*entry),
                                               ") is in libibverbs' table but not in sysfs"));
      continue;
    }
    if (sysfs->second.gid() != entry->gid() || sysfs->second.type() != entry->type()) {
      nic->add_discovery_warnings(absl::StrCat("GID ", entry->index(), ": sysfs says ",
                                               Describe(sysfs->second), ", libibverbs says ",
                                               Describe(*entry), " (using libibverbs)"));
    }
    from_sysfs.erase(sysfs);
  }
  for (const auto& [index, entry] : from_sysfs) {
    nic->add_discovery_warnings(absl::StrCat("GID ", index, " (", Describe(entry),
                                             ") is in sysfs but not in libibverbs' table"));
  }
}

}  // namespace

std::string NetdevOfIfindex(uint32_t ifindex) {
  char name[IF_NAMESIZE] = {};
  if (if_indextoname(ifindex, name) == nullptr) return "";
  return name;
}

std::string ApplyVerbsView(rdma::Verbs& verbs, const std::string& no_device_reason,
                           const IfindexToName& netdev_of, std::vector<weft::v1::Nic>* nics) {
  absl::StatusOr<std::vector<rdma::DeviceInfo>> devices = verbs.ListDevices();
  if (!devices.ok() || devices->empty()) {
    for (weft::v1::Nic& nic : *nics) nic.set_discovered_by("sysfs");
    if (!devices.ok()) {
      return absl::StrCat("libibverbs: ", devices.status().message(),
                          "; discovery from sysfs only");
    }
    return absl::StrCat("libibverbs lists no device (",
                        no_device_reason.empty() ? "no reason given" : no_device_reason,
                        "); discovery from sysfs only");
  }
  std::map<std::string, bool> listed;
  for (const rdma::DeviceInfo& device : *devices) listed[device.name] = true;

  // One open context per device, shared by its ports.
  std::map<std::string, absl::StatusOr<std::unique_ptr<rdma::VerbsContext>>> contexts;
  std::map<std::string, absl::StatusOr<std::vector<GidEntry>>> gid_tables;
  for (weft::v1::Nic& nic : *nics) {
    nic.set_discovered_by("sysfs");
    if (!listed.count(nic.device())) {
      nic.add_discovery_warnings(absl::StrCat(
          nic.device(),
          " is in sysfs but libibverbs does not list it: no userspace provider (rdma-core's "
          "libmlx5?) or the device is hidden from this process; jobs cannot use this NIC"));
      continue;
    }
    auto context = contexts.find(nic.device());
    if (context == contexts.end()) {
      context = contexts.emplace(nic.device(), verbs.OpenDevice(nic.device())).first;
    }
    if (!context->second.ok()) {
      nic.add_discovery_warnings(absl::StrCat("libibverbs cannot open ", nic.device(), ": ",
                                              context->second.status().message(),
                                              "; jobs cannot use this NIC"));
      continue;
    }
    rdma::VerbsContext* open = context->second->get();
    absl::StatusOr<rdma::PortAttributes> port = verbs.QueryPort(open, nic.port());
    if (!port.ok()) {
      nic.add_discovery_warnings(absl::StrCat("ibv_query_port(", nic.device(), ", ", nic.port(),
                                              "): ", port.status().message()));
      continue;
    }
    nic.set_discovered_by("verbs+sysfs");
    const weft::v1::PortState state = ToProto(port->state);
    if (state != nic.state()) {
      nic.add_discovery_warnings(absl::StrCat("port state: sysfs says ",
                                              weft::v1::PortState_Name(nic.state()),
                                              ", libibverbs says ",
                                              weft::v1::PortState_Name(state),
                                              " (using libibverbs)"));
      nic.set_state(state);
    }
    nic.set_active_mtu(port->active_mtu_bytes);
    auto table = gid_tables.find(nic.device());
    if (table == gid_tables.end()) {
      table = gid_tables.emplace(nic.device(), verbs.QueryGidTable(open)).first;
    }
    if (!table->second.ok()) {
      nic.add_discovery_warnings(absl::StrCat("ibv_query_gid_table(", nic.device(), "): ",
                                              table->second.status().message(),
                                              "; GID table from sysfs"));
      continue;
    }
    ApplyGidTable(*table->second, netdev_of, &nic);
  }
  return "";
}

}  // namespace weft::agent
