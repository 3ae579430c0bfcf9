#include "bench/placement/synthetic.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace weft::bench {

using placement::NodeId;
using placement::Topology;

weft::v1::ClusterSnapshot MakeSyntheticCluster(const ClusterSpec& spec, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> unit(0, 1);
  weft::v1::ClusterSnapshot snapshot;
  const int racks = (spec.nodes + spec.nodes_per_rack - 1) / spec.nodes_per_rack;
  for (int r = 0; r < racks; ++r) {
    const int pod = r / spec.racks_per_pod;
    const double rack_congestion = unit(rng) < 0.1 ? 0.3 + 0.3 * unit(rng) : 0.15 * unit(rng);
    for (int n = 0; n < spec.nodes_per_rack && r * spec.nodes_per_rack + n < spec.nodes; ++n) {
      weft::v1::SnapshotNode* node = snapshot.add_nodes();
      node->set_name(absl::StrFormat("p%02d-r%03d-n%02d", pod, r, n));
      node->set_rack(absl::StrFormat("r%03d", r));
      node->set_pod(absl::StrFormat("p%02d", pod));
      const double health = unit(rng);
      node->set_healthy(health >= 0.01);
      node->set_drained(health >= 0.01 && health < 0.02);
      node->set_congestion(std::min(1.0, rack_congestion + 0.05 * unit(rng)));
      for (int i = 0; i < 8; ++i) {
        weft::v1::SnapshotNic* nic = node->add_nics();
        nic->set_device(absl::StrCat("mlx5_", i));
        nic->set_port(1);
        nic->set_netdev(absl::StrCat("ens", i, "np0"));
        nic->set_roce_v2_gid_index(3);
        weft::v1::SnapshotGpu* gpu = node->add_gpus();
        gpu->set_index(i);
        gpu->set_closest_nic(absl::StrCat("mlx5_", i));
      }
    }
  }
  return snapshot;
}

void ClusterState::Take(const std::vector<NodeId>& nodes) {
  for (NodeId id : nodes) {
    if (!taken[id]) ++taken_count;
    taken[id] = 1;
  }
}

void ClusterState::Free(const std::vector<NodeId>& nodes) {
  for (NodeId id : nodes) {
    if (taken[id]) --taken_count;
    taken[id] = 0;
  }
}

weft::v1::Occupancy ClusterState::ToOccupancy(const Topology& topo) const {
  weft::v1::Occupancy occupancy;
  for (NodeId id = 0; id < static_cast<NodeId>(taken.size()); ++id) {
    if (!taken[id]) continue;
    auto* entry = occupancy.add_entries();
    entry->set_node(topo.node(id).name);
    entry->set_job_id("background");
  }
  return occupancy;
}

void Fragment(const Topology& topo, double fill, double release, std::mt19937_64& rng,
              ClusterState* state) {
  const int n = static_cast<int>(topo.nodes().size());
  std::vector<NodeId> by_name(n);
  for (NodeId i = 0; i < n; ++i) by_name[i] = i;
  std::sort(by_name.begin(), by_name.end(),
            [&](NodeId a, NodeId b) { return topo.node(a).name < topo.node(b).name; });
  std::vector<std::vector<NodeId>> jobs;
  std::uniform_int_distribution<int> size(1, 16), start(0, n - 1);
  while (state->taken_count < fill * n) {
    std::vector<NodeId> job;
    const int want = size(rng);
    for (int i = start(rng), seen = 0; seen < n && static_cast<int>(job.size()) < want;
         ++seen, i = (i + 1) % n) {
      if (!state->taken[by_name[i]]) job.push_back(by_name[i]);
    }
    if (job.empty()) break;
    state->Take(job);
    jobs.push_back(std::move(job));
  }
  std::bernoulli_distribution ends(release);
  for (const auto& job : jobs) {
    if (ends(rng)) state->Free(job);
  }
}

StreamJob RandomJob(int cluster_nodes, int sequence, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> unit(0, 1);
  StreamJob job;
  const double kind = unit(rng);
  job.kind = kind < 0.6 ? "ring" : kind < 0.8 ? "moe" : "3d";
  const int min_log = job.kind == "3d" ? 2 : 1;
  int max_log = min_log;
  while ((2 << max_log) <= cluster_nodes / 8) ++max_log;
  // P(size = 2^k) falls by 40% per doubling.
  int log2 = min_log;
  while (log2 < max_log && unit(rng) < 0.6) ++log2;
  const uint32_t nodes = 1u << log2;

  weft::v1::PlacementRequest& r = job.request;
  r.set_job_id(absl::StrCat(job.kind, "-", sequence));
  r.set_node_count(nodes);
  r.set_gpus_per_node(8);
  if (job.kind == "ring") {
    r.set_pattern(weft::v1::TRAFFIC_PATTERN_RING_ALLREDUCE);
    r.set_gradient_bytes(uint64_t{1} << 30);
  } else if (job.kind == "moe") {
    r.mutable_parallelism()->set_expert(16);
    r.set_alltoall_bytes(uint64_t{256} << 20);
    r.set_gradient_bytes(uint64_t{512} << 20);
  } else {
    r.mutable_parallelism()->set_tensor(8);
    r.mutable_parallelism()->set_pipeline(4);
    r.set_gradient_bytes(uint64_t{1} << 30);
    r.set_activation_bytes(uint64_t{64} << 20);
  }
  job.lifetime = 5 + static_cast<int>(unit(rng) * 40);
  return job;
}

}  // namespace weft::bench
