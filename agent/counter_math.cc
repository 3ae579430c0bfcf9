#include "agent/counter_math.h"

#include <vector>

#include "absl/time/time.h"

namespace weft::agent {
namespace {

using weft::v1::Counter;
using weft::v1::NicSample;
using weft::v1::PriorityPfcCounters;

constexpr uint64_t k32BitRange = uint64_t{1} << 32;

// Where each raw counter goes in the sample, and how wide the hardware counter is.
struct ScalarCounter {
  uint64_t RawNicCounters::*field;
  CounterWidth width;
  Counter* (*mutable_counter)(NicSample*);
};

// Whether the counter's group was read: the hw_counters groups exist only where the
// NIC has the capability, and an absent group must stay absent, not read as zero.
bool GroupPresent(const RawNicCounters& c, const ScalarCounter& counter) {
  if (counter.field == &RawNicCounters::np_ecn_marked_roce_packets ||
      counter.field == &RawNicCounters::np_cnp_sent ||
      counter.field == &RawNicCounters::rp_cnp_handled ||
      counter.field == &RawNicCounters::rp_cnp_ignored) {
    return c.has_congestion;
  }
  if (counter.field == &RawNicCounters::out_of_sequence ||
      counter.field == &RawNicCounters::packet_seq_err ||
      counter.field == &RawNicCounters::local_ack_timeout_err ||
      counter.field == &RawNicCounters::rnr_nak_retry_err ||
      counter.field == &RawNicCounters::implied_nak_seq_err ||
      counter.field == &RawNicCounters::duplicate_request ||
      counter.field == &RawNicCounters::out_of_buffer) {
    return c.has_retransmission;
  }
  return true;
}

constexpr CounterWidth k32 = CounterWidth::k32Bits;
constexpr CounterWidth k64 = CounterWidth::k64Bits;

const ScalarCounter kScalarCounters[] = {
    {&RawNicCounters::port_xmit_bytes, k64,
     [](NicSample* s) { return s->mutable_port_counters()->mutable_xmit_bytes(); }},
    {&RawNicCounters::port_rcv_bytes, k64,
     [](NicSample* s) { return s->mutable_port_counters()->mutable_rcv_bytes(); }},
    {&RawNicCounters::port_xmit_packets, k64,
     [](NicSample* s) { return s->mutable_port_counters()->mutable_xmit_packets(); }},
    {&RawNicCounters::port_rcv_packets, k64,
     [](NicSample* s) { return s->mutable_port_counters()->mutable_rcv_packets(); }},
    {&RawNicCounters::port_xmit_discards, k64,
     [](NicSample* s) { return s->mutable_port_counters()->mutable_xmit_discards(); }},
    {&RawNicCounters::port_rcv_errors, k64,
     [](NicSample* s) { return s->mutable_port_counters()->mutable_rcv_errors(); }},
    {&RawNicCounters::link_downed, k64,
     [](NicSample* s) { return s->mutable_port_counters()->mutable_link_downed(); }},
    {&RawNicCounters::symbol_error, k64,
     [](NicSample* s) { return s->mutable_port_counters()->mutable_symbol_error(); }},
    {&RawNicCounters::link_error_recovery, k64,
     [](NicSample* s) { return s->mutable_port_counters()->mutable_link_error_recovery(); }},
    {&RawNicCounters::np_ecn_marked_roce_packets, k64,
     [](NicSample* s) { return s->mutable_congestion()->mutable_np_ecn_marked_roce_packets(); }},
    {&RawNicCounters::np_cnp_sent, k64,
     [](NicSample* s) { return s->mutable_congestion()->mutable_np_cnp_sent(); }},
    {&RawNicCounters::rp_cnp_handled, k64,
     [](NicSample* s) { return s->mutable_congestion()->mutable_rp_cnp_handled(); }},
    {&RawNicCounters::rp_cnp_ignored, k64,
     [](NicSample* s) { return s->mutable_congestion()->mutable_rp_cnp_ignored(); }},
    {&RawNicCounters::out_of_sequence, k32,
     [](NicSample* s) { return s->mutable_retransmission()->mutable_out_of_sequence(); }},
    {&RawNicCounters::packet_seq_err, k32,
     [](NicSample* s) { return s->mutable_retransmission()->mutable_packet_seq_err(); }},
    {&RawNicCounters::local_ack_timeout_err, k32,
     [](NicSample* s) { return s->mutable_retransmission()->mutable_local_ack_timeout_err(); }},
    {&RawNicCounters::rnr_nak_retry_err, k32,
     [](NicSample* s) { return s->mutable_retransmission()->mutable_rnr_nak_retry_err(); }},
    {&RawNicCounters::implied_nak_seq_err, k32,
     [](NicSample* s) { return s->mutable_retransmission()->mutable_implied_nak_seq_err(); }},
    {&RawNicCounters::duplicate_request, k32,
     [](NicSample* s) { return s->mutable_retransmission()->mutable_duplicate_request(); }},
    {&RawNicCounters::out_of_buffer, k32,
     [](NicSample* s) { return s->mutable_retransmission()->mutable_out_of_buffer(); }},
};

// ethtool's per-priority counters are 64-bit.
struct PfcCounter {
  uint64_t RawPfcCounters::*field;
  Counter* (*mutable_counter)(PriorityPfcCounters*);
};

const PfcCounter kPfcCounters[] = {
    {&RawPfcCounters::rx_pause, [](PriorityPfcCounters* p) { return p->mutable_rx_pause(); }},
    {&RawPfcCounters::tx_pause, [](PriorityPfcCounters* p) { return p->mutable_tx_pause(); }},
    {&RawPfcCounters::rx_pause_duration_us,
     [](PriorityPfcCounters* p) { return p->mutable_rx_pause_duration_us(); }},
    {&RawPfcCounters::tx_pause_duration_us,
     [](PriorityPfcCounters* p) { return p->mutable_tx_pause_duration_us(); }},
};

const RawPfcCounters* FindPriority(const std::vector<RawPfcCounters>& pfc, uint32_t priority) {
  for (const RawPfcCounters& p : pfc) {
    if (p.priority == priority) return &p;
  }
  return nullptr;
}

}  // namespace

std::optional<uint64_t> CounterIncrease(uint64_t previous, uint64_t current, CounterWidth width) {
  if (current >= previous) return current - previous;
  if (width == CounterWidth::k64Bits) return std::nullopt;
  // Values that do not fit in 32 bits cannot come from a 32-bit counter: be strict.
  if (previous >= k32BitRange || current >= k32BitRange) return std::nullopt;
  const uint64_t wrapped = k32BitRange - previous + current;
  // A reset from a small value would look like a wrap of almost 2^32: no counter on a
  // NIC advances by more than half its range in one interval, so call that a reset.
  if (wrapped >= k32BitRange / 2) return std::nullopt;
  return wrapped;
}

NicUpdate ComputeNicUpdate(const RawNicReading* previous, const RawNicReading& current) {
  NicUpdate update;
  NicSample& sample = update.sample;
  sample.set_device(current.device);
  sample.set_port(current.port);
  sample.set_timestamp_us(absl::ToUnixMicros(current.timestamp));
  sample.set_port_state(static_cast<uint32_t>(current.port_state));
  sample.set_rates_valid(false);
  for (const std::string& warning : current.warnings) sample.add_warnings(warning);
  if (!current.error.empty()) {
    sample.set_error(current.error);
    return update;
  }

  const RawNicCounters& cur = current.counters;
  for (const ScalarCounter& c : kScalarCounters) {
    if (GroupPresent(cur, c)) c.mutable_counter(&sample)->set_total(cur.*c.field);
  }
  for (const RawPfcCounters& p : cur.pfc) {
    PriorityPfcCounters* out = sample.add_pfc();
    out->set_priority(p.priority);
    for (const PfcCounter& c : kPfcCounters) c.mutable_counter(out)->set_total(p.*c.field);
  }

  if (previous == nullptr || !previous->error.empty() || previous->device != current.device ||
      previous->port != current.port) {
    return update;
  }
  const absl::Duration elapsed = current.timestamp - previous->timestamp;
  if (elapsed <= absl::ZeroDuration()) return update;

  const RawNicCounters& prev = previous->counters;
  RawNicCounters increase;
  for (const ScalarCounter& c : kScalarCounters) {
    // A group that appeared or vanished between the readings has no increase.
    if (!GroupPresent(cur, c) || !GroupPresent(prev, c)) continue;
    const std::optional<uint64_t> inc = CounterIncrease(prev.*c.field, cur.*c.field, c.width);
    if (!inc.has_value()) return update;  // reset: no rate from this pair
    increase.*c.field = *inc;
  }
  // Priorities that only just appeared have no increase (and a 0 rate) yet.
  std::vector<bool> has_increase(cur.pfc.size(), false);
  for (size_t i = 0; i < cur.pfc.size(); ++i) {
    const RawPfcCounters* before = FindPriority(prev.pfc, cur.pfc[i].priority);
    if (before == nullptr) continue;
    RawPfcCounters inc_p;
    inc_p.priority = cur.pfc[i].priority;
    for (const PfcCounter& c : kPfcCounters) {
      const std::optional<uint64_t> inc =
          CounterIncrease(before->*c.field, cur.pfc[i].*c.field, CounterWidth::k64Bits);
      if (!inc.has_value()) return update;
      inc_p.*c.field = *inc;
    }
    increase.pfc.push_back(inc_p);
    has_increase[i] = true;
  }

  const double seconds = absl::ToDoubleSeconds(elapsed);
  for (const ScalarCounter& c : kScalarCounters) {
    if (!GroupPresent(cur, c)) continue;
    c.mutable_counter(&sample)->set_per_second(static_cast<double>(increase.*c.field) / seconds);
  }
  size_t next_increase = 0;
  for (size_t i = 0; i < cur.pfc.size(); ++i) {
    if (!has_increase[i]) continue;
    const RawPfcCounters& inc_p = increase.pfc[next_increase++];
    for (const PfcCounter& c : kPfcCounters) {
      c.mutable_counter(sample.mutable_pfc(static_cast<int>(i)))
          ->set_per_second(static_cast<double>(inc_p.*c.field) / seconds);
    }
  }
  sample.set_rates_valid(true);
  update.increase = std::move(increase);
  return update;
}

}  // namespace weft::agent
