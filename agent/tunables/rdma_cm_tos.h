// default_roce_tos of one RDMA port in the rdma_cm configfs tree:
// sys/kernel/config/rdma_cm/<device>/ports/<port>/default_roce_tos (0..255).
// configfs creates a device's group only on mkdir(2) of rdma_cm/<device>; until then
// rdma_cm uses ToS 0, which is what Read reports. Write makes the group when needed.
// Thread-compatible.
#ifndef WEFT_AGENT_TUNABLES_RDMA_CM_TOS_H_
#define WEFT_AGENT_TUNABLES_RDMA_CM_TOS_H_

#include <string>
#include <vector>

#include "agent/linux/sysfs.h"
#include "agent/tunables/nic_tunables.h"

namespace weft::agent {

class RdmaCmTosTunables : public NicTunables {
 public:
  // Root-relative directory of the rdma_cm configfs subsystem.
  static constexpr char kRdmaCmDir[] = "sys/kernel/config/rdma_cm";

  RdmaCmTosTunables(const std::string& root, std::string device, uint32_t port);

  const std::string& device() const override { return device_; }
  std::vector<std::string> Parameters() const override;
  absl::StatusOr<std::string> Read(absl::string_view parameter) override;
  absl::Status Write(absl::string_view parameter, absl::string_view value) override;

 private:
  std::string GroupDir() const;
  std::string TosFile() const;

  Sysfs sysfs_;
  std::string device_;
  uint32_t port_;
};

}  // namespace weft::agent

#endif  // WEFT_AGENT_TUNABLES_RDMA_CM_TOS_H_
