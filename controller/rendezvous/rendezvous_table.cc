#include "controller/rendezvous/rendezvous_table.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace weft::controller {
namespace {

// Ranks listed in a timeout message before "and N more": enough to act on, short
// enough for a log line of a 4096-rank job.
constexpr size_t kMaxRanksListed = 16;

std::string NodeSuffix(const std::string& node) {
  return node.empty() ? std::string() : absl::StrCat(" (node ", node, ")");
}

}  // namespace

std::string DescribeExchange(const std::string& job_id, const std::string& key) {
  return absl::StrCat("rendezvous job '", job_id, "' key '", key, "'");
}

RendezvousTable::RendezvousTable(const Clock* clock, RendezvousTableOptions options)
    : clock_(clock), options_(options) {}

absl::Status RendezvousTable::Validate(const weft::v1::RendezvousRequest& r) const {
  auto invalid = [&](absl::string_view what) {
    return absl::InvalidArgumentError(
        absl::StrCat(DescribeExchange(r.job_id(), r.key()), ": ", what));
  };
  if (r.job_id().empty()) return invalid("job_id is empty; every rank must pass the job's id");
  if (r.job_id().size() > options_.max_name_bytes || r.key().size() > options_.max_name_bytes) {
    return invalid(absl::StrCat("job_id and key may have at most ", options_.max_name_bytes,
                                " bytes each"));
  }
  if (r.world_size() < 1 || r.world_size() > options_.max_world_size) {
    return invalid(absl::StrCat("world_size ", r.world_size(), " is out of range; accepted: 1 to ",
                                options_.max_world_size));
  }
  if (r.rank() >= r.world_size()) {
    return invalid(absl::StrCat("rank ", r.rank(), " is out of range; accepted: 0 to ",
                                r.world_size() - 1, " (world_size ", r.world_size(), ")"));
  }
  if (r.endpoint().size() > options_.max_endpoint_bytes) {
    return invalid(absl::StrCat("endpoint of rank ", r.rank(), " has ", r.endpoint().size(),
                                " bytes; at most ", options_.max_endpoint_bytes, " accepted"));
  }
  const absl::Duration timeout = absl::Milliseconds(r.timeout_ms());
  if (r.timeout_ms() == 0 || timeout > options_.max_timeout) {
    return invalid(absl::StrCat("timeout_ms ", r.timeout_ms(), " is out of range; accepted: 1 to ",
                                absl::ToInt64Milliseconds(options_.max_timeout)));
  }
  return absl::OkStatus();
}

absl::Status RendezvousTable::TimeoutStatus(const ExchangeKey& key, const Exchange& exchange,
                                            absl::Time joined, absl::Time now) const {
  std::vector<uint32_t> missing;
  for (uint32_t rank = 0; rank < exchange.world_size; ++rank) {
    if (!exchange.endpoints[rank].has_value()) missing.push_back(rank);
  }
  const size_t listed = std::min(missing.size(), kMaxRanksListed);
  std::string ranks = absl::StrJoin(missing.begin(), missing.begin() + listed, ", ");
  if (missing.size() > listed) absl::StrAppend(&ranks, " and ", missing.size() - listed, " more");
  return absl::DeadlineExceededError(absl::StrCat(
      DescribeExchange(key.first, key.second), ": rank", missing.size() == 1 ? " " : "s ", ranks,
      " never arrived (waited ", absl::FormatDuration(now - joined), " for ", exchange.world_size,
      " ranks; ", exchange.arrived, " arrived)"));
}

void RendezvousTable::RemoveWaiter(Exchange& exchange, WaiterId waiter) {
  exchange.waiters.erase(std::remove(exchange.waiters.begin(), exchange.waiters.end(), waiter),
                         exchange.waiters.end());
}

void RendezvousTable::RunDecided(Decided decided) {
  for (auto& [done, result] : decided) done(std::move(result));
}

std::optional<RendezvousTable::WaiterId> RendezvousTable::Join(
    const weft::v1::RendezvousRequest& request, Done done) {
  if (absl::Status valid = Validate(request); !valid.ok()) {
    done(valid);
    return std::nullopt;
  }
  const absl::Time now = clock_->Now();
  const ExchangeKey key(request.job_id(), request.key());
  const std::string name = DescribeExchange(key.first, key.second);
  Decided decided;
  std::optional<WaiterId> id;
  {
    absl::MutexLock lock(&mu_);
    auto it = exchanges_.find(key);
    if (it == exchanges_.end()) {
      if (exchanges_.size() >= options_.max_exchanges) {
        decided.emplace_back(std::move(done),
                             absl::ResourceExhaustedError(absl::StrCat(
                                 name, ": the controller already holds ", exchanges_.size(),
                                 " rendezvous exchanges (the most it keeps); retry after ",
                                 absl::FormatDuration(options_.retention),
                                 ", when finished ones expire")));
      } else {
        Exchange exchange;
        exchange.world_size = request.world_size();
        exchange.opened_by_rank = request.rank();
        exchange.opened_by_node = request.node();
        exchange.endpoints.resize(request.world_size());
        it = exchanges_.emplace(key, std::move(exchange)).first;
      }
    }
    if (it != exchanges_.end()) {
      Exchange& exchange = it->second;
      if (exchange.world_size != request.world_size()) {
        decided.emplace_back(
            std::move(done),
            absl::FailedPreconditionError(absl::StrCat(
                name, ": rank ", request.rank(), NodeSuffix(request.node()),
                " asked for world size ", request.world_size(),
                " but the exchange was opened for ", exchange.world_size, " ranks by rank ",
                exchange.opened_by_rank, NodeSuffix(exchange.opened_by_node),
                "; every rank of a run must pass the same world size, and each run its own "
                "job id")));
      } else if (const std::optional<std::string>& slot = exchange.endpoints[request.rank()];
                 slot.has_value() && *slot != request.endpoint()) {
        decided.emplace_back(
            std::move(done),
            absl::AlreadyExistsError(absl::StrCat(
                name, ": rank ", request.rank(), NodeSuffix(request.node()),
                " already published a different endpoint (the rank was started twice, or an "
                "earlier run used this job id: exchanges expire ",
                absl::FormatDuration(options_.retention), " after their last use)")));
      } else {
        if (std::optional<std::string>& slot = exchange.endpoints[request.rank()];
            !slot.has_value()) {
          slot = request.endpoint();
          ++exchange.arrived;
        }
        exchange.last_activity = now;
        if (exchange.arrived == exchange.world_size) {
          std::vector<std::string> endpoints;
          endpoints.reserve(exchange.world_size);
          for (const std::optional<std::string>& e : exchange.endpoints) endpoints.push_back(*e);
          for (WaiterId waiter : exchange.waiters) {
            auto w = waiters_.find(waiter);
            decided.emplace_back(std::move(w->second.done), endpoints);
            waiters_.erase(w);
          }
          exchange.waiters.clear();
          decided.emplace_back(std::move(done), std::move(endpoints));
        } else {
          id = next_waiter_++;
          waiters_[*id] = Waiter{key, now, now + absl::Milliseconds(request.timeout_ms()),
                                 std::move(done)};
          exchange.waiters.push_back(*id);
        }
      }
    }
  }
  RunDecided(std::move(decided));
  return id;
}

void RendezvousTable::Cancel(WaiterId waiter) {
  Decided decided;
  {
    absl::MutexLock lock(&mu_);
    auto w = waiters_.find(waiter);
    if (w == waiters_.end()) return;
    Exchange& exchange = exchanges_.at(w->second.exchange);
    RemoveWaiter(exchange, waiter);
    exchange.last_activity = clock_->Now();
    decided.emplace_back(
        std::move(w->second.done),
        absl::CancelledError(absl::StrCat(
            DescribeExchange(w->second.exchange.first, w->second.exchange.second),
            ": the call was cancelled")));
    waiters_.erase(w);
  }
  RunDecided(std::move(decided));
}

void RendezvousTable::FailAll(const absl::Status& status) {
  Decided decided;
  {
    absl::MutexLock lock(&mu_);
    const absl::Time now = clock_->Now();
    for (auto& [id, waiter] : waiters_) decided.emplace_back(std::move(waiter.done), status);
    waiters_.clear();
    for (auto& [key, exchange] : exchanges_) {
      if (!exchange.waiters.empty()) exchange.last_activity = now;
      exchange.waiters.clear();
    }
  }
  RunDecided(std::move(decided));
}

void RendezvousTable::Sweep() {
  Decided decided;
  {
    absl::MutexLock lock(&mu_);
    const absl::Time now = clock_->Now();
    for (auto w = waiters_.begin(); w != waiters_.end();) {
      if (w->second.deadline > now) {
        ++w;
        continue;
      }
      Exchange& exchange = exchanges_.at(w->second.exchange);
      decided.emplace_back(std::move(w->second.done),
                           TimeoutStatus(w->second.exchange, exchange, w->second.joined, now));
      RemoveWaiter(exchange, w->first);
      exchange.last_activity = now;
      w = waiters_.erase(w);
    }
    for (auto e = exchanges_.begin(); e != exchanges_.end();) {
      if (e->second.waiters.empty() && e->second.last_activity + options_.retention <= now) {
        e = exchanges_.erase(e);
      } else {
        ++e;
      }
    }
  }
  RunDecided(std::move(decided));
}

size_t RendezvousTable::exchange_count() const {
  absl::MutexLock lock(&mu_);
  return exchanges_.size();
}

size_t RendezvousTable::waiter_count() const {
  absl::MutexLock lock(&mu_);
  return waiters_.size();
}

}  // namespace weft::controller
