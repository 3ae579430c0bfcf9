// Fleet: thousands of simulated agents in one process, for the controller ingest
// benchmark. Each node has its own gRPC channel (its own TCP connection, as real
// agents on separate hosts would), calls Register with a SyntheticNode's NodeInfo,
// opens a Connect stream, writes the StreamHello with the granted epoch, and from then
// on writes one TelemetryBatch per interval. The nodes' send times are spread evenly
// over the interval (node i at the fractional part of i × golden ratio, on a wheel of
// 1000 slots), so the controller sees a steady stream rather than one burst per second.
//
// Threads: a few sender threads, each owning a gRPC CompletionQueue (the async API)
// and every node whose wheel slot is its number modulo their count. A sender waits on
// its queue for completions until its next slot is due, then starts the writes of that
// slot. Everything a node does after Register is started happens on its sender thread,
// so nodes need no locks, and a completion is handled on the thread that polled it
// (the callback API would hand each one to another thread). Per-thread queues also
// keep each queue's list of pending operations short, which matters with Debian's
// gRPC: built without NDEBUG, it scans that list on every completion.
//
// A node writes one batch at a time: a batch falling due while the previous one is
// still being written is skipped and counted (backpressure from a slow controller shows
// there). The fleet does not read the downlink (the controller sends nothing down in
// the benchmark); a stream the controller ends shows as a failed write, after which
// the node collects the stream's status and is counted as a failure. Streams are not
// re-established.
//
// Thread-safety: GrowTo, Stop and the destructor from one thread; stats() and
// failure_samples() from any thread.
#ifndef WEFT_BENCH_INGEST_FLEET_H_
#define WEFT_BENCH_INGEST_FLEET_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "grpcpp/completion_queue.h"

namespace weft::bench {

struct FleetOptions {
  std::string controller_address;  // host:port
  absl::Duration interval = absl::Seconds(1);
  uint32_t nics = 8;
  uint32_t gpus = 8;
  // Node i is named <prefix><i> (zero-padded to 6 digits), in rack
  // "rack-<i / nodes_per_rack>" of pod "pod-<i / (nodes_per_rack × racks_per_pod)>":
  // 12,500 nodes fill 391 racks in 13 pods, and the controller keeps gauges per rack.
  std::string node_prefix = "ingest-";
  int nodes_per_rack = 32;
  int racks_per_pod = 32;
  // Nodes registering or opening their stream at the same time.
  int max_connecting = 64;
  // How long a node's Register may wait for a connection (wait_for_ready) and answer.
  absl::Duration register_timeout = absl::Seconds(120);
  // Sender threads (see above). gRPC does most of a write's work (framing, sendmsg) on
  // the thread that starts it, so one thread tops out below 10,000 batches/s here.
  int sender_threads = 4;
};

// Cumulative counts since the fleet started.
struct FleetStats {
  int64_t nodes = 0;                // created
  int64_t streaming = 0;            // hello written and the stream not ended
  int64_t register_failures = 0;
  int64_t stream_failures = 0;      // streams (or hellos) that ended while running
  int64_t batches_sent = 0;         // writes started
  int64_t write_failures = 0;       // writes that completed with ok=false
  int64_t skipped_busy = 0;         // due while the node's previous write was pending
  int64_t late_slots = 0;           // wheel slots served > interval/10 after due
};

class Fleet {
 public:
  explicit Fleet(FleetOptions options);
  ~Fleet();  // Stop()s.

  Fleet(const Fleet&) = delete;
  Fleet& operator=(const Fleet&) = delete;

  // Adds nodes until the fleet has `total` and waits until every new node streams or
  // has failed. DEADLINE_EXCEEDED when `timeout` runs out first (the nodes keep
  // connecting); INVALID_ARGUMENT when a node cannot be modelled; FAILED_PRECONDITION
  // after Stop.
  absl::Status GrowTo(int64_t total, absl::Duration timeout);

  FleetStats stats() const;
  // Up to 5 distinct failure descriptions ("register ingest-000012: code 14 ...").
  std::vector<std::string> failure_samples() const;

  // Stops sending, cancels every call and waits (up to 15 s) for gRPC to finish them.
  void Stop();

 private:
  class Node;
  struct Sender {
    grpc::CompletionQueue queue;
    std::thread thread;
  };

  static constexpr int kSlots = 1000;
  // The wheel slot of node `index`.
  static int SlotOf(int64_t index);

  void RunSender(int sender);
  // Called by nodes on their sender thread.
  void NodeStreaming(Node* node);
  void NodeSettled();  // streaming, or failed before that
  void NodeCallsDone();
  void NoteFailure(const std::string& description);

  const FleetOptions options_;
  const int sender_count_;
  const absl::Time wheel_start_;  // slot k is due at wheel_start_ + k × interval/kSlots
  std::vector<std::unique_ptr<Sender>> senders_;

  std::atomic<int64_t> streaming_{0};
  std::atomic<int64_t> register_failures_{0};
  std::atomic<int64_t> stream_failures_{0};
  std::atomic<int64_t> batches_sent_{0};
  std::atomic<int64_t> write_failures_{0};
  std::atomic<int64_t> skipped_busy_{0};
  std::atomic<int64_t> late_slots_{0};
  std::atomic<bool> stopping_{false};

  mutable absl::Mutex mu_;
  std::vector<std::unique_ptr<Node>> nodes_ ABSL_GUARDED_BY(mu_);
  int64_t connecting_ ABSL_GUARDED_BY(mu_) = 0;
  // Nodes with a gRPC operation pending.
  int64_t outstanding_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<std::string> failures_ ABSL_GUARDED_BY(mu_);
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;

  absl::Mutex slots_mu_;
  std::vector<std::vector<Node*>> slots_ ABSL_GUARDED_BY(slots_mu_);
};

}  // namespace weft::bench

#endif  // WEFT_BENCH_INGEST_FLEET_H_
