// EventLog: the controller's bounded in-memory log of what happened to nodes — state
// changes, drains and undrains (and who did them), health rules firing and clearing
// with the numbers that fired them, registrations. The inventory appends; the
// AdminService's ListEvents reads. When full, the oldest event is evicted; the log
// remembers that it did, so a reader learns that its answer may be incomplete.
//
// With a ControllerStore the ring is a view of a durable log: Append writes every
// event through (synchronous=NORMAL: it survives a kill -9 of the controller, not a
// power cut; events are not acknowledged to anyone), the database is pruned to the
// same capacity every kPruneEvery appends, and Restore() refills the ring and the
// sequence numbers after a restart. A failed write is logged and the event kept in
// memory: the log never blocks the inventory on a full disk.
//
// Thread-safe: one internal mutex, held to copy events in or out and for the store
// write. Callers may hold their own locks while appending (the inventory does); the
// log calls nothing but the store.
//
// Example:
//   EventLog log(10000);
//   weft::v1::Event event;
//   event.set_time_us(absl::ToUnixMicros(clock->Now()));
//   event.set_node("gpu-a01");
//   event.set_kind(weft::v1::EVENT_KIND_DRAINED);
//   log.Append(std::move(event));
//   EventQuery query;
//   query.node = "gpu-a01";
//   weft::v1::ListEventsResponse recent = log.List(query);
#ifndef WEFT_CONTROLLER_INVENTORY_EVENT_LOG_H_
#define WEFT_CONTROLLER_INVENTORY_EVENT_LOG_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "proto/weft/v1/admin.pb.h"
#include "store/controller_store.h"

namespace weft::controller {

struct EventQuery {
  // Only this node's events, when not empty.
  std::string node;
  // Only events with time_us at or after this.
  absl::Time since = absl::InfinitePast();
  // The newest `limit` matching events; 0 means all.
  size_t limit = 0;
};

class EventLog {
 public:
  // Keeps at most `capacity` events (at least 1). `store`, when not null, must
  // outlive the log.
  explicit EventLog(size_t capacity, store::ControllerStore* store = nullptr);

  // Appends between two prunings of the database.
  static constexpr uint64_t kPruneEvery = 256;

  // Loads the newest `capacity` stored events; the next sequence follows the newest.
  // Call once, before Append. OK without a store.
  absl::Status Restore();

  EventLog(const EventLog&) = delete;
  EventLog& operator=(const EventLog&) = delete;

  // Stores `event` with the next sequence number (its own `sequence` is overwritten),
  // evicting the oldest event when full. Returns the sequence number given.
  uint64_t Append(weft::v1::Event event);

  // Matching events, oldest first, with `truncated` set when matching events may have
  // been evicted or cut by the limit, and `capacity` filled in.
  weft::v1::ListEventsResponse List(const EventQuery& query) const;

  size_t capacity() const { return capacity_; }
  size_t size() const;
  // Events evicted since construction.
  uint64_t evicted() const;

 private:
  const size_t capacity_;
  store::ControllerStore* const store_;
  mutable absl::Mutex mu_;
  std::deque<weft::v1::Event> events_ ABSL_GUARDED_BY(mu_);
  uint64_t next_sequence_ ABSL_GUARDED_BY(mu_) = 1;
  uint64_t evicted_ ABSL_GUARDED_BY(mu_) = 0;
  // time_us of the newest evicted event.
  int64_t newest_evicted_us_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace weft::controller

#endif  // WEFT_CONTROLLER_INVENTORY_EVENT_LOG_H_
