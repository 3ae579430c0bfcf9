// FakeTransport: a ProbeTransport in memory for the prober's tests. Every Send is
// recorded with the Clock's time; a probe to a peer address in `dropped` is never
// answered, any other gets ACK1 and ACK2 with the configured measurement the next
// time Receive() runs. Thread-safe.
#ifndef WEFT_AGENT_PROBE_FAKE_TRANSPORT_H_
#define WEFT_AGENT_PROBE_FAKE_TRANSPORT_H_

#include <deque>
#include <set>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "agent/probe/probe_transport.h"
#include "common/clock.h"

namespace weft::agent::probe {

class FakeTransport : public ProbeTransport {
 public:
  struct SentProbe {
    ProbeFlow flow;
    uint64_t seq;
    absl::Time at;
  };

  explicit FakeTransport(const Clock* clock) : clock_(clock) {}

  absl::Status Send(const ProbeFlow& flow, uint64_t seq) override;
  std::vector<ProbeMeasurement> Receive(absl::Duration timeout) override;
  void Forget(uint64_t seq) override;
  void Wake() override;

  void Drop(const std::string& peer_address);
  // Sends to this source port fail (as a port in use would).
  void FailSourcePort(uint16_t port);
  void SetMeasurement(absl::Duration rtt, absl::Duration sender, absl::Duration responder);
  std::vector<SentProbe> sent() const;
  size_t forgotten() const;
  // Waits (real time) until every answered probe was handed to Receive().
  bool AwaitDelivered(absl::Duration timeout) const;

 private:
  const Clock* const clock_;
  mutable absl::Mutex mu_;
  std::vector<SentProbe> sent_ ABSL_GUARDED_BY(mu_);
  std::deque<ProbeMeasurement> replies_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> dropped_ ABSL_GUARDED_BY(mu_);
  std::set<uint16_t> failing_ports_ ABSL_GUARDED_BY(mu_);
  size_t forgotten_ ABSL_GUARDED_BY(mu_) = 0;
  bool woken_ ABSL_GUARDED_BY(mu_) = false;
  absl::Duration rtt_ ABSL_GUARDED_BY(mu_) = absl::Microseconds(10);
  absl::Duration sender_ ABSL_GUARDED_BY(mu_) = absl::Microseconds(3);
  absl::Duration responder_ ABSL_GUARDED_BY(mu_) = absl::Microseconds(2);
};

}  // namespace weft::agent::probe

#endif  // WEFT_AGENT_PROBE_FAKE_TRANSPORT_H_
