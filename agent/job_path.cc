#include "agent/job_path.h"

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "common/qos_classes.h"
#include "common/status_macros.h"
#include "rdma/gid_selection.h"
#include "rdma/verbs.h"

namespace weft::agent {
namespace {

// GidQuery matches netdevs by ifindex; the inventory names them, so the port's own
// netdev becomes 1 and any other 2 (0 would mean "any netdev").
constexpr uint32_t kOwnNetdev = 1;
constexpr uint32_t kOtherNetdev = 2;

// "DOWN" for PORT_STATE_DOWN.
absl::string_view PortStateName(weft::v1::PortState state) {
  return absl::StripPrefix(weft::v1::PortState_Name(state), "PORT_STATE_");
}

// The port's RoCE v2 IPv4 GID, or why the port cannot carry a job.
absl::StatusOr<rdma::GidEntry> UsableGid(const weft::v1::Nic& nic) {
  if (nic.state() != weft::v1::PORT_STATE_ACTIVE) {
    return absl::FailedPreconditionError(absl::StrCat("port is ", PortStateName(nic.state())));
  }
  if (nic.link_layer() != "Ethernet") {
    return absl::FailedPreconditionError(
        absl::StrCat("link layer is '", nic.link_layer(), "', not Ethernet (RoCE)"));
  }
  std::vector<rdma::GidEntry> table;
  for (const weft::v1::GidEntry& entry : nic.gids()) {
    absl::StatusOr<rdma::Gid> gid = rdma::Gid::Parse(entry.gid());
    if (!gid.ok()) continue;  // discovery already reported it
    rdma::GidEntry converted;
    converted.index = entry.index();
    converted.port = nic.port();
    converted.gid = *gid;
    converted.type = entry.type() == weft::v1::GID_TYPE_ROCE_V2 ? rdma::GidType::kRoceV2
                                                                : rdma::GidType::kRoceV1;
    converted.ndev_ifindex = entry.netdev().empty()          ? 0
                             : entry.netdev() == nic.netdev() ? kOwnNetdev
                                                              : kOtherNetdev;
    table.push_back(converted);
  }
  rdma::GidQuery query;
  query.port = nic.port();
  query.netdev_ifindex = kOwnNetdev;
  absl::StatusOr<rdma::GidEntry> gid = rdma::SelectRoceV2Gid(table, query);
  if (!gid.ok()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "no RoCE v2 GID with an IPv4-mapped address of ", nic.netdev(), " in its ",
        nic.gids_size(), "-entry GID table"));
  }
  return gid;
}

std::string PortName(const weft::v1::Nic& nic) {
  return absl::StrCat(nic.device(), " port ", nic.port());
}

absl::StatusOr<const weft::v1::Gpu*> FindGpu(const NodeInventory& inventory,
                                             const weft::v1::ChoosePathRequest& request) {
  std::vector<std::string> known;
  for (const weft::v1::Gpu& gpu : inventory.gpus) {
    if (request.gpu_case() == weft::v1::ChoosePathRequest::kGpuIndex
            ? gpu.index() == request.gpu_index()
            : absl::EqualsIgnoreCase(gpu.pci_address(), request.gpu_pci_address())) {
      return &gpu;
    }
    known.push_back(absl::StrCat(gpu.index(), " (", gpu.pci_address(), ")"));
  }
  const std::string asked = request.gpu_case() == weft::v1::ChoosePathRequest::kGpuIndex
                                ? absl::StrCat("index ", request.gpu_index())
                                : absl::StrCat("PCI address '", request.gpu_pci_address(), "'");
  return absl::NotFoundError(absl::StrCat(
      "no GPU with ", asked, " on this node; its GPUs: ",
      known.empty() ? std::string("none") : absl::StrJoin(known, ", ")));
}

weft::v1::ChoosePathResponse Answer(const weft::v1::Nic& nic, const rdma::GidEntry& gid,
                                    const QosClass& qos, std::string reason) {
  weft::v1::ChoosePathResponse response;
  response.set_device(nic.device());
  response.set_port(nic.port());
  response.set_netdev(nic.netdev());
  response.set_gid_index(gid.index);
  response.set_gid(gid.gid.ToString());
  response.set_qos_class(std::string(qos.name));
  response.set_dscp(qos.dscp);
  response.set_traffic_class(qos.traffic_class);
  response.set_reason(std::move(reason));
  return response;
}

}  // namespace

absl::StatusOr<weft::v1::ChoosePathResponse> ChooseJobPath(
    const NodeInventory& inventory, const weft::v1::ChoosePathRequest& request) {
  ASSIGN_OR_RETURN(const QosClass qos, FindQosClass(request.qos_class()));
  const weft::v1::Gpu* gpu = nullptr;
  if (request.gpu_case() != weft::v1::ChoosePathRequest::GPU_NOT_SET) {
    ASSIGN_OR_RETURN(gpu, FindGpu(inventory, request));
  }

  std::string closest_problem;
  if (gpu != nullptr && !gpu->closest_nic().empty()) {
    std::vector<std::string> problems;
    for (const weft::v1::Nic& nic : inventory.nics) {
      if (nic.device() != gpu->closest_nic()) continue;
      absl::StatusOr<rdma::GidEntry> gid = UsableGid(nic);
      if (gid.ok()) {
        return Answer(nic, *gid, qos,
                      absl::StrCat("closest NIC of GPU ", gpu->index(), " (",
                                   gpu->pci_address(), ")"));
      }
      problems.push_back(absl::StrCat("port ", nic.port(), ": ", gid.status().message()));
    }
    closest_problem = absl::StrCat(
        "GPU ", gpu->index(), "'s closest NIC ", gpu->closest_nic(), " is not usable (",
        problems.empty() ? std::string("the node has no such NIC") : absl::StrJoin(problems, "; "),
        "); ");
  }

  std::vector<std::string> unusable;
  for (const weft::v1::Nic& nic : inventory.nics) {
    absl::StatusOr<rdma::GidEntry> gid = UsableGid(nic);
    if (gid.ok()) {
      std::string reason =
          gpu == nullptr
              ? "first ACTIVE RoCE port (no GPU given)"
              : absl::StrCat(closest_problem.empty()
                                 ? absl::StrCat("GPU ", gpu->index(), " has no closest NIC; ")
                                 : closest_problem,
                             "first ACTIVE RoCE port instead");
      return Answer(nic, *gid, qos, std::move(reason));
    }
    unusable.push_back(absl::StrCat(PortName(nic), ": ", gid.status().message()));
  }
  return absl::FailedPreconditionError(absl::StrCat(
      "no ACTIVE RoCE port with a RoCE v2 IPv4 GID on this node (",
      unusable.empty() ? std::string("no RDMA NICs discovered") : absl::StrJoin(unusable, "; "),
      "); jobs here must use TCP"));
}

}  // namespace weft::agent
