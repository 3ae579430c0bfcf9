#include "agent/outbound_queue.h"

#include <thread>

#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"

namespace weft::agent {
namespace {

weft::v1::AgentMessage Telemetry(int64_t at_us) {
  weft::v1::AgentMessage message;
  message.mutable_telemetry()->set_collected_at_us(at_us);
  return message;
}

weft::v1::AgentMessage Ack(uint64_t version) {
  weft::v1::AgentMessage message;
  message.mutable_desired_state_ack()->set_version(version);
  return message;
}

TEST(OutboundQueueTest, FullQueueDropsTheOldestTelemetryFirst) {
  OutboundQueue queue(3);
  EXPECT_FALSE(queue.PushTelemetry(Telemetry(1)));
  EXPECT_FALSE(queue.PushTelemetry(Telemetry(2)));
  EXPECT_FALSE(queue.PushTelemetry(Telemetry(3)));
  EXPECT_TRUE(queue.PushTelemetry(Telemetry(4)));
  EXPECT_TRUE(queue.PushTelemetry(Telemetry(5)));
  EXPECT_EQ(queue.queued_telemetry(), 3u);
  EXPECT_EQ(queue.dropped_telemetry(), 2u);
  for (int64_t expected : {3, 4, 5}) {
    auto message = queue.Pop();
    ASSERT_TRUE(message.has_value());
    EXPECT_EQ(message->telemetry().collected_at_us(), expected);
  }
}

TEST(OutboundQueueTest, AcksAreNeverDroppedAndJumpTheQueue) {
  OutboundQueue queue(1);
  queue.PushTelemetry(Telemetry(1));
  for (uint64_t v = 1; v <= 5; ++v) queue.PushAck(Ack(v));
  queue.PushTelemetry(Telemetry(2));  // drops telemetry 1, never an ack
  for (uint64_t v = 1; v <= 5; ++v) {
    auto message = queue.Pop();
    ASSERT_TRUE(message.has_value());
    ASSERT_TRUE(message->has_desired_state_ack());
    EXPECT_EQ(message->desired_state_ack().version(), v);
  }
  auto last = queue.Pop();
  ASSERT_TRUE(last.has_value());
  EXPECT_EQ(last->telemetry().collected_at_us(), 2);
  EXPECT_EQ(queue.dropped_telemetry(), 1u);
}

TEST(OutboundQueueTest, PopBlocksUntilAMessageOrClose) {
  OutboundQueue queue(4);
  absl::Notification popped;
  std::optional<weft::v1::AgentMessage> got;
  std::thread writer([&] {
    got = queue.Pop();
    popped.Notify();
  });
  EXPECT_FALSE(popped.WaitForNotificationWithTimeout(absl::Milliseconds(50)));
  queue.PushAck(Ack(7));
  ASSERT_TRUE(popped.WaitForNotificationWithTimeout(absl::Seconds(5)));
  writer.join();
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->desired_state_ack().version(), 7u);

  std::thread closer_waits([&] { EXPECT_FALSE(queue.Pop().has_value()); });
  absl::SleepFor(absl::Milliseconds(20));
  queue.Close();
  closer_waits.join();
  // Closed: nothing is queued any more.
  EXPECT_FALSE(queue.PushTelemetry(Telemetry(1)));
  queue.PushAck(Ack(8));
  EXPECT_FALSE(queue.Pop().has_value());
}

}  // namespace
}  // namespace weft::agent
