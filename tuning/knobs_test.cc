#include "tuning/knobs.h"

#include <cmath>
#include <limits>

#include "common/tunable_ranges.h"
#include "gtest/gtest.h"
#include "tuning/rng.h"

namespace weft::tuning {
namespace {

TEST(KnobsTest, BoundsLieInsideTheNicsRanges) {
  for (const Knob& k : SearchKnobs()) {
    const DcqcnParamRange* range = FindDcqcnParamRange(k.name);
    ASSERT_NE(range, nullptr) << k.name;
    EXPECT_GE(k.low, range->min) << k.name;
    EXPECT_LE(k.high, range->max) << k.name;
    EXPECT_LT(k.low, k.high) << k.name;
  }
}

TEST(KnobsTest, AnyPointDecodesToAProfileInRange) {
  Rng rng(7);
  const double odd[] = {-1, 2, std::numeric_limits<double>::quiet_NaN(),
                        std::numeric_limits<double>::infinity()};
  for (int trial = 0; trial < 2000; ++trial) {
    std::vector<double> point(SearchKnobs().size());
    for (double& v : point) v = trial % 4 == 0 ? odd[rng.Next() % 4] : rng.Uniform(-0.5, 1.5);
    const weft::v1::DcqcnParams profile = DecodeProfile(point);
    EXPECT_TRUE(ValidateDcqcnParams(profile).empty());
    for (const Knob& k : SearchKnobs()) {
      uint32_t value = 0;
      ASSERT_TRUE(GetDcqcnParam(profile, k.name, &value)) << k.name;
      EXPECT_GE(value, k.low);
      EXPECT_LE(value, k.high);
    }
  }
}

TEST(KnobsTest, EncodeThenDecodeKeepsEveryValueInBounds) {
  weft::v1::DcqcnParams profile;
  SetDcqcnParam("rp_min_dec_fac", 90, &profile);
  SetDcqcnParam("rp_ai_rate", 10, &profile);
  SetDcqcnParam("rp_time_reset", 50, &profile);
  SetDcqcnParam("np_min_time_between_cnps", 1, &profile);
  SetDcqcnParam("rp_byte_reset", 0, &profile);
  const weft::v1::DcqcnParams back = DecodeProfile(EncodeProfile(profile));
  for (const char* name : {"rp_min_dec_fac", "rp_ai_rate", "rp_time_reset",
                           "np_min_time_between_cnps", "rp_byte_reset"}) {
    uint32_t want = 0, got = 0;
    GetDcqcnParam(profile, name, &want);
    GetDcqcnParam(back, name, &got);
    EXPECT_EQ(got, want) << name;
  }
  // Unset fields encode as the firmware defaults.
  uint32_t g = 0;
  GetDcqcnParam(DecodeProfile(EncodeProfile(weft::v1::DcqcnParams())), "rp_dce_tcp_g", &g);
  EXPECT_EQ(g, 1019u);
}

}  // namespace
}  // namespace weft::tuning
