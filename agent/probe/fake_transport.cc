#include "agent/probe/fake_transport.h"

#include "absl/strings/str_cat.h"

namespace weft::agent::probe {

absl::Status FakeTransport::Send(const ProbeFlow& flow, uint64_t seq) {
  absl::MutexLock lock(&mu_);
  if (failing_ports_.count(flow.source_port) != 0) {
    return absl::UnavailableError(
        absl::StrCat("bind 0.0.0.0:", flow.source_port, ": Address already in use (errno 98)"));
  }
  sent_.push_back({flow, seq, clock_->Now()});
  if (dropped_.count(flow.peer_address) != 0) return absl::OkStatus();
  ProbeMeasurement m;
  m.seq = seq;
  m.network_rtt = rtt_;
  m.sender_host_delay = sender_;
  m.responder_host_delay = responder_ + absl::Microseconds(5);  // ACK1: a rougher guess
  m.timestamps = TimestampSource::kUser;
  m.dscp_at_responder = flow.dscp;
  m.source_port_at_responder = flow.source_port;
  replies_.push_back(m);
  m.responder_host_delay = responder_;
  m.timestamps = TimestampSource::kSoftware;
  m.final = true;
  replies_.push_back(m);
  return absl::OkStatus();
}

std::vector<ProbeMeasurement> FakeTransport::Receive(absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !replies_.empty() || woken_; };
  mu_.AwaitWithTimeout(absl::Condition(&ready), timeout);
  woken_ = false;
  std::vector<ProbeMeasurement> out(replies_.begin(), replies_.end());
  replies_.clear();
  return out;
}

void FakeTransport::Forget(uint64_t) {
  absl::MutexLock lock(&mu_);
  ++forgotten_;
}

void FakeTransport::Wake() {
  absl::MutexLock lock(&mu_);
  woken_ = true;
}

void FakeTransport::Drop(const std::string& peer_address) {
  absl::MutexLock lock(&mu_);
  dropped_.insert(peer_address);
}

void FakeTransport::FailSourcePort(uint16_t port) {
  absl::MutexLock lock(&mu_);
  failing_ports_.insert(port);
}

void FakeTransport::SetMeasurement(absl::Duration rtt, absl::Duration sender,
                                   absl::Duration responder) {
  absl::MutexLock lock(&mu_);
  rtt_ = rtt;
  sender_ = sender;
  responder_ = responder;
}

std::vector<FakeTransport::SentProbe> FakeTransport::sent() const {
  absl::MutexLock lock(&mu_);
  return sent_;
}

size_t FakeTransport::forgotten() const {
  absl::MutexLock lock(&mu_);
  return forgotten_;
}

bool FakeTransport::AwaitDelivered(absl::Duration timeout) const {
  absl::MutexLock lock(&mu_);
  auto empty = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return replies_.empty(); };
  return mu_.AwaitWithTimeout(absl::Condition(&empty), timeout);
}

}  // namespace weft::agent::probe
