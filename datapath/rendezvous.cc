#include "datapath/rendezvous.h"

#include "common/status_macros.h"

namespace weft::datapath {

std::vector<int> AllRanks(int size) {
  std::vector<int> ranks(size);
  for (int i = 0; i < size; ++i) ranks[i] = i;
  return ranks;
}

absl::StatusOr<std::vector<std::string>> ExchangeAll(Rendezvous& rendezvous, absl::string_view key,
                                                     int rank, int size, absl::string_view value,
                                                     absl::Duration timeout) {
  RETURN_IF_ERROR(rendezvous.Publish(key, rank, value));
  return rendezvous.Lookup(key, AllRanks(size), timeout);
}

}  // namespace weft::datapath
