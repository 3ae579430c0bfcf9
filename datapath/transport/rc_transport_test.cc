// RC-specific behaviour over fake verbs; the shared contract is in
// transport_conformance_test.cc.
#include "datapath/transport/rc_transport.h"

#include <cerrno>
#include <memory>
#include <optional>
#include <vector>

#include "datapath/rendezvous/in_process_rendezvous.h"
#include "datapath/transport/transport_test_util.h"
#include "gtest/gtest.h"
#include "rdma/fake_verbs.h"

namespace weft::datapath {
namespace {

using rdma::FakeDeviceConfig;
using rdma::FakeFabric;
using rdma::FakeVerbs;
using rdma::Gid;
using rdma::QpAttributes;
using rdma::QpState;
using rdma::WcStatus;

RcTransport& Rc(FakeRcJob& job, int rank) {
  return static_cast<RcTransport&>(*job.transports[rank]);
}

TEST(RcTransportTest, QpsUseTheRoceV2GidAndTheJobsTrafficClass) {
  RcTransportOptions options;
  options.traffic_class = 98;  // storage class: DSCP 24, ECT(0)
  auto job = MakeFakeRcJob(2, options);
  ASSERT_TRUE(job.ok()) << job.status();
  RcTransport& rank0 = Rc(*job, 0);
  EXPECT_EQ(rank0.device_name(), "mlx5_0");
  EXPECT_EQ(rank0.local_gid().index, 3u);
  EXPECT_EQ(rank0.local_gid().gid, Gid::FromIpv4(0x0a000001));
  std::optional<QpAttributes> attr = job->verbs[0]->GetQpAttributes(rank0.qp_num(1));
  ASSERT_TRUE(attr.has_value());
  EXPECT_EQ(attr->state, QpState::kRts);
  EXPECT_TRUE(attr->av.is_global);
  EXPECT_EQ(attr->av.traffic_class, 98);
  EXPECT_EQ(attr->av.sgid_index, 3);
  EXPECT_EQ(attr->av.hop_limit, 255);
  EXPECT_EQ(attr->av.dgid, Gid::FromIpv4(0x0a000002));
  EXPECT_EQ(attr->dest_qp_num, Rc(*job, 1).qp_num(0));
  EXPECT_EQ(attr->path_mtu_bytes, 4096u);
  EXPECT_EQ(attr->timeout, 20);
  EXPECT_EQ(attr->retry_cnt, 7);
  EXPECT_EQ(attr->rnr_retry, 7);
  EXPECT_EQ(attr->min_rnr_timer, 12);
}

TEST(RcTransportTest, SmallMessagesGoEagerLargeOnesZeroCopy) {
  RcTransportOptions options;
  options.eager_bytes = 1024;
  auto job = MakeFakeRcJob(2, options);
  ASSERT_TRUE(job.ok());
  std::vector<char> small(1024, 's'), large(1025, 'l');
  std::vector<char> small_in(1024), large_in(1025);
  RunRanks(2, [&](int rank) {
    Transport& t = *job->transports[rank];
    if (rank == 0) {
      ASSERT_TRUE(t.Send(1, small.data(), small.size()).ok());
      ASSERT_TRUE(t.Send(1, large.data(), large.size()).ok());
    } else {
      ASSERT_TRUE(t.Recv(0, small_in.data(), small_in.size()).ok());
      ASSERT_TRUE(t.Recv(0, large_in.data(), large_in.size()).ok());
    }
  });
  EXPECT_EQ(small_in, small);
  EXPECT_EQ(large_in, large);
  EXPECT_EQ(Rc(*job, 0).stats().eager_messages, 1u);
  EXPECT_EQ(Rc(*job, 0).stats().rendezvous_messages, 1u);
  EXPECT_EQ(Rc(*job, 1).stats().ready_to_receive_messages, 1u);
}

TEST(RcTransportTest, CreditsComeBackWithoutReverseTraffic) {
  RcTransportOptions options;
  options.credits = 4;
  auto job = MakeFakeRcJob(2, options);
  ASSERT_TRUE(job.ok());
  constexpr int kMessages = 100;
  RunRanks(2, [&](int rank) {
    Transport& t = *job->transports[rank];
    for (int i = 0; i < kMessages; ++i) {
      int value = i;
      if (rank == 0) {
        ASSERT_TRUE(t.Send(1, &value, sizeof(value)).ok());
      } else {
        ASSERT_TRUE(t.Recv(0, &value, sizeof(value)).ok());
        EXPECT_EQ(value, i);
      }
    }
  });
  // One-way traffic: only explicit credit messages can return the slots.
  EXPECT_GE(Rc(*job, 1).stats().credit_messages, static_cast<uint64_t>(kMessages / 2 - 1));
  EXPECT_EQ(Rc(*job, 1).stats().eager_messages, 0u);
}

TEST(RcTransportTest, RemoteAccessErrorBreaksTheTransportAndNamesThePeer) {
  RcTransportOptions options;
  options.progress_timeout = absl::Milliseconds(200);
  auto job = MakeFakeRcJob(2, options);
  ASSERT_TRUE(job.ok());
  job->verbs[0]->InjectCompletionError(Rc(*job, 0).qp_num(1), WcStatus::kRemoteAccessError);
  std::vector<char> out(100000, 'x'), in(100000);
  RunRanks(2, [&](int rank) {
    Transport& t = *job->transports[rank];
    if (rank == 0) {
      absl::Status status = t.Send(1, out.data(), out.size());
      EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
      EXPECT_NE(status.message().find("RDMA send to rank 1 failed with IBV_WC_REM_ACCESS_ERR"),
                absl::string_view::npos)
          << status;
      // Everything after fails the same way (the QP is in error, later WRs flush).
      char byte = 0;
      EXPECT_EQ(t.Send(1, &byte, 1).code(), absl::StatusCode::kUnavailable);
    } else {
      // The data never comes; the receiver gives up after its progress timeout.
      absl::Status status = t.Recv(0, in.data(), in.size());
      EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded) << status;
      EXPECT_NE(status.message().find("receive of 100000 bytes from rank 0"),
                absl::string_view::npos)
          << status;
    }
  });
}

TEST(RcTransportTest, RetryExceededIsReported) {
  auto job = MakeFakeRcJob(2);
  ASSERT_TRUE(job.ok());
  job->verbs[1]->InjectCompletionError(Rc(*job, 1).qp_num(0), WcStatus::kRetryExceededError);
  char byte = 1;
  // rank 1's first message to rank 0 fails as if rank 0's NIC stopped answering.
  absl::StatusOr<Transport::RequestId> id = job->transports[1]->PostSend(0, &byte, 1);
  ASSERT_TRUE(id.ok());
  ASSERT_TRUE(job->transports[1]->Wait(*id).ok());  // eager: buffered at post
  absl::Status status = job->transports[1]->Recv(0, &byte, 1);
  EXPECT_NE(status.message().find("IBV_WC_RETRY_EXC_ERR"), absl::string_view::npos) << status;
}

TEST(RcTransportTest, RegistrationsAreCachedWhenAllowed) {
  RcTransportOptions options;
  options.cache_registrations = true;
  auto job = MakeFakeRcJob(2, options);
  ASSERT_TRUE(job.ok());
  std::vector<char> buffer(200000, 'b'), in(200000);
  RunRanks(2, [&](int rank) {
    Transport& t = *job->transports[rank];
    for (int i = 0; i < 3; ++i) {
      if (rank == 0) {
        ASSERT_TRUE(t.Send(1, buffer.data(), buffer.size()).ok());
      } else {
        ASSERT_TRUE(t.Recv(0, in.data(), in.size()).ok());
      }
    }
  });
  EXPECT_EQ(Rc(*job, 0).stats().registrations.misses, 1u);
  EXPECT_EQ(Rc(*job, 0).stats().registrations.hits, 2u);
  EXPECT_EQ(Rc(*job, 1).stats().registrations.misses, 1u);
}

TEST(RcTransportTest, UncachedRegistrationsAreReleasedAfterEachMessage) {
  auto job = MakeFakeRcJob(2);
  ASSERT_TRUE(job.ok());
  const int base_mrs = job->verbs[0]->LiveMrCount();
  std::vector<char> buffer(200000, 'b'), in(200000);
  RunRanks(2, [&](int rank) {
    Transport& t = *job->transports[rank];
    for (int i = 0; i < 2; ++i) {
      if (rank == 0) {
        ASSERT_TRUE(t.Send(1, buffer.data(), buffer.size()).ok());
      } else {
        ASSERT_TRUE(t.Recv(0, in.data(), in.size()).ok());
      }
    }
  });
  EXPECT_EQ(Rc(*job, 0).stats().registrations.misses, 2u);
  EXPECT_EQ(job->verbs[0]->LiveMrCount(), base_mrs);
}

TEST(RcTransportTest, RegisteredMemoryNeedsNoFurtherRegistration) {
  auto job = MakeFakeRcJob(2);
  ASSERT_TRUE(job.ok());
  std::vector<char> buffer(200000, 'b'), in(200000);
  ASSERT_TRUE(job->transports[0]->RegisterMemory(buffer.data(), buffer.size()).ok());
  ASSERT_TRUE(job->transports[1]->RegisterMemory(in.data(), in.size()).ok());
  RunRanks(2, [&](int rank) {
    Transport& t = *job->transports[rank];
    for (int i = 0; i < 3; ++i) {
      if (rank == 0) {
        ASSERT_TRUE(t.Send(1, buffer.data(), buffer.size()).ok());
      } else {
        ASSERT_TRUE(t.Recv(0, in.data(), in.size()).ok());
      }
    }
  });
  EXPECT_EQ(Rc(*job, 0).stats().registrations.misses, 1u);
  EXPECT_EQ(Rc(*job, 0).stats().registrations.hits, 3u);
  EXPECT_TRUE(job->transports[0]->UnregisterMemory(buffer.data()).ok());
}

TEST(RcTransportTest, NoDeviceIsAFailedPrecondition) {
  FakeFabric fabric;
  FakeVerbs verbs(&fabric, {});
  InProcessRendezvous rendezvous;
  auto t = RcTransport::Create(0, 1, verbs, rendezvous, {});
  EXPECT_EQ(t.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(t.status().message(), "no RDMA device (ibv_get_device_list returned 0 devices)");
}

TEST(RcTransportTest, MissingRoceV2GidNamesTheDevice) {
  FakeFabric fabric;
  FakeDeviceConfig device = FakeDeviceConfig::Roce("mlx5_2", 0x0a000001);
  device.gids.resize(3);  // link-local v1, link-local v2, IPv4 v1: no IPv4 RoCE v2 slot
  FakeVerbs verbs(&fabric, {device});
  InProcessRendezvous rendezvous;
  auto t = RcTransport::Create(0, 1, verbs, rendezvous, {});
  EXPECT_EQ(t.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(t.status().message().find("mlx5_2: no RoCE v2 GID"), absl::string_view::npos)
      << t.status();
}

TEST(RcTransportTest, FixedGidIndexIsUsedAsIs) {
  RcTransportOptions options;
  options.path.gid_index = 1;  // the link-local RoCE v2 slot
  FakeFabric fabric;
  FakeVerbs verbs(&fabric, {FakeDeviceConfig::Roce("mlx5_0", 0x0a000001)});
  InProcessRendezvous rendezvous;
  auto t = RcTransport::Create(0, 1, verbs, rendezvous, options);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ((*t)->local_gid().index, 1u);
}

TEST(RcTransportTest, AVerbFailureDuringSetupIsReportedAndThePeerTimesOut) {
  FakeFabric fabric;
  FakeVerbs verbs0(&fabric, {FakeDeviceConfig::Roce("mlx5_0", 0x0a000001)});
  FakeVerbs verbs1(&fabric, {FakeDeviceConfig::Roce("mlx5_0", 0x0a000002)});
  verbs0.FailNextCall("ibv_create_qp", ENOMEM);
  InProcessRendezvous rendezvous;
  RcTransportOptions options;
  options.connect_timeout = absl::Milliseconds(50);
  absl::Status status0, status1;
  RunRanks(2, [&](int rank) {
    auto t = RcTransport::Create(rank, 2, rank == 0 ? verbs0 : verbs1, rendezvous, options);
    (rank == 0 ? status0 : status1) = t.status();
  });
  EXPECT_EQ(status0.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(status0.message().find("ibv_create_qp"), absl::string_view::npos) << status0;
  EXPECT_EQ(status1.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_NE(status1.message().find("rank 0 never arrived"), absl::string_view::npos) << status1;
}

TEST(RcTransportTest, TearDownReleasesEveryVerbsObject) {
  auto job = MakeFakeRcJob(3);
  ASSERT_TRUE(job.ok());
  EXPECT_EQ(job->verbs[0]->LiveQpCount(), 2);
  job->transports.clear();
  for (const auto& verbs : job->verbs) {
    EXPECT_EQ(verbs->LiveQpCount(), 0);
    EXPECT_EQ(verbs->LiveMrCount(), 0);
  }
}

}  // namespace
}  // namespace weft::datapath
