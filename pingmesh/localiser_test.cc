#include "pingmesh/localiser.h"

#include <map>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pingmesh/path_resolver.h"

namespace weft::pingmesh {
namespace {

// A hand-built leaf-spine: 3 ToRs (t0..t2) of 2 hosts (h0..h5) with 2 NICs each, 2 spines.
// A probe between ToRs takes spine (sport % 2) and its answer spine ((sport / 2) % 2).
class TinyFabric : public PathResolver {
 public:
  TinyFabric() {
    for (int t = 0; t < 3; ++t) {
      for (int s = 0; s < 2; ++s) {
        Cable(Tor(t), Spine(s), true, true);
      }
    }
    for (int h = 0; h < 6; ++h) {
      for (int n = 0; n < 2; ++n) Cable(Nic(h, n), Tor(h / 2), false, true);
    }
  }
  static std::string Tor(int t) { return absl::StrCat("t", t); }
  static std::string Spine(int s) { return absl::StrCat("s", s); }
  static std::string Host(int h) { return absl::StrCat("h", h); }
  static std::string Nic(int h, int n) { return absl::StrCat("h", h, "/mlx5_", n); }

  absl::StatusOr<ProbePath> Resolve(const ProbeKey& key) override {
    int src = HostIndex(key.src_node), dst = HostIndex(key.dst_node);
    std::string a = absl::StrCat(key.src_node, "/", key.src_nic);
    std::string b = absl::StrCat(key.dst_node, "/", key.dst_nic);
    if (a == b) return absl::InvalidArgumentError("to itself");
    ProbePath path;
    path.forward = OneWay(a, src / 2, b, dst / 2, key.udp_src_port % 2);
    path.back = OneWay(b, dst / 2, a, src / 2, (key.udp_src_port / 2) % 2);
    return path;
  }
  const LinkInfo& Link(int id) const override { return links_[id]; }
  int LinkId(const std::string& from, const std::string& to) const {
    return ids_.at(from + "->" + to);
  }

 private:
  static int HostIndex(const std::string& node) { return std::stoi(node.substr(1)); }
  void Cable(const std::string& a, const std::string& b, bool a_switch, bool b_switch) {
    for (int dir = 0; dir < 2; ++dir) {
      const std::string& from = dir == 0 ? a : b;
      const std::string& to = dir == 0 ? b : a;
      ids_[from + "->" + to] = static_cast<int>(links_.size());
      links_.push_back({from + "->" + to, from, to, dir == 0 ? a_switch : b_switch,
                        dir == 0 ? b_switch : a_switch});
    }
  }
  std::vector<int> OneWay(const std::string& a, int ta, const std::string& b, int tb,
                          int spine) {
    std::vector<int> path = {LinkId(a, Tor(ta))};
    if (ta != tb) {
      path.push_back(LinkId(Tor(ta), Spine(spine)));
      path.push_back(LinkId(Spine(spine), Tor(tb)));
    }
    path.push_back(LinkId(Tor(tb), b));
    return path;
  }
  std::vector<LinkInfo> links_;
  std::map<std::string, int> ids_;
};

// Every NIC probes every other NIC over 4 source ports; probes meet the faults set here.
class Harness {
 public:
  explicit Harness(LocaliserOptions options = {}) : localiser_(&fabric_, options) {
    for (int h = 0; h < 6; ++h) {
      for (int n = 0; n < 2; ++n) {
        for (int g = 0; g < 6; ++g) {
          for (int m = 0; m < 2; ++m) {
            if (g == h && m == n) continue;
            for (uint16_t port = 0xC000; port < 0xC004; ++port) {
              keys_.push_back({TinyFabric::Host(h), absl::StrCat("mlx5_", n),
                               TinyFabric::Host(g), absl::StrCat("mlx5_", m), port, 3});
            }
          }
        }
      }
    }
  }
  TinyFabric& fabric() { return fabric_; }
  Localiser& localiser() { return localiser_; }
  std::map<int, double> drop;         // link id → drop rate
  std::set<std::string> dead_nics;    // "h2/mlx5_0"
  std::map<std::string, double> host_delay_us;  // extra software delay per host

  // Runs `windows` windows of 20 probes per stream; returns the changes over them all.
  VerdictChanges Run(int windows) {
    VerdictChanges all;
    for (int w = 0; w < windows; ++w) {
      absl::Time start = now_;
      now_ += absl::Milliseconds(250);
      for (const ProbeKey& key : keys_) {
        ProbePath path = *fabric_.Resolve(key);
        double pass = 1;
        for (const std::vector<int>* part : {&path.forward, &path.back}) {
          for (int l : *part) {
            auto it = drop.find(l);
            if (it != drop.end()) pass *= 1 - it->second;
          }
        }
        if (dead_nics.count(key.src_node + "/" + key.src_nic) ||
            dead_nics.count(key.dst_node + "/" + key.dst_nic)) {
          pass = 0;
        }
        ProbeWindow window{key, start, now_, 20, 0};
        std::bernoulli_distribution lose(1 - pass);
        for (int i = 0; i < 20; ++i) window.lost += lose(rng_) ? 1 : 0;
        window.rtt_min_us = 4;
        window.rtt_p50_us = 5 + std::uniform_real_distribution<double>(0, 1)(rng_);
        window.rtt_p99_us = 9;
        window.sender_host_delay_us = 10 + host_delay_us[key.src_node];
        window.responder_host_delay_us = 8 + host_delay_us[key.dst_node];
        EXPECT_TRUE(localiser_.Add(window).ok());
      }
      VerdictChanges changes = localiser_.EndWindow(now_);
      for (const Verdict& v : changes.raised) raised_.push_back(v), all.raised.push_back(v);
      for (const Verdict& v : changes.cleared) all.cleared.push_back(v);
    }
    return all;
  }
  std::vector<std::string> Active() const {
    std::vector<std::string> names;
    for (const Verdict& v : localiser_.ActiveVerdicts()) {
      names.push_back(absl::StrCat(ComponentKindName(v.kind), " ", v.component));
    }
    return names;
  }
  const std::vector<Verdict>& raised() const { return raised_; }

 private:
  TinyFabric fabric_;
  Localiser localiser_;
  std::vector<ProbeKey> keys_;
  std::vector<Verdict> raised_;
  absl::Time now_ = absl::FromUnixSeconds(1'800'000'000);
  std::mt19937_64 rng_{7};
};

using ::testing::ElementsAre;

TEST(LocaliserTest, HealthyFabricBlamesNothing) {
  Harness harness;
  harness.Run(60);
  EXPECT_TRUE(harness.raised().empty());
}

TEST(LocaliserTest, OneLossyLinkAmongSharedPathsIsNamed) {
  Harness harness;
  int link = harness.fabric().LinkId("s0", "t1");
  harness.drop[link] = 0.02;
  harness.Run(12);
  EXPECT_THAT(harness.Active(), ElementsAre("link s0->t1"));
  Verdict v = harness.localiser().ActiveVerdicts().at(0);
  EXPECT_EQ(v.problem, Problem::kLoss);
  EXPECT_NEAR(v.loss_rate, 0.02, 0.01);
  EXPECT_GT(v.confidence, 0.99);
}

TEST(LocaliserTest, BlackHoledLinkIsNamedWithinTwoWindows) {
  Harness harness;
  harness.Run(4);
  harness.drop[harness.fabric().LinkId("t2", "s1")] = 1.0;
  VerdictChanges changes = harness.Run(2);
  ASSERT_EQ(changes.raised.size(), 1u);
  EXPECT_EQ(changes.raised[0].component, "t2->s1");
  EXPECT_EQ(changes.raised[0].problem, Problem::kUnreachable);
}

TEST(LocaliserTest, DeadNicIsBlamedNotItsLinksOrToR) {
  Harness harness;
  harness.Run(4);
  harness.dead_nics.insert("h2/mlx5_0");
  VerdictChanges first = harness.Run(1);
  EXPECT_TRUE(first.raised.empty()) << "raised before raise_after windows";
  harness.Run(1);
  EXPECT_THAT(harness.Active(), ElementsAre("nic h2/mlx5_0"));
  harness.Run(20);
  EXPECT_THAT(harness.Active(), ElementsAre("nic h2/mlx5_0"));
}

TEST(LocaliserTest, LossyNicCableIsOneComponent) {
  Harness harness;
  harness.drop[harness.fabric().LinkId("t0", "h1/mlx5_1")] = 0.03;
  harness.Run(12);
  EXPECT_THAT(harness.Active(), ElementsAre("link h1/mlx5_1->t0 + t0->h1/mlx5_1"));
}

TEST(LocaliserTest, DeadToRIsASwitch) {
  Harness harness;
  for (const char* to : {"h2/mlx5_0", "h2/mlx5_1", "h3/mlx5_0", "h3/mlx5_1", "s0", "s1"}) {
    harness.drop[harness.fabric().LinkId("t1", to)] = 1.0;
  }
  harness.Run(3);
  EXPECT_THAT(harness.Active(), ElementsAre("switch t1"));
}

TEST(LocaliserTest, SlowHostIsBlamedAsHostOnly) {
  Harness harness;
  harness.host_delay_us["h4"] = 3000;
  harness.Run(3);
  EXPECT_THAT(harness.Active(), ElementsAre("host h4"));
  EXPECT_EQ(harness.localiser().ActiveVerdicts()[0].problem, Problem::kSlow);
}

// What is active after 12 windows of a lossy link and a dead NIC.
std::vector<std::string> ActiveWithLossyLinkAndDeadNic(const std::string& from,
                                                       const std::string& to, double drop,
                                                       const std::string& dead_nic) {
  Harness harness;
  harness.drop[harness.fabric().LinkId(from, to)] = drop;
  harness.dead_nics.insert(dead_nic);
  harness.Run(12);
  return harness.Active();
}

TEST(LocaliserTest, TwoConcurrentFaultsAreBothNamed) {
  EXPECT_THAT(ActiveWithLossyLinkAndDeadNic("t0", "s1", 0.05, "h5/mlx5_1"),
              ElementsAre("nic h5/mlx5_1", "link t0->s1"));
}

TEST(LocaliserTest, DeadNicIsBlamedBesideABlackHoledUplinkOfItsToR) {
  // The black hole costs h0/mlx5_0's ToR peers a third of their probes, all on streams
  // through the spines; their streams under the ToR are clean, and those say the ToR is.
  EXPECT_THAT(ActiveWithLossyLinkAndDeadNic("t0", "s0", 1.0, "h0/mlx5_0"),
              ElementsAre("nic h0/mlx5_0", "link t0->s0"));
}

TEST(LocaliserTest, AllNicsDeadBlamesTheHost) {
  Harness harness;
  harness.dead_nics = {"h3/mlx5_0", "h3/mlx5_1"};
  harness.Run(3);
  EXPECT_THAT(harness.Active(), ElementsAre("host h3"));
  EXPECT_EQ(harness.localiser().ActiveVerdicts()[0].problem, Problem::kUnreachable);
}

TEST(LocaliserTest, AFaultThatClearsIsClearedAfterTheHorizon) {
  LocaliserOptions options;
  options.horizon_windows = 8;
  options.clear_after = 4;
  Harness harness(options);
  int link = harness.fabric().LinkId("s1", "t2");
  harness.drop[link] = 0.05;
  harness.Run(6);
  ASSERT_THAT(harness.Active(), ElementsAre("link s1->t2"));
  harness.drop.clear();
  EXPECT_TRUE(harness.Run(options.clear_after - 1).cleared.empty()) << "cleared too soon";
  EXPECT_THAT(harness.Active(), ElementsAre("link s1->t2"));
  // Once the loss has left the horizon, clear_after clean windows clear it.
  VerdictChanges changes = harness.Run(options.horizon_windows + 1);
  ASSERT_EQ(changes.cleared.size(), 1u);
  EXPECT_EQ(changes.cleared[0].component, "s1->t2");
  EXPECT_TRUE(harness.Active().empty());
  EXPECT_TRUE(harness.Run(20).raised.empty());
}

TEST(LocaliserTest, DeadNicThatComesBackIsCleared) {
  Harness harness;
  harness.dead_nics.insert("h0/mlx5_0");
  harness.Run(3);
  ASSERT_THAT(harness.Active(), ElementsAre("nic h0/mlx5_0"));
  harness.dead_nics.clear();
  harness.Run(7);  // clear_after - 1 clean windows
  EXPECT_THAT(harness.Active(), ElementsAre("nic h0/mlx5_0"));
  VerdictChanges changes = harness.Run(1);
  ASSERT_EQ(changes.cleared.size(), 1u);
  EXPECT_EQ(changes.cleared[0].component, "h0/mlx5_0");
  harness.Run(20);
  EXPECT_TRUE(harness.Active().empty()) << "the dead NIC's losses were explained, not left "
                                           "to blame its cable";
}

// A fleet in one picture: NICs n0..n(nics-1) cabled to one ToR, every stream two hops
// each way, so a stream crosses two cables (each cable's two directions one component).
class StarFleet : public PathResolver {
 public:
  explicit StarFleet(int nics) {
    for (int n = 0; n < nics; ++n) {
      std::string nic = absl::StrCat("n", n, "/mlx5_0");
      links_.push_back({nic + "->t", nic, "t", false, true});
      links_.push_back({"t->" + nic, "t", nic, true, false});
    }
  }
  absl::StatusOr<ProbePath> Resolve(const ProbeKey& key) override {
    int a = std::stoi(key.src_node.substr(1)), b = std::stoi(key.dst_node.substr(1));
    if (a == b) return absl::InvalidArgumentError("to itself");
    return ProbePath{{2 * a, 2 * b + 1}, {2 * b, 2 * a + 1}};
  }
  const LinkInfo& Link(int id) const override { return links_[id]; }

 private:
  std::vector<LinkInfo> links_;
};

ProbeKey FleetKey(int a, int b) {
  return {absl::StrCat("n", a), "mlx5_0", absl::StrCat("n", b), "mlx5_0", 0xC000, 3};
}

// Feeds `windows` windows of 20 probes per stream; `losses` says which (window, stream)
// loses one (a NIC with one stream then loses 5 % of its probes: under nic_loss_share).
// Returns the window (1-based) in which each component was raised.
std::map<std::string, int> RunFleet(const std::vector<ProbeKey>& keys,
                                    const std::set<std::pair<int, int>>& losses,
                                    int windows) {
  StarFleet fleet(2100);
  Localiser localiser(&fleet, LocaliserOptions{});
  std::map<std::string, int> raised;
  absl::Time now = absl::FromUnixSeconds(1'800'000'000);
  for (int w = 1; w <= windows; ++w) {
    for (int s = 0; s < static_cast<int>(keys.size()); ++s) {
      ProbeWindow window{keys[s], now, now + absl::Milliseconds(250), 20,
                         losses.count({w, s}) ? 1 : 0};
      window.rtt_p50_us = 5;
      window.sender_host_delay_us = window.responder_host_delay_us = 10;
      EXPECT_TRUE(localiser.Add(window).ok());
    }
    now += absl::Milliseconds(250);
    for (const Verdict& v : localiser.EndWindow(now).raised) {
      raised.emplace(absl::StrCat(ComponentKindName(v.kind), " ", v.component), w);
    }
  }
  return raised;
}

// n0 probes 40 peers and its cable loses one probe in windows 5, 10, 15, ... up to
// `n0_losses`; besides, 1,000 streams of a large fleet each lose one probe in the first
// 4 windows, each on cables no other stream crosses: a healthy fleet's rare losses.
void FleetWithCableLosses(int n0_losses, std::vector<ProbeKey>* keys,
                          std::set<std::pair<int, int>>* losses) {
  for (int peer = 1; peer <= 40; ++peer) keys->push_back(FleetKey(0, peer));
  for (int i = 1; i <= n0_losses; ++i) losses->insert({5 * i, i - 1});
  for (int k = 0; k < 1000; ++k) {
    losses->insert({1 + k % 4, static_cast<int>(keys->size())});
    keys->push_back(FleetKey(100 + 2 * k, 101 + 2 * k));
  }
}

TEST(LocaliserTest, GrayLinkIsBlamedOnItsOwnLossesHoweverManyStreamsLoseElsewhere) {
  // n0's cable loses one probe in windows 5, 10, 15 and 20 (min_losses = 4). 007's
  // stopping rule (the top link needs 0.25 % of all lossy streams' votes) asked 2.5
  // votes of it with 1,004 lossy streams; its four streams give it 2, so it waited for
  // the fleet's other losses to age out of the horizon.
  std::vector<ProbeKey> keys;
  std::set<std::pair<int, int>> losses;
  FleetWithCableLosses(4, &keys, &losses);
  std::map<std::string, int> raised = RunFleet(keys, losses, 30);
  EXPECT_THAT(raised, ElementsAre(std::make_pair("link n0/mlx5_0->t + t->n0/mlx5_0", 21)))
      << "the fourth loss came in window 20; raise_after = 2";
}

TEST(LocaliserTest, ScatteredLossesOfAHealthyFleetBlameNothing) {
  // Three losses on n0's cable (one short of min_losses), one on every other cable.
  std::vector<ProbeKey> keys;
  std::set<std::pair<int, int>> losses;
  FleetWithCableLosses(3, &keys, &losses);
  EXPECT_THAT(RunFleet(keys, losses, 60), ::testing::IsEmpty());
}

// As the controller sees a leaf-spine without traceroute (two_tier_resolver.h): 2 ToRs of
// 2 one-NIC hosts, and between ToRs only the bundles "t0->spines", "spines->t1", ...,
// whatever spine the source port picks.
class BundleFabric : public PathResolver {
 public:
  BundleFabric() {
    for (int t = 0; t < 2; ++t) {
      Add(Tor(t), "spines", true, true);
      Add("spines", Tor(t), true, true);
    }
    for (int h = 0; h < 4; ++h) {
      Add(Nic(h), Tor(h / 2), false, true);
      Add(Tor(h / 2), Nic(h), true, false);
    }
  }
  static std::string Tor(int t) { return absl::StrCat("t", t); }
  static std::string Nic(int h) { return absl::StrCat("h", h, "/mlx5_0"); }
  absl::StatusOr<ProbePath> Resolve(const ProbeKey& key) override {
    const int a = std::stoi(key.src_node.substr(1)), b = std::stoi(key.dst_node.substr(1));
    if (a == b) return absl::InvalidArgumentError("to itself");
    return ProbePath{OneWay(a, b), OneWay(b, a)};
  }
  const LinkInfo& Link(int id) const override { return links_[id]; }

 private:
  void Add(const std::string& from, const std::string& to, bool from_switch, bool to_switch) {
    ids_[from + "->" + to] = static_cast<int>(links_.size());
    links_.push_back({from + "->" + to, from, to, from_switch, to_switch});
  }
  std::vector<int> OneWay(int a, int b) {
    std::vector<int> path = {ids_.at(Nic(a) + "->" + Tor(a / 2))};
    if (a / 2 != b / 2) {
      path.push_back(ids_.at(Tor(a / 2) + "->spines"));
      path.push_back(ids_.at("spines->" + Tor(b / 2)));
    }
    path.push_back(ids_.at(Tor(b / 2) + "->" + Nic(b)));
    return path;
  }
  std::vector<LinkInfo> links_;
  std::map<std::string, int> ids_;
};

// One 5-tuple black-holed on one spine (found for real over network namespaces,
// tests/pingmesh_netns_test.cc): only that stream loses, its sibling on another source
// port does not, so the loss is on the ECMP path the port picks, not on the hosts' cables
// that every port crosses. It used to be blamed on a cable (the tie between the stream's
// links broken by link order).
TEST(LocaliserTest, OneBlackHoledSourcePortIsBlamedOnTheFabricNotOnACable) {
  BundleFabric fabric;
  Localiser localiser(&fabric, LocaliserOptions{});
  std::vector<ProbeKey> keys;
  for (int h = 0; h < 4; ++h) {
    for (int g = 0; g < 4; ++g) {
      if (g == h) continue;
      const int ports = h / 2 == g / 2 ? 1 : 2;
      for (uint16_t port = 0xC000; port < 0xC000 + ports; ++port) {
        keys.push_back({absl::StrCat("h", h), "mlx5_0", absl::StrCat("h", g), "mlx5_0", port, 3});
      }
    }
  }
  const ProbeKey holed = {"h0", "mlx5_0", "h2", "mlx5_0", 0xC000, 3};
  absl::Time now = absl::FromUnixSeconds(1'800'000'000);
  for (int w = 0; w < 12; ++w) {
    const absl::Time start = now;
    now += absl::Milliseconds(250);
    for (const ProbeKey& key : keys) {
      ProbeWindow window{key, start, now, 20, key == holed ? 20 : 0};
      window.rtt_min_us = 4, window.rtt_p50_us = 5, window.rtt_p99_us = 9;
      window.sender_host_delay_us = 10, window.responder_host_delay_us = 8;
      ASSERT_TRUE(localiser.Add(window).ok());
    }
    localiser.EndWindow(now);
  }
  std::vector<std::string> active;
  for (const Verdict& v : localiser.ActiveVerdicts()) {
    active.push_back(absl::StrCat(ComponentKindName(v.kind), " ", v.component));
  }
  EXPECT_THAT(active, ElementsAre("link spines->t0 + spines->t1 + t0->spines + t1->spines"));
}

TEST(LocaliserTest, BadWindowIsRefusedAndChangesNothing) {
  Harness harness;
  ProbeWindow window{{"h0", "mlx5_0", "h1", "mlx5_0", 0xC000, 3}};
  window.sent = 5;
  window.lost = 6;
  absl::Status status = harness.localiser().Add(window);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("lost <= sent"), std::string::npos);
  EXPECT_EQ(harness.localiser().streams(), 0u);
  window.key.dst_node = "h0";
  window.lost = 0;
  EXPECT_EQ(harness.localiser().Add(window).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(harness.localiser().streams(), 0u);
}

TEST(LocaliserTest, OptionsOutOfRangeAreNamed) {
  LocaliserOptions options;
  options.tau_link = 0;
  absl::Status status = Localiser::ValidateOptions(options);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("tau_link"), std::string::npos);
  EXPECT_TRUE(Localiser::ValidateOptions(LocaliserOptions{}).ok());
}

}  // namespace
}  // namespace weft::pingmesh
