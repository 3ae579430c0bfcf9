#include "controller/rollout/rollout_manager.h"

#include <sys/stat.h>

#include <algorithm>
#include <map>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "common/status_macros.h"
#include "policy/policy.h"
#include "policy/policy_diff.h"
#include "google/protobuf/util/message_differencer.h"

namespace weft::controller {

using policy::CompileDesiredState;
using policy::DiffDesiredStates;
using policy::FirmwareDefaultState;
using policy::LoadPolicyFile;
using policy::ParsePolicy;
namespace {

using weft::v1::Rollout;

bool Contains(const google::protobuf::RepeatedPtrField<std::string>& list,
              const std::string& value) {
  return std::find(list.begin(), list.end(), value) != list.end();
}

bool WasSent(const Rollout& rollout, const std::string& node) {
  for (const weft::v1::RolloutStep& step : rollout.steps()) {
    if (step.started_us() != 0 && Contains(step.nodes(), node)) return true;
  }
  return false;
}

bool RollingBackOrBack(weft::v1::RolloutPhase phase) {
  return phase == weft::v1::ROLLOUT_PHASE_ROLLING_BACK ||
         phase == weft::v1::ROLLOUT_PHASE_ROLLED_BACK || phase == weft::v1::ROLLOUT_PHASE_ABORTED;
}

// The state a rollback of `rollout` sends `node`.
weft::v1::DesiredState RollbackState(const Rollout& rollout, const weft::v1::NodeInfo& node) {
  weft::v1::DesiredState state = rollout.has_previous_policy()
                                     ? CompileDesiredState(rollout.previous_policy(), node)
                                     : FirmwareDefaultState(node.name());
  state.set_version(rollout.rollback_version());
  return state;
}

weft::v1::DesiredState NewState(const Rollout& rollout, const weft::v1::NodeInfo& node) {
  weft::v1::DesiredState state = CompileDesiredState(rollout.policy(), node);
  state.set_version(rollout.version());
  return state;
}

}  // namespace

RolloutManager::RolloutManager(Inventory* inventory, DesiredStateManager* desired,
                               store::RolloutStore* store, RolloutMetrics* metrics, const Clock* clock)
    : inventory_(inventory), desired_(desired), store_(store), metrics_(metrics), clock_(clock) {}

Rollout* RolloutManager::ActiveLocked() {
  if (rollouts_.empty() || IsTerminal(rollouts_.back().phase())) return nullptr;
  return &rollouts_.back();
}

const Rollout* RolloutManager::NewestCompletedLocked() const {
  for (auto it = rollouts_.rbegin(); it != rollouts_.rend(); ++it) {
    if (it->phase() == weft::v1::ROLLOUT_PHASE_COMPLETED) return &*it;
  }
  return nullptr;
}

absl::Status RolloutManager::Recover() {
  ASSIGN_OR_RETURN(store::StoredRollouts stored, store_->LoadAll());
  absl::MutexLock lock(&mu_);
  const absl::Time now = clock_->Now();
  std::sort(stored.rollouts.begin(), stored.rollouts.end(),
            [](const Rollout& a, const Rollout& b) { return a.version() < b.version(); });
  rollouts_ = std::move(stored.rollouts);
  for (const Rollout& r : rollouts_) {
    next_version_ = std::max(next_version_, std::max(r.version(), r.rollback_version()) + 1);
  }
  const bool cannot_tell = !stored.unreadable.empty();
  for (const std::string& path : stored.unreadable) {
    WEFT_LOG(ERROR) << "rollout record unreadable, moved aside path=" << path
                    << " effect=\"nodes it changed are returned to their last good state\"";
    if (absl::Status moved = store_->Quarantine(path); !moved.ok()) {
      WEFT_LOG(ERROR) << "cannot move the record aside: " << moved.message();
    }
  }
  if (cannot_tell) unexplained_version_ = next_version_++;

  Rollout* active = ActiveLocked();
  if (active != nullptr) {
    weft::v1::RolloutStep& step = *active->mutable_steps(active->current_step());
    const std::string phase = RolloutPhaseName(active->phase());
    if (cannot_tell && !RollingBackOrBack(active->phase())) {
      // The pushes are made by adoption: the inventory is empty until agents register.
      StartRollback(*active,
                    "the controller restarted and another rollout record was unreadable",
                    now);
    } else {
      switch (active->phase()) {
        case weft::v1::ROLLOUT_PHASE_CANARY:
        case weft::v1::ROLLOUT_PHASE_WAVE:
          // Agents need time to reconnect before silence counts as a NACK.
          if (step.started_us() != 0) step.set_started_us(absl::ToUnixMicros(now));
          break;
        case weft::v1::ROLLOUT_PHASE_BAKING:
          step.set_applied_us(absl::ToUnixMicros(now));
          active->set_regression_since_us(0);
          break;
        case weft::v1::ROLLOUT_PHASE_ROLLING_BACK:
          active->set_phase_since_us(absl::ToUnixMicros(now));
          break;
        default:
          break;
      }
      weft::v1::RolloutEvent* event = active->add_history();
      event->set_at_us(absl::ToUnixMicros(now));
      event->set_message(absl::StrCat("controller restarted; resumed in ", phase,
                                      active->phase() == weft::v1::ROLLOUT_PHASE_BAKING
                                          ? " (the bake starts over)"
                                          : ""));
    }
    if (absl::Status saved = store_->Save(*active); !saved.ok()) {
      WEFT_LOG(ERROR) << "cannot save rollout " << active->id() << ": " << saved.message();
    }
    WEFT_LOG(INFO) << "rollout resumed id=" << active->id() << " version=" << active->version()
                   << " phase=" << RolloutPhaseName(active->phase());
  }
  WEFT_LOG(INFO) << "rollouts recovered count=" << rollouts_.size()
                 << " unreadable=" << stored.unreadable.size()
                 << " next_version=" << next_version_;
  PublishLocked();
  return absl::OkStatus();
}

absl::StatusOr<weft::v1::ValidatePolicyResponse> RolloutManager::Validate(
    const weft::v1::PolicyRequest& request) const {
  ASSIGN_OR_RETURN(weft::v1::Policy policy,
                   ParsePolicy(request.policy_yaml(), request.source_name()));
  weft::v1::ValidatePolicyResponse response;
  response.set_nodes(inventory_->ListNodes().size());
  return response;
}

absl::StatusOr<weft::v1::DiffPolicyResponse> RolloutManager::Diff(
    const weft::v1::PolicyRequest& request) const {
  ASSIGN_OR_RETURN(weft::v1::Policy policy,
                   ParsePolicy(request.policy_yaml(), request.source_name()));
  std::map<std::string, std::optional<weft::v1::DesiredState>> current;
  std::map<std::string, weft::v1::DesiredState> next;
  for (const weft::v1::NodeStatus& node : inventory_->ListNodes()) {
    const std::string& name = node.info().name();
    std::optional<NodeSync> sync = desired_->Get(name);
    current[name] = sync.has_value() ? std::optional(sync->desired) : std::nullopt;
    next[name] = CompileDesiredState(policy, node.info());
  }
  return DiffDesiredStates(current, next);
}

absl::StatusOr<Rollout> RolloutManager::Start(const weft::v1::PolicyRequest& request,
                                              const std::string& started_by) {
  ASSIGN_OR_RETURN(weft::v1::Policy policy,
                   ParsePolicy(request.policy_yaml(), request.source_name()));
  absl::MutexLock lock(&mu_);
  return StartLocked(policy, request.source_name(), started_by, clock_->Now());
}

absl::StatusOr<Rollout> RolloutManager::StartPolicy(const weft::v1::Policy& policy,
                                                    const std::string& source,
                                                    const std::string& started_by) {
  absl::MutexLock lock(&mu_);
  return StartLocked(policy, source, started_by, clock_->Now());
}

absl::StatusOr<weft::v1::Policy> RolloutManager::PolicyInForce() const {
  absl::MutexLock lock(&mu_);
  const Rollout* completed = NewestCompletedLocked();
  if (completed == nullptr) {
    return absl::FailedPreconditionError(
        "no policy is in force: no rollout has completed yet (weftctl rollout start POLICY)");
  }
  return completed->policy();
}

absl::StatusOr<Rollout> RolloutManager::StartLocked(const weft::v1::Policy& policy,
                                                    const std::string& source,
                                                    const std::string& started_by,
                                                    absl::Time now) {
  if (const Rollout* active = ActiveLocked()) {
    return absl::FailedPreconditionError(
        absl::StrCat("rollout ", active->id(), " is ", RolloutPhaseName(active->phase()),
                     "; wait for it to finish or abort it (weftctl rollout abort)"));
  }
  const std::vector<weft::v1::NodeStatus> nodes = inventory_->ListNodes();
  const std::vector<FleetNode> fleet = FleetLocked(nodes);
  const Rollout* previous = NewestCompletedLocked();
  const uint64_t version = next_version_;
  ASSIGN_OR_RETURN(Rollout rollout,
                   PlanRollout(absl::StrCat("rollout-", version), policy, version,
                               previous != nullptr ? &previous->policy() : nullptr,
                               previous != nullptr ? previous->version() : 0, fleet, now, source));
  rollout.set_started_by(started_by);
  if (absl::Status saved = store_->Save(rollout); !saved.ok()) {
    return absl::InternalError(
        absl::StrCat("cannot record the rollout, so it was not started: ", saved.message()));
  }
  next_version_ = version + 2;  // version + 1 is its rollback's
  rollouts_.push_back(std::move(rollout));
  Rollout& started = rollouts_.back();
  WEFT_LOG(INFO) << "rollout started id=" << started.id() << " version=" << version
                 << " source=" << source << " started_by=" << started_by
                 << " steps=" << started.steps_size();
  ExecuteLocked(started, AdvanceRollout(started, fleet, now), nodes);
  return started;
}

void RolloutManager::WatchPolicyFile(std::string path, absl::Duration grace) {
  absl::MutexLock lock(&mu_);
  policy_file_ = std::move(path);
  policy_grace_ = grace;
}

void RolloutManager::CheckPolicyFileLocked(absl::Time now) {
  if (policy_file_.empty() || now - first_tick_ < policy_grace_ || ActiveLocked() != nullptr) {
    return;
  }
  struct stat st;
  const int64_t mtime_ns =
      stat(policy_file_.c_str(), &st) != 0
          ? 0
          : static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
  if (mtime_ns == policy_mtime_ns_) return;
  policy_mtime_ns_ = mtime_ns;
  absl::StatusOr<weft::v1::Policy> policy = LoadPolicyFile(policy_file_);
  if (!policy.ok()) {
    WEFT_LOG(ERROR) << "policy_file not rolled out: " << policy.status().message();
    return;
  }
  if (!rollouts_.empty() &&
      google::protobuf::util::MessageDifferencer::Equals(*policy, rollouts_.back().policy())) {
    return;  // what the newest rollout already did (or rolled back)
  }
  absl::StatusOr<Rollout> started =
      StartLocked(*policy, absl::StrCat("policy_file ", policy_file_), "controller", now);
  if (!started.ok()) {
    WEFT_LOG(WARNING) << "policy_file rollout not started, will retry: "
                      << started.status().message();
    policy_mtime_ns_ = -1;
  }
}

absl::StatusOr<Rollout> RolloutManager::Get(const std::string& id) const {
  absl::MutexLock lock(&mu_);
  if (rollouts_.empty()) return absl::NotFoundError("no rollout has been started");
  if (id.empty()) return rollouts_.back();
  for (const Rollout& r : rollouts_) {
    if (r.id() == id) return r;
  }
  return absl::NotFoundError(absl::StrCat("no rollout ", id, " (weftctl rollout history)"));
}

absl::StatusOr<Rollout*> RolloutManager::OperatorTargetLocked(const std::string& id) {
  Rollout* active = ActiveLocked();
  if (active == nullptr) {
    return absl::FailedPreconditionError("no rollout is active");
  }
  if (!id.empty() && id != active->id()) {
    return absl::NotFoundError(
        absl::StrCat("rollout ", id, " is not the active one (", active->id(), ")"));
  }
  return active;
}

absl::StatusOr<Rollout> RolloutManager::Pause(const std::string& id, const std::string& who) {
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(Rollout * rollout, OperatorTargetLocked(id));
  RETURN_IF_ERROR(PauseRollout(*rollout, clock_->Now(), who));
  RolloutActions actions;
  actions.changed = true;
  ExecuteLocked(*rollout, actions, {});
  return *rollout;
}

absl::StatusOr<Rollout> RolloutManager::Resume(const std::string& id, const std::string& who) {
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(Rollout * rollout, OperatorTargetLocked(id));
  RETURN_IF_ERROR(ResumeRollout(*rollout, clock_->Now(), who));
  RolloutActions actions;
  actions.changed = true;
  ExecuteLocked(*rollout, actions, {});
  return *rollout;
}

absl::StatusOr<Rollout> RolloutManager::Abort(const std::string& id, const std::string& reason,
                                              const std::string& who) {
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(Rollout * rollout, OperatorTargetLocked(id));
  ASSIGN_OR_RETURN(RolloutActions actions, AbortRollout(*rollout, reason, clock_->Now(), who));
  ExecuteLocked(*rollout, actions, inventory_->ListNodes());
  return *rollout;
}

weft::v1::ListRolloutsResponse RolloutManager::List() const {
  absl::MutexLock lock(&mu_);
  weft::v1::ListRolloutsResponse response;
  for (auto it = rollouts_.rbegin(); it != rollouts_.rend(); ++it) {
    *response.add_rollouts() = *it;
  }
  return response;
}

void RolloutManager::Tick(absl::Duration min_interval) {
  absl::MutexLock lock(&mu_);
  const absl::Time now = clock_->Now();
  if (now - last_tick_ < min_interval) return;
  last_tick_ = now;
  if (first_tick_ == absl::InfinitePast()) first_tick_ = now;
  // Without any rollout there is nothing to adopt or step: skip the inventory copy.
  if (rollouts_.empty() && unexplained_version_ == 0) {
    CheckPolicyFileLocked(now);
    return;
  }
  const std::vector<weft::v1::NodeStatus> nodes = inventory_->ListNodes();
  AdoptLocked(nodes);
  CheckPolicyFileLocked(now);
  Rollout* active = ActiveLocked();
  if (active == nullptr) return;
  ExecuteLocked(*active, AdvanceRollout(*active, FleetLocked(nodes), now), nodes);
}

std::vector<FleetNode> RolloutManager::FleetLocked(
    const std::vector<weft::v1::NodeStatus>& nodes) const {
  std::vector<FleetNode> fleet;
  fleet.reserve(nodes.size());
  for (const weft::v1::NodeStatus& status : nodes) {
    FleetNode node;
    node.name = status.info().name();
    node.rack = status.info().rack();
    node.pod = status.info().pod();
    node.reporting = status.reporting();
    node.nics = status.info().nics_size();
    node.rates = status.rates();
    if (std::optional<NodeSync> sync = desired_->Get(node.name)) {
      node.applied_version = sync->applied_version;
      node.nacked_version = sync->nacked_version;
    }
    fleet.push_back(std::move(node));
  }
  return fleet;
}

std::optional<RolloutManager::Expected> RolloutManager::ExpectedLocked(
    const weft::v1::NodeInfo& node) const {
  std::optional<Expected> expected;
  for (auto it = rollouts_.rbegin(); it != rollouts_.rend() && !expected; ++it) {
    const Rollout& r = *it;
    if (RollingBackOrBack(r.phase()) && Contains(r.rollback_nodes(), node.name())) {
      expected = Expected{RollbackState(r, node), r.previous_version()};
    } else if (r.phase() == weft::v1::ROLLOUT_PHASE_COMPLETED ||
               (!IsTerminal(r.phase()) && !RollingBackOrBack(r.phase()) &&
                WasSent(r, node.name()))) {
      const bool completed = r.phase() == weft::v1::ROLLOUT_PHASE_COMPLETED;
      expected = Expected{NewState(r, node), completed ? r.version() : r.previous_version()};
    }
  }
  if (unexplained_version_ == 0) return expected;
  // A record was lost: an applied version that no record explains is replaced by the
  // last good state under a fresh version.
  const std::optional<uint64_t> applied = desired_->UnadoptedApplied(node.name());
  if (!applied.has_value() || *applied == 0) return expected;
  if (expected.has_value() && *applied == expected->state.version()) return expected;
  bool explained = false;
  for (const Rollout& r : rollouts_) {
    explained |= *applied == r.version() || *applied == r.rollback_version();
  }
  if (explained) return expected;
  if (!expected.has_value()) expected = Expected{FirmwareDefaultState(node.name()), 0};
  expected->state.set_version(unexplained_version_);
  return expected;
}

void RolloutManager::AdoptLocked(const std::vector<weft::v1::NodeStatus>& nodes) {
  for (const weft::v1::NodeStatus& status : nodes) {
    if (desired_->Get(status.info().name()).has_value()) continue;
    std::optional<Expected> expected = ExpectedLocked(status.info());
    if (!expected.has_value()) continue;
    if (desired_->Adopt(std::move(expected->state), expected->last_good_version)) {
      WEFT_LOG(DEBUG) << "desired state adopted node=" << status.info().name();
    }
  }
}

void RolloutManager::ExecuteLocked(Rollout& rollout, const RolloutActions& actions,
                                   const std::vector<weft::v1::NodeStatus>& nodes) {
  absl::flat_hash_map<std::string, const weft::v1::NodeInfo*> info;
  for (const weft::v1::NodeStatus& n : nodes) info[n.info().name()] = &n.info();
  auto push = [&](const std::vector<std::string>& names, bool rollback) {
    for (const std::string& name : names) {
      auto it = info.find(name);
      if (it == info.end()) continue;  // gone from the inventory; adopted if it returns
      weft::v1::DesiredState state =
          rollback ? RollbackState(rollout, *it->second) : NewState(rollout, *it->second);
      if (absl::Status set = desired_->SetDesired(std::move(state)); !set.ok()) {
        WEFT_LOG(ERROR) << "cannot set desired state node=" << name << ": " << set.message();
      }
    }
  };
  push(actions.push_new, false);
  push(actions.push_rollback, true);
  if (actions.finished) {
    if (rollout.phase() == weft::v1::ROLLOUT_PHASE_COMPLETED) {
      absl::flat_hash_set<std::string> planned;
      for (const weft::v1::RolloutStep& step : rollout.steps()) {
        for (const std::string& n : step.nodes()) {
          desired_->MarkGood(n, rollout.version());
          planned.insert(n);
        }
      }
      // Nodes that registered while it ran were given the last good state; the new
      // version is the last good one now.
      std::vector<std::string> late;
      for (const auto& [name, node_info] : info) {
        if (!planned.contains(name)) late.push_back(name);
      }
      push(late, false);
    }
    metrics_->RolloutFinished(rollout.phase());
    WEFT_LOG(INFO) << "rollout finished id=" << rollout.id()
                   << " phase=" << RolloutPhaseName(rollout.phase()) << " reason=\""
                   << rollout.reason() << "\"";
  } else if (actions.changed) {
    WEFT_LOG(INFO) << "rollout step id=" << rollout.id()
                   << " phase=" << RolloutPhaseName(rollout.phase())
                   << " step=" << rollout.current_step() << " event=\""
                   << (rollout.history().empty() ? "" : rollout.history().rbegin()->message())
                   << "\"";
  }
  if (actions.changed) {
    if (absl::Status saved = store_->Save(rollout); !saved.ok()) {
      WEFT_LOG(ERROR) << "cannot save rollout " << rollout.id() << ": " << saved.message();
    }
  }
  PublishLocked();
}

void RolloutManager::PublishLocked() {
  if (rollouts_.empty()) {
    metrics_->SetPhase(weft::v1::ROLLOUT_PHASE_IDLE);
    return;
  }
  metrics_->SetPhase(rollouts_.back().phase());
  metrics_->SetWave(rollouts_.back().current_step());
}

}  // namespace weft::controller
