#include "tuning/safety.h"

#include <set>

#include "common/tunable_ranges.h"
#include "gtest/gtest.h"
#include "policy/policy.h"
#include "tuning/knobs.h"
#include "tuning/rng.h"
#include "tuning/test_policy.h"

namespace weft::tuning {
namespace {

constexpr uint32_t kRocePriority = 3;

std::set<SafetyRule> Rules(const std::vector<SafetyViolation>& violations) {
  std::set<SafetyRule> rules;
  for (const SafetyViolation& v : violations) rules.insert(v.rule);
  return rules;
}

// Every combination of the four rules broken or kept: exactly the broken ones reported.
TEST(SafetyTest, EnumeratesEveryCombinationOfBrokenRules) {
  const weft::v1::Policy policy = RecipePolicy();
  for (int mask = 0; mask < 16; ++mask) {
    weft::v1::NodeQos qos = policy::CompileNodeQos(policy.qos());
    weft::v1::DcqcnParams dcqcn = policy::CompileDcqcn(policy, "default");
    std::set<SafetyRule> broken;
    if (mask & 1) {  // DCQCN off on the lossless priority 3
      dcqcn.clear_rp_enabled_priorities();
      for (uint32_t p : {0, 1, 2, 4, 5, 6, 7}) dcqcn.add_rp_enabled_priorities(p);
      broken.insert(SafetyRule::kCongestionControlOnLossless);
    }
    if (mask & 2) {  // CNPs on the lossless, ETS priority 3
      dcqcn.set_np_cnp_prio(kRocePriority);
      broken.insert(SafetyRule::kCnpPriorityNotLossless);
    }
    if (mask & 4) {  // PFC off on the RoCE priority
      qos.clear_pfc_priorities();
      broken.insert(SafetyRule::kPfcOnRocePriority);
      // With no lossless priority left, rules 1 and 2 have nothing to guard.
      broken.erase(SafetyRule::kCongestionControlOnLossless);
      broken.erase(SafetyRule::kCnpPriorityNotLossless);
    }
    if (mask & 8) {
      dcqcn.set_rp_gd(16);
      broken.insert(SafetyRule::kValuesInRange);
    }
    EXPECT_EQ(Rules(CheckNodeSafety(qos, dcqcn, kRocePriority, /*lossy_roce=*/false)), broken)
        << "mask " << mask << ": " << FormatViolations(CheckNodeSafety(qos, dcqcn, 3, false));
  }
}

TEST(SafetyTest, TheRulesExceptions) {
  const weft::v1::Policy policy = RecipePolicy();
  const weft::v1::NodeQos recipe = policy::CompileNodeQos(policy.qos());
  const weft::v1::DcqcnParams dcqcn = policy::CompileDcqcn(policy, "default");
  EXPECT_TRUE(CheckNodeSafety(recipe, dcqcn, kRocePriority, false).empty());
  // PFC off on RoCE is what a lossy-RoCE policy asks for.
  weft::v1::NodeQos lossy = recipe;
  lossy.clear_pfc_priorities();
  EXPECT_TRUE(CheckNodeSafety(lossy, dcqcn, kRocePriority, /*lossy_roce=*/true).empty());
  // A lossless CNP priority is allowed when its traffic class is strict (TC 6 here).
  weft::v1::NodeQos strict_cnp = recipe;
  strict_cnp.add_pfc_priorities(6);
  EXPECT_EQ(Rules(CheckNodeSafety(strict_cnp, dcqcn, kRocePriority, false)).count(
                SafetyRule::kCnpPriorityNotLossless),
            0u);
  // rp_min_dec_fac = 100 never cuts: congestion control off although the bits say on.
  weft::v1::DcqcnParams never_cut = dcqcn;
  never_cut.set_rp_min_dec_fac(100);
  EXPECT_EQ(Rules(CheckNodeSafety(recipe, never_cut, kRocePriority, false)),
            std::set<SafetyRule>{SafetyRule::kCongestionControlOnLossless});
}

// Fuzz: every point the search can reach decodes to a safe profile.
TEST(SafetyTest, EverySearchPointIsSafe) {
  const weft::v1::Policy policy = RecipePolicy();
  Rng rng(21);
  for (int trial = 0; trial < 3000; ++trial) {
    std::vector<double> point(SearchKnobs().size());
    for (double& v : point) v = rng.Uniform(-0.2, 1.2);
    const std::vector<SafetyViolation> v = CheckProfileSafety(policy, DecodeProfile(point));
    ASSERT_TRUE(v.empty()) << FormatViolations(v);
  }
}

// Fuzz: random raw profiles (values in and out of range, priority lists with and without
// the lossless priority) are judged as an independent oracle says.
TEST(SafetyTest, RandomProfilesAreJudgedByTheRules) {
  const weft::v1::Policy policy = RecipePolicy();
  Rng rng(5);
  int unsafe = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    weft::v1::DcqcnParams profile;
    for (const DcqcnParamRange& r : DcqcnParamRanges()) {
      if (rng.Uniform() < 0.5) continue;
      // np_cnp_* must equal the CNP class's (the compiler overwrites them): skip.
      if (std::string(r.name).rfind("np_cnp", 0) == 0) continue;
      const double span = static_cast<double>(r.max) - r.min;
      const uint32_t value = rng.Uniform() < 0.05
                                 ? r.max + 1  // may wrap for u32 max: still a valid oracle input
                                 : static_cast<uint32_t>(r.min + rng.Uniform() * span);
      SetDcqcnParam(r.name, value, &profile);
    }
    bool lacks_roce = false;
    if (rng.Uniform() < 0.2) {
      for (uint32_t p = 0; p < 8; ++p) {
        if (rng.Uniform() < 0.7) profile.add_rp_enabled_priorities(p);
      }
      lacks_roce = profile.rp_enabled_priorities_size() > 0 &&
                   std::find(profile.rp_enabled_priorities().begin(),
                             profile.rp_enabled_priorities().end(),
                             kRocePriority) == profile.rp_enabled_priorities().end();
    }
    uint32_t fac = 0;
    const bool never_cuts = GetDcqcnParam(profile, "rp_min_dec_fac", &fac) && fac >= 100;
    const bool out_of_range = !ValidateDcqcnParams(profile).empty();
    const bool expect_unsafe = lacks_roce || never_cuts || out_of_range;
    unsafe += expect_unsafe;
    EXPECT_EQ(!CheckProfileSafety(policy, profile).empty(), expect_unsafe)
        << profile.ShortDebugString();
  }
  EXPECT_GT(unsafe, 300);  // the fuzz did reach unsafe profiles
}

}  // namespace
}  // namespace weft::tuning
