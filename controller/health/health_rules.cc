#include "controller/health/health_rules.h"

#include <algorithm>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace weft::controller {
namespace {


// The value a rate rule reads from a reading, or nullopt when the reading cannot say
// (invalid rates, an error, or the counter group absent).
using ValueOf = std::optional<double> (*)(const NicReading&, const HealthThresholds&);

bool RatesUsable(const NicReading& r) { return r.rates_valid && !r.has_error; }

std::optional<double> PauseShare(const NicReading& r, const HealthThresholds&) {
  if (!RatesUsable(r) || !r.pfc.has_pfc) return std::nullopt;
  return r.pfc.worst();
}

std::optional<double> EcnRatio(const NicReading& r, const HealthThresholds& t) {
  if (!RatesUsable(r) || !r.ecn_marked_per_s || !r.rcv_packets_per_s) return std::nullopt;
  if (*r.rcv_packets_per_s <= 0 || *r.rcv_packets_per_s < t.ecn_min_rcv_packets_per_s) {
    return std::nullopt;
  }
  return *r.ecn_marked_per_s / *r.rcv_packets_per_s;
}

// The value of a rate rule over one counter: unset while rates are unusable or the NIC
// lacks the counter.
std::optional<double> Usable(const NicReading& r, const std::optional<double>& value) {
  if (!RatesUsable(r)) return std::nullopt;
  return value;
}

std::optional<double> CnpIgnored(const NicReading& r, const HealthThresholds&) {
  return Usable(r, r.cnp_ignored_per_s);
}

std::optional<double> PacketSeqErr(const NicReading& r, const HealthThresholds&) {
  return Usable(r, r.packet_seq_err_per_s);
}

std::optional<double> LocalAckTimeout(const NicReading& r, const HealthThresholds&) {
  return Usable(r, r.local_ack_timeout_err_per_s);
}

std::optional<double> OutOfSequence(const NicReading& r, const HealthThresholds&) {
  return Usable(r, r.out_of_sequence_per_s);
}

// The run of readings, newest first, for which `holds` is true: its length and the
// reception time of its oldest reading.
struct Run {
  int length = 0;
  absl::Time since;
};

template <typename Predicate>
Run NewestRun(const std::deque<NicReading>& window, Predicate holds) {
  Run run;
  for (auto it = window.rbegin(); it != window.rend(); ++it) {
    if (!holds(*it)) break;
    ++run.length;
    run.since = it->received_at;
  }
  return run;
}

std::string Percent(double share) { return absl::StrFormat("%.1f%%", 100 * share); }
std::string PerSecond(double rate) { return absl::StrFormat("%.1f/s", rate); }

bool PortUp(uint32_t state) {
  return state == weft::v1::PORT_STATE_ACTIVE || state == weft::v1::PORT_STATE_ACTIVE_DEFER;
}

std::string PortStateText(uint32_t state) {
  const std::string& name = weft::v1::PortState_Name(static_cast<weft::v1::PortState>(state));
  constexpr absl::string_view kPrefix = "PORT_STATE_";
  if (name.size() > kPrefix.size()) return name.substr(kPrefix.size());
  return absl::StrCat(state);
}

struct RateRule {
  HealthRule rule;
  ValueOf value_of;
  double HealthThresholds::*threshold;
};

const RateRule kRateRules[] = {
    {HealthRule::kPfcPauseStorm, PauseShare, &HealthThresholds::pfc_pause_share},
    {HealthRule::kEcnMarkRatio, EcnRatio, &HealthThresholds::ecn_mark_ratio},
    {HealthRule::kCnpIgnored, CnpIgnored, &HealthThresholds::cnp_ignored_per_s},
    {HealthRule::kPacketSeqErr, PacketSeqErr, &HealthThresholds::packet_seq_err_per_s},
    {HealthRule::kLocalAckTimeout, LocalAckTimeout,
     &HealthThresholds::local_ack_timeout_err_per_s},
    {HealthRule::kOutOfSequence, OutOfSequence, &HealthThresholds::out_of_sequence_per_s},
};

std::string RateDetail(HealthRule rule, const NicReading& newest, double value,
                       double threshold) {
  switch (rule) {
    case HealthRule::kPfcPauseStorm:
      return absl::StrCat(newest.pfc.worst_direction(), " pause ", Percent(value),
                          " of the time on priority ", newest.pfc.worst_priority(),
                          " (threshold ", Percent(threshold), ")");
    case HealthRule::kEcnMarkRatio:
      return absl::StrCat(Percent(value), " of received packets ECN-marked (",
                          PerSecond(newest.ecn_marked_per_s.value_or(0)), " of ",
                          PerSecond(newest.rcv_packets_per_s.value_or(0)), "; threshold ",
                          Percent(threshold), ")");
    case HealthRule::kCnpIgnored:
      return absl::StrCat("rp_cnp_ignored ", PerSecond(value), " (threshold ",
                          PerSecond(threshold),
                          "): CNPs arrive for a priority without congestion control");
    case HealthRule::kPacketSeqErr:
      return absl::StrCat("packet_seq_err ", PerSecond(value), " (threshold ",
                          PerSecond(threshold), ")");
    case HealthRule::kLocalAckTimeout:
      return absl::StrCat("local_ack_timeout_err ", PerSecond(value), " (threshold ",
                          PerSecond(threshold), ")");
    case HealthRule::kOutOfSequence:
      return absl::StrCat("out_of_sequence ", PerSecond(value), " (threshold ",
                          PerSecond(threshold), ")");
    default:
      return "";
  }
}

}  // namespace

absl::string_view HealthRuleName(HealthRule rule) {
  switch (rule) {
    case HealthRule::kPfcPauseStorm:
      return "pfc_pause_storm";
    case HealthRule::kEcnMarkRatio:
      return "ecn_mark_ratio";
    case HealthRule::kCnpIgnored:
      return "cnp_ignored";
    case HealthRule::kPacketSeqErr:
      return "packet_seq_err";
    case HealthRule::kLocalAckTimeout:
      return "local_ack_timeout";
    case HealthRule::kOutOfSequence:
      return "out_of_sequence";
    case HealthRule::kLinkDown:
      return "link_down";
    case HealthRule::kLinkFlap:
      return "link_flap";
    case HealthRule::kNicUnreadable:
      return "nic_unreadable";
    case HealthRule::kPingmeshHost:
      return "pingmesh_host";
    case HealthRule::kPingmeshNic:
      return "pingmesh_nic";
    case HealthRule::kPingmeshLink:
      return "pingmesh_link";
  }
  return "unknown";
}

HealthThresholds HealthThresholds::FromConfig(const weft::v1::HealthConfig& config) {
  HealthThresholds t;
  t.consecutive_samples = static_cast<int>(config.consecutive_samples());
  t.pfc_pause_share = config.pfc_pause_share();
  t.ecn_mark_ratio = config.ecn_mark_ratio();
  t.ecn_min_rcv_packets_per_s = config.ecn_min_rcv_packets_per_s();
  t.cnp_ignored_per_s = config.cnp_ignored_per_s();
  t.packet_seq_err_per_s = config.packet_seq_err_per_s();
  t.local_ack_timeout_err_per_s = config.local_ack_timeout_err_per_s();
  t.out_of_sequence_per_s = config.out_of_sequence_per_s();
  t.link_flaps_per_window = config.link_flaps_per_window();
  return t;
}

NicReading ReadingFromSample(const weft::v1::NicSample& sample, absl::Time received_at) {
  NicReading r;
  r.received_at = received_at;
  r.timestamp_us = sample.timestamp_us();
  r.rates_valid = sample.rates_valid();
  r.has_error = !sample.error().empty();
  r.error = sample.error();
  r.rates = RatesFromSample(sample);
  r.port_state = sample.port_state();
  const weft::v1::PortCounters& port = sample.port_counters();
  if (port.has_link_downed()) r.link_downed_total = port.link_downed().total();
  if (port.has_rcv_packets()) r.rcv_packets_per_s = port.rcv_packets().per_second();
  const weft::v1::CongestionCounters& cc = sample.congestion();
  if (cc.has_np_ecn_marked_roce_packets()) {
    r.ecn_marked_per_s = cc.np_ecn_marked_roce_packets().per_second();
  }
  if (cc.has_rp_cnp_ignored()) r.cnp_ignored_per_s = cc.rp_cnp_ignored().per_second();
  const weft::v1::RetransmissionCounters& rt = sample.retransmission();
  if (rt.has_packet_seq_err()) r.packet_seq_err_per_s = rt.packet_seq_err().per_second();
  if (rt.has_local_ack_timeout_err()) {
    r.local_ack_timeout_err_per_s = rt.local_ack_timeout_err().per_second();
  }
  if (rt.has_out_of_sequence()) r.out_of_sequence_per_s = rt.out_of_sequence().per_second();
  r.pfc = PauseSharesOf(sample);
  return r;
}

weft::v1::Finding Finding::ToProto() const {
  weft::v1::Finding proto;
  proto.set_rule(std::string(HealthRuleName(rule)));
  proto.set_device(device);
  proto.set_port(port);
  proto.set_value(value);
  proto.set_threshold(threshold);
  proto.set_detail(detail);
  proto.set_since_us(absl::ToUnixMicros(since));
  return proto;
}

std::string DescribeFinding(const Finding& finding) {
  if (finding.port == 0) {
    return absl::StrCat(HealthRuleName(finding.rule), " on ", finding.device, ": ",
                        finding.detail);
  }
  return absl::StrCat(HealthRuleName(finding.rule), " on ", finding.device, "/",
                      finding.port, ": ", finding.detail);
}

uint64_t LinkFlapIncrease(const NicReading& before, const NicReading& after) {
  // A reading with valid rates follows a comparable one: no reset in between.
  if (!after.rates_valid || after.has_error || before.has_error ||
      !before.link_downed_total || !after.link_downed_total ||
      *after.link_downed_total <= *before.link_downed_total) {
    return 0;
  }
  return *after.link_downed_total - *before.link_downed_total;
}

LinkFlaps CountLinkFlaps(const std::deque<NicReading>& window) {
  LinkFlaps flaps;
  for (size_t i = 1; i < window.size(); ++i) {
    const uint64_t increase = LinkFlapIncrease(window[i - 1], window[i]);
    if (increase == 0) continue;
    if (flaps.count == 0) flaps.first = window[i].received_at;
    flaps.count += increase;
  }
  return flaps;
}

std::vector<Finding> EvaluateNicWindow(absl::string_view device, uint32_t port,
                                       const std::deque<NicReading>& window,
                                       const HealthThresholds& thresholds) {
  return EvaluateNicWindow(device, port, window, thresholds, CountLinkFlaps(window));
}

std::vector<Finding> EvaluateNicWindow(absl::string_view device, uint32_t port,
                                       const std::deque<NicReading>& window,
                                       const HealthThresholds& thresholds,
                                       const LinkFlaps& link_flaps) {
  std::vector<Finding> findings;
  if (window.empty()) return findings;
  const int needed = std::max(1, thresholds.consecutive_samples);
  const NicReading& newest = window.back();
  auto add = [&](HealthRule rule, double value, double threshold, std::string detail,
                 absl::Time since) {
    Finding& f = findings.emplace_back();
    f.rule = rule;
    f.device = std::string(device);
    f.port = port;
    f.value = value;
    f.threshold = threshold;
    f.detail = std::move(detail);
    f.since = since;
  };

  for (const RateRule& rule : kRateRules) {
    const double threshold = thresholds.*rule.threshold;
    const Run run = NewestRun(window, [&](const NicReading& r) {
      const std::optional<double> value = rule.value_of(r, thresholds);
      return value.has_value() && *value > threshold;
    });
    if (run.length < needed) continue;
    const double value = *rule.value_of(newest, thresholds);
    add(rule.rule, value, threshold, RateDetail(rule.rule, newest, value, threshold),
        run.since);
  }

  const Run down = NewestRun(window, [](const NicReading& r) {
    return !r.has_error && r.port_state != 0 && !PortUp(r.port_state);
  });
  if (down.length >= needed) {
    add(HealthRule::kLinkDown, newest.port_state, weft::v1::PORT_STATE_ACTIVE,
        absl::StrCat("port state ", PortStateText(newest.port_state),
                     " (expected ACTIVE) for ", down.length, " readings"),
        down.since);
  }

  const uint64_t flaps = link_flaps.count;
  const absl::Time first_flap = link_flaps.first;
  if (flaps > static_cast<uint64_t>(std::max<int64_t>(0, thresholds.link_flaps_per_window))) {
    add(HealthRule::kLinkFlap, static_cast<double>(flaps),
        static_cast<double>(thresholds.link_flaps_per_window),
        absl::StrCat("link went down ", flaps, " time", flaps == 1 ? "" : "s", " in the last ",
                     window.size(), " readings (threshold ", thresholds.link_flaps_per_window,
                     ")"),
        first_flap);
  }

  const Run unreadable = NewestRun(window, [](const NicReading& r) { return r.has_error; });
  if (unreadable.length >= needed) {
    add(HealthRule::kNicUnreadable, unreadable.length, needed,
        absl::StrCat(unreadable.length, " readings in a row failed: ", newest.error),
        unreadable.since);
  }
  return findings;
}

}  // namespace weft::controller
