#include "pingmesh/localiser.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace weft::pingmesh {
namespace {

double Median(std::vector<double>* values) {
  if (values->empty()) return -1;
  auto mid = values->begin() + values->size() / 2;
  std::nth_element(values->begin(), mid, values->end());
  return *mid;
}

// P(Poisson(mean) >= k), for the confidence that `k` losses are not a healthy path's.
double PoissonTailAtLeast(double mean, double k) {
  if (k <= 0) return 1;
  double term = std::exp(-mean), below = 0;
  for (int i = 0; i < static_cast<int>(std::ceil(k)); ++i) {
    below += term;
    term *= mean / (i + 1);
  }
  return std::max(0.0, 1 - below);
}

std::string StateKey(ComponentKind kind, const std::string& name) {
  return absl::StrCat(ComponentKindName(kind), ":", name);
}

}  // namespace

const char* ComponentKindName(ComponentKind kind) {
  switch (kind) {
    case ComponentKind::kHost: return "host";
    case ComponentKind::kNic: return "nic";
    case ComponentKind::kSwitch: return "switch";
    case ComponentKind::kLink: return "link";
  }
  return "?";
}

const char* ProblemName(Problem problem) {
  switch (problem) {
    case Problem::kSlow: return "slow";
    case Problem::kLoss: return "loss";
    case Problem::kUnreachable: return "unreachable";
  }
  return "?";
}

Localiser::Localiser(PathResolver* resolver, LocaliserOptions options)
    : resolver_(resolver),
      options_(std::move(options)),
      ring_sent_(std::max(options_.horizon_windows, 1)),
      ring_lost_(std::max(options_.horizon_windows, 1)) {}

absl::Status Localiser::ValidateOptions(const LocaliserOptions& o) {
  auto bad = [](absl::string_view field, double value, absl::string_view range) {
    return absl::InvalidArgumentError(
        absl::StrCat("pingmesh localiser: ", field, " = ", value, " is out of range; ", range));
  };
  if (o.window <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("pingmesh localiser: window must be > 0");
  }
  if (o.horizon_windows < 1 || o.horizon_windows > 10000) {
    return bad("horizon_windows", o.horizon_windows, "accepted: 1..10000");
  }
  if (o.raise_after < 1) return bad("raise_after", o.raise_after, "accepted: >= 1");
  if (o.clear_after < 1) return bad("clear_after", o.clear_after, "accepted: >= 1");
  if (!(o.nic_loss_share > 0 && o.nic_loss_share <= 1)) {
    return bad("nic_loss_share", o.nic_loss_share, "accepted: (0, 1]");
  }
  if (!(o.nic_lossy_stream_share >= 0 && o.nic_lossy_stream_share <= 1)) {
    return bad("nic_lossy_stream_share", o.nic_lossy_stream_share, "accepted: [0, 1]");
  }
  if (!(o.switch_lossy_share > 0 && o.switch_lossy_share <= 1)) {
    return bad("switch_lossy_share", o.switch_lossy_share, "accepted: (0, 1]");
  }
  if (!(o.min_losses >= 1)) return bad("min_losses", o.min_losses, "accepted: >= 1");
  if (!(o.tau_link > 0 && o.tau_link < 1)) return bad("tau_link", o.tau_link, "accepted: (0, 1)");
  if (!(o.lambda >= 0 && o.lambda < 1)) return bad("lambda", o.lambda, "accepted: [0, 1)");
  if (o.max_rounds < 1 || o.max_candidates < 1) {
    return bad("max_rounds/max_candidates", std::min(o.max_rounds, o.max_candidates),
               "accepted: >= 1");
  }
  if (!(o.host_delay_floor_us >= 0) || !(o.host_delay_factor >= 1) ||
      !(o.rtt_normal_factor >= 1)) {
    return absl::InvalidArgumentError(
        "pingmesh localiser: host_delay_floor_us must be >= 0, host_delay_factor and "
        "rtt_normal_factor >= 1");
  }
  return absl::OkStatus();
}

int Localiser::InternDevice(const std::string& name) {
  auto [it, inserted] = device_index_.emplace(name, static_cast<int>(devices_.size()));
  if (inserted) {
    devices_.push_back(name);
    device_is_switch_.push_back(false);
  }
  return it->second;
}

int Localiser::InternLink(int resolver_link) {
  auto [it, inserted] = link_index_.emplace(resolver_link, static_cast<int>(link_resolver_id_.size()));
  if (inserted) {
    link_resolver_id_.push_back(resolver_link);
    const LinkInfo& info = resolver_->Link(resolver_link);
    int from = InternDevice(info.from), to = InternDevice(info.to);
    if (info.from_switch) device_is_switch_[from] = true;
    if (info.to_switch) device_is_switch_[to] = true;
  }
  return it->second;
}

int Localiser::InternHost(const std::string& name) {
  auto [it, inserted] = host_index_.emplace(name, static_cast<int>(hosts_.size()));
  if (inserted) hosts_.push_back(name);
  return it->second;
}

int Localiser::InternNic(const std::string& node, const std::string& nic) {
  std::string name = absl::StrCat(node, "/", nic);
  auto [it, inserted] = nic_index_.emplace(name, static_cast<int>(nics_.size()));
  if (inserted) nics_.push_back({name, InternHost(node), -1});
  return it->second;
}

absl::StatusOr<int> Localiser::Register(const ProbeKey& key) {
  auto it = key_to_stream_.find(key);
  if (it != key_to_stream_.end()) return it->second;
  Counts counts;
  counts.src_nic = InternNic(key.src_node, key.src_nic);
  counts.dst_nic = InternNic(key.dst_node, key.dst_nic);
  absl::StatusOr<std::vector<int>> links = ResolveLinks(key, counts);
  if (!links.ok()) return links.status();
  Stream stream;
  stream.key = key;
  stream.links = *std::move(links);
  stream.src_host = nics_[counts.src_nic].host;
  stream.dst_host = nics_[counts.dst_nic].host;
  for (auto* ring : {&ring_sent_, &ring_lost_}) {
    for (std::vector<uint16_t>& slot : *ring) slot.push_back(0);
  }
  int id = static_cast<int>(streams_.size());
  streams_.push_back(std::move(stream));
  counts_.push_back(counts);
  key_to_stream_.emplace(key, id);
  classes_dirty_ = true;
  return id;
}

absl::StatusOr<std::vector<int>> Localiser::ResolveLinks(const ProbeKey& key,
                                                         const Counts& counts) {
  absl::StatusOr<ProbePath> path = resolver_->Resolve(key);
  if (!path.ok()) return path.status();
  if (path->forward.empty() || path->back.empty()) {
    return absl::NotFoundError(absl::StrCat("pingmesh: no path for ", ProbeKeyName(key)));
  }
  std::vector<int> links;
  for (int link : path->forward) links.push_back(InternLink(link));
  for (int link : path->back) links.push_back(InternLink(link));
  const LinkInfo& first = resolver_->Link(path->forward.front());
  const LinkInfo& last = resolver_->Link(path->forward.back());
  if (first.to_switch) nics_[counts.src_nic].tor = device_index_.at(first.to);
  if (last.from_switch) nics_[counts.dst_nic].tor = device_index_.at(last.from);
  return links;
}

absl::Status Localiser::ResolveAgain(const ProbeKey& key) {
  auto it = key_to_stream_.find(key);
  if (it == key_to_stream_.end()) {
    return absl::NotFoundError(absl::StrCat("pingmesh: no stream ", ProbeKeyName(key)));
  }
  absl::StatusOr<std::vector<int>> links = ResolveLinks(key, counts_[it->second]);
  if (!links.ok()) return links.status();
  streams_[it->second].links = *std::move(links);
  classes_dirty_ = true;
  return absl::OkStatus();
}

absl::Status Localiser::Add(const ProbeWindow& window) {
  if (window.sent < 0 || window.lost < 0 || window.lost > window.sent) {
    return absl::InvalidArgumentError(absl::StrCat(
        "pingmesh window of ", ProbeKeyName(window.key), ": sent ", window.sent, " lost ",
        window.lost, "; both must be >= 0 and lost <= sent"));
  }
  absl::StatusOr<int> id = Register(window.key);
  if (!id.ok()) return id.status();
  return AddTo(*id, window);
}

absl::Status Localiser::AddTo(int id, const ProbeWindow& window) {
  if (id < 0 || id >= static_cast<int>(streams_.size()) || !streams_[id].live) {
    return absl::InvalidArgumentError(
        absl::StrCat("pingmesh: stream handle ", id, " is not a registered stream"));
  }
  Stream& s = streams_[id];
  if (window.sent < 0 || window.lost < 0 || window.lost > window.sent) {
    return absl::InvalidArgumentError(absl::StrCat(
        "pingmesh window of ", ProbeKeyName(s.key), ": sent ", window.sent, " lost ",
        window.lost, "; both must be >= 0 and lost <= sent"));
  }
  s.cur_sent += window.sent;
  s.cur_lost += window.lost;
  if (window.lost < window.sent) {
    s.cur_rtt_p50_us = window.rtt_p50_us;
    s.cur_sender_delay_us = window.sender_host_delay_us;
    s.cur_responder_delay_us = window.responder_host_delay_us;
  }
  return absl::OkStatus();
}

absl::Status Localiser::RemoveStream(const ProbeKey& key) {
  auto it = key_to_stream_.find(key);
  if (it == key_to_stream_.end()) {
    return absl::NotFoundError(absl::StrCat("pingmesh: no stream ", ProbeKeyName(key)));
  }
  Stream& s = streams_[it->second];
  s.live = false;
  for (auto* ring : {&ring_sent_, &ring_lost_}) {
    for (std::vector<uint16_t>& slot : *ring) slot[it->second] = 0;
  }
  s.sent_h = s.lost_h = s.cur_sent = s.cur_lost = 0;
  counts_[it->second].last_sent = counts_[it->second].last_lost = 0;
  key_to_stream_.erase(it);
  classes_dirty_ = true;
  return absl::OkStatus();
}

void Localiser::RebuildClasses() {
  classes_dirty_ = false;
  const int num_links = static_cast<int>(link_resolver_id_.size());
  std::vector<std::vector<int>> link_streams(num_links);
  for (int s = 0; s < static_cast<int>(streams_.size()); ++s) {
    if (!streams_[s].live) continue;
    for (int l : streams_[s].links) {
      if (link_streams[l].empty() || link_streams[l].back() != s) link_streams[l].push_back(s);
    }
  }
  // Links crossed by exactly the same streams cannot be told apart: one class.
  link_class_.assign(num_links, -1);
  class_links_.clear();
  class_streams_.clear();
  std::map<std::vector<int>, int> class_of_streams;
  for (int l = 0; l < num_links; ++l) {
    if (link_streams[l].empty()) continue;
    auto [it, inserted] =
        class_of_streams.emplace(link_streams[l], static_cast<int>(class_links_.size()));
    if (inserted) {
      class_links_.emplace_back();
      class_streams_.push_back(link_streams[l]);
    }
    link_class_[l] = it->second;
    class_links_[it->second].push_back(l);
  }
  class_name_.clear();
  for (const std::vector<int>& links : class_links_) {
    std::vector<std::string> names;
    for (int l : links) names.push_back(resolver_->Link(link_resolver_id_[l]).name);
    std::sort(names.begin(), names.end());
    class_name_.push_back(absl::StrJoin(names, " + "));
  }
  switch_streams_.assign(devices_.size(), {});
  nic_streams_.assign(nics_.size(), {});
  for (int s = 0; s < static_cast<int>(streams_.size()); ++s) {
    Stream& stream = streams_[s];
    if (!stream.live) continue;
    stream.classes.clear();
    stream.switches.clear();
    for (int l : stream.links) {
      stream.classes.push_back(link_class_[l]);
      const LinkInfo& info = resolver_->Link(link_resolver_id_[l]);
      for (const std::string* device : {&info.from, &info.to}) {
        int d = device_index_.at(*device);
        if (device_is_switch_[d]) stream.switches.push_back(d);
      }
    }
    for (std::vector<int>* v : {&stream.classes, &stream.switches}) {
      std::sort(v->begin(), v->end());
      v->erase(std::unique(v->begin(), v->end()), v->end());
    }
    for (int d : stream.switches) switch_streams_[d].push_back(s);
    nic_streams_[counts_[s].src_nic].push_back(s);
    if (counts_[s].dst_nic != counts_[s].src_nic) nic_streams_[counts_[s].dst_nic].push_back(s);
  }
}

void Localiser::AdvanceRings() {
  const int slot = static_cast<int>(window_index_ % options_.horizon_windows);
  std::vector<uint16_t>& ring_sent = ring_sent_[slot];
  std::vector<uint16_t>& ring_lost = ring_lost_[slot];
  for (size_t i = 0; i < streams_.size(); ++i) {
    Stream& s = streams_[i];
    if (!s.live) continue;
    uint16_t sent = static_cast<uint16_t>(std::min<int64_t>(s.cur_sent, 65535));
    uint16_t lost = static_cast<uint16_t>(std::min<int64_t>(s.cur_lost, sent));
    s.sent_h += sent - ring_sent[i];
    s.lost_h += lost - ring_lost[i];
    ring_sent[i] = sent;
    ring_lost[i] = lost;
    counts_[i].last_sent = sent;
    counts_[i].last_lost = lost;
    s.rtt_p50_us = s.cur_rtt_p50_us;
    s.sender_delay_us = s.cur_sender_delay_us;
    s.responder_delay_us = s.cur_responder_delay_us;
    s.cur_sent = s.cur_lost = 0;
    s.cur_rtt_p50_us = s.cur_sender_delay_us = s.cur_responder_delay_us = -1;
  }
  ++window_index_;
}

void Localiser::BlameHosts(std::vector<Verdict>* blamed) {
  // Scratch kept across windows: clearing keeps the capacity, so a window allocates nothing.
  std::vector<std::vector<double>>& delays = host_delay_scratch_;
  std::vector<std::vector<double>>& rtts = host_rtt_scratch_;
  delays.resize(hosts_.size());
  rtts.resize(hosts_.size());
  for (std::vector<std::vector<double>>* v : {&delays, &rtts}) {
    for (std::vector<double>& host : *v) host.clear();
  }
  for (size_t i = 0; i < streams_.size(); ++i) {
    const Stream& s = streams_[i];
    if (!s.live || counts_[i].last_sent == 0 || counts_[i].last_lost >= counts_[i].last_sent) {
      continue;
    }
    if (s.sender_delay_us >= 0) delays[s.src_host].push_back(s.sender_delay_us);
    if (s.responder_delay_us >= 0) delays[s.dst_host].push_back(s.responder_delay_us);
    if (s.rtt_p50_us >= 0) {
      rtts[s.src_host].push_back(s.rtt_p50_us);
      if (s.dst_host != s.src_host) rtts[s.dst_host].push_back(s.rtt_p50_us);
    }
  }
  std::vector<double> host_delay(hosts_.size()), host_rtt(hosts_.size());
  std::vector<double> fleet_delay, fleet_rtt;
  for (size_t h = 0; h < hosts_.size(); ++h) {
    host_delay[h] = Median(&delays[h]);
    host_rtt[h] = Median(&rtts[h]);
    if (host_delay[h] >= 0) fleet_delay.push_back(host_delay[h]);
    if (host_rtt[h] >= 0) fleet_rtt.push_back(host_rtt[h]);
  }
  double fleet_delay_median = Median(&fleet_delay);
  double fleet_rtt_median = Median(&fleet_rtt);
  if (fleet_delay_median < 0) return;
  double threshold =
      std::max(options_.host_delay_floor_us, options_.host_delay_factor * fleet_delay_median);
  for (size_t h = 0; h < hosts_.size(); ++h) {
    if (host_delay[h] <= threshold) continue;
    // A slow network shows in the RTT too; then the host is not the one to blame.
    if (host_rtt[h] >= 0 && fleet_rtt_median > 0 &&
        host_rtt[h] > options_.rtt_normal_factor * fleet_rtt_median) {
      continue;
    }
    Verdict v;
    v.kind = ComponentKind::kHost;
    v.component = hosts_[h];
    v.problem = Problem::kSlow;
    v.host_delay_us = host_delay[h];
    v.confidence = 1 - fleet_delay_median / host_delay[h];
    v.evidence = absl::StrFormat(
        "median host delay %.0f us against the fleet's %.0f us; network RTT %.1f us "
        "(fleet %.1f us)",
        host_delay[h], fleet_delay_median, host_rtt[h], fleet_rtt_median);
    blamed->push_back(std::move(v));
  }
}

void Localiser::BlameNics(std::vector<bool>* explained, std::vector<Verdict>* blamed) {
  const int n = static_cast<int>(nics_.size());
  // Greedy, worst NIC first: a NIC's share counts only its streams whose other end is
  // not already found losing, so a dead NIC does not drag the NICs that probe it (its
  // host's other NICs, its ToR peers) over the threshold.
  std::vector<bool> high(n, false);
  std::vector<int64_t> sent(n, 0), lost(n, 0);
  std::vector<int> lossy_streams(n, 0), streams_with_data(n, 0);
  auto count = [&](int i) {
    sent[i] = lost[i] = lossy_streams[i] = streams_with_data[i] = 0;
    for (int s : nic_streams_[i]) {
      const Counts& stream = counts_[s];
      int other = stream.src_nic == i ? stream.dst_nic : stream.src_nic;
      if (stream.last_sent == 0 || (other != i && high[other])) continue;
      sent[i] += stream.last_sent;
      lost[i] += stream.last_lost;
      ++streams_with_data[i];
      if (stream.last_lost > 0) ++lossy_streams[i];
    }
  };
  auto share = [&](int i) {
    return sent[i] == 0 ? 0.0 : static_cast<double>(lost[i]) / sent[i];
  };
  std::vector<int> losing;  // NICs with any loss: the only ones that can cross the bar
  for (int i = 0; i < n; ++i) {
    count(i);
    if (lost[i] > 0) losing.push_back(i);
  }
  for (;;) {
    int worst = -1;
    for (int i : losing) {
      if (high[i]) continue;
      count(i);
      bool spread = lossy_streams[i] >= options_.nic_lossy_stream_share * streams_with_data[i];
      if (sent[i] >= options_.nic_min_probes && share(i) >= options_.nic_loss_share && spread &&
          (worst < 0 || share(i) > share(worst))) {
        worst = i;
      }
    }
    if (worst < 0) break;
    high[worst] = true;
  }
  for (int i : losing) {
    if (high[i]) count(i);  // its share against the final set of NICs found losing
  }
  // A peer's share over its streams with no high-loss NIC at the other end: a dead NIC
  // makes its peers lose the probes they send it, and that is not their fault. Over the
  // streams that stay under the peer's ToR where it has any: the ToR is what the peers
  // vouch for, and streams through the spines carry the uplinks' faults too (a black-
  // holed uplink costs every NIC under its ToR an eighth of those, and where they are
  // most of its probes that passed for a lossy ToR).
  auto peer_share = [&](int j) {
    int64_t peer_sent[2] = {0, 0}, peer_lost[2] = {0, 0};  // under its ToR; all
    for (int s : nic_streams_[j]) {
      const Counts& stream = counts_[s];
      if (high[stream.src_nic] || high[stream.dst_nic]) continue;
      bool local = nics_[stream.src_nic].tor == nics_[stream.dst_nic].tor;
      for (int k = local ? 0 : 1; k < 2; ++k) {
        peer_sent[k] += stream.last_sent;
        peer_lost[k] += stream.last_lost;
      }
    }
    int k = peer_sent[0] > 0 ? 0 : 1;
    return peer_sent[k] == 0 ? -1.0 : static_cast<double>(peer_lost[k]) / peer_sent[k];
  };
  // Peers: the NICs under the same ToR on other nodes that are not losing probes
  // themselves; without any, the node's other NICs. With none at all the NIC cannot be
  // told from its ToR (the switch layer looks at it).
  std::map<int, std::vector<int>> by_tor;
  for (int i = 0; i < n; ++i) by_tor[nics_[i].tor].push_back(i);
  std::vector<int> suspects;
  for (int i = 0; i < n; ++i) {
    if (!high[i]) continue;
    std::vector<double> peer_shares;
    for (int j : by_tor[nics_[i].tor]) {
      if (high[j] || nics_[j].host == nics_[i].host) continue;
      if (double p = peer_share(j); p >= 0) peer_shares.push_back(p);
    }
    if (peer_shares.empty()) {
      for (int j = 0; j < n; ++j) {
        if (high[j] || j == i || nics_[j].host != nics_[i].host) continue;
        if (double p = peer_share(j); p >= 0) peer_shares.push_back(p);
      }
    }
    double peers = Median(&peer_shares);
    if (peers < 0 || peers >= options_.nic_loss_share / 2) continue;  // the ToR, not the NIC
    suspects.push_back(i);
  }
  std::vector<int> nics_per_host(hosts_.size(), 0), suspects_per_host(hosts_.size(), 0);
  for (int i = 0; i < n; ++i) ++nics_per_host[nics_[i].host];
  for (int i : suspects) ++suspects_per_host[nics_[i].host];
  std::vector<bool> host_reported(hosts_.size(), false);
  for (int i : suspects) {
    for (int s : nic_streams_[i]) (*explained)[s] = true;
    int host = nics_[i].host;
    Verdict v;
    v.problem = Problem::kUnreachable;
    v.loss_rate = share(i);
    if (nics_per_host[host] >= 2 && suspects_per_host[host] == nics_per_host[host]) {
      if (host_reported[host]) continue;
      host_reported[host] = true;
      v.kind = ComponentKind::kHost;
      v.component = hosts_[host];
      v.confidence = share(i);
      v.evidence = absl::StrFormat("all %d NICs lose their probes", nics_per_host[host]);
    } else {
      v.kind = ComponentKind::kNic;
      v.component = nics_[i].name;
      v.problem = share(i) >= 0.5 ? Problem::kUnreachable : Problem::kLoss;
      v.confidence = streams_with_data[i] == 0
                         ? 0
                         : static_cast<double>(lossy_streams[i]) / streams_with_data[i];
      v.evidence = absl::StrFormat(
          "%d of %d probes lost on %d of %d streams (NIC or its cable); its ToR peers are "
          "fine",
          lost[i], sent[i], lossy_streams[i], streams_with_data[i]);
    }
    blamed->push_back(std::move(v));
  }
}

void Localiser::BlameSwitches(std::vector<bool>* explained, std::vector<Verdict>* blamed) {
  // Greedy: blame the switch with the largest share of lossy streams, take its streams
  // out, look again; a dead ToR thus does not also condemn the spines its streams cross.
  for (;;) {
    int best = -1, best_lossy = 0, best_with_data = 0;
    double best_share = 0;
    for (int d = 0; d < static_cast<int>(devices_.size()); ++d) {
      if (!device_is_switch_[d]) continue;
      int with_data = 0, lossy = 0;
      for (int s : switch_streams_[d]) {
        if ((*explained)[s] || counts_[s].last_sent == 0) continue;
        ++with_data;
        if (counts_[s].last_lost > 0) ++lossy;
      }
      if (with_data < options_.switch_min_streams) continue;
      double share = static_cast<double>(lossy) / with_data;
      if (share >= options_.switch_lossy_share && share > best_share) {
        best = d, best_share = share, best_lossy = lossy, best_with_data = with_data;
      }
    }
    if (best < 0) return;
    for (int s : switch_streams_[best]) (*explained)[s] = true;
    Verdict v;
    v.kind = ComponentKind::kSwitch;
    v.component = devices_[best];
    v.problem = Problem::kLoss;
    v.confidence = best_share;
    v.loss_rate = best_share;
    v.evidence =
        absl::StrFormat("%d of %d streams through it lost probes", best_lossy, best_with_data);
    blamed->push_back(std::move(v));
  }
}

void Localiser::BlameLinks(const std::vector<bool>& explained, std::vector<Verdict>* blamed) {
  // 007: every stream with a loss over the horizon votes 1/h for each of its h links.
  std::vector<int> lossy;
  for (int s = 0; s < static_cast<int>(streams_.size()); ++s) {
    const Stream& stream = streams_[s];
    if (stream.live && !explained[s] && stream.lost_h > 0 && !stream.classes.empty()) {
      lossy.push_back(s);
    }
  }
  if (lossy.empty()) return;
  // A stream that loses while its siblings (the same NICs and class, other source ports)
  // stay clean loses on the path its source port picks: on links between switches, where
  // ECMP hashes the port, not on the cables every sibling crosses as well. It votes only
  // for those links (where its path has any).
  absl::flat_hash_map<std::tuple<int, int, int>, std::pair<int64_t, int64_t>> pair_counts;
  for (int s = 0; s < static_cast<int>(streams_.size()); ++s) {
    const Stream& stream = streams_[s];
    if (!stream.live || explained[s]) continue;
    auto& [sent, lost] = pair_counts[{counts_[s].src_nic, counts_[s].dst_nic,
                                      stream.key.traffic_class}];
    sent += stream.sent_h;
    lost += stream.lost_h;
  }
  std::vector<bool> class_between_switches;
  absl::flat_hash_map<int, std::vector<int>> port_specific;  // stream → classes it votes for
  for (int s : lossy) {
    const Stream& stream = streams_[s];
    const auto& [sent, lost] =
        pair_counts.at({counts_[s].src_nic, counts_[s].dst_nic, stream.key.traffic_class});
    const int64_t sibling_sent = sent - stream.sent_h, sibling_lost = lost - stream.lost_h;
    if (sibling_sent == 0 || stream.sent_h == 0) continue;
    // Losses the siblings would show at this stream's rate, were it a shared link.
    const double expected =
        static_cast<double>(stream.lost_h) / static_cast<double>(stream.sent_h) * sibling_sent;
    if (expected < 2 * options_.min_losses || sibling_lost * 8 > expected) continue;
    if (class_between_switches.empty()) {
      class_between_switches.assign(class_links_.size(), false);
      for (size_t c = 0; c < class_links_.size(); ++c) {
        for (int l : class_links_[c]) {
          const LinkInfo& info = resolver_->Link(link_resolver_id_[l]);
          if (info.from_switch && info.to_switch) class_between_switches[c] = true;
        }
      }
    }
    std::vector<int> fabric;
    for (int c : stream.classes) {
      if (class_between_switches[c]) fabric.push_back(c);
    }
    if (!fabric.empty()) port_specific[s] = std::move(fabric);
  }
  auto vote_classes = [&](int s) -> const std::vector<int>& {
    auto it = port_specific.find(s);
    return it == port_specific.end() ? streams_[s].classes : it->second;
  };
  // Candidates in 007's greedy order (most votes first; a pick takes its streams' votes
  // and losses away from the other links), among the links whose streams not yet
  // taken by an earlier pick still hold `min_losses` losses (what the tomography asks
  // of a blamed link). 007 stops instead when the top link holds under a share of all
  // votes; with every lossy stream of the fleet in the total (each healthy link's rare
  // loss, each link dropping 1e-2), that share grew with the fleet and the other faults,
  // and a 1e-3 link whose four losses had come in waited for several more.
  struct Tally {
    double votes = 0;
    int64_t losses = 0;
  };
  absl::flat_hash_map<int, Tally> tally;
  for (int s : lossy) {
    double share = 1.0 / vote_classes(s).size();
    for (int c : vote_classes(s)) {
      Tally& t = tally[c];
      t.votes += share;
      t.losses += streams_[s].lost_h;
    }
  }
  for (auto it = tally.begin(); it != tally.end();) {
    if (it->second.losses < options_.min_losses) {
      tally.erase(it++);
    } else {
      ++it;
    }
  }
  // Between links with the same votes (the same lossy streams cross them), the one whose
  // streams lose the larger share of their probes: a link that clean streams cross too
  // is the worse explanation (a traced spine link against the untraced answers' bundle).
  auto loss_share = [&](int c) {
    int64_t sent = 0, lost = 0;
    for (int s : class_streams_[c]) {
      if (explained[s]) continue;
      sent += streams_[s].sent_h;
      lost += streams_[s].lost_h;
    }
    return sent > 0 ? static_cast<double>(lost) / static_cast<double>(sent) : 0.0;
  };
  std::vector<bool> voted_out(streams_.size(), false);
  std::vector<int> candidates;
  while (static_cast<int>(candidates.size()) < options_.max_candidates) {
    int top = -1;
    double top_votes = 0;
    for (const auto& [c, t] : tally) {
      bool better = t.votes > top_votes + 1e-12;
      if (!better && std::abs(t.votes - top_votes) <= 1e-12 && top >= 0) {
        const double share = loss_share(c), top_share = loss_share(top);
        better = share > top_share || (share == top_share && c < top);
      }
      if (better) top = c, top_votes = t.votes;
    }
    if (top < 0 || top_votes <= 1e-9) break;
    candidates.push_back(top);
    tally.erase(top);
    for (int s : class_streams_[top]) {
      if (voted_out[s] || explained[s] || streams_[s].lost_h == 0) continue;
      voted_out[s] = true;
      double share = 1.0 / vote_classes(s).size();
      for (int c : vote_classes(s)) {
        auto it = tally.find(c);
        if (it == tally.end()) continue;
        it->second.votes -= share;
        it->second.losses -= streams_[s].lost_h;
        if (it->second.losses < options_.min_losses) tally.erase(it);
      }
    }
  }

  // NetBouncer's tomography over every stream through a candidate; links that are not
  // candidates are taken as healthy (x = 1).
  absl::flat_hash_map<int, int> var_of;  // class → variable
  for (int i = 0; i < static_cast<int>(candidates.size()); ++i) var_of[candidates[i]] = i;
  struct Path {
    double y = 1, w = 1, lost = 0, sent = 0;
    int stream = 0;
    std::vector<int> vars;
  };
  std::vector<Path> paths;
  std::vector<std::vector<int>> var_paths(candidates.size());
  {
    std::vector<bool> taken(streams_.size(), false);
    double total_sent = 0;
    for (int c : candidates) {
      for (int s : class_streams_[c]) {
        const Stream& stream = streams_[s];
        if (taken[s] || explained[s] || stream.sent_h == 0) continue;
        taken[s] = true;
        Path p;
        p.stream = s;
        p.sent = static_cast<double>(stream.sent_h);
        p.lost = static_cast<double>(stream.lost_h);
        p.y = 1 - p.lost / p.sent;
        for (int k : stream.classes) {
          auto it = var_of.find(k);
          if (it != var_of.end()) p.vars.push_back(it->second);
        }
        total_sent += p.sent;
        for (int v : p.vars) var_paths[v].push_back(static_cast<int>(paths.size()));
        paths.push_back(std::move(p));
      }
    }
    double mean_sent = paths.empty() ? 1 : total_sent / paths.size();
    for (Path& p : paths) p.w = p.sent / mean_sent;
  }
  std::vector<double> x(candidates.size(), 1.0);
  auto product_without = [&](const Path& p, int skip) {
    double t = 1;
    for (int v : p.vars) {
      if (v != skip) t *= x[v];
    }
    return t;
  };
  auto energy = [&]() {
    double e = 0;
    for (const Path& p : paths) {
      double r = p.y - product_without(p, -1);
      e += p.w * r * r;
    }
    for (double xv : x) e += options_.lambda * xv * (1 - xv);
    return e;
  };
  double previous = energy();
  for (int round = 0; round < options_.max_rounds; ++round) {
    for (size_t v = 0; v < x.size(); ++v) {
      double num = 0, den = 0;
      for (int pi : var_paths[v]) {
        const Path& p = paths[pi];
        double t = product_without(p, static_cast<int>(v));
        num += p.w * t * p.y;
        den += p.w * t * t;
      }
      double denominator = 2 * (den - options_.lambda);
      double value = denominator > 0 ? (2 * num - options_.lambda) / denominator : 1.0;
      x[v] = std::clamp(value, 0.0, 1.0);
    }
    double now = energy();
    if (std::abs(previous - now) < 1e-8) break;
    previous = now;
  }
  for (size_t v = 0; v < x.size(); ++v) {
    double loss = 1 - x[v];
    if (loss < options_.tau_link) continue;
    // The losses the fit gives this link: its share of each path's modelled loss.
    double attributed = 0, probes = 0;
    int64_t last_sent = 0, last_lost = 0;
    for (int pi : var_paths[v]) {
      const Path& p = paths[pi];
      probes += p.sent;
      last_sent += counts_[p.stream].last_sent;
      last_lost += counts_[p.stream].last_lost;
      double path_loss = 1 - product_without(p, -1);
      if (path_loss > 0) attributed += p.lost * std::min(1.0, loss / path_loss);
    }
    if (attributed < options_.min_losses) continue;
    Verdict verdict;
    verdict.kind = ComponentKind::kLink;
    verdict.component = class_name_[candidates[v]];
    // Hard failure: the latest window lost most probes through it (the horizon's
    // estimate lags behind a link that just died).
    verdict.problem = last_sent > 0 && 2 * last_lost >= last_sent ? Problem::kUnreachable
                                                                  : Problem::kLoss;
    verdict.loss_rate = loss;
    verdict.confidence =
        1 - PoissonTailAtLeast(options_.healthy_loss_rate * probes, std::floor(attributed));
    verdict.evidence = absl::StrFormat(
        "estimated loss %.2g over %d streams (%.0f probes, %.0f losses attributed) in the "
        "last %d windows",
        loss, var_paths[v].size(), probes, attributed, options_.horizon_windows);
    blamed->push_back(std::move(verdict));
  }
}

VerdictChanges Localiser::ApplyHysteresis(const std::vector<Verdict>& blamed, absl::Time now) {
  VerdictChanges changes;
  absl::flat_hash_map<std::string, bool> seen;
  for (const Verdict& v : blamed) {
    std::string key = StateKey(v.kind, v.component);
    if (seen.count(key)) continue;
    seen[key] = true;
    ComponentState& state = components_[key];
    absl::Time since = state.blamed_run > 0 || state.active ? state.verdict.since
                                                            : now - options_.window;
    state.verdict = v;
    state.verdict.since = since;
    ++state.blamed_run;
    state.clean_run = 0;
    if (!state.active && state.blamed_run >= options_.raise_after) {
      state.active = true;
      changes.raised.push_back(state.verdict);
    }
  }
  for (auto it = components_.begin(); it != components_.end();) {
    ComponentState& state = it->second;
    if (seen.count(it->first)) {
      ++it;
      continue;
    }
    state.blamed_run = 0;
    ++state.clean_run;
    if (state.active && state.clean_run >= options_.clear_after) {
      state.active = false;
      changes.cleared.push_back(state.verdict);
    }
    if (!state.active) {
      components_.erase(it++);
    } else {
      ++it;
    }
  }
  return changes;
}

VerdictChanges Localiser::EndWindow(absl::Time now) {
  if (classes_dirty_) RebuildClasses();
  AdvanceRings();
  std::vector<Verdict> blamed;
  BlameHosts(&blamed);
  std::vector<bool> explained(streams_.size(), false);
  BlameNics(&explained, &blamed);
  BlameSwitches(&explained, &blamed);
  // Losses a NIC or switch explains are not evidence against the links they cross.
  for (size_t s = 0; s < streams_.size(); ++s) {
    if (!explained[s] || streams_[s].lost_h == 0) continue;
    for (std::vector<uint16_t>& slot : ring_lost_) slot[s] = 0;
    streams_[s].lost_h = 0;
  }
  BlameLinks(explained, &blamed);
  return ApplyHysteresis(blamed, now);
}

std::vector<Verdict> Localiser::ActiveVerdicts() const {
  std::vector<Verdict> active;
  for (const auto& [key, state] : components_) {
    if (state.active) active.push_back(state.verdict);
  }
  std::sort(active.begin(), active.end(), [](const Verdict& a, const Verdict& b) {
    return std::make_pair(static_cast<int>(a.kind), a.component) <
           std::make_pair(static_cast<int>(b.kind), b.component);
  });
  return active;
}

}  // namespace weft::pingmesh
