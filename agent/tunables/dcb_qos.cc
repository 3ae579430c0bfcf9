#include "agent/tunables/dcb_qos.h"

#include <map>

#include "absl/strings/str_cat.h"
#include "agent/tunables/tunable_params.h"

namespace weft::agent {
namespace {

std::map<uint32_t, uint32_t> DscpEntries(const std::vector<dcb_app>& apps) {
  std::map<uint32_t, uint32_t> map;
  for (const dcb_app& app : apps) {
    if (app.selector == IEEE_8021QAZ_APP_SEL_DSCP) map[app.protocol] = app.priority;
  }
  return map;
}

dcb_app DscpApp(uint32_t dscp, uint32_t priority) {
  dcb_app app{};
  app.selector = IEEE_8021QAZ_APP_SEL_DSCP;
  app.priority = static_cast<uint8_t>(priority);
  app.protocol = static_cast<uint16_t>(dscp);
  return app;
}

}  // namespace

DcbQosTunables::DcbQosTunables(std::string device, std::string netdev, DcbClient* dcb)
    : device_(std::move(device)), netdev_(std::move(netdev)), dcb_(dcb) {}

std::vector<std::string> DcbQosTunables::Parameters() const {
  return {kEtsParam, kPfcParam, kDscpMapParam, kTrustParam};
}

absl::StatusOr<DcbIeeeState> DcbQosTunables::Get() { return dcb_->GetIeee(netdev_); }

absl::StatusOr<std::string> DcbQosTunables::Read(absl::string_view parameter) {
  absl::StatusOr<DcbIeeeState> state = Get();
  if (!state.ok()) return state.status();
  if (parameter == kEtsParam) {
    if (!state->has_ets) {
      return absl::UnimplementedError(absl::StrCat(netdev_, ": the driver reports no IEEE ETS"));
    }
    EtsConfig ets;
    for (int i = 0; i < 8; ++i) {
      ets.prio_tc[i] = state->ets.prio_tc[i];
      ets.tsa[i] = state->ets.tc_tsa[i];
      ets.bw[i] = state->ets.tc_tx_bw[i];
    }
    return FormatEts(ets);
  }
  if (parameter == kPfcParam) {
    if (!state->has_pfc) {
      return absl::UnimplementedError(absl::StrCat(netdev_, ": the driver reports no IEEE PFC"));
    }
    std::vector<uint32_t> enabled;
    for (uint32_t p = 0; p < 8; ++p) {
      if (state->pfc.pfc_en & (1u << p)) enabled.push_back(p);
    }
    return FormatPriorityList(enabled);
  }
  if (parameter == kDscpMapParam) return FormatDscpMap(DscpEntries(state->apps));
  if (parameter == kTrustParam) return std::string(DscpEntries(state->apps).empty() ? "pcp" : "dscp");
  return absl::UnimplementedError(absl::StrCat("DCB has no parameter '", parameter, "'"));
}

absl::Status DcbQosTunables::Write(absl::string_view parameter, absl::string_view value) {
  if (parameter == kTrustParam) return absl::OkStatus();  // follows dscp_to_priority
  if (parameter == kDscpMapParam) return WriteDscpMap(value);
  absl::StatusOr<DcbIeeeState> state = Get();
  if (!state.ok()) return state.status();
  if (parameter == kEtsParam) {
    absl::StatusOr<EtsConfig> ets = ParseEts(value);
    if (!ets.ok()) return ets.status();
    ieee_ets next = state->ets;  // keeps cbs, rx and recommended fields
    next.willing = 0;
    for (int i = 0; i < 8; ++i) {
      next.prio_tc[i] = static_cast<uint8_t>(ets->prio_tc[i]);
      next.tc_tsa[i] = static_cast<uint8_t>(ets->tsa[i]);
      next.tc_tx_bw[i] = static_cast<uint8_t>(ets->bw[i]);
    }
    return dcb_->SetEts(netdev_, next);
  }
  if (parameter == kPfcParam) {
    absl::StatusOr<std::vector<uint32_t>> enabled = ParsePriorityList(value);
    if (!enabled.ok()) return enabled.status();
    ieee_pfc next = state->pfc;  // keeps mbc and delay
    next.pfc_en = 0;
    for (uint32_t p : *enabled) next.pfc_en |= static_cast<uint8_t>(1u << p);
    return dcb_->SetPfc(netdev_, next);
  }
  return absl::UnimplementedError(absl::StrCat("DCB has no parameter '", parameter, "'"));
}

absl::Status DcbQosTunables::WriteDscpMap(absl::string_view value) {
  absl::StatusOr<std::map<uint32_t, uint32_t>> desired = ParseDscpMap(value);
  if (!desired.ok()) return desired.status();
  absl::StatusOr<DcbIeeeState> state = Get();
  if (!state.ok()) return state.status();
  // Add first, so the port never passes through PCP trust while entries change; mlx5
  // replaces an entry of the same DSCP, other drivers keep both until the delete below.
  std::map<uint32_t, uint32_t> current = DscpEntries(state->apps);
  std::vector<dcb_app> add;
  for (const auto& [dscp, priority] : *desired) {
    auto it = current.find(dscp);
    if (it == current.end() || it->second != priority) add.push_back(DscpApp(dscp, priority));
  }
  if (!add.empty()) {
    absl::Status added = dcb_->SetApps(netdev_, add);
    if (!added.ok()) return added;
    state = Get();
    if (!state.ok()) return state.status();
  }
  std::vector<dcb_app> remove;
  for (const dcb_app& app : state->apps) {
    if (app.selector != IEEE_8021QAZ_APP_SEL_DSCP) continue;
    auto it = desired->find(app.protocol);
    if (it == desired->end() || it->second != app.priority) remove.push_back(app);
  }
  if (remove.empty()) return absl::OkStatus();
  return dcb_->DelApps(netdev_, remove);
}

}  // namespace weft::agent
