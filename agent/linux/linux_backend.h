// LinuxNicBackend: the NicBackend of a real RoCE node. Discovers RDMA ports from
// sysfs (/sys/class/infiniband: port state, rate, link layer, GID table with RoCE v2
// entries, netdev, PCI address, NUMA node) and NVIDIA GPUs from PCI sysfs with the
// closest NIC by PCI tree distance (same PCIe switch first, then same NUMA node). Reads
// counters from ports/<p>/counters/ (mlx4: counters_ext/'s 64-bit files first) and
// hw_counters/ (a switchdev representor's vport_ names too; port_*_data × 4 to bytes)
// and the per-priority PFC counters from the netdev's ethtool statistics. Ports of any
// link layer are reported; InfiniBand and Omni-Path ports get no tunables (one node
// note says why).
//
// A counter is the unit of failure: a missing file, an unreadable one, "N/A (no PMA)" or
// text that is not a number leaves that counter unset and listed in the reading's
// missing_counters, and the port still reports its state and every other counter. A
// reading has `error` only when the device disappeared while being read. A failed
// ethtool read drops the PFC counters with a warning. Absent files are probed again
// every minute (optional counters can be switched on at run time).
//
// The filesystem root is a constructor argument: "/" in production, a fixture tree
// (tests/fixtures/) in tests. Thread-compatible (the agent loop is the only caller).
#ifndef WEFT_AGENT_LINUX_LINUX_BACKEND_H_
#define WEFT_AGENT_LINUX_LINUX_BACKEND_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "agent/linux/ethtool_stats.h"
#include "agent/linux/sysfs.h"
#include "agent/linux/verbs_discovery.h"
#include "agent/tunables/dcb_client.h"
#include "agent/nic_backend.h"
#include "common/clock.h"

namespace weft::agent {

struct LinuxBackendOptions {
  // Filesystem root that holds sys/ ("/" in production).
  std::string root = "/";
  // fnmatch(3) patterns. A device (e.g. "mlx5_*") or netdev is used when it matches an
  // include pattern (or there are none) and no exclude pattern.
  std::vector<std::string> include_devices;
  std::vector<std::string> exclude_devices;
  std::vector<std::string> include_netdevs;
  std::vector<std::string> exclude_netdevs;
  // libibverbs (rdma::IbvVerbs in production, FakeVerbs in tests): completes and
  // cross-checks the sysfs discovery (agent/linux/verbs_discovery.h). Null: sysfs only.
  std::shared_ptr<rdma::Verbs> verbs;
  // Why `verbs` lists no device (IbvVerbs::NoDeviceReason), for the discovery note.
  std::function<std::string()> verbs_no_device_reason;
  // DCB netlink for the QoS tunables (agent/tunables/dcb_client.h). Null: the DCB
  // parameters report that they cannot be set.
  std::shared_ptr<DcbClient> dcb;
  // if_indextoname(3) for the GID table's netdevs; tests replace it.
  IfindexToName netdev_of_ifindex;
};

class LinuxNicBackend : public NicBackend {
 public:
  // `ethtool` and `clock` must outlive the backend.
  LinuxNicBackend(LinuxBackendOptions options, EthtoolReader* ethtool, const Clock* clock);
  // Owns its ethtool reader (what the agent uses: an IoctlEthtoolReader).
  LinuxNicBackend(LinuxBackendOptions options, std::unique_ptr<EthtoolReader> ethtool,
                  const Clock* clock);

  absl::StatusOr<NodeInventory> Discover() override;
  absl::StatusOr<std::vector<RawNicReading>> ReadCounters() override;
  // One per NIC of the last Discover(): debugfs / MLNX_OFED ecn / DCB / rdma_cm
  // (agent/tunables/linux_tunables.h).
  std::vector<NicTunables*> Tunables() override;

 private:
  // The counter files of one port, kept open between collections (see SysfsFile).
  struct OpenCounter {
    size_t spec;  // index into the backend's counter table
    SysfsFile file;
  };
  struct PortFiles {
    absl::Time probed_at;          // when `unopened` was last tried
    std::vector<SysfsFile> state;  // zero or one
    std::string state_error;       // why `state` is empty
    std::vector<OpenCounter> counters;
    // Counter table indices with no open file yet (optional ones included); probed
    // again every minute without touching the open ones.
    std::vector<size_t> unopened;
    // The expected counters among them, as missing_counters says them.
    std::vector<std::string> absent;
  };

  struct Port {
    std::string device;
    uint32_t port = 1;
    std::string netdev;
    std::string link_layer;
    std::unique_ptr<PortFiles> files;  // null until opened, and after a failed read
  };

  absl::StatusOr<weft::v1::Nic> DiscoverPort(const std::string& device, uint32_t port);
  std::vector<weft::v1::Gpu> DiscoverGpus(const std::vector<weft::v1::Nic>& nics);
  RawNicReading ReadPort(Port& port);
  std::unique_ptr<PortFiles> OpenPortFiles(const Port& port);
  // Tries to open files->unopened again and recomputes files->absent.
  void ProbeCounters(const Port& port, PortFiles* files);
  bool Selected(const std::string& device, const std::string& netdev) const;

  LinuxBackendOptions options_;
  Sysfs sysfs_;
  std::unique_ptr<EthtoolReader> owned_ethtool_;
  EthtoolReader* ethtool_;
  const Clock* clock_;
  std::vector<Port> ports_;  // from the last Discover()
  std::vector<std::unique_ptr<NicTunables>> tunables_;  // from the last Discover()
  bool discovered_ = false;
};

// The GPU model of an NVIDIA PCI device id ("H100 SXM5 80GB"), or "NVIDIA 0x<id>".
std::string NvidiaGpuModel(uint32_t device_id);

}  // namespace weft::agent

#endif  // WEFT_AGENT_LINUX_LINUX_BACKEND_H_
