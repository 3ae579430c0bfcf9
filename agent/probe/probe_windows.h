// ProbeWindows: each probe flow's results summarised over fixed windows (issue 22,
// R-Pingmesh's 30 s windows): sent, lost, network RTT min/p50/p99 and the median host
// delays of both ends, as weft.v1.ProbeWindow. A probe counts in the window it was
// sent in; a window is handed out once every probe in it is resolved (answered or
// timed out), i.e. once its end plus the probe timeout has passed. Pure logic.
//
// Thread-compatible.
#ifndef WEFT_AGENT_PROBE_PROBE_WINDOWS_H_
#define WEFT_AGENT_PROBE_PROBE_WINDOWS_H_

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "agent/probe/probe_transport.h"
#include "proto/weft/v1/probe.pb.h"

namespace weft::agent::probe {

// The nearest-rank percentile `p` (0..100] of `values`, which it sorts. 0 when empty.
double Percentile(std::vector<double>* values, double p);

class ProbeWindows {
 public:
  // Windows are [origin + k·window, origin + (k+1)·window).
  ProbeWindows(absl::Duration window, absl::Time origin);

  void Sent(const ProbeFlow& flow, absl::Time sent_at);
  void Answered(const ProbeFlow& flow, absl::Time sent_at, const ProbeMeasurement& measured);
  void Lost(const ProbeFlow& flow, absl::Time sent_at);
  // The flow could not probe in the window holding `at` (the error is kept, the last).
  void Failed(const ProbeFlow& flow, absl::Time at, const std::string& error);

  // Removes and returns the windows that end at or before `resolved_before`,
  // stamped with `pinglist_version`, in time then flow order. Visits only the windows
  // it returns (the prober asks on every wake, i.e. about once per probe).
  std::vector<weft::v1::ProbeWindow> TakeClosed(absl::Time resolved_before,
                                                uint64_t pinglist_version);
  // Everything still open, closed now (a pinglist replaced: the old flows' last words).
  std::vector<weft::v1::ProbeWindow> TakeAll(uint64_t pinglist_version);

 private:
  struct Window {
    uint64_t sent = 0;
    uint64_t lost = 0;
    uint64_t dscp_mismatches = 0;
    std::vector<double> rtt_us;
    std::vector<double> sender_us;
    std::vector<double> responder_us;
    TimestampSource worst_timestamps = TimestampSource::kHardware;
    std::string error;
  };

  int64_t IndexOf(absl::Time t) const;
  weft::v1::ProbeWindow ToProto(const ProbeFlow& flow, int64_t index, Window& window,
                                uint64_t version) const;

  const absl::Duration window_;
  const absl::Time origin_;
  // By window index, then flow: the closed windows are the first entries.
  std::map<int64_t, std::map<ProbeFlow, Window>> windows_;
};

}  // namespace weft::agent::probe

#endif  // WEFT_AGENT_PROBE_PROBE_WINDOWS_H_
