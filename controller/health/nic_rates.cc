#include "controller/health/nic_rates.h"

#include <algorithm>

#include "common/pfc_share.h"

namespace weft::controller {
namespace {

constexpr double kBitsPerByte = 8.0;
constexpr double kBitsPerGigabit = 1e9;

double BytesPerSecondToGbps(double bytes_per_s) {
  return bytes_per_s * kBitsPerByte / kBitsPerGigabit;
}

}  // namespace

NicRates& NicRates::operator+=(const NicRates& other) {
  tx_gbps += other.tx_gbps;
  rx_gbps += other.rx_gbps;
  ecn_marked_per_s += other.ecn_marked_per_s;
  cnp_sent_per_s += other.cnp_sent_per_s;
  cnp_handled_per_s += other.cnp_handled_per_s;
  pfc_pause_us_per_s += other.pfc_pause_us_per_s;
  retransmissions_per_s += other.retransmissions_per_s;
  pfc_rx_pause_share = std::max(pfc_rx_pause_share, other.pfc_rx_pause_share);
  pfc_tx_pause_share = std::max(pfc_tx_pause_share, other.pfc_tx_pause_share);
  return *this;
}

NicRates RatesFromSample(const weft::v1::NicSample& sample) {
  NicRates rates;
  // An errored sample's counters are absent; a stale value would only mislead.
  if (!sample.error().empty()) return rates;
  // The first reading after a start or a counter reset has no previous one to diff.
  if (!sample.rates_valid()) return rates;
  const auto& port = sample.port_counters();
  rates.tx_gbps = BytesPerSecondToGbps(port.xmit_bytes().per_second());
  rates.rx_gbps = BytesPerSecondToGbps(port.rcv_bytes().per_second());
  const auto& congestion = sample.congestion();
  rates.ecn_marked_per_s = congestion.np_ecn_marked_roce_packets().per_second();
  rates.cnp_sent_per_s = congestion.np_cnp_sent().per_second();
  rates.cnp_handled_per_s = congestion.rp_cnp_handled().per_second();
  for (const auto& pfc : sample.pfc()) {
    rates.pfc_pause_us_per_s +=
        pfc.rx_pause_duration_us().per_second() + pfc.tx_pause_duration_us().per_second();
  }
  const PfcPauseShares shares = PauseSharesOf(sample);
  rates.pfc_rx_pause_share = shares.rx;
  rates.pfc_tx_pause_share = shares.tx;
  const auto& retrans = sample.retransmission();
  rates.retransmissions_per_s = retrans.packet_seq_err().per_second() +
                                retrans.local_ack_timeout_err().per_second() +
                                retrans.out_of_sequence().per_second();
  return rates;
}

weft::v1::NodeRates ToProto(const NicRates& rates) {
  weft::v1::NodeRates proto;
  proto.set_tx_gbps(rates.tx_gbps);
  proto.set_rx_gbps(rates.rx_gbps);
  proto.set_ecn_marked_per_s(rates.ecn_marked_per_s);
  proto.set_cnp_sent_per_s(rates.cnp_sent_per_s);
  proto.set_cnp_handled_per_s(rates.cnp_handled_per_s);
  proto.set_pfc_pause_us_per_s(rates.pfc_pause_us_per_s);
  proto.set_retransmissions_per_s(rates.retransmissions_per_s);
  proto.set_pfc_rx_pause_share(rates.pfc_rx_pause_share);
  proto.set_pfc_tx_pause_share(rates.pfc_tx_pause_share);
  return proto;
}

}  // namespace weft::controller
