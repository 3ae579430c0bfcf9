// SyntheticNode: what one simulated GPU node sends the controller in the ingest
// benchmark — its NodeInfo (Register) and one TelemetryBatch per interval (Connect) —
// cheap enough that one process can play thousands of nodes.
//
// The first batch is what a real weft-agent with the simulated backend sends: the
// node's SimBackend (agent/sim_backend.h, seeded from the node name) is read twice,
// one interval apart, and turned into samples by agent/counter_math.h, so the field
// set and the magnitudes (8 NICs at 400 Gb/s and 60% load, ECN marks, CNPs, PFC
// priority 3) are the agent's. After that the batch is rewritten in place: every
// counter the template carries advances by its template rate times a smooth ±10%
// wave (one sine per NIC per batch) over the real time elapsed, and per_second is the
// increase divided by that time, with rates_valid set. Nothing is allocated per batch,
// which keeps the load generator's own CPU small next to the controller's.
//
// Thread-compatible: one thread at a time may call NextBatch (the fleet guarantees it).
#ifndef WEFT_BENCH_INGEST_SYNTHETIC_NODE_H_
#define WEFT_BENCH_INGEST_SYNTHETIC_NODE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "proto/weft/v1/agent.pb.h"
#include "proto/weft/v1/node.pb.h"

namespace weft::bench {

class SyntheticNode {
 public:
  // A node named `name` with `nics` NICs and `gpus` GPUs, whose first batch is the one
  // due at `now`. INVALID_ARGUMENT when the simulated backend refuses the shape
  // (nics 1..32, gpus 0..16) or the name is empty.
  static absl::StatusOr<std::unique_ptr<SyntheticNode>> Create(const std::string& name,
                                                               uint32_t nics, uint32_t gpus,
                                                               absl::Time now);

  SyntheticNode(const SyntheticNode&) = delete;
  SyntheticNode& operator=(const SyntheticNode&) = delete;

  // What Register carries.
  const weft::v1::NodeInfo& info() const { return info_; }

  // Places the node in a rack and pod (NodeInfo.rack, NodeInfo.pod; empty by default).
  void set_location(const std::string& rack, const std::string& pod) {
    info_.set_rack(rack);
    info_.set_pod(pod);
  }

  // The batch due at `now`, as an AgentMessage ready to write. The first call returns
  // the template unchanged but re-stamped with `now`; later calls advance the counters
  // by the time since the previous call (nothing moves when `now` did not advance).
  // The reference stays valid, and is overwritten by the next call.
  weft::v1::AgentMessage& NextBatch(absl::Time now);

 private:
  struct Series {
    weft::v1::Counter* counter;
    double base_per_second;  // the template's rate
  };
  struct Nic {
    weft::v1::NicSample* sample;
    double wave_phase;
    std::vector<Series> series;
  };

  SyntheticNode() = default;

  weft::v1::NodeInfo info_;
  weft::v1::AgentMessage message_;
  std::vector<Nic> nics_;
  absl::Time last_;
  bool first_ = true;
};

}  // namespace weft::bench

#endif  // WEFT_BENCH_INGEST_SYNTHETIC_NODE_H_
