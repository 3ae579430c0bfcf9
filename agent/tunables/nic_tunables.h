// NicTunables: read and write one NIC's QoS and DCQCN parameters by name, with the
// canonical values of agent/tunables/tunable_params.h. One implementation per place the
// kernel keeps them (mlx5 debugfs cc_params, MLNX_OFED ecn sysfs, rdma_cm configfs,
// DCB netlink, the simulated NIC); RoutedNicTunables joins them into one NIC.
// The transactional logic (read, write, verify, restore) lives in
// agent/tunables/applier.h, over this interface only.
//
// Thread-compatibility: thread-compatible; the agent's loop thread is the only caller.
#ifndef WEFT_AGENT_TUNABLES_NIC_TUNABLES_H_
#define WEFT_AGENT_TUNABLES_NIC_TUNABLES_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace weft::agent {

class NicTunables {
 public:
  virtual ~NicTunables() = default;

  // The RDMA device these parameters belong to ("mlx5_0").
  virtual const std::string& device() const = 0;

  // The parameters this NIC has, in AllParameterNames() order.
  virtual std::vector<std::string> Parameters() const = 0;

  // The current value. UNIMPLEMENTED (saying why) for a parameter this NIC lacks;
  // other errors name the file or netlink request that failed.
  virtual absl::StatusOr<std::string> Read(absl::string_view parameter) = 0;

  // Sets `value` (canonical form). On failure the parameter may be partly written
  // (e.g. 3 of 8 per-priority files); the caller restores it.
  virtual absl::Status Write(absl::string_view parameter, absl::string_view value) = 0;
};

// Routes each parameter to the part that has it (the first part listing it). A
// parameter no part has reads and writes as UNIMPLEMENTED with `missing_reason`
// appended ("no DCQCN interface: ...").
class RoutedNicTunables : public NicTunables {
 public:
  // `missing` explains, per parameter group, why a parameter is absent; see Missing().
  struct Missing {
    std::vector<std::string> parameters;
    std::string reason;
  };
  RoutedNicTunables(std::string device, std::vector<std::unique_ptr<NicTunables>> parts,
                    std::vector<Missing> missing);

  const std::string& device() const override { return device_; }
  std::vector<std::string> Parameters() const override;
  absl::StatusOr<std::string> Read(absl::string_view parameter) override;
  absl::Status Write(absl::string_view parameter, absl::string_view value) override;

 private:
  NicTunables* PartFor(absl::string_view parameter) const;
  absl::Status Unsupported(absl::string_view parameter) const;

  std::string device_;
  std::vector<std::unique_ptr<NicTunables>> parts_;
  std::vector<Missing> missing_;
};

}  // namespace weft::agent

#endif  // WEFT_AGENT_TUNABLES_NIC_TUNABLES_H_
