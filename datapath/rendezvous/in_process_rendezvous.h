// InProcessRendezvous: a Rendezvous whose store is a map in this process, shared by the
// ranks of a job that run as threads (tests, the benchmark) and embedded by the TCP
// store server (datapath/tcp_rendezvous.h). Timeouts run on real time.
//
// Thread-safety: thread-safe; one object serves every rank.
#ifndef WEFT_DATAPATH_RENDEZVOUS_IN_PROCESS_RENDEZVOUS_H_
#define WEFT_DATAPATH_RENDEZVOUS_IN_PROCESS_RENDEZVOUS_H_

#include <map>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "datapath/rendezvous.h"

namespace weft::datapath {

class InProcessRendezvous : public Rendezvous {
 public:
  InProcessRendezvous() = default;

  absl::Status Publish(absl::string_view key, int rank, absl::string_view value) override;
  absl::StatusOr<std::vector<std::string>> Lookup(absl::string_view key,
                                                  absl::Span<const int> ranks,
                                                  absl::Duration timeout) override;

  // Wakes every waiting Lookup with CANCELLED; later calls fail the same way. For a
  // server shutting down.
  void Close();

 private:
  absl::Mutex mu_;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  std::map<std::string, std::map<int, std::string>, std::less<>> entries_ ABSL_GUARDED_BY(mu_);
};

}  // namespace weft::datapath

#endif  // WEFT_DATAPATH_RENDEZVOUS_IN_PROCESS_RENDEZVOUS_H_
