// A valid policy with the common RoCE recipe (roce-facts §3: RoCE on priority 3 lossless,
// CNPs on priority 6 strict) and the firmware-default profile, for the tuner's tests.
#ifndef WEFT_TUNING_TEST_POLICY_H_
#define WEFT_TUNING_TEST_POLICY_H_

#include "proto/weft/v1/policy.pb.h"

namespace weft::tuning {

weft::v1::Policy RecipePolicy();

}  // namespace weft::tuning

#endif  // WEFT_TUNING_TEST_POLICY_H_
