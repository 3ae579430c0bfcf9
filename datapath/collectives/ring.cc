#include "datapath/collectives/ring.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "common/status_macros.h"

namespace weft::datapath::collectives_internal {

namespace {

absl::Status AllReduceRingStreamed(Context& ctx, char* data, size_t count, DataType type,
                                   ReduceOp op) {
  const int n = ctx.size;
  const size_t element_bytes = DataTypeBytes(type);
  const size_t segment = std::max<size_t>(1, ctx.segment_bytes / element_bytes);
  const size_t window = std::max<size_t>(2, ctx.ring_window);
  // Reduce in blocks small enough to keep the wire moving between them.
  const size_t reduce_block = std::max<size_t>(1, (64 << 10) / element_bytes);
  ASSIGN_OR_RETURN(char* scratch, ctx.recv_scratch.Get(window * segment * element_bytes));
  const int next = Mod(ctx.rank + 1, n);
  const int prev = Mod(ctx.rank - 1, n);
  const int stages = 2 * (n - 1);
  auto element = [&](size_t index) { return data + index * element_bytes; };
  // Stage t < n-1 is reduce-scatter step t, the rest all-gather steps. Each stage sends
  // the chunk the previous stage received (the first sends this rank's own chunk).
  auto is_reduce = [&](int t) { return t < n - 1; };
  auto recv_chunk = [&](int t) {
    return Chunk(count, n,
                 is_reduce(t) ? Mod(ctx.rank - t - 1, n) : Mod(ctx.rank - (t - n + 1), n));
  };
  auto send_chunk = [&](int t) { return t == 0 ? Chunk(count, n, ctx.rank) : recv_chunk(t - 1); };

  Requests requests(ctx.transport);
  std::vector<std::vector<size_t>> sends(stages), recvs(stages);
  // Reduce-scatter receives land in a ring of `window` segment slots, posted in stage
  // order as slots free up: a small, cache-warm landing zone however large the buffer.
  struct Pending {
    int stage;
    size_t offset;  // elements into the stage's chunk
    size_t len;
  };
  std::vector<Pending> reduce_recvs;
  for (int t = 0; t < n - 1; ++t) {
    const Range chunk = recv_chunk(t);
    for (size_t done = 0; done < chunk.count; done += segment) {
      reduce_recvs.push_back(Pending{t, done, std::min(segment, chunk.count - done)});
    }
  }
  size_t posted = 0;
  size_t reduced = 0;
  auto post_reduce_recvs = [&] {
    for (; posted < reduce_recvs.size() && posted < reduced + window; ++posted) {
      const Pending& p = reduce_recvs[posted];
      recvs[p.stage].push_back(requests.Recv(
          prev, scratch + (posted % window) * segment * element_bytes, p.len * element_bytes));
    }
  };
  auto post_send = [&](int t, size_t done) {
    const Range chunk = send_chunk(t);
    const size_t len = std::min(segment, chunk.count - done);
    sends[t].push_back(requests.Send(next, element(chunk.offset + done), len * element_bytes));
  };

  post_reduce_recvs();
  for (size_t done = 0; done < send_chunk(0).count; done += segment) post_send(0, done);
  for (int t = 0; t < stages; ++t) {
    const Range chunk = recv_chunk(t);
    if (!is_reduce(t)) {
      // The all-gather lands in place: the chunk's reduce-scatter send must be out first.
      for (size_t index : sends[t - (n - 1)]) RETURN_IF_ERROR(requests.WaitOne(index));
      for (size_t done = 0; done < chunk.count; done += segment) {
        recvs[t].push_back(requests.Recv(prev, element(chunk.offset + done),
                                         std::min(segment, chunk.count - done) * element_bytes));
      }
    }
    size_t k = 0;
    for (size_t done = 0; done < chunk.count; done += segment, ++k) {
      const size_t len = std::min(segment, chunk.count - done);
      RETURN_IF_ERROR(requests.WaitOne(recvs[t][k]));
      if (is_reduce(t)) {
        const char* received = scratch + (reduced % window) * segment * element_bytes;
        for (size_t b = 0; b < len; b += reduce_block) {
          const size_t block = std::min(reduce_block, len - b);
          ReduceInto(type, op, element(chunk.offset + done + b), received + b * element_bytes,
                     block);
          ctx.transport.Progress();
        }
        ++reduced;
        post_reduce_recvs();
      }
      // Forward the segment at once: the next stage streams behind this one.
      if (t + 1 < stages) post_send(t + 1, done);
    }
  }
  return requests.WaitAll();
}
}  // namespace

absl::Status AllReduceRing(Context& ctx, char* data, size_t count, DataType type, ReduceOp op,
                           bool compress) {
  if (!compress) return AllReduceRingStreamed(ctx, data, count, type, op);
  const int n = ctx.size;
  const size_t element_bytes = DataTypeBytes(type);
  const size_t wire_element = compress ? 2 : element_bytes;
  const size_t max_chunk = Chunk(count, n, 0).count;
  const size_t segment = std::max<size_t>(1, ctx.segment_bytes / wire_element);
  ASSIGN_OR_RETURN(char* recv, ctx.recv_scratch.Get(max_chunk * wire_element));
  char* send = nullptr;
  if (compress) {
    ASSIGN_OR_RETURN(send, ctx.send_scratch.Get(max_chunk * wire_element));
  }
  const int next = Mod(ctx.rank + 1, n);
  const int prev = Mod(ctx.rank - 1, n);
  auto element = [&](size_t index) { return data + index * element_bytes; };

  // Reduce-scatter: after step s, chunk (rank - s - 1) holds s + 2 ranks' values.
  for (int step = 0; step < n - 1; ++step) {
    const Range out = Chunk(count, n, Mod(ctx.rank - step, n));
    const Range in = Chunk(count, n, Mod(ctx.rank - step - 1, n));
    const char* source = element(out.offset);
    if (compress) {
      CompressBf16(reinterpret_cast<const float*>(source), reinterpret_cast<uint16_t*>(send),
                   out.count);
      source = send;
    }
    Requests requests(ctx.transport);
    const size_t first_recv = requests.next_index();
    for (size_t done = 0; done < in.count; done += segment) {
      const size_t len = std::min(segment, in.count - done);
      requests.Recv(prev, recv + done * wire_element, len * wire_element);
    }
    for (size_t done = 0; done < out.count; done += segment) {
      const size_t len = std::min(segment, out.count - done);
      requests.Send(next, source + done * wire_element, len * wire_element);
    }
    // Reduce each segment as soon as it lands, while the rest are still moving.
    size_t index = first_recv;
    for (size_t done = 0; done < in.count; done += segment, ++index) {
      const size_t len = std::min(segment, in.count - done);
      RETURN_IF_ERROR(requests.WaitOne(index));
      if (compress) {
        ReduceBf16Into(op, reinterpret_cast<float*>(element(in.offset + done)),
                       reinterpret_cast<const uint16_t*>(recv + done * wire_element), len);
      } else {
        ReduceInto(type, op, element(in.offset + done), recv + done * wire_element, len);
      }
    }
    RETURN_IF_ERROR(requests.WaitAll());
  }

  // This rank now owns chunk rank + 1; with compression everyone gets its bf16 form.
  if (compress) {
    const Range own = Chunk(count, n, Mod(ctx.rank + 1, n));
    RoundToBf16(reinterpret_cast<float*>(element(own.offset)), own.count);
  }

  // All-gather: pass the reduced chunks around the ring.
  for (int step = 0; step < n - 1; ++step) {
    const Range out = Chunk(count, n, Mod(ctx.rank + 1 - step, n));
    const Range in = Chunk(count, n, Mod(ctx.rank - step, n));
    Requests requests(ctx.transport);
    if (!compress) {
      requests.Recv(prev, element(in.offset), in.count * element_bytes);
      requests.Send(next, element(out.offset), out.count * element_bytes);
      RETURN_IF_ERROR(requests.WaitAll());
      continue;
    }
    CompressBf16(reinterpret_cast<const float*>(element(out.offset)),
                 reinterpret_cast<uint16_t*>(send), out.count);
    const size_t first_recv = requests.next_index();
    for (size_t done = 0; done < in.count; done += segment) {
      const size_t len = std::min(segment, in.count - done);
      requests.Recv(prev, recv + done * 2, len * 2);
    }
    for (size_t done = 0; done < out.count; done += segment) {
      requests.Send(next, send + done * 2, std::min(segment, out.count - done) * 2);
    }
    size_t index = first_recv;
    for (size_t done = 0; done < in.count; done += segment, ++index) {
      const size_t len = std::min(segment, in.count - done);
      RETURN_IF_ERROR(requests.WaitOne(index));
      DecompressBf16(reinterpret_cast<const uint16_t*>(recv + done * 2),
                     reinterpret_cast<float*>(element(in.offset + done)), len);
    }
    RETURN_IF_ERROR(requests.WaitAll());
  }
  return absl::OkStatus();
}

absl::Status ReduceScatterRing(Context& ctx, const char* input, char* output, size_t count,
                               DataType type, ReduceOp op) {
  const int n = ctx.size;
  const int steps = n - 1;
  const size_t element_bytes = DataTypeBytes(type);
  const size_t block_bytes = count * element_bytes;
  const size_t segment = std::max<size_t>(1, ctx.segment_bytes / element_bytes);
  const size_t segments = (count + segment - 1) / segment;
  const size_t window = std::max<size_t>(2, ctx.ring_window);
  const size_t reduce_block = std::max<size_t>(1, (64 << 10) / element_bytes);
  const int next = Mod(ctx.rank + 1, n);
  const int prev = Mod(ctx.rank - 1, n);
  ASSIGN_OR_RETURN(char* scratch, ctx.recv_scratch.Get(window * segment * element_bytes));
  char* accumulate = nullptr;
  if (steps > 1) {
    ASSIGN_OR_RETURN(accumulate, ctx.accumulate_scratch.Get(2 * block_bytes));
  }
  // Step t sends the partial of block (rank - t - 1) and receives the partial of block
  // (rank - t - 2), to which it adds this rank's input: into an accumulator (two,
  // alternating) or, at the last step, the output.
  auto target = [&](int t) {
    return t == steps - 1 ? output : accumulate + static_cast<size_t>(t % 2) * block_bytes;
  };
  auto source = [&](int t) -> const char* {
    return t == 0 ? input + static_cast<size_t>(Mod(ctx.rank - 1, n)) * block_bytes : target(t - 1);
  };
  auto length = [&](size_t d) { return std::min(segment, count - d * segment); };

  Requests requests(ctx.transport);
  std::vector<std::vector<size_t>> sends(steps);
  // Receives land in a ring of `window` segment slots, posted in (step, segment) order
  // as slots free up.
  std::vector<size_t> recvs(steps * segments);
  size_t posted = 0;
  size_t reduced = 0;
  auto post_recvs = [&] {
    for (; posted < recvs.size() && posted < reduced + window; ++posted) {
      recvs[posted] = requests.Recv(prev, scratch + (posted % window) * segment * element_bytes,
                                    length(posted % segments) * element_bytes);
    }
  };
  auto post_send = [&](int t, size_t d) {
    sends[t].push_back(
        requests.Send(next, source(t) + d * segment * element_bytes, length(d) * element_bytes));
  };

  post_recvs();
  for (size_t d = 0; d < segments; ++d) post_send(0, d);
  for (int t = 0; t < steps; ++t) {
    const char* mine = input + static_cast<size_t>(Mod(ctx.rank - t - 2, n)) * block_bytes;
    char* out = target(t);
    for (size_t d = 0; d < segments; ++d) {
      RETURN_IF_ERROR(requests.WaitOne(recvs[t * segments + d]));
      // The accumulator this step writes is the one step t - 1 sends from.
      if (t >= 2 && t < steps - 1) RETURN_IF_ERROR(requests.WaitOne(sends[t - 1][d]));
      const char* received = scratch + (reduced % window) * segment * element_bytes;
      const size_t offset = d * segment;
      for (size_t b = 0; b < length(d); b += reduce_block) {
        const size_t len = std::min(reduce_block, length(d) - b);
        char* dst = out + (offset + b) * element_bytes;
        const char* mine_part = mine + (offset + b) * element_bytes;
        if (dst != mine_part) std::memcpy(dst, mine_part, len * element_bytes);
        ReduceInto(type, op, dst, received + b * element_bytes, len);
        ctx.transport.Progress();
      }
      ++reduced;
      post_recvs();
      // Forward the segment at once: the next step streams behind this one.
      if (t + 1 < steps) post_send(t + 1, d);
    }
  }
  return requests.WaitAll();
}

absl::Status AllGatherRing(Context& ctx, const char* input, char* output, size_t block_bytes) {
  const int n = ctx.size;
  char* own = output + static_cast<size_t>(ctx.rank) * block_bytes;
  const int next = Mod(ctx.rank + 1, n);
  const int prev = Mod(ctx.rank - 1, n);
  Requests requests(ctx.transport);
  // This rank's block goes out from the input, so the network starts at once and the
  // copy into the output's own block overlaps it.
  for (int step = 0; step < n - 1 && requests.status().ok(); ++step) {
    const int out_block = Mod(ctx.rank - step, n);
    const int in_block = Mod(ctx.rank - step - 1, n);
    requests.Recv(prev, output + static_cast<size_t>(in_block) * block_bytes, block_bytes);
    requests.Send(next, step == 0 ? input : output + static_cast<size_t>(out_block) * block_bytes,
                  block_bytes);
    if (step == 0 && own != input) ctx.CopyWhileProgressing(own, input, block_bytes);
    (void)requests.WaitAll();
  }
  return requests.WaitAll();
}

}  // namespace weft::datapath::collectives_internal
