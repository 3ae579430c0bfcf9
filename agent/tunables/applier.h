// Applies a DesiredState to a node's NICs as one transaction (Envoy-style ACK/NACK):
//  1. validate it again with common/tunable_ranges (never trust the wire);
//  2. read every desired parameter of every NIC (a NIC that cannot read one, or lacks
//     it, fails the whole state before anything is written);
//  3. write each parameter that differs, in DesiredParameters() order, reading it back
//     after each write; then read every parameter once more (a later write can reset an
//     earlier one, e.g. np_cnp_prio resets np_cnp_prio_mode);
//  4. on any failure, write back every value written so far in reverse order (verifying
//     each), and NACK naming NIC, parameter, value and reason; a restore that fails too
//     is reported as its own error ("restore failed ...").
// Dry run does 1-2 and writes nothing: it ACKs when every NIC already has the desired
// values (so an ACK always means "the NIC has this") and otherwise NACKs with one
// "dry run: would change ..." error per parameter.
//
// Pure logic over NicTunables; thread-compatible (the agent's loop thread calls it).
#ifndef WEFT_AGENT_TUNABLES_APPLIER_H_
#define WEFT_AGENT_TUNABLES_APPLIER_H_

#include <string>
#include <vector>

#include "agent/tunables/nic_tunables.h"
#include "proto/weft/v1/desired_state.pb.h"
#include "proto/weft/v1/telemetry.pb.h"

namespace weft::agent {

struct ParameterChange {
  std::string device;
  std::string parameter;
  std::string from;
  std::string to;
};

struct ApplyOutcome {
  bool accepted = false;
  std::vector<weft::v1::ParameterValue> read_back;  // ACK: every desired parameter, per NIC
  std::vector<weft::v1::ParameterError> errors;     // NACK: why
  // The writes made (and kept, on ACK), or on a dry run the ones that would be made.
  std::vector<ParameterChange> changes;
};

ApplyOutcome ApplyDesiredState(const weft::v1::DesiredState& state,
                               const std::vector<NicTunables*>& nics, bool dry_run);

// The parameters of `applied` whose value on a NIC differs from it now (or can no
// longer be read: actual is then "unreadable: <reason>").
std::vector<weft::v1::TunableDrift> CheckDrift(const weft::v1::DesiredState& applied,
                                               const std::vector<NicTunables*>& nics);

// "mlx5_0 rp_ai_rate 5 -> 10" lines for logs and dry-run output.
std::string FormatChange(const ParameterChange& change);

}  // namespace weft::agent

#endif  // WEFT_AGENT_TUNABLES_APPLIER_H_
