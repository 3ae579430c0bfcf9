#include "datapath/collectives/broadcast.h"

#include <algorithm>
#include <vector>

namespace weft::datapath::collectives_internal {

absl::Status BroadcastTree(Context& ctx, char* data, size_t num_bytes, int root) {
  const int n = ctx.size;
  const int relative = Mod(ctx.rank - root, n);
  auto actual = [&](int relative_rank) { return Mod(relative_rank + root, n); };
  absl::Status status;
  // Binomial tree: receive from the parent, then send to the children.
  int mask = 1;
  while (mask < n) {
    if (relative & mask) {
      status = ctx.transport.Recv(actual(relative - mask), data, num_bytes);
      break;
    }
    mask <<= 1;
  }
  Requests requests(ctx.transport);
  for (mask >>= 1; mask > 0 && status.ok(); mask >>= 1) {
    if (relative + mask < n) requests.Send(actual(relative + mask), data, num_bytes);
  }
  absl::Status sent = requests.WaitAll();
  if (status.ok()) status = sent;
  return status;
}

absl::Status BroadcastChain(Context& ctx, char* data, size_t num_bytes, int root) {
  const int n = ctx.size;
  const int relative = Mod(ctx.rank - root, n);
  auto actual = [&](int relative_rank) { return Mod(relative_rank + root, n); };
  absl::Status status;
  const size_t segment = ctx.segment_bytes;
  Requests requests(ctx.transport);
  std::vector<size_t> recv_index;
  if (relative > 0) {
    for (size_t done = 0; done < num_bytes; done += segment) {
      recv_index.push_back(requests.next_index());
      requests.Recv(actual(relative - 1), data + done, std::min(segment, num_bytes - done));
    }
  }
  size_t k = 0;
  for (size_t done = 0; done < num_bytes && status.ok(); done += segment, ++k) {
    if (relative > 0) status = requests.WaitOne(recv_index[k]);
    if (status.ok() && relative < n - 1) {
      requests.Send(actual(relative + 1), data + done, std::min(segment, num_bytes - done));
    }
  }
  absl::Status all = requests.WaitAll();
  if (status.ok()) status = all;
  return status;
}

}  // namespace weft::datapath::collectives_internal
