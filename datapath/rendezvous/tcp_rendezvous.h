// A Rendezvous over TCP: one process (by convention rank 0, at an address every rank
// is told, like MASTER_ADDR:MASTER_PORT) hosts a TcpRendezvousServer; every rank,
// rank 0 included, talks to it through a TcpRendezvousClient.
//
// Wire format (both directions): a u32 little-endian frame length, then the frame.
//   request  'P' key rank value            publish
//            'L' key timeout_ms n rank...  lookup (the server waits, not the client)
//   reply    status_code message [n value...]
// Strings are a u32 length and the bytes; integers little-endian.
//
// Thread-safety: both classes are thread-safe. The server runs one thread to accept
// and one per connection; its destructor stops them all.
#ifndef WEFT_DATAPATH_RENDEZVOUS_TCP_RENDEZVOUS_H_
#define WEFT_DATAPATH_RENDEZVOUS_TCP_RENDEZVOUS_H_

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "datapath/rendezvous.h"
#include "datapath/rendezvous/in_process_rendezvous.h"
#include "datapath/transport/socket_util.h"

namespace weft::datapath {

class TcpRendezvousServer {
 public:
  // Listens on host:port; port 0 picks a free one (see port()).
  static absl::StatusOr<std::unique_ptr<TcpRendezvousServer>> Start(const std::string& host,
                                                                    int port);
  // Serves on a socket that is already listening, e.g. one a launcher bound before it
  // started the ranks, so the port is known up front and cannot be taken meanwhile.
  static absl::StatusOr<std::unique_ptr<TcpRendezvousServer>> StartOnSocket(ScopedFd listener);

  ~TcpRendezvousServer();
  TcpRendezvousServer(const TcpRendezvousServer&) = delete;
  TcpRendezvousServer& operator=(const TcpRendezvousServer&) = delete;

  int port() const { return port_; }

 private:
  TcpRendezvousServer(ScopedFd listener, int port);
  void AcceptLoop();
  void Serve(int fd);

  ScopedFd listener_;
  const int port_;
  ScopedFd wake_read_;  // the destructor writes to wake_write_ to stop AcceptLoop
  ScopedFd wake_write_;
  InProcessRendezvous store_;
  std::thread accept_thread_;

  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<int> connections_ ABSL_GUARDED_BY(mu_);
  std::vector<std::thread> connection_threads_ ABSL_GUARDED_BY(mu_);
};

class TcpRendezvousClient : public Rendezvous {
 public:
  // Connects to the server, retrying until it listens or `connect_timeout` passes.
  static absl::StatusOr<std::unique_ptr<TcpRendezvousClient>> Connect(
      const HostPort& server, absl::Duration connect_timeout);

  absl::Status Publish(absl::string_view key, int rank, absl::string_view value) override;
  absl::StatusOr<std::vector<std::string>> Lookup(absl::string_view key,
                                                  absl::Span<const int> ranks,
                                                  absl::Duration timeout) override;

 private:
  TcpRendezvousClient(ScopedFd fd, std::string server)
      : fd_(std::move(fd)), server_(std::move(server)) {}
  // Sends one request frame and reads the reply frame.
  absl::StatusOr<std::string> Call(const std::string& request, absl::Duration reply_timeout)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  absl::Mutex mu_;
  ScopedFd fd_ ABSL_GUARDED_BY(mu_);
  const std::string server_;
};

}  // namespace weft::datapath

#endif  // WEFT_DATAPATH_RENDEZVOUS_TCP_RENDEZVOUS_H_
