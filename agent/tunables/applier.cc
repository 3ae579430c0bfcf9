#include "agent/tunables/applier.h"

#include "absl/strings/str_cat.h"
#include "agent/tunables/tunable_params.h"
#include "common/tunable_ranges.h"

namespace weft::agent {
namespace {

using weft::v1::ParameterError;

ParameterError MakeError(const std::string& device, const std::string& parameter,
                         const std::string& value, std::string reason) {
  ParameterError error;
  error.set_device(device);
  error.set_parameter(parameter);
  error.set_value(value);
  error.set_reason(std::move(reason));
  return error;
}

struct Step {
  NicTunables* nic;
  ParameterChange change;
};

// Writes `value` and reads it back; the reason when that did not work.
absl::Status WriteAndVerify(NicTunables* nic, const std::string& parameter,
                            const std::string& value) {
  absl::Status written = nic->Write(parameter, value);
  if (!written.ok()) return absl::Status(written.code(), absl::StrCat("write failed: ", written.message()));
  absl::StatusOr<std::string> now = nic->Read(parameter);
  if (!now.ok()) {
    return absl::Status(now.status().code(),
                        absl::StrCat("read back after writing failed: ", now.status().message()));
  }
  if (*now != value) {
    return absl::DataLossError(absl::StrCat("read back '", *now, "' after writing it"));
  }
  return absl::OkStatus();
}

// Restores `done` in reverse, then verifies every restored value (only then: a derived
// parameter such as trust is right again only once what it follows is restored); errors
// for the restores that failed.
void Restore(const std::vector<Step>& done, std::vector<ParameterError>* errors) {
  std::vector<bool> write_failed(done.size(), false);
  for (size_t i = done.size(); i-- > 0;) {
    absl::Status written = done[i].nic->Write(done[i].change.parameter, done[i].change.from);
    if (!written.ok()) {
      write_failed[i] = true;
      errors->push_back(MakeError(done[i].change.device, done[i].change.parameter,
                                  done[i].change.from,
                                  absl::StrCat("restore failed, the NIC may be left changed: ",
                                               written.message())));
    }
  }
  for (size_t i = done.size(); i-- > 0;) {
    if (write_failed[i]) continue;
    absl::StatusOr<std::string> now = done[i].nic->Read(done[i].change.parameter);
    if (now.ok() && *now == done[i].change.from) continue;
    errors->push_back(MakeError(
        done[i].change.device, done[i].change.parameter, done[i].change.from,
        absl::StrCat("restore failed, the NIC may be left changed: ",
                     now.ok() ? absl::StrCat("reads '", *now, "' after restoring")
                              : std::string(now.status().message()))));
  }
}

}  // namespace

std::string FormatChange(const ParameterChange& change) {
  return absl::StrCat(change.device, " ", change.parameter, " ", change.from, " -> ", change.to);
}

ApplyOutcome ApplyDesiredState(const weft::v1::DesiredState& state,
                               const std::vector<NicTunables*>& nics, bool dry_run) {
  ApplyOutcome outcome;
  outcome.errors = ValidateDesiredState(state);
  if (!outcome.errors.empty()) return outcome;
  const std::vector<ParamValue> desired = DesiredParameters(state);
  if (!desired.empty() && nics.empty()) {
    outcome.errors.push_back(MakeError("", "nics", "0", "this node has no NIC to apply it to"));
    return outcome;
  }

  std::vector<Step> steps;
  for (NicTunables* nic : nics) {
    for (const ParamValue& want : desired) {
      absl::StatusOr<std::string> current = nic->Read(want.parameter);
      if (!current.ok()) {
        outcome.errors.push_back(MakeError(nic->device(), want.parameter, want.value,
                                           std::string(current.status().message())));
      } else if (*current != want.value) {
        steps.push_back({nic, {nic->device(), want.parameter, *current, want.value}});
      }
    }
  }
  if (!outcome.errors.empty()) return outcome;  // nothing written
  for (const Step& step : steps) outcome.changes.push_back(step.change);

  if (dry_run) {
    for (const Step& step : steps) {
      outcome.errors.push_back(MakeError(step.change.device, step.change.parameter, step.change.to,
                                         absl::StrCat("dry run: would change from '",
                                                      step.change.from, "'; nothing written")));
    }
  } else {
    std::vector<Step> done;
    for (const Step& step : steps) {
      done.push_back(step);  // a failed write may have half-happened: restore it too
      absl::Status applied = WriteAndVerify(step.nic, step.change.parameter, step.change.to);
      if (!applied.ok()) {
        outcome.errors.push_back(MakeError(step.change.device, step.change.parameter,
                                           step.change.to, std::string(applied.message())));
        break;
      }
    }
    // A later write can undo an earlier one: check the whole state once more.
    for (NicTunables* nic : nics) {
      if (!outcome.errors.empty()) break;
      for (const ParamValue& want : desired) {
        absl::StatusOr<std::string> now = nic->Read(want.parameter);
        if (!now.ok() || *now != want.value) {
          outcome.errors.push_back(MakeError(
              nic->device(), want.parameter, want.value,
              now.ok() ? absl::StrCat("reads '", *now, "' after the later writes of this state")
                       : std::string(now.status().message())));
        }
      }
    }
    if (!outcome.errors.empty()) {
      Restore(done, &outcome.errors);
      outcome.changes.clear();
      return outcome;
    }
  }
  if (!outcome.errors.empty()) return outcome;

  outcome.accepted = true;
  for (NicTunables* nic : nics) {
    for (const ParamValue& want : desired) {
      weft::v1::ParameterValue* value = &outcome.read_back.emplace_back();
      value->set_device(nic->device());
      value->set_parameter(want.parameter);
      absl::StatusOr<std::string> now = nic->Read(want.parameter);
      value->set_value(now.ok() ? *now : absl::StrCat("unreadable: ", now.status().message()));
    }
  }
  return outcome;
}

std::vector<weft::v1::TunableDrift> CheckDrift(const weft::v1::DesiredState& applied,
                                               const std::vector<NicTunables*>& nics) {
  std::vector<weft::v1::TunableDrift> drift;
  const std::vector<ParamValue> desired = DesiredParameters(applied);
  for (NicTunables* nic : nics) {
    for (const ParamValue& want : desired) {
      absl::StatusOr<std::string> now = nic->Read(want.parameter);
      const std::string actual =
          now.ok() ? *now : absl::StrCat("unreadable: ", now.status().message());
      if (now.ok() && *now == want.value) continue;
      weft::v1::TunableDrift* entry = &drift.emplace_back();
      entry->set_device(nic->device());
      entry->set_parameter(want.parameter);
      entry->set_expected(want.value);
      entry->set_actual(actual);
    }
  }
  return drift;
}

}  // namespace weft::agent
