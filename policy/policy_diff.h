// What moving nodes from one desired state to another changes, parameter by parameter,
// with how many nodes each change touches: `weftctl policy diff`. Pure functions over
// protos; thread-safe.
#ifndef WEFT_POLICY_POLICY_DIFF_H_
#define WEFT_POLICY_POLICY_DIFF_H_

#include <map>
#include <optional>
#include <string>

#include "proto/weft/v1/desired_state.pb.h"
#include "proto/weft/v1/rollout.pb.h"

namespace weft::policy {

// Every tunable `state` sets, as "qos.<field>" / "dcqcn.<field>" -> its value in text:
// scalars as numbers, enums by name, lists joined by ',', dscp_to_priority as
// "16:2,26:3" in DSCP order. Unset fields (left as the NIC has them) are absent.
std::map<std::string, std::string> FlattenDesiredState(const weft::v1::DesiredState& state);

// One change per (parameter, from, to), counted over the nodes of `next`; `current`
// holds what each node has now (nullopt: no desired state, every value is new, "from"
// is empty). Changes are sorted by parameter, then by descending node count.
weft::v1::DiffPolicyResponse DiffDesiredStates(
    const std::map<std::string, std::optional<weft::v1::DesiredState>>& current,
    const std::map<std::string, weft::v1::DesiredState>& next);

}  // namespace weft::policy

#endif  // WEFT_POLICY_POLICY_DIFF_H_
