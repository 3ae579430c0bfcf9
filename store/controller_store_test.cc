#include "store/controller_store.h"

#include <sys/stat.h>

#include <cstdlib>
#include <string>

#include "common/testing/temp_dir.h"
#include "gtest/gtest.h"

namespace weft::store {
namespace {

std::string FreshDir(const std::string& name) {
  std::string dir = weft::testing::TempPath(name);
  std::system(("rm -rf '" + dir + "'").c_str());
  return dir;
}

StoredNode Node(const std::string& name, uint64_t ceiling) {
  StoredNode node;
  node.name = name;
  node.rack = "r1";
  node.pod = "p1";
  node.info.set_name(name);
  node.info.set_rack("r1");
  node.epoch_ceiling = ceiling;
  return node;
}

TEST(ControllerStoreTest, CreatesPrivateStateDirAndKeepsEverythingAcrossReopen) {
  const std::string dir = FreshDir("state/nested");
  {
    auto store = ControllerStore::Open(dir);
    ASSERT_TRUE(store.ok()) << store.status();
    StoredNode drained = Node("gpu-2", 1001);
    drained.drained = true;
    drained.drained_by = weft::v1::DRAIN_SOURCE_OPERATOR;
    drained.drain_reason = "bad cable";
    drained.drained_who = "alice";
    ASSERT_TRUE((*store)->PutNodes({Node("gpu-1", 1000), drained}).ok());

    StoredReservation live;
    live.request.set_job_id("job-1");
    live.response.set_job_id("job-1");
    live.response.set_reservation_id("rsv-4");
    live.response.add_ring_order("gpu-1");
    live.expires_at_us = 2'000'000;
    ASSERT_TRUE((*store)->PutReservation(live, 5).ok());
    StoredReservation expired = live;
    expired.response.set_reservation_id("rsv-3");
    expired.expires_at_us = 500'000;
    ASSERT_TRUE((*store)->PutReservation(expired, 4).ok());

    weft::v1::Event event;
    event.set_sequence(1);
    event.set_node("gpu-2");
    event.set_kind(weft::v1::EVENT_KIND_DRAINED);
    ASSERT_TRUE((*store)->AppendEvent(event).ok());
    StoredAudit audit;
    audit.who = "alice";
    audit.method = "/weft.v1.AdminService/DrainNode";
    ASSERT_EQ(*(*store)->AppendAudit(audit), 1u);
  }
  struct stat st;
  ASSERT_EQ(::stat(dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);

  auto store = ControllerStore::Open(dir);
  ASSERT_TRUE(store.ok()) << store.status();
  auto nodes = (*store)->LoadNodes();
  ASSERT_TRUE(nodes.ok());
  ASSERT_EQ(nodes->size(), 2u);
  EXPECT_EQ((*nodes)[0].epoch_ceiling, 1000u);
  EXPECT_EQ((*nodes)[0].info.name(), "gpu-1");
  EXPECT_TRUE((*nodes)[1].drained);
  EXPECT_EQ((*nodes)[1].drained_by, weft::v1::DRAIN_SOURCE_OPERATOR);
  EXPECT_EQ((*nodes)[1].drain_reason, "bad cable");
  EXPECT_EQ((*nodes)[1].drained_who, "alice");

  // Only the live reservation comes back; the sequence keeps the highest seen.
  auto live = (*store)->LoadReservations(1'000'000);
  ASSERT_TRUE(live.ok());
  ASSERT_EQ(live->size(), 1u);
  EXPECT_EQ((*live)[0].response.reservation_id(), "rsv-4");
  EXPECT_EQ((*live)[0].response.ring_order(0), "gpu-1");
  EXPECT_EQ(*(*store)->NextReservationSequence(), 5u);
  EXPECT_EQ(*(*store)->DeleteExpiredReservations(1'000'000), 1);
  ASSERT_TRUE((*store)->DeleteReservation("rsv-4").ok());
  EXPECT_TRUE((*store)->LoadReservations(0)->empty());

  auto events = (*store)->LoadEvents(10);
  ASSERT_TRUE(events.ok());
  ASSERT_EQ(events->size(), 1u);
  EXPECT_EQ((*events)[0].kind(), weft::v1::EVENT_KIND_DRAINED);
  // Audit sequences continue after a restart.
  EXPECT_EQ(*(*store)->AppendAudit(StoredAudit{0, 1, "bob", "admin", "/m", "", "OK"}), 2u);
}

TEST(ControllerStoreTest, SecondOpenOfSameDirIsRefused) {
  const std::string dir = FreshDir("locked");
  auto first = ControllerStore::Open(dir);
  ASSERT_TRUE(first.ok()) << first.status();
  auto second = ControllerStore::Open(dir);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(second.status().message().find("in use by another weft-controller"),
            std::string::npos)
      << second.status();
}

TEST(ControllerStoreTest, StateDirThatIsAFileIsRefused) {
  const std::string dir = FreshDir("a_file");
  std::system(("touch '" + dir + "'").c_str());
  auto store = ControllerStore::Open(dir);
  ASSERT_FALSE(store.ok());
  EXPECT_NE(store.status().message().find("not a directory"), std::string::npos);
}

TEST(ControllerStoreTest, PruneEventsKeepsNewestCapacity) {
  auto store = ControllerStore::OpenInMemory();
  ASSERT_TRUE(store.ok());
  for (uint64_t seq = 1; seq <= 10; ++seq) {
    weft::v1::Event event;
    event.set_sequence(seq);
    ASSERT_TRUE((*store)->AppendEvent(event).ok());
  }
  ASSERT_TRUE((*store)->PruneEvents(4).ok());
  auto events = (*store)->LoadEvents(100);
  ASSERT_TRUE(events.ok());
  ASSERT_EQ(events->size(), 4u);
  EXPECT_EQ(events->front().sequence(), 7u);
  EXPECT_EQ(events->back().sequence(), 10u);
  auto newest = (*store)->LoadEvents(2);
  ASSERT_EQ(newest->size(), 2u);
  EXPECT_EQ(newest->front().sequence(), 9u);
}

}  // namespace
}  // namespace weft::store
