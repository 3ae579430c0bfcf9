#include "rdma/fake_verbs.h"

#include <cerrno>
#include <cstring>
#include <memory>
#include <vector>

#include "rdma/qp_setup.h"
#include "gtest/gtest.h"

namespace weft::rdma {
namespace {

// One side of a connection: device, PD, CQ, QP and a registered 4 KiB buffer.
struct Side {
  std::unique_ptr<FakeVerbs> verbs;
  std::unique_ptr<VerbsContext> context;
  std::unique_ptr<VerbsPd> pd;
  std::unique_ptr<VerbsCompChannel> channel;
  std::unique_ptr<VerbsCq> cq;
  std::unique_ptr<VerbsQp> qp;
  std::vector<uint8_t> buffer = std::vector<uint8_t>(4096);
  std::unique_ptr<VerbsMr> mr;
  Gid gid;
};

Side MakeSide(FakeFabric* fabric, uint32_t ipv4, int cqe = 64) {
  Side side;
  side.verbs = std::make_unique<FakeVerbs>(
      fabric, std::vector<FakeDeviceConfig>{FakeDeviceConfig::Roce("mlx5_0", ipv4)});
  side.context = std::move(side.verbs->OpenDevice("mlx5_0")).value();
  side.pd = std::move(side.verbs->AllocPd(side.context.get())).value();
  side.channel = std::move(side.verbs->CreateCompChannel(side.context.get())).value();
  side.cq = std::move(side.verbs->CreateCq(side.context.get(), cqe, side.channel.get())).value();
  side.qp = std::move(side.verbs->CreateRcQp(side.pd.get(), side.cq.get(), side.cq.get(),
                                             QpCapabilities()))
                .value();
  side.mr = std::move(side.verbs->RegisterMr(side.pd.get(), side.buffer.data(), side.buffer.size(),
                                             kAccessLocalWrite | kAccessRemoteWrite))
                .value();
  side.gid = Gid::FromIpv4(ipv4);
  return side;
}

RcConnectionParams ParamsTo(const Side& peer) {
  RcConnectionParams params;
  params.sgid_index = 3;
  params.remote_gid = peer.gid;
  params.remote_qp_num = peer.qp->qp_num();
  params.path_mtu_bytes = 4096;
  return params;
}

void Connect(Side& a, Side& b) {
  ASSERT_TRUE(ConnectRcQp(*a.verbs, a.qp.get(), ParamsTo(b)).ok());
  ASSERT_TRUE(ConnectRcQp(*b.verbs, b.qp.get(), ParamsTo(a)).ok());
}

std::vector<WorkCompletion> Poll(Side& side) {
  std::vector<WorkCompletion> out(64);
  absl::StatusOr<int> n = side.verbs->PollCq(side.cq.get(), absl::MakeSpan(out));
  EXPECT_TRUE(n.ok()) << n.status();
  out.resize(n.ok() ? *n : 0);
  return out;
}

SendWorkRequest Write(const Side& from, const Side& to, uint64_t wr_id, uint32_t offset,
                      uint32_t length, bool with_imm) {
  SendWorkRequest wr;
  wr.wr_id = wr_id;
  wr.opcode = with_imm ? SendOpcode::kRdmaWriteWithImm : SendOpcode::kRdmaWrite;
  wr.sg_list[0] = Sge{from.mr->addr() + offset, length, from.mr->lkey()};
  wr.num_sge = 1;
  wr.imm_data = 0xabcd0000u + static_cast<uint32_t>(wr_id);
  wr.remote_addr = to.mr->addr() + offset;
  wr.rkey = to.mr->rkey();
  return wr;
}

RecvWorkRequest Recv(const Side& side, uint64_t wr_id, uint32_t offset, uint32_t length) {
  RecvWorkRequest wr;
  wr.wr_id = wr_id;
  wr.sg_list[0] = Sge{side.mr->addr() + offset, length, side.mr->lkey()};
  wr.num_sge = length > 0 ? 1 : 0;
  return wr;
}

TEST(FakeVerbsTest, DeviceListGidTableAndEmptySlot) {
  FakeFabric fabric;
  FakeVerbs verbs(&fabric, {FakeDeviceConfig::Roce("mlx5_3", 0x0a000001, 7)});
  auto devices = verbs.ListDevices();
  ASSERT_TRUE(devices.ok());
  ASSERT_EQ(devices->size(), 1u);
  EXPECT_EQ((*devices)[0].name, "mlx5_3");
  auto context = verbs.OpenDevice("mlx5_3");
  ASSERT_TRUE(context.ok());
  auto table = verbs.QueryGidTable(context->get());
  ASSERT_TRUE(table.ok());
  ASSERT_EQ(table->size(), 4u);
  EXPECT_EQ((*table)[3].type, GidType::kRoceV2);
  EXPECT_EQ((*table)[3].ndev_ifindex, 7u);
  auto slot3 = verbs.QueryGid(context->get(), 1, 3);
  ASSERT_TRUE(slot3.ok());
  EXPECT_EQ(slot3->gid, Gid::FromIpv4(0x0a000001));
  auto empty = verbs.QueryGid(context->get(), 1, 9);
  EXPECT_EQ(empty.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(empty.status().message().find("No data available"), absl::string_view::npos);
  EXPECT_EQ(verbs.OpenDevice("mlx5_9").status().code(), absl::StatusCode::kNotFound);

  FakeVerbs empty_node(&fabric, {});
  auto none = empty_node.ListDevices();
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

TEST(FakeVerbsTest, InjectedCallFailureNamesTheVerb) {
  FakeFabric fabric;
  Side side = MakeSide(&fabric, 0x0a000001);
  side.verbs->FailNextCall("ibv_reg_mr", ENOMEM);
  std::vector<uint8_t> memory(64);
  auto mr = side.verbs->RegisterMr(side.pd.get(), memory.data(), memory.size(), kAccessLocalWrite);
  EXPECT_EQ(mr.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(mr.status().message(), "ibv_reg_mr(len=64): Cannot allocate memory (errno 12)");
  // Only the next call fails.
  EXPECT_TRUE(
      side.verbs->RegisterMr(side.pd.get(), memory.data(), memory.size(), kAccessLocalWrite).ok());
}

TEST(FakeVerbsTest, QpStateMachineRejectsIllegalTransitionsAndMissingAttributes) {
  FakeFabric fabric;
  Side a = MakeSide(&fabric, 0x0a000001);
  Side b = MakeSide(&fabric, 0x0a000002);
  RcConnectionParams params = ParamsTo(b);

  // RESET -> RTR skips INIT.
  QpTransition rtr = RtrTransition(params);
  absl::Status status = a.verbs->ModifyQp(a.qp.get(), rtr.attr, rtr.attr_mask);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("RESET->RTR"), absl::string_view::npos) << status;

  // Receives cannot be posted in RESET; sends not before RTS.
  EXPECT_FALSE(a.verbs->PostRecv(a.qp.get(), {Recv(a, 1, 0, 8)}).ok());
  QpTransition init = InitTransition(params);
  ASSERT_TRUE(a.verbs->ModifyQp(a.qp.get(), init.attr, init.attr_mask).ok());
  EXPECT_TRUE(a.verbs->PostRecv(a.qp.get(), {Recv(a, 1, 0, 8)}).ok());
  status = a.verbs->PostSend(a.qp.get(), {Write(a, b, 1, 0, 8, false)});
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("QP in INIT"), absl::string_view::npos) << status;

  // INIT -> RTR without MIN_RNR_TIMER.
  status = a.verbs->ModifyQp(a.qp.get(), rtr.attr, rtr.attr_mask & ~kQpAttrMinRnrTimer);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("missing IBV_QP_MIN_RNR_TIMER"), absl::string_view::npos)
      << status;

  // RoCE needs the GRH.
  QpTransition no_grh = rtr;
  no_grh.attr.av.is_global = false;
  EXPECT_FALSE(a.verbs->ModifyQp(a.qp.get(), no_grh.attr, no_grh.attr_mask).ok());
  // Empty source GID slot.
  QpTransition bad_sgid = rtr;
  bad_sgid.attr.av.sgid_index = 9;
  EXPECT_FALSE(a.verbs->ModifyQp(a.qp.get(), bad_sgid.attr, bad_sgid.attr_mask).ok());

  ASSERT_TRUE(a.verbs->ModifyQp(a.qp.get(), rtr.attr, rtr.attr_mask).ok());
  EXPECT_FALSE(a.verbs->PostSend(a.qp.get(), {Write(a, b, 1, 0, 8, false)}).ok());
  QpTransition rts = RtsTransition(params);
  ASSERT_TRUE(a.verbs->ModifyQp(a.qp.get(), rts.attr, rts.attr_mask).ok());
  EXPECT_EQ(*a.verbs->QueryQpState(a.qp.get()), QpState::kRts);
  std::optional<QpAttributes> attr = a.verbs->GetQpAttributes(a.qp->qp_num());
  ASSERT_TRUE(attr.has_value());
  EXPECT_EQ(attr->timeout, 20);
  EXPECT_EQ(attr->av.hop_limit, 255);
}

TEST(FakeVerbsTest, WriteWithImmediateAndSendMoveBytesInOrder) {
  FakeFabric fabric;
  Side a = MakeSide(&fabric, 0x0a000001);
  Side b = MakeSide(&fabric, 0x0a000002);
  Connect(a, b);
  for (int i = 0; i < 256; ++i) a.buffer[i] = static_cast<uint8_t>(i);
  ASSERT_TRUE(b.verbs->PostRecv(b.qp.get(), {Recv(b, 100, 0, 0), Recv(b, 101, 1024, 64)}).ok());

  SendWorkRequest send;
  send.wr_id = 2;
  send.opcode = SendOpcode::kSendWithImm;
  send.sg_list[0] = Sge{a.mr->addr() + 128, 32, a.mr->lkey()};
  send.num_sge = 1;
  send.imm_data = 77;
  ASSERT_TRUE(a.verbs->PostSend(a.qp.get(), {Write(a, b, 1, 0, 100, true), send}).ok());

  std::vector<WorkCompletion> at_a = Poll(a);
  ASSERT_EQ(at_a.size(), 2u);
  EXPECT_EQ(at_a[0].wr_id, 1u);
  EXPECT_EQ(at_a[0].opcode, WcOpcode::kRdmaWrite);
  EXPECT_EQ(at_a[1].wr_id, 2u);
  EXPECT_EQ(at_a[1].opcode, WcOpcode::kSend);

  std::vector<WorkCompletion> at_b = Poll(b);
  ASSERT_EQ(at_b.size(), 2u);
  EXPECT_EQ(at_b[0].wr_id, 100u);
  EXPECT_EQ(at_b[0].status, WcStatus::kSuccess);
  EXPECT_EQ(at_b[0].opcode, WcOpcode::kRecvRdmaWithImm);
  EXPECT_EQ(at_b[0].byte_len, 100u);
  EXPECT_TRUE(at_b[0].has_imm);
  EXPECT_EQ(at_b[0].imm_data, 0xabcd0001u);
  EXPECT_EQ(at_b[1].wr_id, 101u);
  EXPECT_EQ(at_b[1].opcode, WcOpcode::kRecv);
  EXPECT_EQ(at_b[1].byte_len, 32u);
  EXPECT_EQ(at_b[1].imm_data, 77u);
  EXPECT_EQ(std::memcmp(b.buffer.data(), a.buffer.data(), 100), 0);
  EXPECT_EQ(std::memcmp(b.buffer.data() + 1024, a.buffer.data() + 128, 32), 0);
}

TEST(FakeVerbsTest, RemoteAccessErrorThenFlush) {
  FakeFabric fabric;
  Side a = MakeSide(&fabric, 0x0a000001);
  Side b = MakeSide(&fabric, 0x0a000002);
  Connect(a, b);
  SendWorkRequest bad_key = Write(a, b, 1, 0, 8, false);
  bad_key.rkey = 0xdead;
  SendWorkRequest good = Write(a, b, 2, 0, 8, false);
  ASSERT_TRUE(a.verbs->PostSend(a.qp.get(), {bad_key, good}).ok());
  std::vector<WorkCompletion> wcs = Poll(a);
  ASSERT_EQ(wcs.size(), 2u);
  EXPECT_EQ(wcs[0].status, WcStatus::kRemoteAccessError);
  EXPECT_EQ(wcs[1].status, WcStatus::kWrFlushError);
  EXPECT_EQ(*a.verbs->QueryQpState(a.qp.get()), QpState::kError);
  // Later requests, sends and receives, flush too.
  ASSERT_TRUE(a.verbs->PostSend(a.qp.get(), {Write(a, b, 3, 0, 8, false)}).ok());
  ASSERT_TRUE(a.verbs->PostRecv(a.qp.get(), {Recv(a, 4, 0, 8)}).ok());
  wcs = Poll(a);
  ASSERT_EQ(wcs.size(), 2u);
  EXPECT_EQ(wcs[0].status, WcStatus::kWrFlushError);
  EXPECT_EQ(wcs[1].status, WcStatus::kWrFlushError);
  EXPECT_EQ(wcs[1].opcode, WcOpcode::kRecv);
}

TEST(FakeVerbsTest, OutOfBoundsWriteIsARemoteAccessError) {
  FakeFabric fabric;
  Side a = MakeSide(&fabric, 0x0a000001);
  Side b = MakeSide(&fabric, 0x0a000002);
  Connect(a, b);
  SendWorkRequest wr = Write(a, b, 1, 0, 8, false);
  wr.remote_addr = b.mr->addr() + 4090;  // the last 2 bytes fall outside b's MR
  ASSERT_TRUE(a.verbs->PostSend(a.qp.get(), {wr}).ok());
  std::vector<WorkCompletion> wcs = Poll(a);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].status, WcStatus::kRemoteAccessError);
}

TEST(FakeVerbsTest, WriteIntoMemoryWithoutRemoteWriteAccessFails) {
  FakeFabric fabric;
  Side a = MakeSide(&fabric, 0x0a000001);
  Side b = MakeSide(&fabric, 0x0a000002);
  Connect(a, b);
  std::vector<uint8_t> local_only(64);
  auto mr =
      b.verbs->RegisterMr(b.pd.get(), local_only.data(), local_only.size(), kAccessLocalWrite);
  ASSERT_TRUE(mr.ok());
  SendWorkRequest wr = Write(a, b, 1, 0, 8, false);
  wr.remote_addr = (*mr)->addr();
  wr.rkey = (*mr)->rkey();
  ASSERT_TRUE(a.verbs->PostSend(a.qp.get(), {wr}).ok());
  std::vector<WorkCompletion> wcs = Poll(a);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].status, WcStatus::kRemoteAccessError);
}

TEST(FakeVerbsTest, BadLocalKeyIsALocalProtectionError) {
  FakeFabric fabric;
  Side a = MakeSide(&fabric, 0x0a000001);
  Side b = MakeSide(&fabric, 0x0a000002);
  Connect(a, b);
  SendWorkRequest wr = Write(a, b, 1, 0, 8, false);
  wr.sg_list[0].lkey = 0xbeef;
  ASSERT_TRUE(a.verbs->PostSend(a.qp.get(), {wr}).ok());
  std::vector<WorkCompletion> wcs = Poll(a);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].status, WcStatus::kLocalProtectionError);
}

TEST(FakeVerbsTest, InjectedRetryExceededFlushesTheRest) {
  FakeFabric fabric;
  Side a = MakeSide(&fabric, 0x0a000001);
  Side b = MakeSide(&fabric, 0x0a000002);
  Connect(a, b);
  a.verbs->InjectCompletionError(a.qp->qp_num(), WcStatus::kRetryExceededError);
  ASSERT_TRUE(
      a.verbs->PostSend(a.qp.get(), {Write(a, b, 1, 0, 8, false), Write(a, b, 2, 0, 8, false)})
          .ok());
  std::vector<WorkCompletion> wcs = Poll(a);
  ASSERT_EQ(wcs.size(), 2u);
  EXPECT_EQ(wcs[0].status, WcStatus::kRetryExceededError);
  EXPECT_EQ(wcs[1].status, WcStatus::kWrFlushError);
}

TEST(FakeVerbsTest, SendWaitsForAReceiveAndKeepsOrder) {
  FakeFabric fabric;
  Side a = MakeSide(&fabric, 0x0a000001);
  Side b = MakeSide(&fabric, 0x0a000002);
  Connect(a, b);
  a.buffer[0] = 1;
  a.buffer[8] = 2;
  // Receiver not ready: the write-with-immediate waits, and the plain write posted after
  // it must not overtake it.
  ASSERT_TRUE(
      a.verbs->PostSend(a.qp.get(), {Write(a, b, 1, 0, 8, true), Write(a, b, 2, 8, 8, false)})
          .ok());
  EXPECT_TRUE(Poll(a).empty());
  EXPECT_EQ(b.buffer[8], 0);
  ASSERT_TRUE(b.verbs->PostRecv(b.qp.get(), {Recv(b, 9, 0, 0)}).ok());
  std::vector<WorkCompletion> wcs = Poll(a);
  ASSERT_EQ(wcs.size(), 2u);
  EXPECT_EQ(wcs[0].wr_id, 1u);
  EXPECT_EQ(wcs[1].wr_id, 2u);
  EXPECT_EQ(b.buffer[0], 1);
  EXPECT_EQ(b.buffer[8], 2);
  ASSERT_EQ(Poll(b).size(), 1u);
}

TEST(FakeVerbsTest, WithoutInfiniteRnrRetryAMissingReceiveFails) {
  FakeFabric fabric;
  Side a = MakeSide(&fabric, 0x0a000001);
  Side b = MakeSide(&fabric, 0x0a000002);
  RcConnectionParams params = ParamsTo(b);
  params.rnr_retry = 3;
  ASSERT_TRUE(ConnectRcQp(*a.verbs, a.qp.get(), params).ok());
  ASSERT_TRUE(ConnectRcQp(*b.verbs, b.qp.get(), ParamsTo(a)).ok());
  ASSERT_TRUE(a.verbs->PostSend(a.qp.get(), {Write(a, b, 1, 0, 8, true)}).ok());
  std::vector<WorkCompletion> wcs = Poll(a);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].status, WcStatus::kRnrRetryExceededError);
}

TEST(FakeVerbsTest, ReceiveTooSmallFailsBothSides) {
  FakeFabric fabric;
  Side a = MakeSide(&fabric, 0x0a000001);
  Side b = MakeSide(&fabric, 0x0a000002);
  Connect(a, b);
  ASSERT_TRUE(b.verbs->PostRecv(b.qp.get(), {Recv(b, 5, 0, 4)}).ok());
  SendWorkRequest send;
  send.wr_id = 1;
  send.opcode = SendOpcode::kSend;
  send.sg_list[0] = Sge{a.mr->addr(), 16, a.mr->lkey()};
  send.num_sge = 1;
  ASSERT_TRUE(a.verbs->PostSend(a.qp.get(), {send}).ok());
  std::vector<WorkCompletion> at_b = Poll(b);
  ASSERT_EQ(at_b.size(), 1u);
  EXPECT_EQ(at_b[0].status, WcStatus::kLocalLengthError);
  std::vector<WorkCompletion> at_a = Poll(a);
  ASSERT_EQ(at_a.size(), 1u);
  EXPECT_EQ(at_a[0].status, WcStatus::kRemoteInvalidRequestError);
}

TEST(FakeVerbsTest, UnreachablePeerIsRetryExceeded) {
  FakeFabric fabric;
  Side a = MakeSide(&fabric, 0x0a000001);
  Side b = MakeSide(&fabric, 0x0a000002);
  RcConnectionParams params = ParamsTo(b);
  params.remote_gid = Gid::FromIpv4(0x0a0000ff);  // nobody has this address
  ASSERT_TRUE(ConnectRcQp(*a.verbs, a.qp.get(), params).ok());
  ASSERT_TRUE(a.verbs->PostSend(a.qp.get(), {Write(a, b, 1, 0, 8, false)}).ok());
  std::vector<WorkCompletion> wcs = Poll(a);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].status, WcStatus::kRetryExceededError);
}

TEST(FakeVerbsTest, CompletionChannelRaisesOneEventPerArm) {
  FakeFabric fabric;
  Side a = MakeSide(&fabric, 0x0a000001);
  Side b = MakeSide(&fabric, 0x0a000002);
  Connect(a, b);
  // Not armed: no event.
  absl::StatusOr<VerbsCq*> event = a.verbs->WaitCqEvent(a.channel.get(), absl::Milliseconds(1));
  ASSERT_TRUE(event.ok());
  EXPECT_EQ(*event, nullptr);
  ASSERT_TRUE(a.verbs->RequestCqNotification(a.cq.get()).ok());
  ASSERT_TRUE(a.verbs->PostSend(a.qp.get(), {Write(a, b, 1, 0, 8, false)}).ok());
  ASSERT_TRUE(a.verbs->PostSend(a.qp.get(), {Write(a, b, 2, 0, 8, false)}).ok());
  event = a.verbs->WaitCqEvent(a.channel.get(), absl::Seconds(5));
  ASSERT_TRUE(event.ok());
  EXPECT_EQ(*event, a.cq.get());
  event = a.verbs->WaitCqEvent(a.channel.get(), absl::Milliseconds(1));
  ASSERT_TRUE(event.ok());
  EXPECT_EQ(*event, nullptr);  // the second completion came after the event fired
  EXPECT_EQ(Poll(a).size(), 2u);
}

TEST(FakeVerbsTest, CqOverrunIsReported) {
  FakeFabric fabric;
  Side a = MakeSide(&fabric, 0x0a000001, /*cqe=*/1);
  Side b = MakeSide(&fabric, 0x0a000002);
  Connect(a, b);
  ASSERT_TRUE(
      a.verbs->PostSend(a.qp.get(), {Write(a, b, 1, 0, 8, false), Write(a, b, 2, 0, 8, false)})
          .ok());
  std::vector<WorkCompletion> out(4);
  EXPECT_EQ(a.verbs->PollCq(a.cq.get(), absl::MakeSpan(out)).status().code(),
            absl::StatusCode::kInternal);
}

TEST(FakeVerbsTest, HandlesReleaseTheirResources) {
  FakeFabric fabric;
  Side a = MakeSide(&fabric, 0x0a000001);
  EXPECT_EQ(a.verbs->LiveMrCount(), 1);
  EXPECT_EQ(a.verbs->LiveQpCount(), 1);
  a.mr.reset();
  a.qp.reset();
  EXPECT_EQ(a.verbs->LiveMrCount(), 0);
  EXPECT_EQ(a.verbs->LiveQpCount(), 0);
}

// UD: two nodes, each one UD QP on timestamped CQs.
struct UdSide {
  std::unique_ptr<FakeVerbs> verbs;
  std::unique_ptr<VerbsContext> context;
  std::unique_ptr<VerbsPd> pd;
  std::unique_ptr<VerbsCq> cq;
  std::unique_ptr<VerbsQp> qp;
  std::vector<uint8_t> buffer = std::vector<uint8_t>(4096);
  std::unique_ptr<VerbsMr> mr;
  Gid gid;
};

UdSide MakeUdSide(FakeFabric* fabric, uint32_t ipv4) {
  UdSide side;
  side.verbs = std::make_unique<FakeVerbs>(
      fabric, std::vector<FakeDeviceConfig>{FakeDeviceConfig::Roce("mlx5_0", ipv4)});
  side.context = std::move(side.verbs->OpenDevice("mlx5_0")).value();
  side.pd = std::move(side.verbs->AllocPd(side.context.get())).value();
  side.cq = std::move(side.verbs->CreateTimestampedCq(side.context.get(), 64, nullptr)).value();
  side.qp = std::move(side.verbs->CreateUdQp(side.pd.get(), side.cq.get(), side.cq.get(),
                                             QpCapabilities()))
                .value();
  side.mr = std::move(side.verbs->RegisterMr(side.pd.get(), side.buffer.data(),
                                             side.buffer.size(), kAccessLocalWrite))
                .value();
  side.gid = Gid::FromIpv4(ipv4);
  return side;
}

std::vector<WorkCompletion> PollUd(UdSide& side) {
  std::vector<WorkCompletion> out(16);
  const int n = side.verbs->PollCq(side.cq.get(), absl::MakeSpan(out)).value();
  out.resize(n);
  return out;
}

TEST(FakeVerbsUdTest, UdQpTransitionsNeedTheUdAttributes) {
  FakeFabric fabric;
  UdSide a = MakeUdSide(&fabric, 0x0a000001);
  QpAttributes attr;
  attr.state = QpState::kInit;
  attr.port = 1;
  // The RC set (ACCESS_FLAGS, no QKEY) is refused on a UD QP.
  absl::Status rc_style = a.verbs->ModifyQp(
      a.qp.get(), attr, kQpAttrState | kQpAttrPkeyIndex | kQpAttrPort | kQpAttrAccessFlags);
  EXPECT_EQ(rc_style.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(rc_style.message().find("missing IBV_QP_QKEY"), std::string::npos) << rc_style;
  ASSERT_TRUE(ActivateUdQp(*a.verbs, a.qp.get(), 0x57454654).ok());
  EXPECT_EQ(a.verbs->QueryQpState(a.qp.get()).value(), QpState::kRts);
  EXPECT_EQ(a.verbs->GetQpAttributes(a.qp->qp_num())->qkey, 0x57454654u);
}

TEST(FakeVerbsUdTest, DatagramArrivesBehindAGrhWithTimestampsAndIsLostOnQkeyOrBlackHole) {
  FakeFabric fabric;
  fabric.SetOneWayLatency(absl::Microseconds(3));
  UdSide a = MakeUdSide(&fabric, 0x0a000001);
  UdSide b = MakeUdSide(&fabric, 0x0a000002);
  ASSERT_TRUE(ActivateUdQp(*a.verbs, a.qp.get(), 7).ok());
  ASSERT_TRUE(ActivateUdQp(*b.verbs, b.qp.get(), 7).ok());
  AddressVector av;
  av.dgid = b.gid;
  av.sgid_index = 3;
  av.traffic_class = 26 << 2;
  av.flow_label = FlowLabelForUdpSourcePort(50001);
  std::unique_ptr<VerbsAh> ah = std::move(a.verbs->CreateAh(a.pd.get(), av)).value();
  AddressVector no_grh = av;
  no_grh.is_global = false;
  EXPECT_EQ(a.verbs->CreateAh(a.pd.get(), no_grh).status().code(),
            absl::StatusCode::kInvalidArgument);

  RecvWorkRequest recv;
  recv.wr_id = 99;
  recv.num_sge = 1;
  recv.sg_list[0] = Sge{reinterpret_cast<uint64_t>(b.buffer.data()), 1024, b.mr->lkey()};
  ASSERT_TRUE(b.verbs->PostRecv(b.qp.get(), {recv}).ok());
  std::memcpy(a.buffer.data(), "probe", 5);
  SendWorkRequest send;
  send.wr_id = 1;
  send.num_sge = 1;
  send.sg_list[0] = Sge{reinterpret_cast<uint64_t>(a.buffer.data()), 5, a.mr->lkey()};
  send.ah = ah.get();
  send.remote_qpn = b.qp->qp_num();
  send.remote_qkey = 7;
  ASSERT_TRUE(a.verbs->PostSend(a.qp.get(), {send}).ok());
  std::vector<WorkCompletion> sent = PollUd(a);
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].status, WcStatus::kSuccess);
  std::vector<WorkCompletion> got = PollUd(b);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].wr_id, 99u);
  EXPECT_EQ(got[0].src_qp, a.qp->qp_num());
  EXPECT_TRUE(got[0].has_grh);
  EXPECT_EQ(got[0].byte_len, kUdGrhBytes + 5);
  EXPECT_EQ(std::memcmp(b.buffer.data() + kUdGrhBytes, "probe", 5), 0);
  EXPECT_EQ(std::memcmp(b.buffer.data() + 8, a.gid.bytes.data(), 16), 0);  // source GID
  ASSERT_NE(sent[0].completion_timestamp_ns, 0u);
  EXPECT_EQ(got[0].completion_timestamp_ns - sent[0].completion_timestamp_ns, 3000u);

  // A wrong Q_Key, no receive posted, a black-holed source port: sent, never received.
  ASSERT_TRUE(b.verbs->PostRecv(b.qp.get(), {recv}).ok());
  send.remote_qkey = 8;
  ASSERT_TRUE(a.verbs->PostSend(a.qp.get(), {send}).ok());
  send.remote_qkey = 7;
  fabric.DropUdSourcePort(50001);
  ASSERT_TRUE(a.verbs->PostSend(a.qp.get(), {send}).ok());
  EXPECT_EQ(PollUd(a).size(), 2u);
  EXPECT_TRUE(PollUd(b).empty());
  fabric.DropUdSourcePort(50001, false);
  ASSERT_TRUE(a.verbs->PostSend(a.qp.get(), {send}).ok());
  EXPECT_EQ(PollUd(b).size(), 1u);
  ASSERT_TRUE(a.verbs->PostSend(a.qp.get(), {send}).ok());  // no receive left
  EXPECT_TRUE(PollUd(b).empty());
  EXPECT_EQ(a.verbs->QueryQpState(a.qp.get()).value(), QpState::kRts);  // UD: no RNR error
}

TEST(FakeVerbsUdTest, CqWithoutTimestampsAndADeviceWithoutThem) {
  FakeFabric fabric;
  FakeDeviceConfig config = FakeDeviceConfig::Roce("mlx5_0", 0x0a000001);
  config.completion_timestamps = false;
  FakeVerbs verbs(&fabric, {config});
  std::unique_ptr<VerbsContext> context = std::move(verbs.OpenDevice("mlx5_0")).value();
  absl::StatusOr<std::unique_ptr<VerbsCq>> cq = verbs.CreateTimestampedCq(context.get(), 8, nullptr);
  EXPECT_EQ(cq.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(cq.status().message().find("ibv_create_cq_ex"), std::string::npos);
}

}  // namespace
}  // namespace weft::rdma
