#include "datapath/transport/transport_factory.h"

#include <memory>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "datapath/rendezvous/in_process_rendezvous.h"
#include "datapath/transport/transport_test_util.h"
#include "gtest/gtest.h"
#include "rdma/fake_verbs.h"

namespace weft::datapath {
namespace {

using rdma::FakeDeviceConfig;
using rdma::FakeFabric;
using rdma::FakeVerbs;
using rdma::QpAttributes;

TEST(ChooseTransportTest, RcOnlyWhenEveryRankHasADevice) {
  auto all = ChooseTransport(TransportKind::kAuto, {true, true, true}, "");
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->kind, TransportKind::kRc);
  EXPECT_EQ(all->reason, "every rank has an RDMA device");

  auto some = ChooseTransport(TransportKind::kAuto, {true, false, true, false}, "");
  ASSERT_TRUE(some.ok());
  EXPECT_EQ(some->kind, TransportKind::kTcp);
  EXPECT_EQ(some->reason, "ranks 1, 3 have no RDMA device");

  auto none = ChooseTransport(TransportKind::kAuto, {false, false},
                              "no RDMA device found (ibv_get_device_list returned 0 devices)");
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->reason, "no RDMA device found (ibv_get_device_list returned 0 devices)");
}

TEST(ChooseTransportTest, TcpOnRequestAndRcRequestsThatCannotBeMet) {
  auto tcp = ChooseTransport(TransportKind::kTcp, {true, true}, "");
  ASSERT_TRUE(tcp.ok());
  EXPECT_EQ(tcp->kind, TransportKind::kTcp);
  EXPECT_EQ(tcp->reason, "TCP requested");
  auto rc = ChooseTransport(TransportKind::kRc, {true, false}, "");
  EXPECT_EQ(rc.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(rc.status().message(), "RC transport requested but rank 1 has no RDMA device");
}

TEST(ParseTransportKindTest, Names) {
  EXPECT_EQ(*ParseTransportKind("rc"), TransportKind::kRc);
  EXPECT_EQ(*ParseTransportKind(""), TransportKind::kAuto);
  EXPECT_EQ(ParseTransportKind("ib").status().message(),
            "unknown transport 'ib'; accepted: auto, rc, tcp");
  EXPECT_EQ(TransportKindName(TransportKind::kTcp), "tcp");
}

// Builds one transport per rank with per-rank fake nodes; `has_device[r]` says whether
// rank r's node has an RDMA device.
struct Built {
  std::unique_ptr<FakeFabric> fabric = std::make_unique<FakeFabric>();
  std::vector<std::unique_ptr<FakeVerbs>> verbs;
  std::vector<std::unique_ptr<Transport>> transports;
  std::vector<TransportChoice> choices;
  std::vector<absl::Status> statuses;
  ~Built() { transports.clear(); }
};

std::unique_ptr<Built> Build(const std::vector<bool>& has_device, TransportRequest request) {
  auto built = std::make_unique<Built>();
  const int size = static_cast<int>(has_device.size());
  for (int r = 0; r < size; ++r) {
    std::vector<FakeDeviceConfig> devices;
    if (has_device[r]) devices.push_back(FakeDeviceConfig::Roce("mlx5_0", 0x0a000001u + r));
    built->verbs.push_back(std::make_unique<FakeVerbs>(built->fabric.get(), devices));
  }
  built->transports.resize(size);
  built->choices.resize(size);
  built->statuses.resize(size);
  InProcessRendezvous rendezvous;
  RunRanks(size, [&](int rank) {
    TransportRequest mine = request;
    mine.rank = rank;
    mine.size = size;
    auto transport = CreateTransport(*built->verbs[rank], rendezvous, mine, &built->choices[rank]);
    built->statuses[rank] = transport.status();
    if (transport.ok()) built->transports[rank] = std::move(*transport);
  });
  return built;
}

TEST(CreateTransportTest, RcWhenEveryNodeHasADeviceWithTheQosTrafficClass) {
  TransportRequest request;
  request.qos_class = "storage";
  auto built = Build({true, true, true}, request);
  for (int r = 0; r < 3; ++r) {
    ASSERT_TRUE(built->statuses[r].ok()) << built->statuses[r];
    EXPECT_EQ(built->transports[r]->name(), "rc");
  }
  auto& rc = static_cast<RcTransport&>(*built->transports[0]);
  std::optional<QpAttributes> attr = built->verbs[0]->GetQpAttributes(rc.qp_num(1));
  ASSERT_TRUE(attr.has_value());
  EXPECT_EQ(attr->av.traffic_class, 98);  // storage: DSCP 24, ECT(0)
  // And it carries data.
  RunRanks(3, [&](int rank) {
    int value = rank;
    if (rank == 0) {
      for (int peer = 1; peer < 3; ++peer) {
        EXPECT_TRUE(built->transports[0]->Recv(peer, &value, sizeof(value)).ok());
        EXPECT_EQ(value, peer);
      }
    } else {
      EXPECT_TRUE(built->transports[rank]->Send(0, &value, sizeof(value)).ok());
    }
  });
}

TEST(CreateTransportTest, TcpEverywhereWhenOneNodeLacksADevice) {
  auto built = Build({true, false, true}, TransportRequest());
  for (int r = 0; r < 3; ++r) {
    ASSERT_TRUE(built->statuses[r].ok()) << built->statuses[r];
    EXPECT_EQ(built->transports[r]->name(), "tcp");
    EXPECT_EQ(built->choices[r].reason, "rank 1 has no RDMA device");
  }
}

TEST(CreateTransportTest, NoDeviceAnywhereSaysSo) {
  auto built = Build({false, false}, TransportRequest());
  ASSERT_TRUE(built->statuses[0].ok());
  EXPECT_EQ(built->choices[0].kind, TransportKind::kTcp);
  EXPECT_EQ(built->choices[0].reason,
            "no RDMA device found (ibv_get_device_list returned 0 devices)");
}

TEST(CreateTransportTest, RanksThatOfferNoRdmaMakeTheJobUseTcpAndSayWhy) {
  TransportRequest request;
  request.no_rdma_reason = "the node agent found no ACTIVE RoCE port (mlx5_0 port 1: port is DOWN)";
  auto built = Build({true, true}, request);  // devices, but the agent says they are unusable
  for (int r = 0; r < 2; ++r) {
    ASSERT_TRUE(built->statuses[r].ok()) << built->statuses[r];
    EXPECT_EQ(built->transports[r]->name(), "tcp");
    EXPECT_EQ(built->choices[r].reason, request.no_rdma_reason);
  }
  request.kind = TransportKind::kRc;
  built = Build({true, true}, request);
  EXPECT_EQ(built->statuses[0].code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(built->statuses[0].message(),
            "RC transport requested but the node agent found no ACTIVE RoCE port (mlx5_0 port 1: "
            "port is DOWN)");
}

TEST(CreateTransportTest, TcpOnRequestEvenWithDevices) {
  TransportRequest request;
  request.kind = TransportKind::kTcp;
  auto built = Build({true, true}, request);
  ASSERT_TRUE(built->statuses[0].ok());
  EXPECT_EQ(built->transports[0]->name(), "tcp");
  EXPECT_EQ(built->choices[1].reason, "TCP requested");
}

TEST(CreateTransportTest, UnknownQosClassIsRejected) {
  TransportRequest request;
  request.qos_class = "bulk";
  auto built = Build({true}, request);
  EXPECT_EQ(built->statuses[0].code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(built->statuses[0].message().find("unknown qos_class 'bulk'"), absl::string_view::npos);
}

TEST(CreateCommunicatorTest, EndToEndAllReduceOverTheChosenTransport) {
  FakeFabric fabric;
  std::vector<std::unique_ptr<FakeVerbs>> verbs;
  for (int r = 0; r < 4; ++r) {
    verbs.push_back(std::make_unique<FakeVerbs>(
        &fabric, std::vector<FakeDeviceConfig>{FakeDeviceConfig::Roce("mlx5_0", 0x0a000001u + r)}));
  }
  InProcessRendezvous rendezvous;
  std::vector<std::unique_ptr<Communicator>> comms(4);
  RunRanks(4, [&](int rank) {
    TransportRequest request;
    request.rank = rank;
    request.size = 4;
    request.scope = "job7/comm0";
    auto comm = CreateCommunicator(*verbs[rank], rendezvous, request);
    ASSERT_TRUE(comm.ok()) << comm.status();
    comms[rank] = std::move(*comm);
    std::vector<double> data(100000, rank + 1.0);
    ASSERT_TRUE(
        comms[rank]->AllReduce(data.data(), data.size(), DataType::kFloat64, ReduceOp::kSum).ok());
    EXPECT_EQ(data.front(), 10.0);
    EXPECT_EQ(data.back(), 10.0);
    EXPECT_EQ(comms[rank]->transport_name(), "rc");
  });
  comms.clear();
}

}  // namespace
}  // namespace weft::datapath
