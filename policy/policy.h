// The QoS/DCQCN policy (proto/weft/v1/policy.proto): strict loading, validation across
// fields and against each parameter's real range (common/tunable_ranges.h), and
// compiling it into the desired state of one node. Used by the controller's rollout
// service and, offline, by `weftctl policy validate`. Pure functions; thread-safe.
//
// What the QoS section compiles to (weft.v1.NodeQos):
//   trust              qos.trust
//   dscp_to_priority   every class's DSCP -> its priority (under DSCP trust only)
//   pfc_priorities     the priorities of the lossless classes, ascending
//   priority_to_tc     priority p -> the traffic class that lists p
//   tc_bandwidth_percent, tc_tsa   per traffic class; a TC the policy does not list
//                      gets ETS with 0%
//   default_roce_tos   the RoCE class's DSCP << 2 | ECT(0) (DSCP 26 -> 106), the same
//                      ToS byte the placement engine hands jobs as NCCL_IB_TC
// and the DCQCN section, for the profile a node is assigned: the firmware defaults
// (DefaultDcqcnParams) overlaid with the profile's parameters, with np_cnp_dscp and
// np_cnp_prio from the CNP class.
//
// Example:
//   ASSIGN_OR_RETURN(weft::v1::Policy policy, LoadPolicyFile("policy.yaml"));
//   weft::v1::DesiredState state = CompileDesiredState(policy, node_info);
#ifndef WEFT_POLICY_POLICY_H_
#define WEFT_POLICY_POLICY_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/weft/v1/desired_state.pb.h"
#include "proto/weft/v1/node.pb.h"
#include "proto/weft/v1/policy.pb.h"

namespace weft::policy {

// The profile every policy has even when its file does not define one: the firmware
// defaults.
inline constexpr char kDefaultProfileName[] = "default";

// The rollout defaults a file's `rollout` section is merged over: one canary node per
// rack, 300 s bake, waves of 10 nodes baked 60 s, ACK timeout 60 s, any NACK rolls
// back; KPIs: PFC pause +5 points of time, ECN marks and CNPs x2 above 1000/s,
// retransmissions +10/s, throughput -20%, each sustained 10 s.
weft::v1::Policy DefaultPolicy();

// DefaultPolicy() merged with the YAML `yaml` (errors name `source_name`:line:column),
// then ValidatePolicy. INVALID_ARGUMENT on any problem.
absl::StatusOr<weft::v1::Policy> ParsePolicy(absl::string_view yaml,
                                             absl::string_view source_name);

// ParsePolicy of the file at `path`; NOT_FOUND when it cannot be read.
absl::StatusOr<weft::v1::Policy> LoadPolicyFile(absl::string_view path);

// Every (weft.v1.rule) and the checks across fields. INVALID_ARGUMENT listing every
// problem, one per line, each "<source>: <field>: value '<v>' ...; accepted: ...":
//   - trust is dscp or pcp;
//   - class names and DSCPs are unique; exactly one class is `roce` and it is lossless;
//     exactly one is `cnp` and it is not lossless; classes sharing a priority agree on
//     lossless (PFC is per priority);
//   - each priority 0..7 is in exactly one traffic class, TCs are unique; the ETS
//     shares sum to 100; a strict TC has 0%;
//   - profile names are unique, default_profile and every assigned profile exist, an
//     assignment names at least one rack, pod or node; np_cnp_dscp / np_cnp_prio, when
//     a profile sets them, equal the CNP class's; every compiled profile passes
//     ValidateDesiredState (each DCQCN parameter's range, the QoS rules);
//   - the canary has a size (canary_per_rack or canary_share).
absl::Status ValidatePolicy(const weft::v1::Policy& policy, absl::string_view source_name);

// The NodeQos the QoS section implies (see the header comment). Assumes a valid policy.
weft::v1::NodeQos CompileNodeQos(const weft::v1::QosPolicy& qos);

// The name of the profile `node` uses: the first assignment naming its name, rack or
// pod, else default_profile (kDefaultProfileName when empty).
std::string ProfileNameFor(const weft::v1::Policy& policy, const weft::v1::NodeInfo& node);

// The DCQCN parameters of profile `name` (see the header comment); the firmware
// defaults when the policy has no such profile.
weft::v1::DcqcnParams CompileDcqcn(const weft::v1::Policy& policy, absl::string_view name);

// The desired state of `node` under `policy`: node_name, qos and dcqcn set; version and
// nonce left for the caller.
weft::v1::DesiredState CompileDesiredState(const weft::v1::Policy& policy,
                                           const weft::v1::NodeInfo& node);

// What a rollback to "no policy was ever good" sends: the firmware DCQCN defaults, QoS
// left as the node has it.
weft::v1::DesiredState FirmwareDefaultState(absl::string_view node_name);

}  // namespace weft::policy

#endif  // WEFT_POLICY_POLICY_H_
