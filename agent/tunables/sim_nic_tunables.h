// SimNicTunables: the QoS and DCQCN tunables of one simulated NIC, kept in memory. It
// starts as a ConnectX NIC set up with the common production QoS recipe
// (roce-facts.md §3: DSCP trust, DSCP 26 -> priority 3 with PFC, DSCP 48 -> priority 6,
// TC0 and TC3 ETS 50% each, TC6 strict, ToS 106) and the firmware DCQCN defaults (DCQCN
// on all priorities), and mirrors a node that has every interface (debugfs cc_params,
// the MLNX_OFED switches, DCB, rdma_cm).
// Writes are checked the way the firmware and driver check them (range of each DCQCN
// parameter, ETS shares of ETS classes summing to 100; writing np_cnp_prio resets
// np_cnp_prio_mode to 0, as mlx5 does). `set_reject_writes(true)` is the simulated
// fault "reject_tunables": every write fails as a refused firmware command.
// The simulated backend reads the switches of the RoCE priority to shape its counters
// and calls `before_write` so it can integrate the counters up to the change first.
// The fabric backend (agent/fabric_backend.h) keeps a twin NIC's state in one, started
// from the twin's reading, so it checks writes with the same rules.
// Thread-compatible.
#ifndef WEFT_AGENT_TUNABLES_SIM_NIC_TUNABLES_H_
#define WEFT_AGENT_TUNABLES_SIM_NIC_TUNABLES_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "agent/tunables/nic_tunables.h"
#include "agent/tunables/tunable_params.h"

namespace weft::agent {

class SimNicTunables : public NicTunables {
 public:
  explicit SimNicTunables(std::string device);
  // Starts from the state above with the values `qos` and `dcqcn` set laid over it (what
  // a NIC reported, e.g. the fabric twin's NicTunablesReading; an unset field keeps the
  // recipe's value). The values are taken as the NIC has them, unchecked.
  SimNicTunables(std::string device, const weft::v1::NodeQos& qos,
                 const weft::v1::DcqcnParams& dcqcn);

  const std::string& device() const override { return device_; }
  std::vector<std::string> Parameters() const override;
  absl::StatusOr<std::string> Read(absl::string_view parameter) override;
  absl::Status Write(absl::string_view parameter, absl::string_view value) override;

  void set_reject_writes(bool reject) { reject_writes_ = reject; }
  void set_before_write(std::function<void()> before_write) { before_write_ = std::move(before_write); }

  // Bit p set: priority p has PFC / DCQCN reaction point / notification point on.
  uint8_t pfc_mask() const { return pfc_mask_; }
  uint8_t rp_mask() const { return rp_mask_; }
  uint8_t np_mask() const { return np_mask_; }
  // Every parameter's current value (what ParamsToProto turns into the NIC's state).
  const ParamMap& values() const { return values_; }

 private:
  absl::Status Check(absl::string_view parameter, absl::string_view value) const;
  void UpdateMasks();

  std::string device_;
  ParamMap values_;
  bool reject_writes_ = false;
  std::function<void()> before_write_;
  uint8_t pfc_mask_ = 0;  // set from values_ by UpdateMasks()
  uint8_t rp_mask_ = 0xff;
  uint8_t np_mask_ = 0xff;
};

}  // namespace weft::agent

#endif  // WEFT_AGENT_TUNABLES_SIM_NIC_TUNABLES_H_
