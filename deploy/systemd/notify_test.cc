// The real daemons under the sd_notify protocol, the way systemd runs a Type=notify
// unit: the test binds the notify socket, sets NOTIFY_SOCKET and WATCHDOG_USEC, starts
// weft-controller and weft-agent, and checks that READY=1 comes only once their ports
// answer, that WATCHDOG=1 comes every WATCHDOG_USEC/2, and STOPPING=1 on SIGTERM.
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/notify_listener.h"
#include "gtest/gtest.h"
#include "tests/subprocess.h"

namespace weft {
namespace {

using weft::testing::FreePort;
using weft::testing::Subprocess;
using weft::testing::TempPath;
using weft::testing::WaitForPort;

constexpr char kController[] = "controller/weft-controller";
constexpr char kAgent[] = "agent/weft-agent";
constexpr absl::Duration kWatchdog = absl::Milliseconds(1000);

bool IsReady(const std::string& message) { return message.rfind("READY=1\n", 0) == 0; }

// Follows one daemon from start to stop through its notifications.
// `ports` must answer by the time READY=1 arrives.
void ExpectNotifyLifecycle(Subprocess& daemon, NotifyListener& notify,
                           const std::vector<int>& ports) {
  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  std::vector<absl::Time> feeds;
  bool ready = false;
  while (absl::Now() < deadline && feeds.size() < 6) {
    std::optional<std::string> message = notify.Receive(absl::Seconds(3));
    ASSERT_TRUE(message.has_value()) << "no notification for 3 s\n" << daemon.Log();
    if (*message == "WATCHDOG=1") {
      feeds.push_back(absl::Now());
      continue;
    }
    ASSERT_TRUE(IsReady(*message)) << "unexpected notification: " << *message;
    ASSERT_FALSE(ready) << "READY=1 sent twice";
    ready = true;
    // The daemon said it serves: each port must answer now, without waiting.
    for (int port : ports) {
      EXPECT_TRUE(WaitForPort(port, absl::ZeroDuration()))
          << "READY=1 arrived before port " << port << " answered";
    }
    EXPECT_NE(message->find("\nSTATUS=serving"), std::string::npos) << *message;
  }
  ASSERT_TRUE(ready) << daemon.Log();
  ASSERT_EQ(feeds.size(), 6u) << daemon.Log();
  // Fed every WATCHDOG_USEC/2 (500 ms); a loaded 2-core machine may add some delay.
  const absl::Duration mean = (feeds.back() - feeds.front()) / 5;
  EXPECT_GT(mean, absl::Milliseconds(450)) << "watchdog fed too often";
  EXPECT_LT(mean, absl::Milliseconds(700)) << "watchdog fed too rarely";
  for (size_t i = 1; i < feeds.size(); ++i) {
    EXPECT_LT(feeds[i] - feeds[i - 1], kWatchdog) << "a gap would have tripped the watchdog";
  }

  daemon.Signal(SIGTERM);
  std::optional<std::string> message;
  while ((message = notify.Receive(absl::Seconds(5))).has_value() && *message == "WATCHDOG=1") {
  }
  EXPECT_EQ(message, "STOPPING=1");
  EXPECT_EQ(daemon.Wait(absl::Seconds(10)), 0) << daemon.Log();
}

class NotifyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(notify_.bound()) << notify_.name();
    setenv("NOTIFY_SOCKET", notify_.name().c_str(), 1);
    setenv("WATCHDOG_USEC", absl::StrCat(absl::ToInt64Microseconds(kWatchdog)).c_str(), 1);
  }
  void TearDown() override {
    unsetenv("NOTIFY_SOCKET");
    unsetenv("WATCHDOG_USEC");
  }
  NotifyListener notify_{absl::StrCat("/tmp/weft-notify-", getpid(), ".sock")};
};

TEST_F(NotifyTest, ControllerReadyOnceServingWatchdogAndStopping) {
  const int grpc_port = FreePort();
  const int metrics_port = FreePort();
  Subprocess controller({kController, "--listen", absl::StrCat("127.0.0.1:", grpc_port),
                         "--metrics", absl::StrCat("127.0.0.1:", metrics_port), "--state_dir",
                         TempPath("controller-state")},
                        TempPath("controller.log"));
  ExpectNotifyLifecycle(controller, notify_, {grpc_port, metrics_port});
}

TEST_F(NotifyTest, AgentReadyOnceServingWatchdogAndStopping) {
  // No controller: the agent is ready when its own endpoints serve, and retries the
  // controller session in the background.
  const int metrics_port = FreePort();
  const int health_port = FreePort();
  Subprocess agent({kAgent, "--node", "gpu-n01", "--controller",
                    absl::StrCat("127.0.0.1:", FreePort()), "--metrics",
                    absl::StrCat("127.0.0.1:", metrics_port), "--health",
                    absl::StrCat("127.0.0.1:", health_port), "--nics=2"},
                   TempPath("agent.log"));
  ExpectNotifyLifecycle(agent, notify_, {metrics_port, health_port});
}

TEST_F(NotifyTest, WithoutNotifySocketTheDaemonRunsAsBefore) {
  unsetenv("NOTIFY_SOCKET");
  const int grpc_port = FreePort();
  Subprocess controller({kController, "--listen", absl::StrCat("127.0.0.1:", grpc_port),
                         "--metrics", absl::StrCat("127.0.0.1:", FreePort()), "--state_dir",
                         TempPath("controller-state-2")},
                        TempPath("controller-2.log"));
  ASSERT_TRUE(WaitForPort(grpc_port, absl::Seconds(10))) << controller.Log();
  EXPECT_EQ(notify_.Receive(absl::Seconds(1)), std::nullopt);
  controller.Signal(SIGTERM);
  EXPECT_EQ(controller.Wait(absl::Seconds(10)), 0) << controller.Log();
}

}  // namespace
}  // namespace weft
