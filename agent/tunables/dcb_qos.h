// The DCB part of one NIC's QoS over IEEE DCB netlink on its netdev: "ets" (struct
// ieee_ets prio_tc / tc_tsa / tc_tx_bw), "pfc_priorities" (ieee_pfc.pfc_en),
// "dscp_to_priority" (DSCP APP entries, selector IEEE_8021QAZ_APP_SEL_DSCP) and
// "trust". On mlx5 the DSCP APP entries are the trust switch (the first one moves the
// port to DSCP trust, removing the last one moves it back to PCP, en_dcbnl.c), so trust
// reads as "dscp" exactly when DSCP entries exist, and writing it does nothing by
// itself: the applier writes dscp_to_priority first and then verifies trust.
// Fields the desired state does not cover (willing, CBS, recommended ETS, PFC mbc and
// delay, APP entries of other selectors) are kept as the NIC has them.
// Thread-compatible.
#ifndef WEFT_AGENT_TUNABLES_DCB_QOS_H_
#define WEFT_AGENT_TUNABLES_DCB_QOS_H_

#include <string>
#include <vector>

#include "agent/tunables/dcb_client.h"
#include "agent/tunables/nic_tunables.h"

namespace weft::agent {

class DcbQosTunables : public NicTunables {
 public:
  // `dcb` must outlive this object.
  DcbQosTunables(std::string device, std::string netdev, DcbClient* dcb);

  const std::string& device() const override { return device_; }
  std::vector<std::string> Parameters() const override;
  absl::StatusOr<std::string> Read(absl::string_view parameter) override;
  absl::Status Write(absl::string_view parameter, absl::string_view value) override;

 private:
  absl::StatusOr<DcbIeeeState> Get();
  absl::Status WriteDscpMap(absl::string_view value);

  std::string device_;
  std::string netdev_;
  DcbClient* dcb_;
};

}  // namespace weft::agent

#endif  // WEFT_AGENT_TUNABLES_DCB_QOS_H_
