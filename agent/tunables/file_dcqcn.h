// DCQCN parameters of one mlx5 NIC kept one per file, in decimal, in either of the two
// places the kernel has them (roce-facts.md §2):
//  - current kernels: debugfs sys/kernel/debug/mlx5/<PCI-BDF>/cc_params/<rp_*|np_*>
//    (mlx5 cong.c; named as the DcqcnParams fields; no per-priority switches);
//  - MLNX_OFED drivers: sys/class/net/<netdev>/ecn/roce_rp/<rpg_* ...>,
//    ecn/roce_np/<...> and the per-priority switches ecn/roce_{rp,np}/enable/<0-7>
//    (no np_cnp_prio_mode).
// Reads and writes go through Sysfs under a filesystem root ("/" on a node, a fixture
// tree in tests). Thread-compatible.
#ifndef WEFT_AGENT_TUNABLES_FILE_DCQCN_H_
#define WEFT_AGENT_TUNABLES_FILE_DCQCN_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "agent/linux/sysfs.h"
#include "agent/tunables/nic_tunables.h"

namespace weft::agent {

class FileDcqcnTunables : public NicTunables {
 public:
  // debugfs cc_params of the NIC at `pci_address` ("0000:19:00.0").
  static std::unique_ptr<FileDcqcnTunables> ForCcParams(const std::string& root,
                                                        std::string device,
                                                        const std::string& pci_address);
  // MLNX_OFED ecn tree of `netdev`.
  static std::unique_ptr<FileDcqcnTunables> ForOfedEcn(const std::string& root,
                                                       std::string device,
                                                       const std::string& netdev);
  // The root-relative directories each layout lives in (to tell which one a node has).
  static std::string CcParamsDir(const std::string& pci_address);
  static std::string OfedEcnDir(const std::string& netdev);

  const std::string& device() const override { return device_; }
  std::vector<std::string> Parameters() const override;
  absl::StatusOr<std::string> Read(absl::string_view parameter) override;
  absl::Status Write(absl::string_view parameter, absl::string_view value) override;

 private:
  FileDcqcnTunables(const std::string& root, std::string device) : sysfs_(root), device_(std::move(device)) {}

  Sysfs sysfs_;
  std::string device_;
  std::map<std::string, std::string> files_;         // parameter -> root-relative file
  std::map<std::string, std::string> enable_dirs_;   // parameter -> dir holding 0..7
};

}  // namespace weft::agent

#endif  // WEFT_AGENT_TUNABLES_FILE_DCQCN_H_
