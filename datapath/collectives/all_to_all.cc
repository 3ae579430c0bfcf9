#include "datapath/collectives/all_to_all.h"

#include <algorithm>
#include <vector>

namespace weft::datapath::collectives_internal {

absl::Status AllToAllPairwise(Context& ctx, const char* input, absl::Span<const size_t> send_counts,
                              char* output, absl::Span<const size_t> recv_counts, DataType type) {
  const size_t element_bytes = DataTypeBytes(type);
  const int n = ctx.size;
  std::vector<size_t> send_offset(n + 1, 0), recv_offset(n + 1, 0);
  for (int r = 0; r < n; ++r) {
    send_offset[r + 1] = send_offset[r] + send_counts[r] * element_bytes;
    recv_offset[r + 1] = recv_offset[r] + recv_counts[r] * element_bytes;
  }
  Requests requests(ctx.transport);
  // Round k pairs every rank with rank + k (send) and rank - k (receive), so no rank is
  // everyone's first target. Rounds are posted while the ones in flight move at most
  // alltoall_bytes_in_flight each way (always at least one), which bounds the bytes
  // queued in the network stack and keeps the copies cache-friendly; a small exchange
  // posts every round at once.
  auto round_bytes = [&](int k) {
    const int from = Mod(ctx.rank - k, n);
    const int to = Mod(ctx.rank + k, n);
    return std::max(send_counts[to], recv_counts[from]) * element_bytes;
  };
  std::vector<size_t> round_requests;  // request indices of each posted round, two per round
  size_t bytes_in_flight = 0;
  int next_round = 1;
  auto post_rounds = [&] {
    for (; next_round < n; ++next_round) {
      const size_t bytes = round_bytes(next_round);
      if (bytes_in_flight > 0 && bytes_in_flight + bytes > ctx.alltoall_bytes_in_flight) {
        return;
      }
      const int from = Mod(ctx.rank - next_round, n);
      const int to = Mod(ctx.rank + next_round, n);
      round_requests.push_back(
          requests.Recv(from, output + recv_offset[from], recv_counts[from] * element_bytes));
      round_requests.push_back(
          requests.Send(to, input + send_offset[to], send_counts[to] * element_bytes));
      bytes_in_flight += bytes;
    }
  };
  post_rounds();
  // This rank's own block is a local copy: do it while the network moves the rest.
  ctx.CopyWhileProgressing(output + recv_offset[ctx.rank], input + send_offset[ctx.rank],
                           send_counts[ctx.rank] * element_bytes);
  for (int k = 1; k < n && requests.status().ok(); ++k) {
    (void)requests.WaitOne(round_requests[2 * (k - 1)]);
    (void)requests.WaitOne(round_requests[2 * (k - 1) + 1]);
    bytes_in_flight -= round_bytes(k);
    post_rounds();
  }
  return requests.WaitAll();
}

}  // namespace weft::datapath::collectives_internal
