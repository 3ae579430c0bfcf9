#include "sim/pfc_fluid.h"

#include <algorithm>
#include <cmath>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace weft::sim {
namespace {

// Below this a fluid byte count is rounding, not a byte.
constexpr double kEpsilonBytes = 1e-6;

absl::Status OutOfRange(const std::string& field, double value, const std::string& range) {
  return absl::InvalidArgumentError(
      absl::StrCat(field, " = ", value, " is out of range: accepted ", range));
}

DcqcnParams WithCapacity(DcqcnParams params, double capacity_bps) {
  params.capacity_bps = capacity_bps;
  return params;
}

absl::Status ValidateFlows(const PfcChainConfig& config) {
  for (size_t i = 0; i < config.flows.size(); ++i) {
    const PfcFlow& flow = config.flows[i];
    const std::string prefix = absl::StrCat("flows[", i, "].");
    if (flow.sender < 0 || flow.sender >= config.senders) {
      return OutOfRange(prefix + "sender", flow.sender,
                        absl::StrCat("[0, ", config.senders - 1, "]"));
    }
    if (flow.receiver < 0 || flow.receiver >= config.receivers) {
      return OutOfRange(prefix + "receiver", flow.receiver,
                        absl::StrCat("[0, ", config.receivers - 1, "]"));
    }
    if (!(flow.fixed_rate_bps >= 0) || !std::isfinite(flow.fixed_rate_bps)) {
      return OutOfRange(prefix + "fixed_rate_bps", flow.fixed_rate_bps, "[0, inf) (0: DCQCN)");
    }
    if (!(flow.start_us >= 0 && flow.stop_us > flow.start_us)) {
      return OutOfRange(prefix + "start_us", flow.start_us, "[0, stop_us)");
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateConfig(const PfcChainConfig& config) {
  if (config.senders < 1) return OutOfRange("senders", config.senders, "[1, inf)");
  if (config.receivers < 1) return OutOfRange("receivers", config.receivers, "[1, inf)");
  if (config.flows.empty()) return absl::InvalidArgumentError("flows is empty: accepted 1 or more");
  if (absl::Status s = ValidateFlows(config); !s.ok()) return s;
  if (!config.storm_share.empty() &&
      static_cast<int>(config.storm_share.size()) != config.receivers) {
    return OutOfRange("storm_share.size()", config.storm_share.size(),
                      absl::StrCat("0 or ", config.receivers, " (one per receiver)"));
  }
  if (!config.sender_is_switch_port.empty() &&
      static_cast<int>(config.sender_is_switch_port.size()) != config.senders) {
    return OutOfRange("sender_is_switch_port.size()", config.sender_is_switch_port.size(),
                      absl::StrCat("0 or ", config.senders, " (one per sender)"));
  }
  for (size_t i = 0; i < config.storm_share.size(); ++i) {
    const double share = config.storm_share[i];
    if (!(share >= 0 && share <= 1)) {
      return OutOfRange(absl::StrCat("storm_share[", i, "]"), share, "[0, 1]");
    }
  }
  if (!(config.storm_period_us > 0)) {
    return OutOfRange("storm_period_us", config.storm_period_us, "(0, inf)");
  }
  if (!(config.step_us > 0 && config.step_us <= config.pfc.link_delay_us &&
        config.step_us <= config.dcqcn.feedback_delay_us)) {
    return OutOfRange("step_us", config.step_us,
                      "(0, min(pfc.link_delay_us, dcqcn.feedback_delay_us)]");
  }
  return ValidateParams(WithCapacity(config.dcqcn, config.link_bps));
}

int DelaySteps(double delay_us, double step_us) {
  return std::max(1, static_cast<int>(std::lround(delay_us / step_us)));
}

}  // namespace

absl::StatusOr<PfcFluidChain> PfcFluidChain::Create(const PfcChainConfig& config) {
  if (absl::Status s = ValidateConfig(config); !s.ok()) return s;
  return PfcFluidChain(config);
}

PfcFluidChain::PfcFluidChain(const PfcChainConfig& config)
    : config_(config),
      step_s_(config.step_us * 1e-6),
      stepper_(WithCapacity(config.dcqcn, config.link_bps), step_s_) {
  config_.dcqcn.capacity_bps = config_.link_bps;
  if (config_.storm_share.empty()) config_.storm_share.assign(config_.receivers, 0);
  const double link_bytes_per_s = config_.link_bps / 8;
  headroom_bytes_ =
      config_.pfc.headroom_link_delays * link_bytes_per_s * config_.pfc.link_delay_us * 1e-6;
  link_delay_steps_ = DelaySteps(config_.pfc.link_delay_us, config_.step_us);
  feedback_delay_steps_ = DelaySteps(config_.dcqcn.feedback_delay_us, config_.step_us);

  const int num_flows = static_cast<int>(config_.flows.size());
  flows_of_receiver_.resize(config_.receivers);
  flows_of_sender_.resize(config_.senders);
  for (int f = 0; f < num_flows; ++f) {
    flows_of_receiver_[config_.flows[f].receiver].push_back(f);
    flows_of_sender_[config_.flows[f].sender].push_back(f);
  }
  ingress_.resize(config_.senders);
  queued_bytes_.assign(num_flows, 0);
  upstream_queued_bytes_.assign(num_flows, 0);
  in_flight_bytes_.assign(link_delay_steps_, std::vector<double>(num_flows, 0));
  pause_seen_.assign(link_delay_steps_, std::vector<char>(config_.senders, 0));
  // DCQCN flows start at line rate with α = 1 (the authors' start), and the loop's
  // history before τ* is that constant start.
  const double line_rate_pps = config_.link_bps / (config_.dcqcn.packet_bytes * 8);
  reaction_points_.assign(num_flows, ReactionPoint{line_rate_pps, line_rate_pps, 1});
  host_rate_pps_.assign(num_flows, 0);
  p_history_.assign(feedback_delay_steps_, std::vector<double>(num_flows, 0));
  sent_rate_history_pps_.assign(feedback_delay_steps_,
                                std::vector<double>(num_flows, line_rate_pps));
  ResetAverages();
}

void PfcFluidChain::RunFor(double duration_us) {
  const int64_t steps = static_cast<int64_t>(duration_us / config_.step_us + 1e-9);
  for (int64_t i = 0; i < steps; ++i) Step();
}

void PfcFluidChain::Step() {
  const int slot = static_cast<int>(step_count_ % link_delay_steps_);
  // What was sent one link delay ago arrives now; what is sent now lands one delay later.
  std::vector<double> arriving = in_flight_bytes_[slot];
  SendFromNics(&in_flight_bytes_[slot]);
  for (size_t f = 0; f < arriving.size(); ++f) {
    if (arriving[f] > 0) queued_bytes_[f] += Admit(config_.flows[f].sender, arriving[f]);
  }
  for (int r = 0; r < config_.receivers; ++r) ServeEgress(r);
  DecidePauses();
  StepDcqcn();
  ++step_count_;
  ++averaged_steps_;
}

bool PfcFluidChain::IsSwitchPort(int sender) const {
  return !config_.sender_is_switch_port.empty() && config_.sender_is_switch_port[sender];
}

double PfcFluidChain::AskedRateBps(int f) const {
  const PfcFlow& flow = config_.flows[f];
  const double now_us = time_us() + 1e-9;
  if (now_us < flow.start_us || now_us >= flow.stop_us) return 0;
  if (flow.fixed_rate_bps > 0) return flow.fixed_rate_bps;
  return reaction_points_[f].rate_current_pps * config_.dcqcn.packet_bytes * 8;
}

void PfcFluidChain::SendFromNics(std::vector<double>* sent_bytes) {
  const int slot = static_cast<int>(step_count_ % link_delay_steps_);
  const double packet_bits = config_.dcqcn.packet_bytes * 8;
  for (int s = 0; s < config_.senders; ++s) {
    const bool paused = pause_seen_[slot][s];
    if (paused) ++sender_paused_steps_[s];
    if (IsSwitchPort(s)) {
      SendFromSwitchPort(s, paused, sent_bytes);
      continue;
    }
    double asked_bps = 0;
    for (int f : flows_of_sender_[s]) asked_bps += AskedRateBps(f);
    const double scale = asked_bps > config_.link_bps ? config_.link_bps / asked_bps : 1;
    for (int f : flows_of_sender_[s]) {
      (*sent_bytes)[f] = paused ? 0 : AskedRateBps(f) * scale / 8 * step_s_;
      host_rate_pps_[f] = (*sent_bytes)[f] * 8 / step_s_ / packet_bits;
      sender_sent_bytes_[s] += (*sent_bytes)[f];
    }
  }
}

double PfcFluidChain::SenderQueueBytes(int sender) const {
  double bytes = 0;
  for (int f : flows_of_sender_[sender]) bytes += upstream_queued_bytes_[f];
  return bytes;
}

void PfcFluidChain::SendFromSwitchPort(int sender, bool paused, std::vector<double>* sent_bytes) {
  const double packet_bits = config_.dcqcn.packet_bytes * 8;
  for (int f : flows_of_sender_[sender]) {
    const double rate_bps = std::min(AskedRateBps(f), config_.link_bps);  // its host's NIC
    upstream_queued_bytes_[f] += rate_bps / 8 * step_s_;
    host_rate_pps_[f] = rate_bps / packet_bits;
    (*sent_bytes)[f] = 0;
  }
  const double queue_bytes = SenderQueueBytes(sender);
  sender_queue_integral_[sender] += queue_bytes;
  if (paused || queue_bytes <= kEpsilonBytes) return;
  const double served_bytes = std::min(queue_bytes, config_.link_bps / 8 * step_s_);
  for (int f : flows_of_sender_[sender]) {
    const double leaving = upstream_queued_bytes_[f] * served_bytes / queue_bytes;
    upstream_queued_bytes_[f] -= leaving;
    (*sent_bytes)[f] = leaving;
  }
  sender_sent_bytes_[sender] += served_bytes;
}

double PfcFluidChain::SharedUse(const IngressPort& port) const {
  return std::max(0.0, port.ingress_bytes - config_.pfc.reserve_bytes);
}

double PfcFluidChain::Xoff() const {
  const PfcSwitchParams& pfc = config_.pfc;
  const double free_bytes = pfc.buffer_bytes - config_.senders * headroom_bytes_ -
                            config_.senders * pfc.reserve_bytes - shared_used_bytes_;
  return std::max(0.0, free_bytes) / static_cast<double>(1 << pfc.xoff_shift);
}

double PfcFluidChain::Admit(int port_index, double bytes) {
  IngressPort& port = ingress_[port_index];
  const double to_reserve =
      std::min(bytes, std::max(0.0, config_.pfc.reserve_bytes - port.ingress_bytes));
  port.ingress_bytes += to_reserve;
  bytes -= to_reserve;
  const double to_shared = std::min(bytes, std::max(0.0, Xoff() - SharedUse(port)));
  port.ingress_bytes += to_shared;
  shared_used_bytes_ += to_shared;
  bytes -= to_shared;
  const double to_headroom = std::min(bytes, headroom_bytes_ - port.headroom_bytes);
  port.headroom_bytes += to_headroom;
  max_headroom_bytes_ = std::max(max_headroom_bytes_, port.headroom_bytes);
  dropped_bytes_ += bytes - to_headroom;
  return to_reserve + to_shared + to_headroom;
}

void PfcFluidChain::Release(int port_index, double bytes) {
  // HPCC's order: headroom first, then shared, the reserve last.
  IngressPort& port = ingress_[port_index];
  const double from_headroom = std::min(port.headroom_bytes, bytes);
  port.headroom_bytes -= from_headroom;
  const double rest = bytes - from_headroom;
  const double from_shared = std::min(rest, SharedUse(port));
  shared_used_bytes_ = std::max(0.0, shared_used_bytes_ - from_shared);
  port.ingress_bytes = std::max(0.0, port.ingress_bytes - rest);
}

double PfcFluidChain::EgressQueueBytes(int receiver) const {
  double bytes = 0;
  for (int f : flows_of_receiver_[receiver]) bytes += queued_bytes_[f];
  return bytes;
}

bool PfcFluidChain::StormPauses(int receiver) const {
  const double share = config_.storm_share[receiver];
  if (share <= 0) return false;
  const double phase = std::fmod(time_us() + 1e-9, config_.storm_period_us);
  return phase < share * config_.storm_period_us;
}

void PfcFluidChain::ServeEgress(int receiver) {
  const double queue_bytes = EgressQueueBytes(receiver);
  queue_integral_[receiver] += queue_bytes;
  mark_integral_[receiver] += MarkingProbability(config_.dcqcn, queue_bytes);
  max_egress_queue_bytes_ = std::max(max_egress_queue_bytes_, queue_bytes);
  if (StormPauses(receiver)) {
    ++receiver_paused_steps_[receiver];
    return;
  }
  if (queue_bytes <= kEpsilonBytes) return;
  const double served_bytes = std::min(queue_bytes, config_.link_bps / 8 * step_s_);
  // FIFO as a fluid: every flow leaves in proportion to its bytes in the queue.
  for (int f : flows_of_receiver_[receiver]) {
    const double leaving = queued_bytes_[f] * served_bytes / queue_bytes;
    queued_bytes_[f] -= leaving;
    delivered_bytes_[f] += leaving;
    Release(config_.flows[f].sender, leaving);
  }
}

void PfcFluidChain::DecidePauses() {
  const int slot = static_cast<int>(step_count_ % link_delay_steps_);
  const double xoff = Xoff();
  for (int s = 0; s < config_.senders; ++s) {
    IngressPort& port = ingress_[s];
    const double shared = SharedUse(port);
    const bool headroom_empty = port.headroom_bytes <= kEpsilonBytes;
    if (!port.paused && (!headroom_empty || shared >= xoff)) {
      port.paused = true;
    } else if (port.paused && headroom_empty &&
               (shared <= kEpsilonBytes || shared + config_.pfc.resume_offset_bytes <= xoff)) {
      port.paused = false;
    }
    pause_seen_[slot][s] = port.paused;
  }
}

void PfcFluidChain::StepDcqcn() {
  const int slot = static_cast<int>(step_count_ % feedback_delay_steps_);
  for (size_t f = 0; f < config_.flows.size(); ++f) {
    const PfcFlow& flow = config_.flows[f];
    if (flow.fixed_rate_bps > 0) continue;
    // R^ is what the flow's host sent τ* ago: a paused NIC sends nothing, so neither its
    // byte counter nor its marks advance (its timer does).
    stepper_.Step(p_history_[slot][f], sent_rate_history_pps_[slot][f], &reaction_points_[f]);
    sent_rate_history_pps_[slot][f] = host_rate_pps_[f];
    const double p_egress = MarkingProbability(config_.dcqcn, EgressQueueBytes(flow.receiver));
    const double p_upstream =
        IsSwitchPort(flow.sender) ? MarkingProbability(config_.dcqcn, SenderQueueBytes(flow.sender))
                                  : 0;
    p_history_[slot][f] = 1 - (1 - p_egress) * (1 - p_upstream);
  }
}

void PfcFluidChain::ResetAverages() {
  const int num_flows = static_cast<int>(config_.flows.size());
  averaged_steps_ = 0;
  delivered_bytes_.assign(num_flows, 0);
  sender_paused_steps_.assign(config_.senders, 0);
  receiver_paused_steps_.assign(config_.receivers, 0);
  queue_integral_.assign(config_.receivers, 0);
  mark_integral_.assign(config_.receivers, 0);
  sender_queue_integral_.assign(config_.senders, 0);
  sender_sent_bytes_.assign(config_.senders, 0);
  max_egress_queue_bytes_ = 0;
  max_headroom_bytes_ = 0;
  dropped_bytes_ = 0;
}

PfcAverages PfcFluidChain::Averages() const {
  PfcAverages averages;
  const double steps = std::max<double>(1, static_cast<double>(averaged_steps_));
  averages.duration_us = static_cast<double>(averaged_steps_) * config_.step_us;
  const double duration_s = std::max(1e-12, averages.duration_us * 1e-6);
  for (double bytes : delivered_bytes_) averages.flow_rate_bps.push_back(bytes * 8 / duration_s);
  for (int64_t n : sender_paused_steps_) averages.sender_pause_share.push_back(n / steps);
  for (int64_t n : receiver_paused_steps_) averages.receiver_pause_share.push_back(n / steps);
  for (double q : queue_integral_) averages.egress_queue_bytes.push_back(q / steps);
  for (double p : mark_integral_) averages.egress_mark_probability.push_back(p / steps);
  for (double q : sender_queue_integral_) averages.sender_queue_bytes.push_back(q / steps);
  for (double bytes : sender_sent_bytes_) {
    averages.sender_sent_bps.push_back(bytes * 8 / duration_s);
  }
  averages.max_egress_queue_bytes = max_egress_queue_bytes_;
  averages.max_headroom_bytes = max_headroom_bytes_;
  averages.dropped_bytes = dropped_bytes_;
  return averages;
}

}  // namespace weft::sim
