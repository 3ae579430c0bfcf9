#include "controller/inventory/event_log.h"

#include <string>

#include "gtest/gtest.h"
#include "store/controller_store.h"

namespace weft::controller {
namespace {

const absl::Time kT0 = absl::FromUnixSeconds(1'800'000'000);

weft::v1::Event At(int second, const std::string& node,
                   weft::v1::EventKind kind = weft::v1::EVENT_KIND_STATE_CHANGED) {
  weft::v1::Event event;
  event.set_time_us(absl::ToUnixMicros(kT0 + absl::Seconds(second)));
  event.set_node(node);
  event.set_kind(kind);
  event.set_message("at " + std::to_string(second));
  return event;
}

std::vector<std::string> Messages(const weft::v1::ListEventsResponse& response) {
  std::vector<std::string> out;
  for (const auto& e : response.events()) out.push_back(e.message());
  return out;
}

TEST(EventLogTest, AppendNumbersEventsAndListsOldestFirst) {
  EventLog log(10);
  weft::v1::Event first = At(0, "n1");
  first.set_sequence(999);  // overwritten
  EXPECT_EQ(log.Append(first), 1u);
  EXPECT_EQ(log.Append(At(1, "n2")), 2u);
  const weft::v1::ListEventsResponse all = log.List(EventQuery());
  ASSERT_EQ(all.events_size(), 2);
  EXPECT_EQ(all.events(0).sequence(), 1u);
  EXPECT_EQ(all.events(1).sequence(), 2u);
  EXPECT_EQ(all.events(1).node(), "n2");
  EXPECT_FALSE(all.truncated());
  EXPECT_EQ(all.capacity(), 10u);
}

TEST(EventLogTest, FiltersByNodeSinceAndLimit) {
  EventLog log(100);
  for (int i = 0; i < 10; ++i) log.Append(At(i, i % 2 == 0 ? "even" : "odd"));

  EventQuery by_node;
  by_node.node = "odd";
  EXPECT_EQ(Messages(log.List(by_node)),
            (std::vector<std::string>{"at 1", "at 3", "at 5", "at 7", "at 9"}));

  EventQuery since;
  since.since = kT0 + absl::Seconds(7);  // inclusive
  EXPECT_EQ(Messages(log.List(since)), (std::vector<std::string>{"at 7", "at 8", "at 9"}));

  EventQuery both;
  both.node = "even";
  both.since = kT0 + absl::Seconds(3);
  both.limit = 2;  // the newest two
  const weft::v1::ListEventsResponse limited = log.List(both);
  EXPECT_EQ(Messages(limited), (std::vector<std::string>{"at 6", "at 8"}));
  EXPECT_TRUE(limited.truncated());

  both.limit = 3;
  EXPECT_FALSE(log.List(both).truncated());
  EventQuery nobody;
  nobody.node = "ghost";
  EXPECT_EQ(log.List(nobody).events_size(), 0);
}

TEST(EventLogTest, BoundedEvictsOldestAndSaysSo) {
  EventLog log(100);
  for (int i = 0; i < 250; ++i) log.Append(At(i, "n1"));
  EXPECT_EQ(log.size(), 100u);
  EXPECT_EQ(log.evicted(), 150u);
  const weft::v1::ListEventsResponse all = log.List(EventQuery());
  ASSERT_EQ(all.events_size(), 100);
  EXPECT_EQ(all.events(0).message(), "at 150");
  EXPECT_EQ(all.events(0).sequence(), 151u);
  EXPECT_EQ(all.events(99).sequence(), 250u);
  EXPECT_TRUE(all.truncated()) << "events 0..149 were evicted";

  EventQuery recent;
  recent.since = kT0 + absl::Seconds(150);  // nothing evicted is this recent
  const weft::v1::ListEventsResponse tail = log.List(recent);
  EXPECT_EQ(tail.events_size(), 100);
  EXPECT_FALSE(tail.truncated());
  recent.since = kT0 + absl::Seconds(149);
  EXPECT_TRUE(log.List(recent).truncated());
}

TEST(EventLogTest, CapacityIsAtLeastOne) {
  EventLog log(0);
  log.Append(At(0, "a"));
  log.Append(At(1, "b"));
  EXPECT_EQ(log.capacity(), 1u);
  EXPECT_EQ(Messages(log.List(EventQuery())), (std::vector<std::string>{"at 1"}));
}

TEST(EventLogStoreTest, RestoreRefillsTheRingAndContinuesSequences) {
  auto store = store::ControllerStore::OpenInMemory();
  ASSERT_TRUE(store.ok());
  {
    EventLog log(3, store->get());
    ASSERT_TRUE(log.Restore().ok());
    for (int i = 1; i <= 5; ++i) {
      weft::v1::Event event;
      event.set_time_us(i * 1000);
      event.set_node(i % 2 == 0 ? "even" : "odd");
      log.Append(std::move(event));
    }
  }
  EventLog log(3, store->get());
  ASSERT_TRUE(log.Restore().ok());
  EXPECT_EQ(log.size(), 3u);
  weft::v1::ListEventsResponse all = log.List({});
  ASSERT_EQ(all.events_size(), 3);
  EXPECT_EQ(all.events(0).sequence(), 3u);
  EXPECT_EQ(all.events(2).sequence(), 5u);
  // Events 1 and 2 are gone: an answer reaching back to them says so.
  EXPECT_TRUE(all.truncated());
  EventQuery recent;
  recent.since = absl::FromUnixMicros(4000);
  EXPECT_FALSE(log.List(recent).truncated());
  EXPECT_EQ(log.Append(weft::v1::Event()), 6u);
}

TEST(EventLogStoreTest, DatabaseIsPrunedToCapacity) {
  auto store = store::ControllerStore::OpenInMemory();
  ASSERT_TRUE(store.ok());
  EventLog log(10, store->get());
  for (uint64_t i = 0; i < EventLog::kPruneEvery; ++i) log.Append(weft::v1::Event());
  auto stored = (*store)->LoadEvents(1'000'000);
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ(stored->size(), 10u);
  EXPECT_EQ(stored->back().sequence(), EventLog::kPruneEvery);
}

}  // namespace
}  // namespace weft::controller
