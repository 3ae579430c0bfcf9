#include "agent/probe/path_tracer.h"

#include <algorithm>
#include <utility>

#include "common/logging.h"

namespace weft::agent::probe {

namespace {

prometheus::Family<prometheus::Counter>& TracesFamily(prometheus::Registry* registry) {
  return prometheus::BuildCounter()
      .Name("weft_agent_probe_traces_total")
      .Help("Traceroutes of probe flows: reached (the peer answered), incomplete (timed "
            "out before), send_error (not sent)")
      .Register(*registry);
}

}  // namespace

PathTracer::PathTracer(TraceTransport* transport, const Clock* clock, PathTracerOptions options,
                       prometheus::Registry* registry, const std::string& node_name)
    : transport_(transport),
      clock_(clock),
      options_(std::move(options)),
      reached_(TracesFamily(registry).Add({{"node", node_name}, {"result", "reached"}})),
      incomplete_(TracesFamily(registry).Add({{"node", node_name}, {"result", "incomplete"}})),
      send_errors_(TracesFamily(registry).Add({{"node", node_name}, {"result", "send_error"}})) {}

PathTracer::~PathTracer() { Stop(); }

void PathTracer::Start() {
  absl::MutexLock lock(&mu_);
  if (thread_.joinable() || stop_) return;
  thread_ = std::thread([this] {
    while (true) {
      const absl::Time now = clock_->Now();
      Tick(now);
      absl::MutexLock lock(&mu_);
      if (clock_->AwaitWithDeadline(&mu_, absl::Condition(&stop_), now + absl::Milliseconds(50))) {
        return;
      }
    }
  });
}

void PathTracer::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

void PathTracer::SetFlows(const std::vector<ProbeFlow>& flows) {
  absl::MutexLock lock(&mu_);
  flows_.clear();
  std::map<ProbeFlow, absl::Time> next_due;
  for (const ProbeFlow& flow : flows) {
    if (flow.transport == weft::v1::PROBE_TRANSPORT_RDMA_UD) continue;
    flows_.push_back(flow);
    next_due[flow] = absl::InfinitePast();  // traced again: the path may have moved too
  }
  next_due_ = std::move(next_due);
  for (auto it = last_started_.begin(); it != last_started_.end();) {
    it = next_due_.count(it->first) == 0 ? last_started_.erase(it) : std::next(it);
  }
  for (auto it = running_.begin(); it != running_.end();) {
    it = next_due_.count(it->second.flow) == 0 ? running_.erase(it) : std::next(it);
  }
}

void PathTracer::TraceSoon(const weft::v1::ProbeWindow& window) {
  absl::MutexLock lock(&mu_);
  for (const ProbeFlow& flow : flows_) {
    if (flow.peer_node != window.peer_node() || flow.peer_nic != window.peer_nic() ||
        flow.peer_address != window.peer_address() ||
        flow.source_address != window.source_address() ||
        flow.source_port != window.source_port() || flow.dscp != window.dscp()) {
      continue;
    }
    auto last = last_started_.find(flow);
    const absl::Time earliest =
        last == last_started_.end() ? absl::InfinitePast() : last->second + options_.min_retrace;
    absl::Time& due = next_due_[flow];
    due = std::min(due, earliest);
    return;
  }
}

void PathTracer::FinishLocked(Running& trace, absl::Time now) {
  weft::v1::ProbePathTrace out;
  const ProbeFlow& flow = trace.flow;
  SetFlowFields(flow, &out);
  // Routers below the TTL that reached the peer; without it, up to the last that answered.
  size_t hops = trace.routers.size();
  if (trace.reached_ttl > 0) {
    hops = static_cast<size_t>(trace.reached_ttl - 1);
  } else {
    while (hops > 0 && trace.routers[hops - 1].empty()) --hops;
  }
  for (size_t i = 0; i < hops; ++i) out.add_hops(trace.routers[i]);
  out.set_reached(trace.reached_ttl > 0);
  (trace.reached_ttl > 0 ? reached_ : incomplete_).Increment();
  out.set_traced_at_us(absl::ToUnixMicros(now));
  done_.push_back(std::move(out));
  while (done_.size() > options_.max_pending) done_.pop_front();
}

void PathTracer::Tick(absl::Time now) {
  std::vector<TraceReply> replies = transport_->TakeTraceReplies();
  absl::MutexLock lock(&mu_);
  for (const TraceReply& reply : replies) {
    auto it = running_.find(reply.token);
    if (it == running_.end() || reply.ttl < 1 || reply.ttl > options_.max_hops) continue;
    Running& trace = it->second;
    if (reply.reached) {
      if (trace.reached_ttl == 0 || reply.ttl < trace.reached_ttl) trace.reached_ttl = reply.ttl;
    } else {
      trace.routers[reply.ttl - 1] = reply.router;
    }
  }
  for (auto it = running_.begin(); it != running_.end();) {
    Running& trace = it->second;
    bool complete = trace.reached_ttl > 0;
    for (int ttl = 1; complete && ttl < trace.reached_ttl; ++ttl) {
      complete = !trace.routers[ttl - 1].empty();
    }
    if (complete || now >= trace.deadline) {
      FinishLocked(trace, now);
      it = running_.erase(it);
    } else {
      ++it;
    }
  }
  // Start the flow due longest ago, one per 1/traces_per_second.
  const absl::Duration gap = absl::Seconds(1 / options_.traces_per_second);
  while (now >= next_start_) {
    const ProbeFlow* due = nullptr;
    absl::Time due_at = absl::InfiniteFuture();
    for (const ProbeFlow& flow : flows_) {
      const absl::Time at = next_due_[flow];
      if (at <= now && at < due_at) due = &flow, due_at = at;
    }
    if (due == nullptr) break;
    next_due_[*due] =
        options_.interval > absl::ZeroDuration() ? now + options_.interval : absl::InfiniteFuture();
    next_start_ = std::max(next_start_, now) + gap;
    last_started_[*due] = now;
    const uint64_t token = next_token_++ & kMaxTraceToken;
    Running trace{*due, now + options_.timeout,
                  std::vector<std::string>(static_cast<size_t>(options_.max_hops)), 0};
    bool sent_any = false;
    for (int ttl = 1; ttl <= options_.max_hops; ++ttl) {
      absl::Status sent = transport_->SendTrace(*due, token, ttl);
      if (!sent.ok()) {
        send_errors_.Increment();
        WEFT_LOG(WARNING) << "traceroute not sent flow=\"" << due->ToString() << "\" ttl=" << ttl
                          << " error=\"" << sent.message() << "\"";
        break;
      }
      sent_any = true;
    }
    if (!sent_any) continue;
    ++started_;
    running_.emplace(token, std::move(trace));
  }
}

std::vector<weft::v1::ProbePathTrace> PathTracer::TakeTraces() {
  absl::MutexLock lock(&mu_);
  std::vector<weft::v1::ProbePathTrace> out(std::make_move_iterator(done_.begin()),
                                            std::make_move_iterator(done_.end()));
  done_.clear();
  return out;
}

uint64_t PathTracer::traces_started() const {
  absl::MutexLock lock(&mu_);
  return started_;
}

}  // namespace weft::agent::probe
