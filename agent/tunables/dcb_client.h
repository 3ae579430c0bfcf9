// DcbClient: IEEE DCB get/set of a netdev (ETS, PFC, APP entries). NetlinkDcbClient
// does it over a NETLINK_ROUTE socket with the messages of agent/tunables/dcb_netlink.h;
// tests of the layers above use a fake (agent/tunables/fake_dcb_client.h). Errors name
// the request and the netdev, with strerror for the kernel's refusals.
// Thread-compatible.
#ifndef WEFT_AGENT_TUNABLES_DCB_CLIENT_H_
#define WEFT_AGENT_TUNABLES_DCB_CLIENT_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "agent/tunables/dcb_netlink.h"

namespace weft::agent {

class DcbClient {
 public:
  virtual ~DcbClient() = default;
  virtual absl::StatusOr<DcbIeeeState> GetIeee(const std::string& ifname) = 0;
  virtual absl::Status SetEts(const std::string& ifname, const ieee_ets& ets) = 0;
  virtual absl::Status SetPfc(const std::string& ifname, const ieee_pfc& pfc) = 0;
  virtual absl::Status SetApps(const std::string& ifname, const std::vector<dcb_app>& apps) = 0;
  virtual absl::Status DelApps(const std::string& ifname, const std::vector<dcb_app>& apps) = 0;
};

// One NETLINK_ROUTE socket, in the network namespace of the thread that opens it.
// Each request waits at most 2 s for its reply.
class NetlinkDcbClient : public DcbClient {
 public:
  static absl::StatusOr<std::unique_ptr<NetlinkDcbClient>> Open();
  ~NetlinkDcbClient() override;

  absl::StatusOr<DcbIeeeState> GetIeee(const std::string& ifname) override;
  absl::Status SetEts(const std::string& ifname, const ieee_ets& ets) override;
  absl::Status SetPfc(const std::string& ifname, const ieee_pfc& pfc) override;
  absl::Status SetApps(const std::string& ifname, const std::vector<dcb_app>& apps) override;
  absl::Status DelApps(const std::string& ifname, const std::vector<dcb_app>& apps) override;

 private:
  explicit NetlinkDcbClient(int fd) : fd_(fd) {}
  // Sends `request` and returns the reply message with sequence `seq`.
  absl::StatusOr<std::string> Transact(const std::string& request, uint32_t seq,
                                       const std::string& ifname);
  absl::Status Set(const std::string& request, uint32_t seq, const std::string& ifname);

  int fd_;
  uint32_t next_seq_ = 1;
};

}  // namespace weft::agent

#endif  // WEFT_AGENT_TUNABLES_DCB_CLIENT_H_
