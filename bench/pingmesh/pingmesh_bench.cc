// Pingmesh's fault localisation on the fabric twin at the scale (issue 22):
// 1,024 nodes × 8 NICs of 400 Gb/s, rail-optimised in groups of 32 (256 rail leaves with
// 8 uplinks to 8 spines), pinglists from pingmesh/pinglist.h, 007's fault mix plus dead
// NICs, a black-holed link, slow hosts and host-delay noise (bench/pingmesh/evaluation.h),
// `--trials` seeded trials. Prints the probe budget, then precision, recall and F1 of the
// verdicts, recall and time to detect per fault kind, and the localiser's cost per window.
// Peer figure: ByteDance's Minder, precision 0.904, F1 0.893 (pingmesh-facts.md §4).
// Run it optimized:
//   bazel run -c opt //bench/pingmesh:pingmesh_bench -- --trials=20
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_format.h"
#include "bench/pingmesh/evaluation.h"

ABSL_FLAG(int, nodes, 1024, "GPU nodes");
ABSL_FLAG(int, nodes_per_group, 32, "nodes per rail group (a rack)");
ABSL_FLAG(int, nics, 8, "NICs (rails) per node");
ABSL_FLAG(int, trials, 20, "seeded trials");
ABSL_FLAG(int, first_seed, 1, "seed of the first trial");
ABSL_FLAG(double, run_s, 20, "seconds simulated after the faults start");
ABSL_FLAG(bool, verbose, false, "print each trial's wrong verdicts and missed faults");

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  weft::bench::EvaluationSpec spec;
  spec.fabric.nodes = absl::GetFlag(FLAGS_nodes);
  spec.fabric.nodes_per_group = absl::GetFlag(FLAGS_nodes_per_group);
  spec.fabric.nics_per_node = absl::GetFlag(FLAGS_nics);
  spec.fabric.nic_bps = 400e9;
  spec.fabric.uplinks_per_leaf = 8;
  spec.run_s = absl::GetFlag(FLAGS_run_s);
  auto evaluation = weft::bench::Evaluation::Create(spec);
  if (!evaluation.ok()) {
    std::fprintf(stderr, "pingmesh_bench: %s\n", evaluation.status().ToString().c_str());
    return 1;
  }
  const weft::pingmesh::PinglistPlan& plan = (*evaluation)->plan();
  std::printf("fabric: %d nodes, %d NICs, %d directed links; %zu probe streams\n",
              (*evaluation)->nodes(), (*evaluation)->nics(), (*evaluation)->links(),
              plan.streams);
  std::printf(
      "probing: %.0f probes/s per stream inside a ToR, %.0f through the spines; least-probed "
      "NIC cable %.0f and ToR uplink %.0f probes/s per direction (target %.0f); busiest node "
      "sends %.0f probes/s; busiest NIC %.4f %% of its line rate; meets target: %s\n",
      plan.local_probes_per_s, plan.crossing_probes_per_s, plan.min_nic_link_probes_per_s,
      plan.min_uplink_probes_per_s,
      plan.required_link_probes_per_s, plan.max_node_probes_per_s,
      100 * plan.max_nic_capacity_share, plan.meets_detection_target ? "yes" : "no");

  std::vector<weft::bench::TrialResult> trials;
  for (int t = 0; t < absl::GetFlag(FLAGS_trials); ++t) {
    uint64_t seed = absl::GetFlag(FLAGS_first_seed) + t;
    auto trial = (*evaluation)->RunTrial(seed);
    if (!trial.ok()) {
      std::fprintf(stderr, "pingmesh_bench: trial %llu: %s\n",
                   static_cast<unsigned long long>(seed), trial.status().ToString().c_str());
      return 1;
    }
    int missed = 0;
    for (const auto& f : trial->faults) missed += f.detected ? 0 : 1;
    std::printf("trial %llu: %zu faults, %d verdicts, %zu wrong, %d missed, %d wrong raises; "
                "localiser %.1f ms per window (setup %.0f ms), probe model %.1f ms per window\n",
                static_cast<unsigned long long>(seed), trial->faults.size(), trial->verdicts,
                trial->wrong.size(), missed, trial->wrong_raises,
                trial->localiser_ms_per_window, trial->localiser_setup_ms,
                trial->probe_ms_per_window);
    if (absl::GetFlag(FLAGS_verbose)) {
      for (const std::string& w : trial->wrong) std::printf("  wrong: %s\n", w.c_str());
      for (const std::string& w : trial->wrongly_raised) {
        std::printf("  wrongly raised: %s\n", w.c_str());
      }
      for (const auto& f : trial->faults) {
        if (f.kind == weft::bench::FaultKind::kGrayTarget) {
          std::printf("  gray target: %s detected after %.2f s\n", f.component.c_str(),
                      f.detect_s);
        }
        if (!f.detected) {
          std::printf("  missed: %s %s drop %.2g\n", weft::bench::FaultKindName(f.kind),
                      f.component.c_str(), f.drop);
        }
      }
    }
    std::fflush(stdout);
    trials.push_back(*std::move(trial));
  }
  weft::bench::Summary s = weft::bench::Summarise(trials);
  std::printf("\n| measure | Weft pingmesh | target | Minder (peer) |\n|---|---|---|---|\n");
  std::printf("| precision | %.3f | >= 0.95 | 0.904 |\n", s.precision);
  std::printf("| recall | %.3f | | |\n", s.recall);
  std::printf("| F1 | %.3f | >= 0.93 | 0.893 |\n", s.f1);
  std::printf("\n| fault kind | recall | p95 time to detect (s) | max (s) |\n|---|---|---|---|\n");
  for (size_t i = 0; i < s.recall_by_kind.size(); ++i) {
    auto fmt = [](double v) { return v < 0 ? std::string("not within the run") : absl::StrFormat("%.2f", v); };
    std::printf("| %s | %.3f | %s | %s |\n", weft::bench::FaultKindName(s.recall_by_kind[i].first),
                s.recall_by_kind[i].second, fmt(s.p95_detect_s_by_kind[i].second).c_str(),
                fmt(s.max_detect_s_by_kind[i].second).c_str());
  }
  std::printf("\n%d trials, %d faults; %.2f wrong raises per trial; localiser %.1f ms CPU per "
              "250 ms window, %.0f ms to register every stream and group the links (one "
              "thread)\n",
              s.trials, s.faults, s.wrong_raises_per_trial, s.localiser_ms_per_window,
              s.localiser_setup_ms);
  return 0;
}
