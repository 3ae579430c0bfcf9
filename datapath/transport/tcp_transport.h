// TcpTransport: the Transport (datapath/transport.h) over TCP sockets, one connection
// per pair of ranks. It is the fallback when a node has no RDMA device, or when a job
// asks for it.
//
// Wire: each message is an 8-byte little-endian length followed by the bytes. Reads
// and writes go straight between the sockets and the callers' buffers (no staging
// copy), gathering a peer's queued messages into one recvmsg/sendmsg. The calling
// thread does all the work (no progress thread, no hand-off): it serves the sockets
// poll(2) reports ready, reads before writes so peers are not held up, and writes only
// when the kernel reports room, so data leaves in large segments. That keeps
// small-message latency to the system calls and leaves the cores to the ranks, which
// matters when ranks outnumber cores.
//
// Flow control: a message of at least options.clear_to_send_bytes (1 MiB by default)
// leaves only after the receiver has posted its buffer (as Gloo's TCP transport does).
// Its 8-byte header goes at once (so a size mismatch is still caught on arrival), its
// bytes once the receiver said "clear to send": on posting each such receive it raises
// a counter it sends on a second, control-only connection to that peer. Smaller
// messages are eager and TCP's own window is their flow control. The threshold sits
// above the 256 KiB segments of ring all-reduce and broadcast, because every large
// message waits for the receiver's clear and a wake-up, which costs ring all-reduce's
// segments more than it saves. What it reaches is whole blocks: all-to-all's (where
// clear-to-send beats eager, docs/benchmarks.md) and all-gather's ring steps, which
// move a rank's whole block once it is 1 MiB or more (not measured by weft-perf).
//
// Setup: each rank listens on options.listen_host (port 0), publishes host:port under
// options.rendezvous_key, connects to every lower rank and accepts every higher one,
// twice per pair (data, then control). The hello on each connection carries the
// ranks, the job size, which connection it is and the clear-to-send threshold, so a
// stray or mis-ranked connection, or a rank configured differently, is refused.
//
// Thread-safety: as Transport: one thread at a time.
#ifndef WEFT_DATAPATH_TRANSPORT_TCP_TRANSPORT_H_
#define WEFT_DATAPATH_TRANSPORT_TCP_TRANSPORT_H_

#include <poll.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/time/time.h"
#include "datapath/rendezvous.h"
#include "datapath/transport.h"
#include "datapath/transport/socket_util.h"

namespace weft::datapath {

struct TcpTransportOptions {
  // The address this rank listens on and the others connect to: the node's address on
  // the job network; 127.0.0.1 when every rank runs on one machine.
  std::string listen_host = "127.0.0.1";
  // The rendezvous key the addresses are exchanged under (unique per communicator).
  std::string rendezvous_key = "tcp";
  // How long to wait for the other ranks to publish, connect and say hello.
  absl::Duration connect_timeout = absl::Seconds(60);
  // A Wait that sees no byte move for this long fails with DEADLINE_EXCEEDED naming
  // the peers it was waiting on.
  absl::Duration progress_timeout = absl::Minutes(5);
  // How long a Wait keeps checking the sockets (yielding the core in between) before
  // it sleeps in poll(2); zero never spins. Spinning saves the sleep and wake-up a
  // short wait would cost. When the ranks sharing this rank's listen_host outnumber
  // the cores this process may run on, a Wait spins only for a message of at most
  // oversubscribed_spin_max_bytes: such a wait is short and each yield lets the other
  // ranks run, while through a large message's long wait the spinning takes cycles
  // from the peers doing the copying.
  absl::Duration spin_before_block = absl::Microseconds(20);
  size_t oversubscribed_spin_max_bytes = 128 << 10;
  // SO_SNDBUF/SO_RCVBUF; 0 leaves the kernel's autotuning on.
  int socket_buffer_bytes = 0;
  // Messages of at least this many bytes wait for the receiver's clear-to-send (see
  // above); every rank of a job must use the same value. 0 sends everything eagerly.
  size_t clear_to_send_bytes = 1 << 20;
};

class TcpTransport : public Transport {
 public:
  static absl::StatusOr<std::unique_ptr<TcpTransport>> Create(int rank, int size,
                                                              Rendezvous& rendezvous,
                                                              const TcpTransportOptions& options);
  ~TcpTransport() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  absl::string_view name() const override { return "tcp"; }
  absl::Status RegisterMemory(void*, size_t) override { return absl::OkStatus(); }
  absl::Status UnregisterMemory(void*) override { return absl::OkStatus(); }
  absl::StatusOr<RequestId> PostSend(int peer, const void* data, size_t num_bytes) override;
  absl::StatusOr<RequestId> PostRecv(int peer, void* data, size_t num_bytes) override;
  absl::Status Wait(RequestId id) override;
  void Progress() override;

 private:
  struct Request {
    RequestId id = 0;
    bool is_send = false;
    int peer = 0;
    char* data = nullptr;
    size_t num_bytes = 0;
    size_t done_bytes = 0;  // header included: complete at num_bytes + 8
    uint64_t header = 0;    // send: the length to write; recv: the length read
    // Send: its bytes may go (eager, or the receiver's clear-to-send was counted).
    bool cleared = true;
    bool complete = false;
    absl::Status status;
  };
  struct Peer {
    ScopedFd fd;
    std::deque<Request*> sends;
    std::deque<Request*> recvs;
    // Flow control on the control connection, in both directions: the counters are
    // cumulative, so a frame carries the latest value and frames may coalesce.
    ScopedFd control;
    uint64_t clears_received = 0;  // the peer's large receives posted for us
    uint64_t clears_used = 0;      // of those, given to our large sends
    uint64_t clears_posted = 0;    // our large receives posted for the peer
    uint64_t clears_announced = 0; // the value of the last frame queued to the peer
    uint64_t control_out = 0;      // that frame, little-endian
    size_t control_out_written = 8;  // 8: nothing in flight
    uint64_t control_in = 0;
    size_t control_in_read = 0;
  };

  TcpTransport(int rank, int size, const TcpTransportOptions& options);
  absl::Status Connect(Rendezvous& rendezvous);
  Request* NewRequest(bool is_send, int peer, char* data, size_t num_bytes);
  // Polls the sockets with pending work, waiting up to timeout_ms, and serves the
  // ready ones; true if any byte moved.
  bool PollOnce(int timeout_ms);
  // Moves what can move without blocking; true if any byte moved.
  bool ProgressSends(int peer);
  bool ProgressRecvs(int peer);
  // Sends this rank's latest clear-to-send count / reads the peer's.
  bool FlushClears(int peer);
  bool ReadClears(int peer);
  // Whether the peer's first queued send has bytes that may be written now.
  bool CanWrite(const Peer& peer) const;
  bool NeedsClearance(size_t num_bytes) const;
  // Fails every queued request, makes later calls fail with `status`, and shuts the
  // connections down so the peers fail fast too.
  void Break(const absl::Status& status);
  // Break with the failed call's error, saying what this rank was doing.
  void BreakOnSocketError(absl::string_view call, int error_number, absl::string_view doing);
  std::string DescribePending() const;

  const int rank_;
  const int size_;
  const TcpTransportOptions options_;
  std::vector<Peer> peers_;
  absl::flat_hash_map<RequestId, std::unique_ptr<Request>> requests_;
  std::vector<std::unique_ptr<Request>> free_requests_;
  RequestId next_id_ = 1;
  absl::Status broken_;
  // Ranks on this rank's host outnumber its cores (see spin_before_block).
  bool oversubscribed_ = false;
  std::vector<pollfd> poll_fds_;
  std::vector<int> poll_peers_;
  std::vector<bool> poll_is_control_;
};

}  // namespace weft::datapath

#endif  // WEFT_DATAPATH_TRANSPORT_TCP_TRANSPORT_H_
