#include "datapath/transport/rdma_path.h"

#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "rdma/gid_selection.h"

namespace weft::datapath {

using rdma::DeviceInfo;
using rdma::GidEntry;
using rdma::GidQuery;
using rdma::LinkLayer;
using rdma::PortAttributes;
using rdma::PortState;
using rdma::SelectRoceV2Gid;
using rdma::Verbs;
using rdma::VerbsContext;

absl::StatusOr<RdmaPath> ChooseRdmaPath(Verbs& verbs, const RdmaPathQuery& query) {
  ASSIGN_OR_RETURN(std::vector<DeviceInfo> devices, verbs.ListDevices());
  if (devices.empty()) {
    return absl::FailedPreconditionError("no RDMA device (ibv_get_device_list returned 0 devices)");
  }
  RdmaPath path;
  path.port = query.port;
  std::unique_ptr<VerbsContext> context;
  if (!query.device.empty()) {
    path.device = query.device;
    ASSIGN_OR_RETURN(context, verbs.OpenDevice(query.device));
    ASSIGN_OR_RETURN(path.port_attributes, verbs.QueryPort(context.get(), query.port));
    if (path.port_attributes.state != PortState::kActive) {
      return absl::FailedPreconditionError(
          absl::StrCat(query.device, " port ", query.port, " is not active"));
    }
  } else {
    std::vector<std::string> inactive;
    for (const DeviceInfo& device : devices) {
      ASSIGN_OR_RETURN(std::unique_ptr<VerbsContext> candidate, verbs.OpenDevice(device.name));
      absl::StatusOr<PortAttributes> port = verbs.QueryPort(candidate.get(), query.port);
      if (port.ok() && port->state == PortState::kActive) {
        path.device = device.name;
        path.port_attributes = *port;
        context = std::move(candidate);
        break;
      }
      inactive.push_back(device.name);
    }
    if (context == nullptr) {
      return absl::FailedPreconditionError(absl::StrCat(
          "no RDMA device has port ", query.port, " active (", absl::StrJoin(inactive, ", "), ")"));
    }
  }
  if (path.port_attributes.link_layer != LinkLayer::kEthernet) {
    return absl::FailedPreconditionError(absl::StrCat(
        path.device, " port ", query.port,
        " is not an Ethernet (RoCE) port; Weft's RC transport addresses peers by RoCE v2 GID"));
  }
  if (query.gid_index.has_value()) {
    ASSIGN_OR_RETURN(path.gid, verbs.QueryGid(context.get(), query.port, *query.gid_index));
    return path;
  }
  ASSIGN_OR_RETURN(std::vector<GidEntry> table, verbs.QueryGidTable(context.get()));
  GidQuery gid_query;
  gid_query.port = query.port;
  gid_query.netdev_ifindex = query.netdev_ifindex;
  gid_query.ipv4_host_order = query.ipv4_host_order;
  absl::StatusOr<GidEntry> gid = SelectRoceV2Gid(table, gid_query);
  if (!gid.ok()) {
    return absl::Status(gid.status().code(),
                        absl::StrCat(path.device, ": ", gid.status().message()));
  }
  path.gid = *gid;
  return path;
}

}  // namespace weft::datapath
