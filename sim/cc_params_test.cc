#include "sim/cc_params.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/weft/v1/desired_state.pb.h"
#include "sim/dcqcn_fluid.h"

namespace weft::sim {
namespace {

using ::testing::HasSubstr;

TEST(MapCcParams, FirmwareDefaults) {
  const MappedCcParams m = MapCcParams(FirmwareDefaultCcParams(), HpccFabricSide(100e9)).value();
  EXPECT_DOUBLE_EQ(m.params.tau_prime_us, 1);
  EXPECT_DOUBLE_EQ(m.params.timer_us, 300);
  EXPECT_DOUBLE_EQ(m.params.byte_counter_bytes, 32767);
  EXPECT_EQ(m.params.fast_recovery_steps, 1);
  EXPECT_DOUBLE_EQ(m.params.rate_ai_bps, 5e6);
  EXPECT_DOUBLE_EQ(m.params.g, 5.0 / 1024);  // rp_dce_tcp_g = 1019: (1024 − 1019)/1024
  EXPECT_DOUBLE_EQ(m.params.tau_us, 4);      // max(np 4 µs, monitor period 4 µs)
  EXPECT_DOUBLE_EQ(m.initial_alpha, 1023.0 / 1024);
  EXPECT_DOUBLE_EQ(m.params.capacity_bps, 100e9);
  EXPECT_DOUBLE_EQ(m.params.kmin_bytes, 400e3);
  EXPECT_DOUBLE_EQ(m.params.kmax_bytes, 1600e3);
  EXPECT_DOUBLE_EQ(m.params.pmax, 0.2);
  // The default clamp flags (0, 1): R_T ← R_C only after a timer increase.
  EXPECT_EQ(m.params.target_clamp, TargetClamp::kAfterTimerIncrease);
  EXPECT_DOUBLE_EQ(m.params.rate_hai_bps, 50e6);
  EXPECT_DOUBLE_EQ(m.params.max_cut_fraction, 0.5);
  EXPECT_TRUE(m.not_modelled.empty());
}

TEST(MapCcParams, UnsetFieldsTakeFirmwareDefaults) {
  const MappedCcParams empty = MapCcParams(weft::v1::DcqcnParams(), FabricSide()).value();
  const MappedCcParams full = MapCcParams(FirmwareDefaultCcParams(), FabricSide()).value();
  EXPECT_DOUBLE_EQ(empty.params.tau_us, full.params.tau_us);
  EXPECT_DOUBLE_EQ(empty.params.timer_us, full.params.timer_us);
  EXPECT_DOUBLE_EQ(empty.params.g, full.params.g);
}

TEST(MapCcParams, PaperMatchesTheFluidModelsPaperDefaults) {
  const MappedCcParams m = MapCcParams(PaperCcParams(), FabricSide()).value();
  const DcqcnParams paper;  // sim/dcqcn_fluid.h defaults: the CoNEXT'16 parameters
  EXPECT_DOUBLE_EQ(m.params.g, paper.g);  // G = 1020 → 1/256
  EXPECT_DOUBLE_EQ(m.params.tau_us, paper.tau_us);
  EXPECT_DOUBLE_EQ(m.params.tau_prime_us, paper.tau_prime_us);
  EXPECT_DOUBLE_EQ(m.params.timer_us, paper.timer_us);
  EXPECT_EQ(m.params.fast_recovery_steps, paper.fast_recovery_steps);
  EXPECT_DOUBLE_EQ(m.params.rate_ai_bps, paper.rate_ai_bps);
  EXPECT_GE(m.params.byte_counter_bytes, 1e12);  // rp_byte_reset = 0: off
  EXPECT_EQ(m.params.target_clamp, TargetClamp::kEveryCut);  // the paper clamps on every cut
  EXPECT_TRUE(m.not_modelled.empty());
}

TEST(MapCcParams, BarrePaceAndCutFloor) {
  const MappedCcParams m = MapCcParams(BarreCcParams(), FabricSide()).value();
  EXPECT_DOUBLE_EQ(m.params.tau_us, 2);  // max(np 1 µs, monitor period 2 µs)
  EXPECT_DOUBLE_EQ(m.params.timer_us, 50);
  EXPECT_DOUBLE_EQ(m.params.rate_ai_bps, 10e6);
  // rp_min_dec_fac = 90: a cut keeps at least 90 % of the rate.
  EXPECT_DOUBLE_EQ(m.params.max_cut_fraction, 0.1);
  for (const std::string& line : m.not_modelled) {
    EXPECT_THAT(line, ::testing::Not(HasSubstr("rp_min_dec_fac")));
  }
  // The firmware's 50 maps to 0.5, which α/2 never exceeds.
  EXPECT_DOUBLE_EQ(MapCcParams(FirmwareDefaultCcParams(), FabricSide()).value().params.max_cut_fraction,
                   0.5);
}

TEST(MapCcParams, CnpIntervalZeroIsOneModelStep) {
  weft::v1::DcqcnParams cc = FirmwareDefaultCcParams();
  cc.set_np_min_time_between_cnps(0);
  cc.set_rp_rate_reduce_monitor_period(1);
  EXPECT_DOUBLE_EQ(MapCcParams(cc, FabricSide()).value().params.tau_us, 1);
}

TEST(ModelStepUs, FirmwareDefaultsRunAtAFifthOfTauPrime) {
  const MappedCcParams m = MapCcParams(FirmwareDefaultCcParams(), FabricSide()).value();
  EXPECT_DOUBLE_EQ(ModelStepUs(m.params), 0.2);
  EXPECT_TRUE(DcqcnFluidModel::Create(m.params, UniformFlows(4, m.params.capacity_bps),
                                      ModelStepUs(m.params))
                  .ok());
  EXPECT_DOUBLE_EQ(ModelStepUs(MapCcParams(PaperCcParams(), FabricSide()).value().params), 1);
}

TEST(HpccFabricSide, ScalesPer25Gbps) {
  const FabricSide side = HpccFabricSide(400e9);
  EXPECT_DOUBLE_EQ(side.kmin_bytes, 1600e3);
  EXPECT_DOUBLE_EQ(side.kmax_bytes, 6400e3);
}

TEST(MapCcParams, RefusesOutOfRangeNamingParameterValueAndRange) {
  weft::v1::DcqcnParams cc;
  cc.set_rp_threshold(32);
  absl::StatusOr<MappedCcParams> m = MapCcParams(cc, FabricSide());
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(std::string(m.status().message()), HasSubstr("rp_threshold"));
  EXPECT_THAT(std::string(m.status().message()), HasSubstr("32"));
  EXPECT_THAT(std::string(m.status().message()), HasSubstr("31"));

  cc.Clear();
  cc.set_rp_byte_reset(10000000);  // the paper's 10 MB does not fit the NIC's field
  m = MapCcParams(cc, FabricSide());
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(std::string(m.status().message()), HasSubstr("rp_byte_reset"));
  EXPECT_THAT(std::string(m.status().message()), HasSubstr("32767"));

  cc.Clear();
  cc.set_rp_time_reset(0);
  m = MapCcParams(cc, FabricSide());
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(std::string(m.status().message()), HasSubstr("rp_time_reset"));
}

TEST(MapCcParams, RefusesCutDivisorTheModelCannotRepresent) {
  weft::v1::DcqcnParams cc;
  cc.set_rp_gd(10);
  absl::StatusOr<MappedCcParams> m = MapCcParams(cc, FabricSide());
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(std::string(m.status().message()), HasSubstr("rp_gd = 10"));
  EXPECT_THAT(std::string(m.status().message()), HasSubstr("accepted 11"));
}

TEST(MapCcParams, RefusesFabricAndModelRanges) {
  FabricSide side;
  side.link_bps = 0;
  absl::StatusOr<MappedCcParams> m = MapCcParams(weft::v1::DcqcnParams(), side);
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(std::string(m.status().message()), HasSubstr("link_bps = 0"));

  side = FabricSide();
  side.link_bps = 1e9;  // 1 Gb/s
  weft::v1::DcqcnParams cc;
  cc.set_rp_ai_rate(2000);  // 2 Gb/s of additive increase on a 1 Gb/s link
  m = MapCcParams(cc, side);
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(std::string(m.status().message()), HasSubstr("rate_ai_bps"));

  side = FabricSide();
  side.kmax_bytes = side.kmin_bytes;
  m = MapCcParams(weft::v1::DcqcnParams(), side);
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(std::string(m.status().message()), HasSubstr("kmax_bytes"));
}

}  // namespace
}  // namespace weft::sim
