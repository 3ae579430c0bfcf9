// The contract of datapath/transport.h, asked of every implementation: TCP over
// loopback, and RC over fake verbs in busy-poll and event mode, plus a small-credit
// RC configuration that forces credit returns and the rendezvous path at small sizes.
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/synchronization/notification.h"
#include "datapath/transport.h"
#include "datapath/transport/transport_test_util.h"
#include "gtest/gtest.h"

namespace weft::datapath {
namespace {

struct Job {
  std::optional<FakeRcJob> rc;
  std::vector<std::unique_ptr<Transport>> tcp;
  Transport& at(int rank) { return rc.has_value() ? *rc->transports[rank] : *tcp[rank]; }
};

std::vector<uint8_t> Pattern(size_t n, int seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(i * 131 + seed * 17 + (i >> 8));
  return v;
}

class TransportConformanceTest : public ::testing::TestWithParam<std::string> {
 protected:
  Job MakeJob(int size) {
    Job job;
    const std::string& kind = GetParam();
    if (kind == "tcp" || kind == "tcp_cts") {
      TcpTransportOptions options;
      // tcp: every message eager; tcp_cts: from 4 KiB, clear-to-send (the default
      // threshold, 1 MiB, would leave most of these sizes eager).
      options.clear_to_send_bytes = kind == "tcp_cts" ? 4096 : 0;
      auto transports = MakeTcpTransports(size, options);
      EXPECT_TRUE(transports.ok()) << transports.status();
      if (transports.ok()) job.tcp = std::move(*transports);
      return job;
    }
    RcTransportOptions options;
    if (kind == "rc_event") options.completion_mode = CompletionMode::kEvent;
    if (kind == "rc_small") {
      options.credits = 4;
      options.eager_bytes = 64;
    }
    auto rc = MakeFakeRcJob(size, options);
    EXPECT_TRUE(rc.ok()) << rc.status();
    if (rc.ok()) job.rc = std::move(*rc);
    return job;
  }
};

TEST_P(TransportConformanceTest, PingPongAcrossSizes) {
  Job job = MakeJob(2);
  const std::vector<size_t> sizes = {0,  1,    7,    24,   63,     64,
                                     65, 4096, 8192, 8193, 100000, (1u << 20) + 3};
  RunRanks(2, [&](int rank) {
    Transport& t = job.at(rank);
    for (size_t n : sizes) {
      const std::vector<uint8_t> want = Pattern(n, static_cast<int>(n));
      std::vector<uint8_t> buffer(n);
      if (rank == 0) {
        ASSERT_TRUE(t.Send(1, want.data(), n).ok());
        ASSERT_TRUE(t.Recv(1, buffer.data(), n).ok());
      } else {
        ASSERT_TRUE(t.Recv(0, buffer.data(), n).ok());
        ASSERT_TRUE(t.Send(0, buffer.data(), n).ok());
      }
      EXPECT_EQ(buffer, want) << "size " << n << " rank " << rank;
    }
  });
}

TEST_P(TransportConformanceTest, ManyOutstandingMessagesArriveInOrder) {
  Job job = MakeJob(2);
  constexpr int kMessages = 200;
  auto size_of = [](int i) { return static_cast<size_t>((i * 37) % 3000); };
  RunRanks(2, [&](int rank) {
    Transport& t = job.at(rank);
    std::vector<std::vector<uint8_t>> buffers(kMessages);
    std::vector<Transport::RequestId> ids;
    for (int i = 0; i < kMessages; ++i) {
      if (rank == 0) {
        buffers[i] = Pattern(size_of(i), i);
        auto id = t.PostSend(1, buffers[i].data(), buffers[i].size());
        ASSERT_TRUE(id.ok()) << id.status();
        ids.push_back(*id);
      } else {
        buffers[i].resize(size_of(i));
        auto id = t.PostRecv(0, buffers[i].data(), buffers[i].size());
        ASSERT_TRUE(id.ok()) << id.status();
        ids.push_back(*id);
      }
    }
    // Waiting order does not matter.
    for (int i = kMessages - 1; i >= 0; --i) ASSERT_TRUE(t.Wait(ids[i]).ok());
    if (rank == 1) {
      for (int i = 0; i < kMessages; ++i) EXPECT_EQ(buffers[i], Pattern(size_of(i), i)) << i;
    }
  });
}

TEST_P(TransportConformanceTest, MessagesMayArriveBeforeTheirReceive) {
  Job job = MakeJob(2);
  absl::Notification sent;
  RunRanks(2, [&](int rank) {
    Transport& t = job.at(rank);
    const std::vector<uint8_t> a = Pattern(10, 1), b = Pattern(0, 2), c = Pattern(40, 3);
    if (rank == 0) {
      std::vector<Transport::RequestId> ids;
      for (const auto* m : {&a, &b, &c}) ids.push_back(*t.PostSend(1, m->data(), m->size()));
      ASSERT_TRUE(t.WaitAll(ids).ok());
      sent.Notify();
    } else {
      sent.WaitForNotification();
      std::vector<uint8_t> ra(10), rb(0), rc(40);
      ASSERT_TRUE(t.Recv(0, ra.data(), ra.size()).ok());
      ASSERT_TRUE(t.Recv(0, rb.data(), rb.size()).ok());
      ASSERT_TRUE(t.Recv(0, rc.data(), rc.size()).ok());
      EXPECT_EQ(ra, a);
      EXPECT_EQ(rc, c);
    }
  });
}

TEST_P(TransportConformanceTest, AllPairsExchangeLargeMessagesWithoutDeadlock) {
  constexpr int kRanks = 4;
  constexpr size_t kBytes = 300000;
  Job job = MakeJob(kRanks);
  RunRanks(kRanks, [&](int rank) {
    Transport& t = job.at(rank);
    std::vector<std::vector<uint8_t>> in(kRanks, std::vector<uint8_t>(kBytes));
    std::vector<std::vector<uint8_t>> out(kRanks);
    std::vector<Transport::RequestId> ids;
    for (int peer = 0; peer < kRanks; ++peer) {
      if (peer == rank) continue;
      ids.push_back(*t.PostRecv(peer, in[peer].data(), kBytes));
    }
    for (int peer = 0; peer < kRanks; ++peer) {
      if (peer == rank) continue;
      out[peer] = Pattern(kBytes, rank * 10 + peer);
      ids.push_back(*t.PostSend(peer, out[peer].data(), kBytes));
    }
    ASSERT_TRUE(t.WaitAll(ids).ok());
    for (int peer = 0; peer < kRanks; ++peer) {
      if (peer == rank) continue;
      EXPECT_EQ(in[peer], Pattern(kBytes, peer * 10 + rank)) << rank << "<-" << peer;
    }
  });
}

TEST_P(TransportConformanceTest, ASizeMismatchNamesBothSizes) {
  Job job = MakeJob(2);
  RunRanks(2, [&](int rank) {
    Transport& t = job.at(rank);
    std::vector<uint8_t> buffer(100);
    if (rank == 0) {
      EXPECT_TRUE(t.Send(1, buffer.data(), 40).ok());
    } else {
      absl::Status status = t.Recv(0, buffer.data(), 30);
      EXPECT_EQ(status.code(), absl::StatusCode::kInternal);
      EXPECT_NE(status.message().find("rank 0 sent 40 bytes"), absl::string_view::npos) << status;
      EXPECT_NE(status.message().find("receive of 30 bytes"), absl::string_view::npos) << status;
      // Sticky: later requests fail too.
      EXPECT_FALSE(t.Recv(0, buffer.data(), 1).ok());
    }
  });
}

TEST_P(TransportConformanceTest, RejectsBadPeersAndDoubleWaits) {
  Job job = MakeJob(2);
  Transport& t = job.at(0);
  char byte = 0;
  EXPECT_EQ(t.PostSend(0, &byte, 1).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(t.PostRecv(2, &byte, 1).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(t.Wait(12345).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(t.rank(), 0);
  EXPECT_EQ(t.size(), 2);
}

INSTANTIATE_TEST_SUITE_P(AllTransports, TransportConformanceTest,
                         ::testing::Values("tcp", "tcp_cts", "rc_busy", "rc_event", "rc_small"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace weft::datapath
