#include "tuning/test_policy.h"

#include "policy/policy.h"

namespace weft::tuning {

weft::v1::Policy RecipePolicy() {
  constexpr char kYaml[] = R"(
qos:
  trust: dscp
  classes:
    - {name: training, dscp: 26, priority: 3, lossless: true, roce: true}
    - {name: storage, dscp: 24, priority: 4}
    - {name: cnp, dscp: 48, priority: 6, cnp: true}
  traffic_classes:
    - {tc: 0, priorities: [0, 1, 2, 5, 7], tsa: ets, bandwidth_percent: 30}
    - {tc: 3, priorities: [3], tsa: ets, bandwidth_percent: 40}
    - {tc: 4, priorities: [4], tsa: ets, bandwidth_percent: 30}
    - {tc: 6, priorities: [6], tsa: strict, bandwidth_percent: 0}
)";
  return weft::policy::ParsePolicy(kYaml, "test policy").value();
}

}  // namespace weft::tuning
