#include "controller/inventory/event_log.h"

#include <algorithm>
#include <limits>
#include <utility>
#include <vector>

#include "common/logging.h"

namespace weft::controller {

EventLog::EventLog(size_t capacity, store::ControllerStore* store)
    : capacity_(std::max<size_t>(1, capacity)), store_(store) {}

absl::Status EventLog::Restore() {
  if (store_ == nullptr) return absl::OkStatus();
  absl::StatusOr<std::vector<weft::v1::Event>> stored = store_->LoadEvents(capacity_);
  if (!stored.ok()) return stored.status();
  absl::MutexLock lock(&mu_);
  events_.assign(std::make_move_iterator(stored->begin()),
                 std::make_move_iterator(stored->end()));
  if (!events_.empty()) {
    next_sequence_ = events_.back().sequence() + 1;
    // Events before the oldest one kept were pruned: answers reaching back that far
    // are marked truncated.
    evicted_ = events_.front().sequence() - 1;
    if (evicted_ > 0) newest_evicted_us_ = events_.front().time_us();
  }
  return absl::OkStatus();
}

uint64_t EventLog::Append(weft::v1::Event event) {
  absl::MutexLock lock(&mu_);
  const uint64_t sequence = next_sequence_++;
  event.set_sequence(sequence);
  if (store_ != nullptr) {
    absl::Status stored = store_->AppendEvent(event);
    if (stored.ok() && sequence % kPruneEvery == 0) stored = store_->PruneEvents(capacity_);
    if (!stored.ok()) {
      WEFT_LOG(WARNING) << "event not persisted sequence=" << sequence << " error=\""
                        << stored.message() << "\"";
    }
  }
  if (events_.size() >= capacity_) {
    newest_evicted_us_ = std::max(newest_evicted_us_, events_.front().time_us());
    events_.pop_front();
    ++evicted_;
  }
  events_.push_back(std::move(event));
  return sequence;
}

weft::v1::ListEventsResponse EventLog::List(const EventQuery& query) const {
  const int64_t since_us = query.since == absl::InfinitePast()
                               ? std::numeric_limits<int64_t>::min()
                               : absl::ToUnixMicros(query.since);
  weft::v1::ListEventsResponse response;
  response.set_capacity(static_cast<uint32_t>(capacity_));
  std::vector<const weft::v1::Event*> matching;
  absl::MutexLock lock(&mu_);
  for (const weft::v1::Event& event : events_) {
    if (event.time_us() < since_us) continue;
    if (!query.node.empty() && event.node() != query.node) continue;
    matching.push_back(&event);
  }
  // An evicted event at or after `since` might have matched.
  bool truncated = evicted_ > 0 && newest_evicted_us_ >= since_us;
  size_t first = 0;
  if (query.limit > 0 && matching.size() > query.limit) {
    first = matching.size() - query.limit;
    truncated = true;
  }
  for (size_t i = first; i < matching.size(); ++i) *response.add_events() = *matching[i];
  response.set_truncated(truncated);
  return response;
}

size_t EventLog::size() const {
  absl::MutexLock lock(&mu_);
  return events_.size();
}

uint64_t EventLog::evicted() const {
  absl::MutexLock lock(&mu_);
  return evicted_;
}

}  // namespace weft::controller
