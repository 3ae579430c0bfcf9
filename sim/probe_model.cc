#include "sim/probe_model.h"

#include <cmath>

#include "absl/strings/str_cat.h"

namespace weft::sim {
namespace {

double Exponential(double mean, std::mt19937_64* rng) {
  if (mean <= 0) return 0;
  double u = std::uniform_real_distribution<double>(0, 1)(*rng);
  return -mean * std::log1p(-u);
}

int SwitchesCrossed(const std::vector<int>& path) { return path.empty() ? 0 : path.size() - 1; }

}  // namespace

absl::Status ProbeModel::Prepare(const ProbeFaults& faults, ProbeStream* stream) {
  const size_t links = fabric_->links().size(), nics = fabric_->nics().size();
  if ((!faults.link_drop.empty() && faults.link_drop.size() != links) ||
      (!faults.link_down.empty() && faults.link_down.size() != links) ||
      (!faults.nic_dead.empty() && faults.nic_dead.size() != nics) ||
      (!faults.node_extra_host_delay_us.empty() &&
       faults.node_extra_host_delay_us.size() != static_cast<size_t>(fabric_->num_nodes()))) {
    return absl::InvalidArgumentError(absl::StrCat(
        "probe faults: per-link vectors need 0 or ", links, " entries, nic_dead 0 or ", nics,
        ", node_extra_host_delay_us 0 or ", fabric_->num_nodes()));
  }
  FlowTuple there{stream->src_nic, stream->dst_nic, stream->udp_src_port};
  FlowTuple back{stream->dst_nic, stream->src_nic, stream->udp_src_port};
  absl::StatusOr<std::vector<int>> forward =
      faults.link_down.empty() ? fabric_->EcmpPath(there) : fabric_->EcmpPath(there, faults.link_down);
  if (!forward.ok() && forward.status().code() != absl::StatusCode::kNotFound) {
    return forward.status();
  }
  absl::StatusOr<std::vector<int>> reverse =
      faults.link_down.empty() ? fabric_->EcmpPath(back) : fabric_->EcmpPath(back, faults.link_down);
  if (!reverse.ok() && reverse.status().code() != absl::StatusCode::kNotFound) {
    return reverse.status();
  }
  stream->forward = forward.ok() ? *std::move(forward) : std::vector<int>{};
  stream->back = reverse.ok() ? *std::move(reverse) : std::vector<int>{};
  bool dead = (!faults.nic_dead.empty() &&
               (faults.nic_dead[stream->src_nic] || faults.nic_dead[stream->dst_nic])) ||
              stream->forward.empty() || stream->back.empty();
  double delivery = dead ? 0 : 1;
  for (const std::vector<int>* part : {&stream->forward, &stream->back}) {
    for (int l : *part) {
      if (!faults.link_drop.empty()) delivery *= 1 - faults.link_drop[l];
    }
  }
  stream->delivery = delivery;
  stream->base_rtt_us =
      1e6 * (fabric_->PathDelaySeconds(stream->forward) + fabric_->PathDelaySeconds(stream->back)) +
      noise_.switch_latency_us * (SwitchesCrossed(stream->forward) + SwitchesCrossed(stream->back));
  return absl::OkStatus();
}

ProbeWindowOutcome ProbeModel::Send(const ProbeStream& stream, int count,
                                    const ProbeFaults& faults, std::mt19937_64* rng) const {
  ProbeWindowOutcome out;
  out.sent = count;
  if (count <= 0) return out;
  // Binomial losses; most windows of a healthy stream lose nothing, decided in one draw.
  double all_arrive = std::pow(stream.delivery, count);
  if (std::uniform_real_distribution<double>(0, 1)(*rng) >= all_arrive) {
    // At least one lost: draw the count conditioned on that.
    do {
      out.lost = std::binomial_distribution<int>(count, 1 - stream.delivery)(*rng);
    } while (out.lost == 0);
  }
  if (out.lost == count) return out;  // nothing answered: no RTT, no host delay
  out.rtt_min_us = stream.base_rtt_us;
  out.rtt_p50_us = stream.base_rtt_us + Exponential(noise_.rtt_jitter_us, rng);
  out.rtt_p99_us = out.rtt_p50_us + Exponential(4 * noise_.rtt_jitter_us, rng);
  auto host_delay = [&](int nic) {
    double delay = noise_.host_delay_us + Exponential(noise_.host_delay_jitter_us, rng);
    if (std::uniform_real_distribution<double>(0, 1)(*rng) < noise_.host_spike_probability) {
      delay += Exponential(noise_.host_spike_us, rng);
    }
    int node = fabric_->nics()[nic].node;
    if (!faults.node_extra_host_delay_us.empty()) delay += faults.node_extra_host_delay_us[node];
    return delay;
  };
  out.sender_host_delay_us = host_delay(stream.src_nic);
  out.responder_host_delay_us = host_delay(stream.dst_nic);
  return out;
}

}  // namespace weft::sim
