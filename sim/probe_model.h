// How pingmesh probes fare on the fabric twin (issue 22's evaluation): a probe stream
// (source NIC, destination NIC, UDP source port) takes the ECMP path the RoCE v2 5-tuple
// hashes to, and its answer the path of the reversed tuple with the same source port (the
// responder reflects it). Given per-link drop rates, links down (ECMP re-routes around
// them), dead NICs and host software delay, a window of `count` probes gets its losses
// (binomial over the round trip's delivery probability), its network RTTs (propagation
// both ways plus a per-switch latency and jitter) and the sender's and responder's host
// delay (a base, an exponential jitter, rare spikes, and a node's own extra delay: a slow
// host). Host delay never adds to the network RTT: the two-ack scheme separates them.
//
// Pure logic over sim/fabric.h; deterministic for a given random generator. Prepare
// routes (it caches distances in the Fabric, so one thread per Fabric); Send is const.
#ifndef WEFT_SIM_PROBE_MODEL_H_
#define WEFT_SIM_PROBE_MODEL_H_

#include <cstdint>
#include <random>
#include <vector>

#include "absl/status/status.h"
#include "sim/fabric.h"

namespace weft::sim {

struct ProbeFaults {
  std::vector<double> link_drop;  // per directed link, the share it drops; empty: none
  std::vector<bool> link_down;    // per link; empty: all up. ECMP routes around these.
  std::vector<bool> nic_dead;     // per NIC; empty: all alive
  std::vector<double> node_extra_host_delay_us;  // per node; empty: none
};

struct ProbeNoise {
  double switch_latency_us = 0.6;    // per switch crossed, each way
  double rtt_jitter_us = 0.5;        // exponential, per window's median
  double host_delay_us = 4;          // a healthy host's software delay per probe
  double host_delay_jitter_us = 3;   // exponential, per window's median
  double host_spike_probability = 0.01;  // a window whose median is hit by a spike
  double host_spike_us = 150;            // exponential mean of a spike
};

struct ProbeStream {
  int src_nic = 0;
  int dst_nic = 0;
  uint16_t udp_src_port = 0xC000;
  // Set by Prepare.
  std::vector<int> forward;  // empty when no path (a NIC's own cable down)
  std::vector<int> back;
  double delivery = 1;     // probability a probe and its answer both arrive
  double base_rtt_us = 0;  // propagation and switch latency, both ways
};

struct ProbeWindowOutcome {
  int sent = 0;
  int lost = 0;
  double rtt_min_us = 0;
  double rtt_p50_us = 0;
  double rtt_p99_us = 0;
  double sender_host_delay_us = 0;
  double responder_host_delay_us = 0;
};

class ProbeModel {
 public:
  ProbeModel(Fabric* fabric, ProbeNoise noise) : fabric_(fabric), noise_(noise) {}

  // Routes the stream over the links up and computes its delivery probability under
  // `faults`. InvalidArgument for an unknown NIC, a stream to itself, or fault vectors
  // whose size is neither 0 nor the fabric's; a stream with no path is not an error (it
  // loses everything).
  absl::Status Prepare(const ProbeFaults& faults, ProbeStream* stream);

  // One window of `count` probes of a prepared stream.
  ProbeWindowOutcome Send(const ProbeStream& stream, int count, const ProbeFaults& faults,
                          std::mt19937_64* rng) const;

 private:
  Fabric* fabric_;
  ProbeNoise noise_;
};

}  // namespace weft::sim

#endif  // WEFT_SIM_PROBE_MODEL_H_
