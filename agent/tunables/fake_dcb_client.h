// FakeDcbClient: an in-memory DcbClient that behaves as mlx5's dcbnl ops do, for tests
// of the layers above the netlink socket (fixture-tree Linux backends, the applier).
// Unknown netdevs answer as the kernel does (ENODEV); ETS is checked as
// mlx5e_dbcnl_validate_ets checks it (traffic class < 8, ETS shares sum to 100); a DSCP
// APP entry replaces the DSCP's previous one; deleting an absent entry is ENOENT.
// FailSet() makes the N-th set/del call from now fail, to test restores. testonly;
// thread-compatible.
#ifndef WEFT_AGENT_TUNABLES_FAKE_DCB_CLIENT_H_
#define WEFT_AGENT_TUNABLES_FAKE_DCB_CLIENT_H_

#include <map>
#include <string>
#include <vector>

#include "agent/tunables/dcb_client.h"

namespace weft::agent {

class FakeDcbClient : public DcbClient {
 public:
  // Adds `ifname` with mlx5's state after a driver load: PFC off, PCP trust (no APP
  // entries), every priority on TC 0... 7 by number, all TCs ETS with 12/13% shares.
  void AddNetdev(const std::string& ifname);
  DcbIeeeState& state(const std::string& ifname) { return netdevs_.at(ifname); }
  // The `n`-th (1-based) SetEts/SetPfc/SetApps/DelApps call from now returns `error`
  // and changes nothing.
  void FailSet(int n, absl::Status error);
  int set_calls() const { return set_calls_; }

  absl::StatusOr<DcbIeeeState> GetIeee(const std::string& ifname) override;
  absl::Status SetEts(const std::string& ifname, const ieee_ets& ets) override;
  absl::Status SetPfc(const std::string& ifname, const ieee_pfc& pfc) override;
  absl::Status SetApps(const std::string& ifname, const std::vector<dcb_app>& apps) override;
  absl::Status DelApps(const std::string& ifname, const std::vector<dcb_app>& apps) override;

 private:
  // The netdev's state, or the kernel's ENODEV; counts the call and injects failures.
  absl::StatusOr<DcbIeeeState*> ForSet(const std::string& ifname);

  std::map<std::string, DcbIeeeState> netdevs_;
  int set_calls_ = 0;
  int fail_at_ = 0;  // absolute set-call number that fails; 0: none
  absl::Status fail_error_;
};

}  // namespace weft::agent

#endif  // WEFT_AGENT_TUNABLES_FAKE_DCB_CLIENT_H_
