// bench/store: operations per second of the controller's acknowledged writes. Each
// mode builds a real Inventory and PlacementManager (16 nodes in 4 racks) and times
//   drains:     Drain(node, reason) then Undrain(node), counted as two operations;
//   placements: Place(1 node, lease 1 h) then Release, counted as one placement.
// Modes: memory (no store), sqlite NORMAL (WAL, no fsync per commit) and sqlite FULL
// (WAL fsynced before every reply: what weft-controller does). Prints a markdown
// table and the FULL/memory and FULL/NORMAL ratios.
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "common/clock.h"
#include "common/logging.h"
#include "controller/inventory/controller_metrics.h"
#include "controller/inventory/inventory.h"
#include "controller/placement/placement_manager.h"
#include "controller/placement/placement_metrics.h"
#include "prometheus/registry.h"
#include "store/controller_store.h"

ABSL_FLAG(std::string, dir, "/var/tmp/weft-store-bench",
          "scratch directory for the state dirs (removed and recreated)");
ABSL_FLAG(int, drains, 2000, "drain+undrain pairs per mode");
ABSL_FLAG(int, placements, 1000, "place+release cycles per mode");

namespace weft {
namespace {

struct Result {
  double drains_per_s = 0;
  double placements_per_s = 0;
};

weft::v1::NodeInfo MakeNode(int i) {
  weft::v1::NodeInfo info;
  info.set_name(absl::StrCat("gpu-", i));
  info.set_rack(absl::StrCat("rack-", i / 4));
  info.set_pod("pod-1");
  for (int n = 0; n < 2; ++n) {
    weft::v1::Nic* nic = info.add_nics();
    nic->set_device(absl::StrCat("mlx5_", n));
    nic->set_port(1);
  }
  for (int g = 0; g < 8; ++g) {
    weft::v1::Gpu* gpu = info.add_gpus();
    gpu->set_index(g);
    gpu->set_closest_nic(absl::StrCat("mlx5_", g / 4));
  }
  return info;
}

Result Run(store::ControllerStore* store) {
  RealClock clock;
  prometheus::Registry registry;
  controller::ControllerMetrics metrics(registry);
  controller::Inventory inventory(&clock, controller::InventoryOptions{}, &metrics, store);
  controller::PlacementMetrics placement_metrics(registry);
  controller::PlacementManager placement(&inventory, &clock, controller::PlacementOptions{},
                                         &placement_metrics, store);
  if (!inventory.Restore().ok() || !placement.Restore().ok()) std::abort();
  constexpr int kNodes = 16;
  for (int i = 0; i < kNodes; ++i) {
    if (!inventory.Register(MakeNode(i), 0).ok()) std::abort();
  }
  Result result;
  const int drains = absl::GetFlag(FLAGS_drains);
  absl::Time start = absl::Now();
  for (int i = 0; i < drains; ++i) {
    const std::string node = absl::StrCat("gpu-", i % kNodes);
    if (!inventory.Drain(node, "bench").ok() || !inventory.Undrain(node).ok()) std::abort();
  }
  result.drains_per_s = 2.0 * drains / absl::ToDoubleSeconds(absl::Now() - start);

  const int placements = absl::GetFlag(FLAGS_placements);
  start = absl::Now();
  for (int i = 0; i < placements; ++i) {
    weft::v1::PlacementRequest request;
    request.set_job_id(absl::StrCat("job-", i));
    request.set_node_count(1);
    request.set_lease_ttl_s(3600);
    absl::StatusOr<weft::v1::PlacementResponse> placed = placement.Place(request);
    if (!placed.ok() || !placement.Release(placed->reservation_id()).ok()) std::abort();
  }
  result.placements_per_s = placements / absl::ToDoubleSeconds(absl::Now() - start);
  return result;
}

int Main() {
  const std::string dir = absl::GetFlag(FLAGS_dir);
  if (std::system(absl::StrCat("rm -rf '", dir, "'").c_str()) != 0) return 1;
  const Result memory = Run(nullptr);
  auto normal_store =
      store::ControllerStore::Open(dir + "/normal", store::Durability::kBestEffort);
  auto full_store = store::ControllerStore::Open(dir + "/full");
  if (!normal_store.ok() || !full_store.ok()) {
    std::cerr << "cannot open the stores: " << normal_store.status() << " "
              << full_store.status() << "\n";
    return 1;
  }
  const Result normal = Run(normal_store->get());
  const Result full = Run(full_store->get());
  std::cout << "| mode | drains+undrains/s | placements (place+release)/s |\n"
            << "|---|---:|---:|\n"
            << absl::StrFormat("| memory (no store) | %.0f | %.0f |\n", memory.drains_per_s,
                               memory.placements_per_s)
            << absl::StrFormat("| SQLite WAL, synchronous=NORMAL | %.0f | %.0f |\n",
                               normal.drains_per_s, normal.placements_per_s)
            << absl::StrFormat("| SQLite WAL, synchronous=FULL (weft-controller) | %.0f | %.0f |\n",
                               full.drains_per_s, full.placements_per_s)
            << absl::StrFormat(
                   "\nFULL vs memory: drains %.1fx slower, placements %.1fx slower; "
                   "FULL vs NORMAL: %.1fx and %.1fx\n",
                   memory.drains_per_s / full.drains_per_s,
                   memory.placements_per_s / full.placements_per_s,
                   normal.drains_per_s / full.drains_per_s,
                   normal.placements_per_s / full.placements_per_s);
  return 0;
}

}  // namespace
}  // namespace weft

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  // Per-operation log lines would cost more than the in-memory operations themselves.
  weft::SetMinLogLevel(weft::LogLevel::kWarning);
  return weft::Main();
}
