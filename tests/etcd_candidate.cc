// etcd_candidate: a process that campaigns for leadership on etcd and holds it, so
// tests/etcd_ha_test can SIGKILL a leader that is a separate process.
//   etcd_candidate ENDPOINTS(comma-separated) ELECTION NAME TTL_S
// Prints "leading epoch=<N>" once it leads; exits 3 if it loses leadership.
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "common/clock.h"
#include "store/etcd/etcd_client.h"
#include "store/etcd/leader_election.h"

int main(int argc, char** argv) {
  if (argc != 5) {
    std::cerr << "usage: etcd_candidate ENDPOINTS ELECTION NAME TTL_S\n";
    return 2;
  }
  namespace etcd = weft::store::etcd;
  auto client = etcd::EtcdClient::Create(
      {.endpoints = absl::StrSplit(argv[1], ','), .call_timeout = absl::Seconds(1)});
  if (!client.ok()) {
    std::cerr << client.status() << "\n";
    return 2;
  }
  weft::RealClock clock;
  etcd::LeaderElection election(client->get(), &clock,
                                {.election = argv[2],
                                 .candidate = argv[3],
                                 .address = std::string(argv[3]) + ":7070",
                                 .lease_ttl = absl::Seconds(std::atoi(argv[4]))});
  auto fence = election.Campaign(absl::Seconds(30));
  if (!fence.ok()) {
    std::cerr << fence.status() << "\n";
    return 1;
  }
  std::cout << "leading epoch=" << fence->epoch << std::endl;
  election.AwaitLoss(absl::InfiniteFuture());
  std::cout << "lost" << std::endl;
  return 3;
}
