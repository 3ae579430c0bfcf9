// Test helpers: build the transports of a whole job inside one process (one per rank,
// set up concurrently, as setup needs every rank at once) and run per-rank code on
// one thread per rank. testonly.
#ifndef WEFT_DATAPATH_TRANSPORT_TRANSPORT_TEST_UTIL_H_
#define WEFT_DATAPATH_TRANSPORT_TRANSPORT_TEST_UTIL_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "datapath/transport.h"
#include "datapath/transport/rc_transport.h"
#include "datapath/transport/tcp_transport.h"
#include "rdma/fake_verbs.h"

namespace weft::datapath {

// Runs fn(rank) for every rank on its own thread; returns when all have.
void RunRanks(int size, const std::function<void(int rank)>& fn);

// A job's TCP transports over loopback.
absl::StatusOr<std::vector<std::unique_ptr<Transport>>> MakeTcpTransports(
    int size, const TcpTransportOptions& options = {});

// A job's RC transports over fake verbs: one FakeVerbs "node" per rank (device
// mlx5_0, address 10.0.0.<rank + 1>) on one fabric. The fabric and the FakeVerbs live in
// the returned object, which must outlive nothing else: transports are destroyed first.
struct FakeRcJob {
  std::unique_ptr<rdma::FakeFabric> fabric;
  std::vector<std::unique_ptr<rdma::FakeVerbs>> verbs;
  std::vector<std::unique_ptr<Transport>> transports;

  FakeRcJob() = default;
  FakeRcJob(FakeRcJob&&) = default;
  FakeRcJob& operator=(FakeRcJob&&) = default;
  ~FakeRcJob();
};
absl::StatusOr<FakeRcJob> MakeFakeRcJob(int size, const RcTransportOptions& options = {});

}  // namespace weft::datapath

#endif  // WEFT_DATAPATH_TRANSPORT_TRANSPORT_TEST_UTIL_H_
