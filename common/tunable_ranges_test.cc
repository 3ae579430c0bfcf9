#include "common/tunable_ranges.h"

#include <set>
#include <string>

#include "gmock/gmock.h"
#include "google/protobuf/descriptor.h"
#include "gtest/gtest.h"

namespace weft {
namespace {

using ::testing::HasSubstr;
using weft::v1::DesiredState;
using weft::v1::NodeQos;
using weft::v1::ParameterError;

DesiredState RecipeState() {
  DesiredState state;
  state.set_node_name("node-1");
  state.set_version(1);
  state.set_nonce("n1");
  *state.mutable_qos() = RecipeQos();
  *state.mutable_dcqcn() = DefaultDcqcnParams();
  return state;
}

// The one error, or a failure listing all of them.
ParameterError OnlyError(const std::vector<ParameterError>& errors) {
  std::string all;
  for (const ParameterError& e : errors) all += FormatParameterError(e) + "\n";
  EXPECT_EQ(errors.size(), 1u) << all;
  return errors.empty() ? ParameterError() : errors[0];
}

TEST(TunableRangesTest, EveryScalarDcqcnFieldHasARangeAndNothingElseDoes) {
  const google::protobuf::Descriptor* descriptor = weft::v1::DcqcnParams::descriptor();
  std::set<std::string> scalar_fields;
  for (int i = 0; i < descriptor->field_count(); ++i) {
    if (!descriptor->field(i)->is_repeated()) scalar_fields.insert(descriptor->field(i)->name());
  }
  std::set<std::string> ranged;
  for (const DcqcnParamRange& range : DcqcnParamRanges()) {
    ranged.insert(range.name);
    EXPECT_LE(range.min, range.max) << range.name;
    if (range.has_firmware_default) {
      EXPECT_GE(range.firmware_default, range.min) << range.name;
      EXPECT_LE(range.firmware_default, range.max) << range.name;
    }
  }
  EXPECT_EQ(ranged, scalar_fields);
}

TEST(TunableRangesTest, DefaultsAreTheFirmwareDefaultsOfTheFacts) {
  weft::v1::DcqcnParams defaults = DefaultDcqcnParams();
  EXPECT_EQ(defaults.rp_time_reset(), 300u);
  EXPECT_EQ(defaults.rp_byte_reset(), 32767u);
  EXPECT_EQ(defaults.rp_threshold(), 1u);
  EXPECT_EQ(defaults.rp_ai_rate(), 5u);
  EXPECT_EQ(defaults.rp_hai_rate(), 50u);
  EXPECT_EQ(defaults.rp_max_rate(), 0u);
  EXPECT_EQ(defaults.rp_min_rate(), 1u);
  EXPECT_EQ(defaults.rp_min_dec_fac(), 50u);
  EXPECT_EQ(defaults.rp_gd(), 11u);
  EXPECT_EQ(defaults.rp_rate_to_set_on_first_cnp(), 0u);
  EXPECT_EQ(defaults.rp_dce_tcp_g(), 1019u);
  EXPECT_EQ(defaults.rp_dce_tcp_rtt(), 1u);
  EXPECT_EQ(defaults.rp_rate_reduce_monitor_period(), 4u);
  EXPECT_EQ(defaults.rp_initial_alpha_value(), 1023u);
  EXPECT_EQ(defaults.np_cnp_dscp(), 48u);
  EXPECT_EQ(defaults.np_cnp_prio(), 6u);
  EXPECT_TRUE(defaults.has_rp_max_rate());  // set to 0, not left unset
  EXPECT_FALSE(defaults.has_np_cnp_prio_mode());
  EXPECT_FALSE(defaults.has_np_min_time_between_cnps());
  EXPECT_EQ(defaults.rp_enabled_priorities_size(), 8);
  EXPECT_EQ(defaults.np_enabled_priorities_size(), 8);
  EXPECT_TRUE(ValidateDcqcnParams(defaults).empty());
}

TEST(TunableRangesTest, RecipeQosIsTheFactsRecipe) {
  NodeQos qos = RecipeQos();
  EXPECT_EQ(qos.trust(), weft::v1::TRUST_MODE_DSCP);
  EXPECT_EQ(qos.dscp_to_priority().at(26), 3u);
  EXPECT_EQ(qos.dscp_to_priority().at(48), 6u);
  ASSERT_EQ(qos.pfc_priorities_size(), 1);
  EXPECT_EQ(qos.pfc_priorities(0), 3u);
  EXPECT_EQ(qos.priority_to_tc(3), 3u);
  EXPECT_EQ(qos.tc_tsa(6), weft::v1::TSA_STRICT);
  EXPECT_EQ(qos.tc_bandwidth_percent(3), 50u);
  EXPECT_EQ(qos.default_roce_tos(), 106u);  // DSCP 26 << 2 | ECT(0)
}

TEST(TunableRangesTest, ProductionRecipeIsValid) {
  std::vector<ParameterError> errors = ValidateDesiredState(RecipeState());
  for (const ParameterError& e : errors) ADD_FAILURE() << FormatParameterError(e);
}

TEST(TunableRangesTest, OutOfRangeDcqcnValueNamesParameterValueAndRange) {
  DesiredState state = RecipeState();
  state.mutable_dcqcn()->set_rp_gd(16);
  ParameterError error = OnlyError(ValidateDesiredState(state));
  EXPECT_EQ(error.parameter(), "rp_gd");
  EXPECT_EQ(error.value(), "16");
  EXPECT_THAT(error.reason(), HasSubstr("0..15"));
  EXPECT_EQ(FormatParameterError(error), "rp_gd = 16: out of range 0..15 (log2)");
}

TEST(TunableRangesTest, EdgesOfEachRangeAreAcceptedAndOneBeyondIsNot) {
  for (const DcqcnParamRange& range : DcqcnParamRanges()) {
    for (uint32_t value : {range.min, range.max}) {
      weft::v1::DcqcnParams params;
      ASSERT_TRUE(SetDcqcnParam(range.name, value, &params));
      EXPECT_TRUE(ValidateDcqcnParams(params).empty()) << range.name << "=" << value;
    }
    if (range.max < 0xffffffffu) {
      weft::v1::DcqcnParams params;
      SetDcqcnParam(range.name, range.max + 1, &params);
      EXPECT_EQ(OnlyError(ValidateDcqcnParams(params)).parameter(), range.name);
    }
    if (range.min > 0) {
      weft::v1::DcqcnParams params;
      SetDcqcnParam(range.name, range.min - 1, &params);
      EXPECT_EQ(OnlyError(ValidateDcqcnParams(params)).parameter(), range.name);
    }
  }
}

TEST(TunableRangesTest, GetAndSetByCcParamsName) {
  weft::v1::DcqcnParams params;
  uint32_t value = 0;
  EXPECT_FALSE(GetDcqcnParam(params, "rp_ai_rate", &value));  // unset
  ASSERT_TRUE(SetDcqcnParam("rp_ai_rate", 40, &params));
  ASSERT_TRUE(GetDcqcnParam(params, "rp_ai_rate", &value));
  EXPECT_EQ(value, 40u);
  EXPECT_EQ(params.rp_ai_rate(), 40u);
  EXPECT_FALSE(SetDcqcnParam("rp_enabled_priorities", 1, &params));  // not a scalar
  EXPECT_FALSE(SetDcqcnParam("no_such_param", 1, &params));
  EXPECT_EQ(FindDcqcnParamRange("no_such_param"), nullptr);
  ASSERT_NE(FindDcqcnParamRange("rp_dce_tcp_rtt"), nullptr);
  EXPECT_EQ(FindDcqcnParamRange("rp_dce_tcp_rtt")->max, 131071u);
}

TEST(TunableRangesTest, EnabledPrioritiesMustBeDistinctAndBelowEight) {
  weft::v1::DcqcnParams params;
  params.add_rp_enabled_priorities(3);
  params.add_rp_enabled_priorities(8);
  ParameterError error = OnlyError(ValidateDcqcnParams(params));
  EXPECT_EQ(error.parameter(), "rp_enabled_priorities");
  EXPECT_EQ(error.value(), "[3,8]");
  params.clear_rp_enabled_priorities();
  params.add_np_enabled_priorities(2);
  params.add_np_enabled_priorities(2);
  EXPECT_THAT(OnlyError(ValidateDcqcnParams(params)).reason(), HasSubstr("twice"));
}

TEST(TunableRangesTest, MinRateAboveMaxRateIsRefusedUnlessMaxIsLineRate) {
  weft::v1::DcqcnParams params;
  params.set_rp_min_rate(1000);
  params.set_rp_max_rate(500);
  EXPECT_EQ(OnlyError(ValidateDcqcnParams(params)).parameter(), "rp_min_rate");
  params.set_rp_max_rate(0);
  EXPECT_TRUE(ValidateDcqcnParams(params).empty());
}

TEST(TunableRangesTest, CnpPrioWithModeOneIsContradictory) {
  weft::v1::DcqcnParams params;
  params.set_np_cnp_prio(6);
  params.set_np_cnp_prio_mode(1);
  EXPECT_EQ(OnlyError(ValidateDcqcnParams(params)).parameter(), "np_cnp_prio_mode");
}

TEST(TunableRangesTest, EtsSharesOfEtsClassesMustSumTo100) {
  DesiredState state = RecipeState();
  state.mutable_qos()->set_tc_bandwidth_percent(3, 40);
  ParameterError error = OnlyError(ValidateDesiredState(state));
  EXPECT_EQ(error.parameter(), "tc_bandwidth_percent");
  EXPECT_EQ(error.value(), "[50,0,0,40,0,0,0,0]");
  EXPECT_THAT(error.reason(), HasSubstr("sum to 90"));
  // A share on a strict class does not count.
  state.mutable_qos()->set_tc_bandwidth_percent(3, 50);
  state.mutable_qos()->set_tc_bandwidth_percent(6, 30);
  EXPECT_TRUE(ValidateDesiredState(state).empty());
}

TEST(TunableRangesTest, PerTcListsNeedEightEntries) {
  DesiredState state = RecipeState();
  state.mutable_qos()->mutable_priority_to_tc()->RemoveLast();
  ParameterError error = OnlyError(ValidateDesiredState(state));
  EXPECT_EQ(error.parameter(), "priority_to_tc");
  EXPECT_EQ(error.value(), "7 entries");
}

TEST(TunableRangesTest, QosValueRanges) {
  DesiredState state = RecipeState();
  state.mutable_qos()->set_priority_to_tc(2, 8);
  EXPECT_EQ(OnlyError(ValidateDesiredState(state)).parameter(), "priority_to_tc[2]");

  state = RecipeState();
  (*state.mutable_qos()->mutable_dscp_to_priority())[64] = 1;
  EXPECT_THAT(OnlyError(ValidateDesiredState(state)).reason(), HasSubstr("DSCP 64 out of range"));

  state = RecipeState();
  (*state.mutable_qos()->mutable_dscp_to_priority())[10] = 9;
  EXPECT_EQ(OnlyError(ValidateDesiredState(state)).parameter(), "dscp_to_priority[10]");

  state = RecipeState();
  state.mutable_qos()->set_default_roce_tos(256);
  EXPECT_EQ(OnlyError(ValidateDesiredState(state)).parameter(), "default_roce_tos");

  state = RecipeState();
  state.mutable_qos()->set_tc_tsa(5, static_cast<weft::v1::Tsa>(7));
  EXPECT_EQ(OnlyError(ValidateDesiredState(state)).parameter(), "tc_tsa[5]");
}

TEST(TunableRangesTest, CnpPriorityMustNotBeLossless) {
  DesiredState state = RecipeState();
  state.mutable_qos()->add_pfc_priorities(6);
  ParameterError error = OnlyError(ValidateDesiredState(state));
  EXPECT_EQ(error.parameter(), "pfc_priorities");
  EXPECT_THAT(error.reason(), HasSubstr("priority 6 carries CNPs (np_cnp_prio=6)"));

  // Without np_cnp_prio the CNP priority comes from the DSCP map (DSCP 48 -> 6).
  state.mutable_dcqcn()->clear_np_cnp_prio();
  EXPECT_THAT(OnlyError(ValidateDesiredState(state)).reason(), HasSubstr("CNP DSCP 48"));
}

TEST(TunableRangesTest, RocePriorityMustHavePfc) {
  DesiredState state = RecipeState();
  state.mutable_qos()->clear_pfc_priorities();
  ParameterError error = OnlyError(ValidateDesiredState(state));
  EXPECT_EQ(error.parameter(), "pfc_priorities");
  EXPECT_THAT(error.reason(), HasSubstr("RoCE priority 3 (default_roce_tos 106 = DSCP 26)"));
  // Without a RoCE ToS there is no RoCE priority to protect: lossy RoCE is allowed.
  state.mutable_qos()->clear_default_roce_tos();
  EXPECT_TRUE(ValidateDesiredState(state).empty());
}

TEST(TunableRangesTest, DcbPartMustBeCompleteButMayBeAbsent) {
  DesiredState state = RecipeState();
  state.mutable_qos()->set_trust(weft::v1::TRUST_MODE_UNSPECIFIED);
  EXPECT_EQ(OnlyError(ValidateDesiredState(state)).parameter(), "trust");

  state = RecipeState();
  state.mutable_qos()->set_trust(weft::v1::TRUST_MODE_PCP);
  EXPECT_EQ(OnlyError(ValidateDesiredState(state)).parameter(), "dscp_to_priority");

  state = RecipeState();
  state.mutable_qos()->clear_dscp_to_priority();
  EXPECT_EQ(OnlyError(ValidateDesiredState(state)).parameter(), "dscp_to_priority");

  // Only the RoCE ToS, no DCB part: valid, the DCB settings are left alone.
  DesiredState tos_only;
  tos_only.set_version(2);
  tos_only.mutable_qos()->set_default_roce_tos(106);
  EXPECT_FALSE(HasDcbSettings(tos_only.qos()));
  EXPECT_TRUE(ValidateDesiredState(tos_only).empty());
}

TEST(TunableRangesTest, VersionZeroIsRefused) {
  DesiredState state = RecipeState();
  state.set_version(0);
  EXPECT_EQ(OnlyError(ValidateDesiredState(state)).parameter(), "version");
}

TEST(TunableRangesTest, DeviceIsPrefixedWhenSet) {
  ParameterError error;
  error.set_device("mlx5_0");
  error.set_parameter("rp_ai_rate");
  error.set_value("5");
  error.set_reason("read back 6");
  EXPECT_EQ(FormatParameterError(error), "mlx5_0: rp_ai_rate = 5: read back 6");
}

}  // namespace
}  // namespace weft
