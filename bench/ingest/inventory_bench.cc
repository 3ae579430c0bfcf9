// inventory_bench: the controller's own work per telemetry batch and per sweep, without
// gRPC, at the scale of the ingest benchmark — what Inventory::AcceptTelemetry costs for
// one 8-NIC batch, and what the ticker's Inventory::Sweep costs over all nodes, with every
// NIC window full (60 samples). bench/ingest/run.sh reports both next to the end-to-end
// numbers, so readers can tell the controller's logic from gRPC's share.
//
//   bazel run -c opt //bench/ingest:inventory_bench -- --nodes=12500
#include <cstdint>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "bench/ingest/synthetic_node.h"
#include "common/fake_clock.h"
#include "common/daemon_config.h"
#include "controller/inventory/controller_metrics.h"
#include "controller/inventory/inventory.h"
#include "google/protobuf/arena.h"
#include "prometheus/registry.h"

ABSL_FLAG(int, nodes, 12500, "nodes in the inventory");
ABSL_FLAG(int, batches, 200000, "AcceptTelemetry calls timed (round robin over the nodes)");
ABSL_FLAG(int, sweeps, 40, "Sweep calls timed");

namespace weft::bench {
namespace {

int Run() {
  const int n = absl::GetFlag(FLAGS_nodes);
  // Time moves only when told: liveness never trips while the benchmark runs.
  FakeClock clock;
  prometheus::Registry registry;
  controller::ControllerMetrics metrics(registry);
  controller::Inventory inventory(
      &clock, controller::InventoryOptions::FromConfig(DefaultControllerConfig()), &metrics);

  std::vector<std::string> names;
  std::vector<weft::v1::TelemetryBatch> batches;
  std::vector<std::string> wire;  // what the controller reads off the stream
  for (int i = 0; i < n; ++i) {
    auto node = SyntheticNode::Create(absl::StrFormat("ingest-%06d", i), 8, 8, clock.Now());
    if (!node.ok()) {
      std::cerr << node.status() << "\n";
      return 1;
    }
    // As the fleet places them: 32 nodes per rack, 32 racks per pod.
    (*node)->set_location(absl::StrFormat("rack-%04d", i / 32),
                          absl::StrFormat("pod-%03d", i / 32 / 32));
    if (!inventory.Register((*node)->info(), 0).ok()) return 1;
    names.push_back((*node)->info().name());
    batches.push_back((*node)->NextBatch(clock.Now()).telemetry());
    wire.push_back(batches.back().SerializeAsString());
  }
  // Fill every window: 60 rounds, one simulated second each.
  for (int round = 0; round < 60; ++round) {
    clock.Advance(absl::Seconds(1));
    for (int i = 0; i < n; ++i) {
      if (!inventory.AcceptTelemetry(names[i], 1, batches[i]).ok()) return 1;
    }
  }

  // As the controller's stream does: parse into an arena reset per message, then
  // hand the batch to the inventory.
  const int calls = absl::GetFlag(FLAGS_batches);
  alignas(8) static char block[12 * 1024];
  google::protobuf::ArenaOptions arena_options;
  arena_options.initial_block = block;
  arena_options.initial_block_size = sizeof(block);
  google::protobuf::Arena arena(arena_options);
  absl::Time start = absl::Now();
  for (int c = 0; c < calls; ++c) {
    const int i = c % n;
    if (i == 0) clock.Advance(absl::Seconds(1));
    arena.Reset();
    auto* batch = google::protobuf::Arena::CreateMessage<weft::v1::TelemetryBatch>(&arena);
    (void)batch->ParseFromString(wire[i]);
    (void)inventory.AcceptTelemetry(names[i], 1, *batch);
  }
  const double accept_us = absl::ToDoubleMicroseconds(absl::Now() - start) / calls;

  const int sweeps = absl::GetFlag(FLAGS_sweeps);
  start = absl::Now();
  for (int s = 0; s < sweeps; ++s) {
    clock.Advance(absl::Milliseconds(250));
    inventory.Sweep();
  }
  const double sweep_ms = absl::ToDoubleMilliseconds(absl::Now() - start) / sweeps;

  std::cout << absl::StrFormat("PARSE_AND_ACCEPT_US_PER_BATCH=%.1f\n", accept_us);
  std::cout << absl::StrFormat("SWEEP_MS=%.2f\n", sweep_ms);
  std::cout << absl::StrFormat("NODES=%d\n", n);
  return 0;
}

}  // namespace
}  // namespace weft::bench

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  // As in weft-controller (controller/main.cc): Debian's Abseil keeps Mutex deadlock
  // detection on unless told otherwise.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  return weft::bench::Run();
}
