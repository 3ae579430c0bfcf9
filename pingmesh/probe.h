// What the controller's pingmesh consumes from the agents' probers: one window of one
// probe stream. A stream is a (source node, source NIC, destination node, destination
// NIC, UDP source port, traffic class): the source port pins the stream to one ECMP path
// each way (the responder answers with the same source port, so the return path is the
// one the reverse 5-tuple hashes to). Plain structs, independent of the wire protos; the
// controller's stream adapter fills them from the agent's reports.
#ifndef WEFT_PINGMESH_PROBE_H_
#define WEFT_PINGMESH_PROBE_H_

#include <cstdint>
#include <string>
#include <utility>

#include "absl/hash/hash.h"
#include "absl/time/time.h"

namespace weft::pingmesh {

// RoCE v2 source ports live in 0xC000–0xFFFF (mlx5 maps a flow label onto that range).
inline constexpr uint16_t kMinProbeUdpSourcePort = 0xC000;

struct ProbeKey {
  std::string src_node;
  std::string src_nic;  // mlx5_0
  std::string dst_node;
  std::string dst_nic;
  uint16_t udp_src_port = kMinProbeUdpSourcePort;
  uint8_t traffic_class = 0;  // the DSCP/TC of the class the stream tests

  bool operator==(const ProbeKey& other) const {
    return udp_src_port == other.udp_src_port && traffic_class == other.traffic_class &&
           src_node == other.src_node && src_nic == other.src_nic &&
           dst_node == other.dst_node && dst_nic == other.dst_nic;
  }
  bool operator!=(const ProbeKey& other) const { return !(*this == other); }
  bool operator<(const ProbeKey& other) const;

  template <typename H>
  friend H AbslHashValue(H h, const ProbeKey& key) {
    return H::combine(std::move(h), key.src_node, key.src_nic, key.dst_node, key.dst_nic,
                      key.udp_src_port, key.traffic_class);
  }
};

// "gpu-a01/mlx5_0 -> gpu-a02/mlx5_0 sport 49152 tc 3", for messages and logs.
std::string ProbeKeyName(const ProbeKey& key);

// One stream's results over [start, end). RTTs are network round trips (the responder's
// processing removed by the two-ack scheme), host delays the time the probe spent in the
// sender's and the responder's software; every time in µs.
struct ProbeWindow {
  ProbeKey key;
  absl::Time start;
  absl::Time end;
  int64_t sent = 0;
  int64_t lost = 0;  // no answer within the probe timeout
  double rtt_min_us = 0;
  double rtt_p50_us = 0;
  double rtt_p99_us = 0;
  double sender_host_delay_us = 0;     // median over the window's answered probes
  double responder_host_delay_us = 0;  // median over the window's answered probes
};

}  // namespace weft::pingmesh

#endif  // WEFT_PINGMESH_PROBE_H_
