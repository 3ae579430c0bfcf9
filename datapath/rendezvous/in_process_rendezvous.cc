#include "datapath/rendezvous/in_process_rendezvous.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"

namespace weft::datapath {

absl::Status InProcessRendezvous::Publish(absl::string_view key, int rank,
                                          absl::string_view value) {
  absl::MutexLock lock(&mu_);
  if (closed_) return absl::CancelledError("rendezvous store closed");
  auto& ranks = entries_[std::string(key)];
  auto [it, inserted] = ranks.emplace(rank, std::string(value));
  if (!inserted && it->second != value) {
    return absl::AlreadyExistsError(absl::StrCat("rendezvous '", key, "': rank ", rank,
                                                 " already published a different value"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> InProcessRendezvous::Lookup(absl::string_view key,
                                                                     absl::Span<const int> ranks,
                                                                     absl::Duration timeout) {
  auto all_present = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (closed_) return true;
    auto it = entries_.find(key);
    if (it == entries_.end()) return ranks.empty();
    for (int rank : ranks) {
      if (it->second.count(rank) == 0) return false;
    }
    return true;
  };
  absl::MutexLock lock(&mu_);
  mu_.AwaitWithTimeout(absl::Condition(&all_present), timeout);
  if (closed_) return absl::CancelledError("rendezvous store closed");
  auto it = entries_.find(key);
  std::vector<std::string> values;
  std::vector<int> missing;
  for (int rank : ranks) {
    if (it == entries_.end() || it->second.count(rank) == 0) {
      missing.push_back(rank);
    } else {
      values.push_back(it->second.at(rank));
    }
  }
  if (!missing.empty()) {
    return absl::DeadlineExceededError(
        absl::StrCat("rendezvous '", key, "': rank", missing.size() > 1 ? "s " : " ",
                     absl::StrJoin(missing, ", "), " never arrived (waited ",
                     absl::FormatDuration(timeout), " for ", ranks.size(), " ranks)"));
  }
  return values;
}

void InProcessRendezvous::Close() {
  absl::MutexLock lock(&mu_);
  closed_ = true;
}

}  // namespace weft::datapath
