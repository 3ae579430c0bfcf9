#include "placement/nccl_env.h"

#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace weft::placement {
namespace {

void AddEnv(weft::v1::NodeEnv* env, absl::string_view name, absl::string_view value) {
  weft::v1::EnvVar* var = env->add_env();
  var->set_name(std::string(name));
  var->set_value(std::string(value));
}

}  // namespace

weft::v1::NodeEnv BuildNodeEnv(const TopoNode& node, const NodeHardware& hardware,
                               absl::Span<const int> nic_indices, uint32_t traffic_class) {
  weft::v1::NodeEnv env;
  env.set_node(node.name);
  if (!nic_indices.empty()) {
    std::string hca = "=";
    bool gid_agrees = true;
    const auto& first_gid = hardware.nics[nic_indices.front()].roce_v2_gid_index;
    for (size_t i = 0; i < nic_indices.size(); ++i) {
      const TopoNic& nic = hardware.nics[nic_indices[i]];
      absl::StrAppend(&hca, i == 0 ? "" : ",", nic.device, ":", nic.port);
      if (!nic.roce_v2_gid_index.has_value() || nic.roce_v2_gid_index != first_gid) {
        gid_agrees = false;
      }
    }
    AddEnv(&env, "NCCL_IB_HCA", hca);
    if (gid_agrees) AddEnv(&env, "NCCL_IB_GID_INDEX", absl::StrCat(*first_gid));
  }
  AddEnv(&env, "NCCL_IB_TC", absl::StrCat(traffic_class));
  if (!node.socket_ifname.empty()) {
    AddEnv(&env, "NCCL_SOCKET_IFNAME", node.socket_ifname);
  } else if (!nic_indices.empty() && !hardware.nics[nic_indices.front()].netdev.empty()) {
    AddEnv(&env, "NCCL_SOCKET_IFNAME",
           absl::StrCat("=", hardware.nics[nic_indices.front()].netdev));
  }
  return env;
}

}  // namespace weft::placement
