#include "datapath/collectives/direct.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "absl/functional/function_ref.h"
#include "common/status_macros.h"

namespace weft::datapath::collectives_internal {

namespace {

// One everyone-to-everyone reduce-scatter round: block(r), block_count(r) elements,
// goes to every other rank r; `own_part` (this rank's part of its own block) is copied
// to `own` while they move, and the other ranks' parts are reduced into it. Returns
// once every send is out.
absl::Status ReduceScatterRound(Context& ctx, absl::FunctionRef<const char*(int)> block,
                                absl::FunctionRef<size_t(int)> block_count, const char* own_part,
                                char* own, DataType type, ReduceOp op) {
  const int n = ctx.size;
  const size_t element_bytes = DataTypeBytes(type);
  const size_t own_count = block_count(ctx.rank);
  const size_t own_bytes = own_count * element_bytes;
  ASSIGN_OR_RETURN(char* recv, ctx.recv_scratch.Get((n - 1) * own_bytes));
  Requests requests(ctx.transport);
  // recv slot k - 1 holds rank (rank - k)'s contribution.
  std::vector<size_t> recvs;
  for (int k = 1; k < n; ++k) {
    recvs.push_back(requests.Recv(Mod(ctx.rank - k, n), recv + (k - 1) * own_bytes, own_bytes));
  }
  for (int k = 1; k < n; ++k) {
    const int to = Mod(ctx.rank + k, n);
    requests.Send(to, block(to), block_count(to) * element_bytes);
  }
  if (own != own_part) std::memcpy(own, own_part, own_bytes);
  // A fixed order (own part, then rank - 1, rank - 2, ...) whatever lands first; only
  // this rank reduces its block, so where it is shared every rank gets the same bits.
  for (int k = 1; k < n; ++k) {
    RETURN_IF_ERROR(requests.WaitOne(recvs[k - 1]));
    ReduceInto(type, op, own, recv + (k - 1) * own_bytes, own_count);
  }
  return requests.WaitAll();
}
}  // namespace

absl::Status AllReduceDirect(Context& ctx, char* data, size_t count, DataType type, ReduceOp op) {
  const int n = ctx.size;
  const size_t element_bytes = DataTypeBytes(type);
  auto chunk_data = [&](int rank) { return data + Chunk(count, n, rank).offset * element_bytes; };
  auto chunk_count = [&](int rank) { return Chunk(count, n, rank).count; };
  // Returns once its sends are out, so the all-gather may land on the chunks they left from.
  RETURN_IF_ERROR(ReduceScatterRound(ctx, chunk_data, chunk_count, chunk_data(ctx.rank),
                                     chunk_data(ctx.rank), type, op));
  // All-gather: every rank's reduced chunk lands in place.
  Requests requests(ctx.transport);
  for (int k = 1; k < n; ++k) {
    const int from = Mod(ctx.rank - k, n);
    requests.Recv(from, chunk_data(from), chunk_count(from) * element_bytes);
  }
  for (int k = 1; k < n; ++k) {
    requests.Send(Mod(ctx.rank + k, n), chunk_data(ctx.rank),
                  chunk_count(ctx.rank) * element_bytes);
  }
  return requests.WaitAll();
}

absl::Status ReduceScatterDirect(Context& ctx, const char* input, char* output, size_t count,
                                 DataType type, ReduceOp op) {
  const size_t block_bytes = count * DataTypeBytes(type);
  auto block = [&](int rank) { return input + static_cast<size_t>(rank) * block_bytes; };
  return ReduceScatterRound(
      ctx, block, [&](int) { return count; }, block(ctx.rank), output, type, op);
}

absl::Status AllGatherDirect(Context& ctx, const char* input, char* output, size_t block_bytes) {
  const int n = ctx.size;
  char* own = output + static_cast<size_t>(ctx.rank) * block_bytes;
  Requests requests(ctx.transport);
  for (int k = 1; k < n; ++k) {
    const int from = Mod(ctx.rank - k, n);
    requests.Recv(from, output + static_cast<size_t>(from) * block_bytes, block_bytes);
  }
  // This rank's block goes out from the input, so the network starts at once and the
  // copy into the output's own block overlaps it.
  for (int k = 1; k < n; ++k) requests.Send(Mod(ctx.rank + k, n), input, block_bytes);
  if (own != input) ctx.CopyWhileProgressing(own, input, block_bytes);
  return requests.WaitAll();
}

}  // namespace weft::datapath::collectives_internal
