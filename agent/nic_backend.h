// NicBackend: where the agent's view of the node's hardware comes from. One
// implementation per world: the simulated backend (agent/sim_backend.h), the Linux
// backend over sysfs / ethtool / debugfs (agent/linux/linux_backend.h) and a node of
// the fabric twin (agent/fabric_backend.h). The agent loop is the only caller;
// it discovers the inventory once per registration and reads counters once per
// telemetry interval, then hands two consecutive readings to agent/counter_math.h.
//
// A backend reports raw cumulative values only: no rates, no deltas, no wrap or reset
// handling (that is counter_math's job, in one place). Values are in the units the
// proto names (bytes, frames, µs): a sysfs backend multiplies port_xmit_data /
// port_rcv_data (4-octet units) by 4 while reading them.
//
// Thread-compatibility: implementations are thread-compatible, not thread-safe; the
// caller serializes calls (the agent calls from its single loop thread).
#ifndef WEFT_AGENT_NIC_BACKEND_H_
#define WEFT_AGENT_NIC_BACKEND_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "agent/tunables/nic_tunables.h"
#include "proto/weft/v1/node.pb.h"

namespace weft::agent {

// ethtool -S per-priority PFC counters of one priority (present only while PFC is
// enabled on it). 64-bit.
struct RawPfcCounters {
  uint32_t priority = 0;              // 0..7
  uint64_t rx_pause = 0;              // rx_prio{p}_pause: pause frames received
  uint64_t tx_pause = 0;              // tx_prio{p}_pause: pause frames sent
  uint64_t rx_pause_duration_us = 0;  // rx_prio{p}_pause_duration: time we were paused
  uint64_t tx_pause_duration_us = 0;  // tx_prio{p}_pause_duration: time we paused the peer
};

// Cumulative counters of one RDMA port. Each is unset when the port does not have it
// (no file, unreadable, "N/A (no PMA)", not a number): absent, never zero. Their widths
// matter to agent/counter_math.h, which knows the Q-counters below are 32-bit and wrap.
struct RawNicCounters {
  using Value = std::optional<uint64_t>;
  // ports/<p>/counters/ (64-bit extended counters, or counters_ext/ on mlx4; the error
  // counters saturate).
  Value port_xmit_bytes;  // port_xmit_data × 4
  Value port_rcv_bytes;   // port_rcv_data × 4
  Value port_xmit_packets;
  Value port_rcv_packets;
  Value unicast_xmit_packets;
  Value unicast_rcv_packets;
  Value multicast_xmit_packets;
  Value multicast_rcv_packets;
  Value port_xmit_discards;
  Value port_rcv_errors;
  Value link_downed;
  Value symbol_error;
  Value link_error_recovery;
  Value port_xmit_wait;

  // hw_counters/ congestion group (64-bit, per physical function); the cc_* ones are
  // optional counters, off unless enabled with `rdma statistic set`.
  Value np_ecn_marked_roce_packets;
  Value np_cnp_sent;
  Value rp_cnp_handled;
  Value rp_cnp_ignored;
  Value cc_rx_ce_pkts;
  Value cc_rx_cnp_pkts;
  Value cc_tx_cnp_pkts;

  // hw_counters/ out-of-sequence and retransmission groups: mlx5 Q-counters, 32-bit,
  // they wrap.
  Value out_of_sequence;
  Value packet_seq_err;
  Value local_ack_timeout_err;
  Value rnr_nak_retry_err;
  Value implied_nak_seq_err;
  Value duplicate_request;
  Value out_of_buffer;

  // hw_counters/ optional RDMA traffic counters (64-bit).
  Value rdma_tx_packets;
  Value rdma_tx_bytes;
  Value rdma_rx_packets;
  Value rdma_rx_bytes;

  // One entry per priority with PFC enabled, in ascending priority order.
  std::vector<RawPfcCounters> pfc;
};

// One reading of one RDMA port.
struct RawNicReading {
  std::string device;  // "mlx5_0"
  uint32_t port = 1;
  absl::Time timestamp;  // when the values were read
  weft::v1::PortState port_state = weft::v1::PORT_STATE_UNSPECIFIED;
  // Non-empty when this NIC could not be read (e.g. "hw_counters: Permission denied");
  // `counters` is then meaningless. The other NICs of the node are still read.
  std::string error;
  // Partial problems that did not stop the reading, e.g. a failed ethtool read (the
  // PFC counters are then absent).
  std::vector<std::string> warnings;
  // The counters this port is expected to have and this reading lacks, by file name,
  // each with why when it is not simply absent: "port_xmit_wait",
  // "symbol_error: Permission denied", "port_rcv_data: N/A (no PMA)". Sorted.
  std::vector<std::string> missing_counters;
  RawNicCounters counters;
};

// The node's hardware as discovered.
struct NodeInventory {
  std::vector<weft::v1::Nic> nics;
  std::vector<weft::v1::Gpu> gpus;
  // Node-level remarks of discovery, e.g. "libibverbs lists no device (...);
  // discovery from sysfs only". Per-NIC ones are in Nic.discovery_warnings.
  std::vector<std::string> notes;
};

class NicBackend {
 public:
  virtual ~NicBackend() = default;

  // The node's RDMA NICs (one entry per device/port) and GPUs, with their current
  // port state. Fails (e.g. UNAVAILABLE, NOT_FOUND) only when the inventory as a whole
  // cannot be read.
  virtual absl::StatusOr<NodeInventory> Discover() = 0;

  // One reading per NIC of the inventory, in Discover() order. A NIC that cannot be
  // read gets a reading with `error` set; the call fails only when nothing at all can
  // be read.
  virtual absl::StatusOr<std::vector<RawNicReading>> ReadCounters() = 0;

  // The QoS and DCQCN tunables of each NIC of the last Discover(), in its order, owned
  // by the backend (valid until the next Discover()). The agent applies desired state
  // to them transactionally and checks them for drift (agent/tunables/applier.h).
  // Empty when the backend has none to offer.
  virtual std::vector<NicTunables*> Tunables() { return {}; }
};

}  // namespace weft::agent

#endif  // WEFT_AGENT_NIC_BACKEND_H_
