#include "common/sd_notify.h"

#include <unistd.h>

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "common/notify_listener.h"
#include "gtest/gtest.h"

namespace weft {
namespace {

using ::testing::HasSubstr;

std::string SocketPath(const std::string& name) {
  // Unix socket paths must stay under 108 bytes; TEST_TMPDIR can be longer.
  return absl::StrCat("/tmp/weft-sdn-", getpid(), "-", name);
}

TEST(ParseSdNotifyEnvTest, UnsetMeansNotUnderSystemd) {
  absl::StatusOr<SdNotifyEnv> env = ParseSdNotifyEnv(nullptr, nullptr, nullptr, 42);
  ASSERT_TRUE(env.ok()) << env.status();
  EXPECT_TRUE(env->socket.empty());
  EXPECT_FALSE(env->watchdog.has_value());
}

TEST(ParseSdNotifyEnvTest, ReadsSocketAndWatchdogForThisProcess) {
  absl::StatusOr<SdNotifyEnv> env = ParseSdNotifyEnv("/run/systemd/notify", "3000000", "42", 42);
  ASSERT_TRUE(env.ok()) << env.status();
  EXPECT_EQ(env->socket, "/run/systemd/notify");
  EXPECT_EQ(env->watchdog, absl::Seconds(3));
}

TEST(ParseSdNotifyEnvTest, WatchdogOfAnotherProcessIsIgnored) {
  absl::StatusOr<SdNotifyEnv> env = ParseSdNotifyEnv("@notify", "3000000", "41", 42);
  ASSERT_TRUE(env.ok()) << env.status();
  EXPECT_EQ(env->socket, "@notify");
  EXPECT_FALSE(env->watchdog.has_value());
}

TEST(ParseSdNotifyEnvTest, MalformedWatchdogNamesVariableAndValue) {
  absl::StatusOr<SdNotifyEnv> env = ParseSdNotifyEnv("@n", "soon", nullptr, 42);
  ASSERT_FALSE(env.ok());
  EXPECT_THAT(env.status().message(), HasSubstr("WATCHDOG_USEC"));
  EXPECT_THAT(env.status().message(), HasSubstr("'soon'"));
  EXPECT_FALSE(ParseSdNotifyEnv("@n", "0", nullptr, 42).ok());
  EXPECT_FALSE(ParseSdNotifyEnv("@n", "1000", "x", 42).ok());
}

TEST(SdNotifySendTest, DeliversToAPathSocket) {
  NotifyListener listener(SocketPath("path"));
  ASSERT_TRUE(listener.bound());
  ASSERT_TRUE(SdNotifySend(SocketPath("path"), "READY=1\nSTATUS=ok").ok());
  EXPECT_EQ(listener.Receive(absl::Seconds(2)), "READY=1\nSTATUS=ok");
}

TEST(SdNotifySendTest, DeliversToAnAbstractSocket) {
  const std::string name = absl::StrCat("@weft-sdn-test-", getpid());
  NotifyListener listener(name);
  ASSERT_TRUE(listener.bound());
  ASSERT_TRUE(SdNotifySend(name, "STOPPING=1").ok());
  EXPECT_EQ(listener.Receive(absl::Seconds(2)), "STOPPING=1");
}

TEST(SdNotifySendTest, EmptySocketSendsNothing) { EXPECT_TRUE(SdNotifySend("", "READY=1").ok()); }

TEST(SdNotifySendTest, ErrorsNameTheSocket) {
  absl::Status relative = SdNotifySend("run/notify", "READY=1");
  EXPECT_EQ(relative.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(relative.message(), HasSubstr("run/notify"));
  absl::Status absent = SdNotifySend(SocketPath("nobody-listens"), "READY=1");
  EXPECT_EQ(absent.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(absent.message(), HasSubstr("nobody-listens"));
  EXPECT_FALSE(SdNotifySend("/" + std::string(200, 'x'), "READY=1").ok());
}

TEST(ServiceNotifierTest, ReadyThenStopping) {
  NotifyListener listener(SocketPath("ready"));
  ASSERT_TRUE(listener.bound());
  ServiceNotifier notifier(SdNotifyEnv{SocketPath("ready"), std::nullopt});
  EXPECT_FALSE(notifier.feed_interval().has_value());
  notifier.Ready("serving");
  EXPECT_EQ(listener.Receive(absl::Seconds(2)), "READY=1\nSTATUS=serving");
  notifier.Stopping();
  EXPECT_EQ(listener.Receive(absl::Seconds(2)), "STOPPING=1");
  EXPECT_EQ(listener.Receive(absl::Milliseconds(100)), std::nullopt);
}

TEST(ServiceNotifierTest, FeedsWatchdogAtHalfTheIntervalUntilStopping) {
  NotifyListener listener(SocketPath("watchdog"));
  ASSERT_TRUE(listener.bound());
  ServiceNotifier notifier(SdNotifyEnv{SocketPath("watchdog"), absl::Milliseconds(400)});
  EXPECT_EQ(notifier.feed_interval(), absl::Milliseconds(200));
  // The first feed comes at once, then one per 200 ms.
  std::vector<absl::Time> feeds;
  const absl::Time start = absl::Now();
  while (feeds.size() < 6) {
    std::optional<std::string> message = listener.Receive(absl::Seconds(2));
    ASSERT_EQ(message, "WATCHDOG=1");
    feeds.push_back(absl::Now());
  }
  EXPECT_LT(feeds[0] - start, absl::Milliseconds(150));
  const absl::Duration mean = (feeds.back() - feeds.front()) / 5;
  EXPECT_GT(mean, absl::Milliseconds(180));
  EXPECT_LT(mean, absl::Milliseconds(300));
  notifier.Stopping();
  // Whatever was in flight, the last message is STOPPING=1 and nothing follows it.
  std::optional<std::string> message;
  while ((message = listener.Receive(absl::Milliseconds(500))).has_value() &&
         *message == "WATCHDOG=1") {
  }
  EXPECT_EQ(message, "STOPPING=1");
  EXPECT_EQ(listener.Receive(absl::Milliseconds(500)), std::nullopt);
}

}  // namespace
}  // namespace weft
