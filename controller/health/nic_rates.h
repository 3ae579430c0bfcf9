// NicRates: the rates the controller aggregates from one NIC's telemetry sample, and
// their sum over a node's NICs (weft.v1.NodeRates). Pure counter arithmetic over the
// per-second values the agent already computed (wrap and reset are handled there), so
// the inventory and the tests share one definition of "tx_gbps" or "retransmissions".
// Plain value types and free functions: thread-compatible.
#ifndef WEFT_CONTROLLER_HEALTH_NIC_RATES_H_
#define WEFT_CONTROLLER_HEALTH_NIC_RATES_H_

#include "proto/weft/v1/admin.pb.h"
#include "proto/weft/v1/telemetry.pb.h"

namespace weft::controller {

struct NicRates {
  double tx_gbps = 0;                // xmit_bytes/s × 8 / 1e9
  double rx_gbps = 0;                // rcv_bytes/s × 8 / 1e9
  double ecn_marked_per_s = 0;       // np_ecn_marked_roce_packets/s
  double cnp_sent_per_s = 0;         // np_cnp_sent/s
  double cnp_handled_per_s = 0;      // rp_cnp_handled/s
  double pfc_pause_us_per_s = 0;     // Σ priorities (rx + tx pause duration µs)/s
  double retransmissions_per_s = 0;  // packet_seq_err + local_ack_timeout_err + out_of_sequence
  // PFC pause share of time per direction, 0..1 (common/pfc_share.h): the most-paused
  // priority. A share does not add up: the sum of NICs or nodes keeps the largest.
  double pfc_rx_pause_share = 0;
  double pfc_tx_pause_share = 0;

  // Adds the rates; keeps the larger of each pause share.
  NicRates& operator+=(const NicRates& other);
};

// The rates carried by `sample`. A sample with `error` set carries no counters and
// yields all zeros; so does one with rates_valid == false (the first reading after a
// start or a counter reset), whatever its per_second fields say.
NicRates RatesFromSample(const weft::v1::NicSample& sample);

weft::v1::NodeRates ToProto(const NicRates& rates);

}  // namespace weft::controller

#endif  // WEFT_CONTROLLER_HEALTH_NIC_RATES_H_
