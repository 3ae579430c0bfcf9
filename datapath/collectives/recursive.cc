#include "datapath/collectives/recursive.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "common/status_macros.h"

namespace weft::datapath::collectives_internal {

absl::Status AllReduceRecursiveDoubling(Context& ctx, char* data, size_t count, DataType type,
                                        ReduceOp op, bool compress) {
  const size_t element_bytes = DataTypeBytes(type);
  const size_t wire_bytes = count * (compress ? 2 : element_bytes);
  ASSIGN_OR_RETURN(char* recv, ctx.recv_scratch.Get(wire_bytes));
  char* send = data;
  if (compress) {
    ASSIGN_OR_RETURN(send, ctx.send_scratch.Get(wire_bytes));
  }
  float* values = reinterpret_cast<float*>(data);
  auto prepare_send = [&] {
    if (!compress) return;
    RoundToBf16(values, count);
    CompressBf16(values, reinterpret_cast<uint16_t*>(send), count);
  };
  auto reduce_received = [&] {
    if (compress) {
      ReduceBf16Into(op, values, reinterpret_cast<const uint16_t*>(recv), count);
    } else {
      ReduceInto(type, op, data, recv, count);
    }
  };

  int pof2 = 1;
  while (pof2 * 2 <= ctx.size) pof2 *= 2;
  const int rem = ctx.size - pof2;
  int new_rank;
  // Fold the ranks beyond a power of two into their neighbours.
  if (ctx.rank < 2 * rem) {
    if (ctx.rank % 2 == 0) {
      prepare_send();
      RETURN_IF_ERROR(ctx.transport.Send(ctx.rank + 1, send, wire_bytes));
      new_rank = -1;
    } else {
      RETURN_IF_ERROR(ctx.transport.Recv(ctx.rank - 1, recv, wire_bytes));
      reduce_received();
      new_rank = ctx.rank / 2;
    }
  } else {
    new_rank = ctx.rank - rem;
  }
  if (new_rank >= 0) {
    for (int mask = 1; mask < pof2; mask <<= 1) {
      const int new_peer = new_rank ^ mask;
      const int peer = new_peer < rem ? new_peer * 2 + 1 : new_peer + rem;
      prepare_send();
      Requests requests(ctx.transport);
      requests.Recv(peer, recv, wire_bytes);
      requests.Send(peer, send, wire_bytes);
      RETURN_IF_ERROR(requests.WaitAll());
      // Both partners reduce the same two operands: a op b == b op a exactly, so the
      // results agree bit for bit.
      reduce_received();
    }
  }
  if (compress) RoundToBf16(values, count);
  if (ctx.rank < 2 * rem) {
    if (ctx.rank % 2 == 1) {
      if (compress) CompressBf16(values, reinterpret_cast<uint16_t*>(send), count);
      RETURN_IF_ERROR(ctx.transport.Send(ctx.rank - 1, send, wire_bytes));
    } else if (compress) {
      RETURN_IF_ERROR(ctx.transport.Recv(ctx.rank + 1, recv, wire_bytes));
      DecompressBf16(reinterpret_cast<const uint16_t*>(recv), values, count);
    } else {
      RETURN_IF_ERROR(ctx.transport.Recv(ctx.rank + 1, data, wire_bytes));
    }
  }
  return absl::OkStatus();
}

absl::Status AllReduceHalving(Context& ctx, char* data, size_t count, DataType type, ReduceOp op) {
  const int n = ctx.size;  // a power of two
  const size_t element_bytes = DataTypeBytes(type);
  // Element offset where chunk `chunk` starts (n: the end); ranges of chunks are contiguous.
  auto begin = [&](int chunk) { return chunk == n ? count : Chunk(count, n, chunk).offset; };
  auto bytes = [&](int first, int last) { return (begin(last) - begin(first)) * element_bytes; };
  auto at = [&](int chunk) { return data + begin(chunk) * element_bytes; };
  ASSIGN_OR_RETURN(char* recv, ctx.recv_scratch.Get(bytes(0, n / 2)));  // the larger half
  // Reduce-scatter by recursive halving: partners rank ^ mask swap halves of the chunks
  // they still hold, and each reduces the half it keeps, so this rank ends holding chunk
  // rank reduced over all ranks. One rank reduces each chunk: every rank ends with the
  // same bits once the chunks are gathered.
  int first = 0;
  int last = n;
  for (int mask = n / 2; mask >= 1; mask /= 2) {
    const int peer = ctx.rank ^ mask;
    const int middle = first + (last - first) / 2;
    const bool keep_low = (ctx.rank & mask) == 0;
    const int keep_first = keep_low ? first : middle;
    const int keep_last = keep_low ? middle : last;
    const int give_first = keep_low ? middle : first;
    const int give_last = keep_low ? last : middle;
    Requests requests(ctx.transport);
    requests.Recv(peer, recv, bytes(keep_first, keep_last));
    requests.Send(peer, at(give_first), bytes(give_first, give_last));
    RETURN_IF_ERROR(requests.WaitAll());
    ReduceInto(type, op, at(keep_first), recv, bytes(keep_first, keep_last) / element_bytes);
    first = keep_first;
    last = keep_last;
  }
  // All-gather by recursive doubling: partners swap the reduced chunks they hold, in place.
  for (int mask = 1; mask < n; mask *= 2) {
    const int peer = ctx.rank ^ mask;
    const int span = last - first;
    const int peer_first = (ctx.rank & mask) == 0 ? last : first - span;
    Requests requests(ctx.transport);
    requests.Recv(peer, at(peer_first), bytes(peer_first, peer_first + span));
    requests.Send(peer, at(first), bytes(first, last));
    RETURN_IF_ERROR(requests.WaitAll());
    first = std::min(first, peer_first);
    last = first + 2 * span;
  }
  return absl::OkStatus();
}

}  // namespace weft::datapath::collectives_internal
