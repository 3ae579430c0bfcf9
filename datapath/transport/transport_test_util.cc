#include "datapath/transport/transport_test_util.h"

#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "datapath/rendezvous/in_process_rendezvous.h"

namespace weft::datapath {

using rdma::FakeDeviceConfig;
using rdma::FakeFabric;
using rdma::FakeVerbs;

void RunRanks(int size, const std::function<void(int rank)>& fn) {
  std::vector<std::thread> threads;
  threads.reserve(size);
  for (int rank = 0; rank < size; ++rank) threads.emplace_back(fn, rank);
  for (std::thread& t : threads) t.join();
}

namespace {

// Builds one transport per rank concurrently with `make(rank, rendezvous)`.
template <typename Make>
absl::StatusOr<std::vector<std::unique_ptr<Transport>>> BuildAll(int size, Make make) {
  InProcessRendezvous rendezvous;
  std::vector<std::unique_ptr<Transport>> transports(size);
  absl::Mutex mu;
  absl::Status first;
  RunRanks(size, [&](int rank) {
    absl::StatusOr<std::unique_ptr<Transport>> transport = make(rank, rendezvous);
    absl::MutexLock lock(&mu);
    if (transport.ok()) {
      transports[rank] = std::move(*transport);
    } else if (first.ok()) {
      first = transport.status();
    }
  });
  if (!first.ok()) return first;
  return transports;
}

}  // namespace

absl::StatusOr<std::vector<std::unique_ptr<Transport>>> MakeTcpTransports(
    int size, const TcpTransportOptions& options) {
  return BuildAll(
      size, [&](int rank, Rendezvous& rendezvous) -> absl::StatusOr<std::unique_ptr<Transport>> {
        absl::StatusOr<std::unique_ptr<TcpTransport>> t =
            TcpTransport::Create(rank, size, rendezvous, options);
        if (!t.ok()) return t.status();
        return std::unique_ptr<Transport>(std::move(*t));
      });
}

FakeRcJob::~FakeRcJob() { transports.clear(); }

absl::StatusOr<FakeRcJob> MakeFakeRcJob(int size, const RcTransportOptions& options) {
  FakeRcJob job;
  job.fabric = std::make_unique<FakeFabric>();
  for (int rank = 0; rank < size; ++rank) {
    job.verbs.push_back(std::make_unique<FakeVerbs>(
        job.fabric.get(), std::vector<FakeDeviceConfig>{FakeDeviceConfig::Roce(
                              "mlx5_0", 0x0a000001u + static_cast<uint32_t>(rank))}));
  }
  absl::StatusOr<std::vector<std::unique_ptr<Transport>>> transports = BuildAll(
      size, [&](int rank, Rendezvous& rendezvous) -> absl::StatusOr<std::unique_ptr<Transport>> {
        absl::StatusOr<std::unique_ptr<RcTransport>> t =
            RcTransport::Create(rank, size, *job.verbs[rank], rendezvous, options);
        if (!t.ok()) return t.status();
        return std::unique_ptr<Transport>(std::move(*t));
      });
  if (!transports.ok()) return transports.status();
  job.transports = std::move(*transports);
  return job;
}

}  // namespace weft::datapath
