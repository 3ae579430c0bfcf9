// Fleet: thousands of simulated agents in one process, for the controller ingest
// benchmark. Each node has its own gRPC channel (its own TCP connection, as real
// agents on separate hosts would), calls Register with a SyntheticNode's NodeInfo,
// opens a Connect stream, writes the StreamHello with the granted epoch, and from then
// on writes one TelemetryBatch per interval. The nodes' send times are spread evenly
// over the interval (node i at the fractional part of i × golden ratio), so the
// controller sees a steady stream rather than one burst per second.
//
// Everything runs on gRPC's callback client API (ClientBidiReactor), so the fleet needs
// only a few sender threads of its own, which take turns walking a 1000-slot timing
// wheel and start the writes that are due; completions run on gRPC's threads. A node writes one batch
// at a time: a batch falling due while the previous one is still being written is
// skipped and counted (backpressure from a slow controller shows up there). Streams
// are not re-established; a stream that ends while the fleet runs is counted, with
// its status, as a failure.
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
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"

namespace weft::bench {

struct FleetOptions {
  std::string controller_address;  // host:port
  absl::Duration interval = absl::Seconds(1);
  uint32_t nics = 8;
  uint32_t gpus = 8;
  // Node i is named <prefix><i> (zero-padded to 6 digits).
  std::string node_prefix = "ingest-";
  // Nodes registering or opening their stream at the same time.
  int max_connecting = 200;
  // Threads that start the writes; thread t serves the wheel slots t, t+n, t+2n, ...
  // (the wheel still wakes once per slot in all). gRPC does most of a write's work
  // (framing, sendmsg) on the thread that starts it, so one thread tops out below
  // 10,000 batches/s here.
  int sender_threads = 4;
  // Keep a read pending on every stream, as an agent does. The controller sends
  // nothing down in the benchmark, and with Debian's gRPC (built without NDEBUG) every
  // completion scans the list of pending operations, so the benchmark turns this off:
  // a stream the controller ends then shows as a failed write instead.
  bool read_downlink = true;
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
  int64_t downlink_messages = 0;    // ControllerMessages received
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
  // Up to 5 distinct failure descriptions ("register ingest-000012: UNAVAILABLE ...").
  std::vector<std::string> failure_samples() const;

  // Stops sending, cancels every call and waits (up to 15 s) for gRPC to finish them.
  void Stop();

 private:
  class Node;
  friend class Node;

  void RunSender(int sender);
  // Called by nodes (any gRPC thread).
  void NodeStreaming(Node* node, int64_t index);
  void NodeSettled();  // registered-and-streaming, or failed before that
  void NodeCallsDone();
  void NoteFailure(const std::string& description);

  const FleetOptions options_;
  static constexpr int kSlots = 1000;
  const int sender_count_;
  const absl::Time wheel_start_;  // slot k is due at wheel_start_ + k × interval/kSlots

  std::atomic<int64_t> streaming_{0};
  std::atomic<int64_t> register_failures_{0};
  std::atomic<int64_t> stream_failures_{0};
  std::atomic<int64_t> batches_sent_{0};
  std::atomic<int64_t> write_failures_{0};
  std::atomic<int64_t> skipped_busy_{0};
  std::atomic<int64_t> late_slots_{0};
  std::atomic<int64_t> downlink_messages_{0};

  mutable absl::Mutex mu_;
  std::vector<std::unique_ptr<Node>> nodes_ ABSL_GUARDED_BY(mu_);
  int64_t connecting_ ABSL_GUARDED_BY(mu_) = 0;
  // Nodes with gRPC calls that have not finished (OnDone / register callback pending).
  int64_t outstanding_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<std::string> failures_ ABSL_GUARDED_BY(mu_);
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;

  absl::Mutex slots_mu_;
  std::vector<std::vector<Node*>> slots_ ABSL_GUARDED_BY(slots_mu_);

  absl::Notification stop_senders_;
  std::vector<std::thread> senders_;
};

}  // namespace weft::bench

#endif  // WEFT_BENCH_INGEST_FLEET_H_
