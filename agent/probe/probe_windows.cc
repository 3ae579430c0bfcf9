#include "agent/probe/probe_windows.h"

#include <algorithm>
#include <cmath>

namespace weft::agent::probe {

double Percentile(std::vector<double>* values, double p) {
  if (values->empty()) return 0;
  std::sort(values->begin(), values->end());
  const size_t rank = static_cast<size_t>(std::ceil(p / 100.0 * values->size()));
  return (*values)[std::clamp<size_t>(rank, 1, values->size()) - 1];
}

ProbeWindows::ProbeWindows(absl::Duration window, absl::Time origin)
    : window_(window), origin_(origin) {}

int64_t ProbeWindows::IndexOf(absl::Time t) const {
  absl::Duration rest;
  const int64_t index = absl::IDivDuration(t - origin_, window_, &rest);
  return rest < absl::ZeroDuration() ? index - 1 : index;  // floor, not truncation
}

void ProbeWindows::Sent(const ProbeFlow& flow, absl::Time sent_at) {
  ++windows_[IndexOf(sent_at)][flow].sent;
}

void ProbeWindows::Answered(const ProbeFlow& flow, absl::Time sent_at,
                            const ProbeMeasurement& measured) {
  Window& w = windows_[IndexOf(sent_at)][flow];
  w.rtt_us.push_back(absl::ToDoubleMicroseconds(measured.network_rtt));
  w.sender_us.push_back(absl::ToDoubleMicroseconds(measured.sender_host_delay));
  w.responder_us.push_back(absl::ToDoubleMicroseconds(measured.responder_host_delay));
  // The enum runs from most to least precise: the window is as good as its worst probe.
  w.worst_timestamps = std::max(w.worst_timestamps, measured.timestamps);
  if (measured.dscp_at_responder != flow.dscp) ++w.dscp_mismatches;
}

void ProbeWindows::Lost(const ProbeFlow& flow, absl::Time sent_at) {
  ++windows_[IndexOf(sent_at)][flow].lost;
}

void ProbeWindows::Failed(const ProbeFlow& flow, absl::Time at, const std::string& error) {
  windows_[IndexOf(at)][flow].error = error;
}

weft::v1::ProbeWindow ProbeWindows::ToProto(const ProbeFlow& flow, int64_t index, Window& w,
                                            uint64_t version) const {
  weft::v1::ProbeWindow out;
  SetFlowFields(flow, &out);
  out.set_transport(flow.transport);
  const absl::Time start = origin_ + window_ * index;
  out.set_window_start_us(absl::ToUnixMicros(start));
  out.set_window_end_us(absl::ToUnixMicros(start + window_));
  out.set_sent(w.sent);
  out.set_lost(w.lost);
  out.set_dscp_mismatches(w.dscp_mismatches);
  out.set_pinglist_version(version);
  if (!w.error.empty()) out.set_error(w.error);
  if (!w.rtt_us.empty()) {
    out.set_rtt_min_us(*std::min_element(w.rtt_us.begin(), w.rtt_us.end()));
    out.set_rtt_p50_us(Percentile(&w.rtt_us, 50));
    out.set_rtt_p99_us(Percentile(&w.rtt_us, 99));
    out.set_sender_host_delay_us(Percentile(&w.sender_us, 50));
    out.set_responder_host_delay_us(Percentile(&w.responder_us, 50));
    out.set_timestamps(TimestampSourceName(w.worst_timestamps));
  }
  return out;
}

std::vector<weft::v1::ProbeWindow> ProbeWindows::TakeClosed(absl::Time resolved_before,
                                                            uint64_t version) {
  std::vector<weft::v1::ProbeWindow> out;
  while (!windows_.empty()) {
    auto it = windows_.begin();
    const int64_t index = it->first;
    if (origin_ + window_ * (index + 1) > resolved_before) break;
    for (auto& [flow, window] : it->second) out.push_back(ToProto(flow, index, window, version));
    windows_.erase(it);
  }
  return out;
}

std::vector<weft::v1::ProbeWindow> ProbeWindows::TakeAll(uint64_t version) {
  std::vector<weft::v1::ProbeWindow> out;
  for (auto& [index, flows] : windows_) {
    for (auto& [flow, window] : flows) out.push_back(ToProto(flow, index, window, version));
  }
  windows_.clear();
  return out;
}

}  // namespace weft::agent::probe
