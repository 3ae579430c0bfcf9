// Rendezvous: how the ranks of a job meet. Each rank publishes small values (its TCP
// address, its QP numbers and GID) under a key, then looks up everyone else's. The
// interface is deliberately two calls, so the stores behind it stay simple to write:
// in-process (datapath/in_process_rendezvous.h, for tests and threads), a TCP store
// hosted by rank 0 (datapath/tcp_rendezvous.h), and later the node agent's local
// socket relaying to the controller.
//
// Keys are scoped by the caller (e.g. "comm0/tcp"); values are opaque bytes.
//
// Thread-safety: implementations are thread-safe.
#ifndef WEFT_DATAPATH_RENDEZVOUS_H_
#define WEFT_DATAPATH_RENDEZVOUS_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"

namespace weft::datapath {

class Rendezvous {
 public:
  virtual ~Rendezvous() = default;

  // Publishes `value` as rank `rank`'s entry under `key`. ALREADY_EXISTS if that rank
  // already published a different value there (publishing the same value again is OK,
  // so a retried call is harmless).
  virtual absl::Status Publish(absl::string_view key, int rank, absl::string_view value) = 0;

  // Waits until every rank in `ranks` has published `key`, for at most `timeout`, and
  // returns their values in the order of `ranks`. On timeout, DEADLINE_EXCEEDED naming
  // the ranks that never arrived, e.g.
  //   rendezvous 'comm0/tcp': ranks 2, 5 never arrived (waited 30s for 8 ranks)
  virtual absl::StatusOr<std::vector<std::string>> Lookup(absl::string_view key,
                                                          absl::Span<const int> ranks,
                                                          absl::Duration timeout) = 0;
};

// {0, 1, ..., size - 1}.
std::vector<int> AllRanks(int size);

// Publishes `value` for `rank` under `key` and returns every rank's value (index =
// rank), waiting up to `timeout` for the others.
absl::StatusOr<std::vector<std::string>> ExchangeAll(Rendezvous& rendezvous, absl::string_view key,
                                                     int rank, int size, absl::string_view value,
                                                     absl::Duration timeout);

}  // namespace weft::datapath

#endif  // WEFT_DATAPATH_RENDEZVOUS_H_
