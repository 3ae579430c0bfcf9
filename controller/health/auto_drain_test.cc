#include "controller/health/auto_drain.h"

#include "common/daemon_config.h"
#include "gtest/gtest.h"

namespace weft::controller {
namespace {

const absl::Time kT0 = absl::FromUnixSeconds(1'800'000'000);

AutoDrainPolicy Enabled() {
  AutoDrainPolicy policy;
  policy.enabled = true;
  policy.after = absl::Seconds(60);
  policy.undrain_after_clean = absl::Seconds(300);
  return policy;
}

AutoDrainInput Node(bool drained, weft::v1::DrainSource by, bool sick) {
  AutoDrainInput input;
  input.drained = drained;
  input.drained_by = by;
  input.sick = sick;
  input.condition_since = kT0;
  return input;
}

TEST(AutoDrainTest, DefaultsMatchTheConfigDefaults) {
  const AutoDrainPolicy from_config =
      AutoDrainPolicy::FromConfig(DefaultControllerConfig().health().auto_drain());
  const AutoDrainPolicy defaults;
  EXPECT_EQ(from_config.enabled, defaults.enabled);
  EXPECT_FALSE(defaults.enabled);
  EXPECT_EQ(from_config.after, defaults.after);
  EXPECT_EQ(from_config.undrain_after_clean, defaults.undrain_after_clean);
}

TEST(AutoDrainTest, DisabledNeverActs) {
  AutoDrainPolicy policy = Enabled();
  policy.enabled = false;
  const absl::Time much_later = kT0 + absl::Hours(24);
  EXPECT_EQ(DecideAutoDrain(policy, Node(false, weft::v1::DRAIN_SOURCE_UNSPECIFIED, true),
                            much_later),
            AutoDrainAction::kNone);
  EXPECT_EQ(DecideAutoDrain(policy, Node(true, weft::v1::DRAIN_SOURCE_AUTO, false),
                            much_later),
            AutoDrainAction::kNone);
}

TEST(AutoDrainTest, DrainsASickNodeAfterTheDelay) {
  const AutoDrainInput sick = Node(false, weft::v1::DRAIN_SOURCE_UNSPECIFIED, true);
  EXPECT_EQ(DecideAutoDrain(Enabled(), sick, kT0 + absl::Seconds(59)),
            AutoDrainAction::kNone);
  EXPECT_EQ(DecideAutoDrain(Enabled(), sick, kT0 + absl::Seconds(60)),
            AutoDrainAction::kDrain);
  // A clean undrained node is left alone, however long it has been clean.
  EXPECT_EQ(DecideAutoDrain(Enabled(), Node(false, weft::v1::DRAIN_SOURCE_UNSPECIFIED, false),
                            kT0 + absl::Hours(1)),
            AutoDrainAction::kNone);
}

TEST(AutoDrainTest, UndrainsOnlyItsOwnDrainsAfterACleanWindow) {
  const AutoDrainInput auto_clean = Node(true, weft::v1::DRAIN_SOURCE_AUTO, false);
  EXPECT_EQ(DecideAutoDrain(Enabled(), auto_clean, kT0 + absl::Seconds(299)),
            AutoDrainAction::kNone);
  EXPECT_EQ(DecideAutoDrain(Enabled(), auto_clean, kT0 + absl::Seconds(300)),
            AutoDrainAction::kUndrain);
  // Still sick: stays drained.
  EXPECT_EQ(DecideAutoDrain(Enabled(), Node(true, weft::v1::DRAIN_SOURCE_AUTO, true),
                            kT0 + absl::Hours(1)),
            AutoDrainAction::kNone);
  // An operator's drain is never undone, clean or not.
  EXPECT_EQ(DecideAutoDrain(Enabled(), Node(true, weft::v1::DRAIN_SOURCE_OPERATOR, false),
                            kT0 + absl::Hours(24)),
            AutoDrainAction::kNone);
  EXPECT_EQ(DecideAutoDrain(Enabled(), Node(true, weft::v1::DRAIN_SOURCE_OPERATOR, true),
                            kT0 + absl::Hours(24)),
            AutoDrainAction::kNone);
}

}  // namespace
}  // namespace weft::controller
