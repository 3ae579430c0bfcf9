// OutboundQueue: what the agent has to send up its Connect stream, between the loop
// that produces it (telemetry every interval, desired-state acks from the reader) and
// the one thread that writes the stream. A slow or stuck controller (or network) must
// never stall collection, so the queue is bounded: when it is full the oldest
// telemetry batch is dropped first, since the newest says more about the node now.
// Acks are never dropped and go out before any telemetry: the controller's rollout
// waits on them.
//
// Thread-safe.
#ifndef WEFT_AGENT_OUTBOUND_QUEUE_H_
#define WEFT_AGENT_OUTBOUND_QUEUE_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "proto/weft/v1/agent.pb.h"

namespace weft::agent {

class OutboundQueue {
 public:
  // `telemetry_capacity` >= 1: telemetry batches held at most.
  explicit OutboundQueue(size_t telemetry_capacity);

  // Queues a telemetry batch; returns true when the oldest queued batch was dropped to
  // make room. No-op (false) after Close().
  bool PushTelemetry(weft::v1::AgentMessage message);
  // Queues a desired-state ack (never dropped). No-op after Close().
  void PushAck(weft::v1::AgentMessage message);

  // The next message to write: acks first, then telemetry oldest first. Blocks until
  // there is one; nullopt once Close() was called (what is still queued is discarded:
  // the stream it was meant for is gone).
  std::optional<weft::v1::AgentMessage> Pop();

  // Wakes Pop() for good.
  void Close();

  size_t queued_telemetry() const;
  uint64_t dropped_telemetry() const;

 private:
  const size_t telemetry_capacity_;
  mutable absl::Mutex mu_;
  std::deque<weft::v1::AgentMessage> acks_ ABSL_GUARDED_BY(mu_);
  std::deque<weft::v1::AgentMessage> telemetry_ ABSL_GUARDED_BY(mu_);
  uint64_t dropped_ ABSL_GUARDED_BY(mu_) = 0;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace weft::agent

#endif  // WEFT_AGENT_OUTBOUND_QUEUE_H_
