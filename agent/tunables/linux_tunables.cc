#include "agent/tunables/linux_tunables.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "agent/linux/sysfs.h"
#include "agent/tunables/dcb_qos.h"
#include "agent/tunables/file_dcqcn.h"
#include "agent/tunables/rdma_cm_tos.h"
#include "agent/tunables/tunable_params.h"
#include "common/tunable_ranges.h"

namespace weft::agent {
namespace {

std::vector<std::string> DcqcnScalarNames() {
  std::vector<std::string> names;
  for (const DcqcnParamRange& range : DcqcnParamRanges()) names.push_back(range.name);
  return names;
}

}  // namespace

std::unique_ptr<NicTunables> MakeLinuxNicTunables(const std::string& root,
                                                  const weft::v1::Nic& nic, DcbClient* dcb) {
  const Sysfs sysfs(root);
  std::vector<std::unique_ptr<NicTunables>> parts;
  std::vector<RoutedNicTunables::Missing> missing;

  const std::string cc_params = FileDcqcnTunables::CcParamsDir(nic.pci_address());
  const std::string ofed = FileDcqcnTunables::OfedEcnDir(nic.netdev());
  const bool has_cc_params = !nic.pci_address().empty() && sysfs.Exists(cc_params);
  const bool has_ofed = !nic.netdev().empty() && sysfs.Exists(ofed + "/roce_rp");
  if (has_cc_params) {
    parts.push_back(FileDcqcnTunables::ForCcParams(root, nic.device(), nic.pci_address()));
  }
  if (has_ofed) parts.push_back(FileDcqcnTunables::ForOfedEcn(root, nic.device(), nic.netdev()));
  if (!has_cc_params && !has_ofed) {
    missing.push_back({DcqcnScalarNames(),
                       absl::StrCat("no DCQCN interface: neither ", sysfs.Path(cc_params),
                                    " (mount debugfs; the NIC must allow cc_query/cc_modify) nor ",
                                    sysfs.Path(ofed), " (MLNX_OFED driver)")});
  }
  if (!has_ofed) {
    missing.push_back({{kRpEnabledParam, kNpEnabledParam},
                       absl::StrCat("no per-priority DCQCN switches: ", sysfs.Path(ofed),
                                    "/roce_{rp,np}/enable is MLNX_OFED only (upstream: set "
                                    "ROCE_CC_PRIO_MASK_P1 with mlxconfig)")});
  }
  if (has_ofed && !has_cc_params) {
    missing.push_back({{"np_cnp_prio_mode"},
                       "the MLNX_OFED ecn tree has no np_cnp_prio_mode (debugfs cc_params has)"});
  }

  if (dcb != nullptr && !nic.netdev().empty()) {
    parts.push_back(std::make_unique<DcbQosTunables>(nic.device(), nic.netdev(), dcb));
  } else {
    missing.push_back({{kEtsParam, kPfcParam, kDscpMapParam, kTrustParam},
                       absl::StrCat(nic.device(), " has no netdev for DCB netlink")});
  }

  if (sysfs.Exists(RdmaCmTosTunables::kRdmaCmDir)) {
    parts.push_back(std::make_unique<RdmaCmTosTunables>(root, nic.device(), nic.port()));
  } else {
    missing.push_back({{kRoceTosParam},
                       absl::StrCat("no rdma_cm configfs at ",
                                    sysfs.Path(RdmaCmTosTunables::kRdmaCmDir),
                                    " (mount configfs, load rdma_cm)")});
  }
  return std::make_unique<RoutedNicTunables>(nic.device(), std::move(parts), std::move(missing));
}

}  // namespace weft::agent
