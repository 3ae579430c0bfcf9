// TCP-specific behaviour; the shared contract is in transport_conformance_test.cc.
#include "datapath/transport/tcp_transport.h"

#include <sched.h>
#include <time.h>

#include <memory>
#include <vector>

#include "absl/time/clock.h"
#include "datapath/rendezvous/in_process_rendezvous.h"
#include "datapath/transport/transport_test_util.h"
#include "gtest/gtest.h"

namespace weft::datapath {
namespace {

TEST(TcpTransportTest, APeerThatExitsIsUnavailableAndNamed) {
  auto transports = MakeTcpTransports(2);
  ASSERT_TRUE(transports.ok()) << transports.status();
  (*transports)[1].reset();
  char byte;
  absl::Status status = (*transports)[0]->Recv(1, &byte, 1);
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(status.message(), "rank 1 closed its connection to rank 0 (it exited or failed)");
}

TEST(TcpTransportTest, NoProgressTimesOutNamingWhatWasPending) {
  TcpTransportOptions options;
  options.progress_timeout = absl::Milliseconds(50);
  auto transports = MakeTcpTransports(3, options);
  ASSERT_TRUE(transports.ok());
  char byte;
  absl::Status status = (*transports)[0]->Recv(2, &byte, 1);
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_NE(status.message().find("receive from rank 2 (0 of 1 bytes)"), absl::string_view::npos)
      << status;
}

TEST(TcpTransportTest, SetupNamesTheRanksThatNeverCame) {
  InProcessRendezvous rendezvous;
  TcpTransportOptions options;
  options.connect_timeout = absl::Milliseconds(50);
  // Rank 1 of 3 starts alone.
  auto transport = TcpTransport::Create(1, 3, rendezvous, options);
  EXPECT_EQ(transport.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_NE(transport.status().message().find("ranks 0, 2 never arrived"), absl::string_view::npos)
      << transport.status();
}

// Ranks that disagree on the clear-to-send threshold would hang on the first large
// message (one waits for a clear the other never sends); the accepting rank refuses.
TEST(TcpTransportTest, RanksWithDifferentClearToSendThresholdsAreRefused) {
  InProcessRendezvous rendezvous;
  TcpTransportOptions options;
  options.connect_timeout = absl::Seconds(10);
  absl::StatusOr<std::unique_ptr<TcpTransport>> accepting, connecting;
  RunRanks(2, [&](int rank) {
    TcpTransportOptions mine = options;
    if (rank == 1) mine.clear_to_send_bytes = 0;
    (rank == 0 ? accepting : connecting) = TcpTransport::Create(rank, 2, rendezvous, mine);
  });
  EXPECT_EQ(accepting.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(accepting.status().message().find(
                "rank 0: rank 1 sends with clear_to_send_bytes 0 and this rank with 1048576"),
            absl::string_view::npos)
      << accepting.status();
}

TEST(TcpTransportTest, RejectsRankOutsideTheJob) {
  InProcessRendezvous rendezvous;
  EXPECT_EQ(TcpTransport::Create(3, 3, rendezvous, {}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(TcpTransportTest, SingleRankJobNeedsNoPeers) {
  InProcessRendezvous rendezvous;
  auto transport = TcpTransport::Create(0, 1, rendezvous, {});
  ASSERT_TRUE(transport.ok()) << transport.status();
  EXPECT_EQ((*transport)->size(), 1);
}

TEST(TcpTransportTest, ExplicitSocketBuffersStillMoveLargeMessages) {
  TcpTransportOptions options;
  options.socket_buffer_bytes = 64 * 1024;
  auto transports = MakeTcpTransports(2, options);
  ASSERT_TRUE(transports.ok());
  std::vector<char> out(3 << 20, 'q'), in(3 << 20);
  RunRanks(2, [&](int rank) {
    if (rank == 0) {
      EXPECT_TRUE((*transports)[0]->Send(1, out.data(), out.size()).ok());
    } else {
      EXPECT_TRUE((*transports)[1]->Recv(0, in.data(), in.size()).ok());
    }
  });
  EXPECT_EQ(in, out);
}

// With socket buffers far larger than the message, an eager send would be done before
// the receiver posts; by default a message of 1 MiB waits for the receive, one of
// 300 KiB (above the collectives' 256 KiB ring segments) does not.
TEST(TcpTransportTest, ByDefaultALargeSendLeavesOnlyOnceItsReceiveIsPosted) {
  TcpTransportOptions options;
  options.socket_buffer_bytes = 8 << 20;
  auto transports = MakeTcpTransports(2, options);
  ASSERT_TRUE(transports.ok());
  std::vector<char> large(1 << 20, 'L'), large_in(1 << 20);
  std::vector<char> small(300 << 10, 's'), small_in(300 << 10);
  absl::Time small_sent, large_sent, large_posted;
  RunRanks(2, [&](int rank) {
    Transport& t = *(*transports)[rank];
    if (rank == 0) {
      ASSERT_TRUE(t.Send(1, small.data(), small.size()).ok());
      small_sent = absl::Now();
      ASSERT_TRUE(t.Send(1, large.data(), large.size()).ok());
      large_sent = absl::Now();
    } else {
      absl::SleepFor(absl::Milliseconds(300));
      ASSERT_TRUE(t.Recv(0, small_in.data(), small_in.size()).ok());
      large_posted = absl::Now();
      ASSERT_TRUE(t.Recv(0, large_in.data(), large_in.size()).ok());
    }
  });
  EXPECT_LT(small_sent, large_posted) << "a small message is eager";
  EXPECT_GE(large_sent, large_posted) << "the large one waited for its receive";
  EXPECT_EQ(small_in, small);
  EXPECT_EQ(large_in, large);
}

TEST(TcpTransportTest, ASendWaitingForItsClearSaysSoOnTimeout) {
  TcpTransportOptions options;
  options.progress_timeout = absl::Milliseconds(100);
  options.clear_to_send_bytes = 4096;
  auto transports = MakeTcpTransports(2, options);
  ASSERT_TRUE(transports.ok());
  std::vector<char> data(8192);
  absl::Status status = (*transports)[0]->Send(1, data.data(), data.size());
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_NE(status.message().find(
                "send to rank 1 (0 of 8192 bytes, waiting for its clear-to-send)"),
            absl::string_view::npos)
      << status;
}

// With more ranks than cores (here both ranks' threads are pinned to one core), a Wait
// spins only for a message of at most oversubscribed_spin_max_bytes: waiting on a small
// one burns CPU until it arrives, waiting on a large one sleeps in poll(2).
TEST(TcpTransportTest, WithMoreRanksThanCoresOnlySmallMessagesAreSpunFor) {
  cpu_set_t saved;
  ASSERT_EQ(sched_getaffinity(0, sizeof(saved), &saved), 0);
  int first_cpu = 0;
  while (!CPU_ISSET(first_cpu, &saved)) ++first_cpu;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(first_cpu, &one);
  ASSERT_EQ(sched_setaffinity(0, sizeof(one), &one), 0);  // the rank threads inherit it
  TcpTransportOptions options;
  options.spin_before_block = absl::Seconds(10);
  options.oversubscribed_spin_max_bytes = 4096;
  auto transports = MakeTcpTransports(2, options);
  ASSERT_TRUE(transports.ok()) << transports.status();
  // CPU milliseconds the receiving rank spends in a Recv whose message comes 400 ms late.
  auto receiver_cpu_ms = [&](size_t bytes) {
    std::vector<char> out(bytes, 'x'), in(bytes);
    double cpu_ms = -1;
    RunRanks(2, [&](int rank) {
      if (rank == 0) {
        absl::SleepFor(absl::Milliseconds(400));
        EXPECT_TRUE((*transports)[0]->Send(1, out.data(), out.size()).ok());
        return;
      }
      timespec start, end;
      clock_gettime(CLOCK_THREAD_CPUTIME_ID, &start);
      EXPECT_TRUE((*transports)[1]->Recv(0, in.data(), in.size()).ok());
      clock_gettime(CLOCK_THREAD_CPUTIME_ID, &end);
      cpu_ms = (end.tv_sec - start.tv_sec) * 1e3 + (end.tv_nsec - start.tv_nsec) / 1e6;
    });
    EXPECT_EQ(in, out);
    return cpu_ms;
  };
  const double small = receiver_cpu_ms(1024);
  const double large = receiver_cpu_ms(64 << 10);
  sched_setaffinity(0, sizeof(saved), &saved);
  EXPECT_GT(small, 80) << "a 1 KiB wait spins (it has the core to itself most of 400 ms)";
  EXPECT_LT(large, 40) << "a 64 KiB wait sleeps";
}

TEST(TcpTransportTest, ClearToSendOffIsEager) {
  TcpTransportOptions options;
  options.clear_to_send_bytes = 0;
  options.socket_buffer_bytes = 8 << 20;
  auto transports = MakeTcpTransports(2, options);
  ASSERT_TRUE(transports.ok());
  std::vector<char> data(1 << 20, 'e'), in(1 << 20);
  // Nobody receives yet, and the send still completes into the socket buffers.
  ASSERT_TRUE((*transports)[0]->Send(1, data.data(), data.size()).ok());
  ASSERT_TRUE((*transports)[1]->Recv(0, in.data(), in.size()).ok());
  EXPECT_EQ(in, data);
}

}  // namespace
}  // namespace weft::datapath
