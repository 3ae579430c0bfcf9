// Localiser: the controller's fault localisation for pingmesh (issue 22). Fed the probe
// windows of every stream, window by window, it names the faulty component in layers,
// each layer explaining losses before the next looks at them:
//   1. host: its software delay (sender or responder) is high while the network round
//      trip of its streams is normal: a slow host, not a slow network;
//   2. NIC: a large share of its probes is lost in the latest window, on most of its
//      streams (a lossy path loses a few streams hard), while the NICs under the same
//      ToR are fine on their streams under that ToR (those through the spines carry the
//      uplinks' faults too; a NIC and its cable are one component to round-trip probes;
//      a node whose NICs are all blamed is blamed as unreachable instead);
//   3. switch: most streams through it lost probes in the latest window;
//   4. link: over the horizon (the last `horizon_windows` windows), 007's votes pick the
//      candidate links (every stream with a loss gives 1/h to each of its h links; take
//      the top link (on a tie, the one whose streams lose the larger share of their
//      probes), drop the streams it explains, repeat among the links whose
//      remaining streams still lost `min_losses` probes: an absolute bar, where 007's
//      share of all votes let a fleet's other losses hold back a link with enough
//      evidence of its own; a stream that loses while its siblings on other source ports
//      stay clean votes only for its links between switches, where ECMP hashes the port:
//      a cable would drop its siblings' probes too), then NetBouncer's tomography over
//      every stream through a candidate estimates each candidate's loss rate (coordinate
//      descent on Σ_p w_p (y_p − Π x_l)² + λ Σ x_l (1 − x_l), w_p the stream's share of
//      probes); a candidate is blamed when its estimated loss is at least `tau_link` and
//      the losses the fit gives it are at least `min_losses`.
// Losses a host, NIC or switch verdict explains are removed from the horizon, so they do
// not count against the links. Links that no stream tells apart (the two directions of a
// NIC's cable: every round trip through one crosses the other) are one component, named
// "a + b". Each component's verdict is raised after `raise_after` consecutive windows that
// blame it and cleared after `clear_after` consecutive windows that do not; a link's
// losses stay in the horizon, so it clears a horizon after the loss stops.
//
// Time comes only from the windows' `now`: no clock reads. Not thread-safe: one thread
// (the controller's pingmesh manager) feeds it.
//
// Example:
//   Localiser localiser(&resolver, LocaliserOptions{});
//   for (const ProbeWindow& w : windows) RETURN_IF_ERROR(localiser.Add(w));
//   VerdictChanges changes = localiser.EndWindow(now);
#ifndef WEFT_PINGMESH_LOCALISER_H_
#define WEFT_PINGMESH_LOCALISER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "pingmesh/path_resolver.h"
#include "pingmesh/probe.h"

namespace weft::pingmesh {

struct LocaliserOptions {
  absl::Duration window = absl::Milliseconds(250);
  int horizon_windows = 40;  // 10 s of 250 ms windows for gray loss
  int raise_after = 2;
  int clear_after = 8;
  // Host: its median host delay above both the floor and `host_delay_factor` times the
  // fleet's median, while its streams' median RTT is within `rtt_normal_factor` of the
  // fleet's.
  double host_delay_floor_us = 200;
  double host_delay_factor = 5;
  double rtt_normal_factor = 2;
  // NIC: loss share of its probes in the window, the share of its streams that lost any
  // (a NIC fails towards every peer; a lossy path hits a few of its streams hard), the
  // ToR peers' median share under half of nic_loss_share, and at least this many probes.
  double nic_loss_share = 0.1;
  double nic_lossy_stream_share = 0.5;
  int nic_min_probes = 8;
  // Switch: share of its streams with a loss in the window.
  double switch_lossy_share = 0.5;
  int switch_min_streams = 8;
  // Link: 007 votes, then tomography.
  int max_candidates = 64;
  double lambda = 0.01;
  int max_rounds = 100;
  double tau_link = 5e-5;
  double min_losses = 4;
  // The loss rate of a healthy path, for the confidence of a link verdict.
  double healthy_loss_rate = 1e-5;
};

enum class ComponentKind { kHost, kNic, kSwitch, kLink };
enum class Problem { kSlow, kLoss, kUnreachable };

const char* ComponentKindName(ComponentKind kind);  // "host", "nic", "switch", "link"
const char* ProblemName(Problem problem);           // "slow", "loss", "unreachable"

struct Verdict {
  ComponentKind kind = ComponentKind::kLink;
  std::string component;  // node, "node/nic", switch, or link names joined by " + "
  Problem problem = Problem::kLoss;
  double loss_rate = 0;      // estimated share of probes it drops
  double host_delay_us = 0;  // for a slow host
  double confidence = 0;     // 0..1
  absl::Time since;          // when the evidence started (the first blaming window)
  std::string evidence;      // one line a person can check
};

struct VerdictChanges {
  std::vector<Verdict> raised;
  std::vector<Verdict> cleared;
};

class Localiser {
 public:
  // `resolver` must outlive the localiser.
  Localiser(PathResolver* resolver, LocaliserOptions options);

  // Checks every field, naming the field and the accepted range.
  static absl::Status ValidateOptions(const LocaliserOptions& options);

  // Adds one stream's window to the window in progress (a second report of the same
  // stream adds to it). InvalidArgument for negative counts or more lost than sent;
  // the resolver's error when the stream has no path. State is unchanged on error.
  absl::Status Add(const ProbeWindow& window);
  // The same in two steps, for a caller that keeps streams by handle (the pinglist's
  // entries) and so avoids a lookup by key per window: Register resolves a stream's path
  // once and returns its handle (the same handle for a key already registered); AddTo
  // adds a window by handle and does not read the window's key. InvalidArgument for a
  // handle Register did not return or a stream since removed.
  absl::StatusOr<int> Register(const ProbeKey& key);
  absl::Status AddTo(int stream, const ProbeWindow& window);
  // Forgets a stream whose pinglist entry is gone; NotFound if it was never added.
  absl::Status RemoveStream(const ProbeKey& key);
  // Asks the resolver for the stream's path again (a traceroute showed another one) and
  // keeps its history: the losses of the horizon count against the new path's links.
  // NotFound if the stream was never added; the resolver's error leaves the old path.
  absl::Status ResolveAgain(const ProbeKey& key);

  // Closes the window in progress at `now` and runs the layers over it.
  VerdictChanges EndWindow(absl::Time now);

  // Raised verdicts, sorted by kind then component.
  std::vector<Verdict> ActiveVerdicts() const;
  size_t streams() const { return key_to_stream_.size(); }

 private:
  // What every window reads of a stream, small and together (the NIC and switch
  // layers reach streams in no particular order).
  struct Counts {
    int32_t last_sent = 0, last_lost = 0;  // the latest closed window
    int32_t src_nic = 0, dst_nic = 0;
  };
  struct Stream {
    ProbeKey key;
    bool live = true;
    std::vector<int> links;    // local link indices, forward then back
    std::vector<int> classes;  // link classes, deduplicated
    std::vector<int> switches; // switch devices crossed, deduplicated
    int src_host = 0, dst_host = 0;
    // Window in progress.
    int64_t cur_sent = 0, cur_lost = 0;
    double cur_rtt_p50_us = -1, cur_sender_delay_us = -1, cur_responder_delay_us = -1;
    // Latest closed window.
    double rtt_p50_us = -1, sender_delay_us = -1, responder_delay_us = -1;
    // Sums over the horizon (the windows are in ring_sent_ and ring_lost_).
    int64_t sent_h = 0, lost_h = 0;
  };
  struct Nic {
    std::string name;  // node/nic
    int host = 0;
    int tor = -1;  // device index of its switch, -1 if not known yet
  };
  struct ComponentState {
    Verdict verdict;  // latest evidence
    int blamed_run = 0;
    int clean_run = 0;
    bool active = false;
  };

  // The key's path as local link indices (forward then back); notes the NICs' ToRs.
  absl::StatusOr<std::vector<int>> ResolveLinks(const ProbeKey& key, const Counts& counts);
  int InternLink(int resolver_link);
  int InternDevice(const std::string& name);
  int InternHost(const std::string& name);
  int InternNic(const std::string& node, const std::string& nic);
  void RebuildClasses();
  void AdvanceRings();
  void BlameHosts(std::vector<Verdict>* blamed);
  void BlameNics(std::vector<bool>* explained, std::vector<Verdict>* blamed);
  void BlameSwitches(std::vector<bool>* explained, std::vector<Verdict>* blamed);
  void BlameLinks(const std::vector<bool>& explained, std::vector<Verdict>* blamed);
  VerdictChanges ApplyHysteresis(const std::vector<Verdict>& blamed, absl::Time now);

  PathResolver* resolver_;
  LocaliserOptions options_;
  int64_t window_index_ = 0;
  absl::Time window_start_;
  bool classes_dirty_ = false;

  std::vector<Stream> streams_;
  std::vector<Counts> counts_;  // by stream
  // The horizon's windows: [slot][stream], saturating at 65,535 probes per window.
  std::vector<std::vector<uint16_t>> ring_sent_, ring_lost_;
  absl::flat_hash_map<ProbeKey, int> key_to_stream_;
  absl::flat_hash_map<int, int> link_index_;  // resolver id → local index
  std::vector<int> link_resolver_id_;
  std::vector<int> link_class_;
  std::vector<std::vector<int>> class_links_;
  std::vector<std::vector<int>> class_streams_;
  std::vector<std::string> class_name_;
  std::vector<std::string> devices_;
  absl::flat_hash_map<std::string, int> device_index_;
  std::vector<bool> device_is_switch_;
  std::vector<std::vector<int>> switch_streams_;  // by device index
  std::vector<std::string> hosts_;
  absl::flat_hash_map<std::string, int> host_index_;
  std::vector<Nic> nics_;
  absl::flat_hash_map<std::string, int> nic_index_;
  std::vector<std::vector<int>> nic_streams_;
  absl::flat_hash_map<std::string, ComponentState> components_;  // by kind + name
  std::vector<std::vector<double>> host_delay_scratch_, host_rtt_scratch_;  // by host
};

}  // namespace weft::pingmesh

#endif  // WEFT_PINGMESH_LOCALISER_H_
