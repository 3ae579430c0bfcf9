#include "agent/outbound_queue.h"

#include <algorithm>
#include <utility>

namespace weft::agent {

OutboundQueue::OutboundQueue(size_t telemetry_capacity)
    : telemetry_capacity_(std::max<size_t>(telemetry_capacity, 1)) {}

bool OutboundQueue::PushTelemetry(weft::v1::AgentMessage message) {
  absl::MutexLock lock(&mu_);
  if (closed_) return false;
  bool dropped = false;
  if (telemetry_.size() >= telemetry_capacity_) {
    telemetry_.pop_front();
    ++dropped_;
    dropped = true;
  }
  telemetry_.push_back(std::move(message));
  return dropped;
}

void OutboundQueue::PushAck(weft::v1::AgentMessage message) {
  absl::MutexLock lock(&mu_);
  if (closed_) return;
  acks_.push_back(std::move(message));
}

std::optional<weft::v1::AgentMessage> OutboundQueue::Pop() {
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(
      +[](OutboundQueue* q) ABSL_EXCLUSIVE_LOCKS_REQUIRED(q->mu_) {
        return q->closed_ || !q->acks_.empty() || !q->telemetry_.empty();
      },
      this));
  if (closed_) return std::nullopt;
  std::deque<weft::v1::AgentMessage>& lane = acks_.empty() ? telemetry_ : acks_;
  weft::v1::AgentMessage message = std::move(lane.front());
  lane.pop_front();
  return message;
}

void OutboundQueue::Close() {
  absl::MutexLock lock(&mu_);
  closed_ = true;
  acks_.clear();
  telemetry_.clear();
}

size_t OutboundQueue::queued_telemetry() const {
  absl::MutexLock lock(&mu_);
  return telemetry_.size();
}

uint64_t OutboundQueue::dropped_telemetry() const {
  absl::MutexLock lock(&mu_);
  return dropped_;
}

}  // namespace weft::agent
