#include "agent/tunables/fake_dcb_client.h"

#include <cerrno>

#include "absl/strings/str_cat.h"

namespace weft::agent {

void FakeDcbClient::AddNetdev(const std::string& ifname) {
  DcbIeeeState state;
  state.has_ets = true;
  state.ets.ets_cap = 8;
  for (int tc = 0; tc < 8; ++tc) {
    state.ets.prio_tc[tc] = static_cast<uint8_t>(tc);
    state.ets.tc_tsa[tc] = IEEE_8021QAZ_TSA_ETS;
    state.ets.tc_tx_bw[tc] = tc < 4 ? 12 : 13;
  }
  state.has_pfc = true;
  state.pfc.pfc_cap = 8;
  netdevs_[ifname] = state;
}

void FakeDcbClient::FailSet(int n, absl::Status error) {
  fail_at_ = set_calls_ + n;
  fail_error_ = std::move(error);
}

absl::StatusOr<DcbIeeeState> FakeDcbClient::GetIeee(const std::string& ifname) {
  auto it = netdevs_.find(ifname);
  if (it == netdevs_.end()) return DcbErrnoStatus(-ENODEV, absl::StrCat(ifname, ": RTM_GETDCB"));
  return it->second;
}

absl::StatusOr<DcbIeeeState*> FakeDcbClient::ForSet(const std::string& ifname) {
  ++set_calls_;
  if (set_calls_ == fail_at_) return fail_error_;
  auto it = netdevs_.find(ifname);
  if (it == netdevs_.end()) return DcbErrnoStatus(-ENODEV, absl::StrCat(ifname, ": RTM_SETDCB"));
  return &it->second;
}

absl::Status FakeDcbClient::SetEts(const std::string& ifname, const ieee_ets& ets) {
  absl::StatusOr<DcbIeeeState*> state = ForSet(ifname);
  if (!state.ok()) return state.status();
  int ets_sum = 0;
  bool have_ets = false;
  for (int i = 0; i < 8; ++i) {
    if (ets.prio_tc[i] >= 8) return DcbErrnoStatus(-EINVAL, "RTM_SETDCB: the driver refused the setting");
    if (ets.tc_tsa[i] == IEEE_8021QAZ_TSA_ETS) {
      have_ets = true;
      ets_sum += ets.tc_tx_bw[i];
    }
  }
  if (have_ets && ets_sum != 100) {
    return DcbErrnoStatus(-EINVAL, absl::StrCat(ifname, ": RTM_SETDCB: the driver refused the setting"));
  }
  (*state)->ets = ets;
  return absl::OkStatus();
}

absl::Status FakeDcbClient::SetPfc(const std::string& ifname, const ieee_pfc& pfc) {
  absl::StatusOr<DcbIeeeState*> state = ForSet(ifname);
  if (!state.ok()) return state.status();
  (*state)->pfc = pfc;
  return absl::OkStatus();
}

absl::Status FakeDcbClient::SetApps(const std::string& ifname, const std::vector<dcb_app>& apps) {
  absl::StatusOr<DcbIeeeState*> state = ForSet(ifname);
  if (!state.ok()) return state.status();
  for (const dcb_app& app : apps) {
    std::vector<dcb_app>& table = (*state)->apps;
    for (auto it = table.begin(); it != table.end();) {
      const bool same_key = it->selector == app.selector && it->protocol == app.protocol;
      it = same_key ? table.erase(it) : it + 1;
    }
    table.push_back(app);
  }
  return absl::OkStatus();
}

absl::Status FakeDcbClient::DelApps(const std::string& ifname, const std::vector<dcb_app>& apps) {
  absl::StatusOr<DcbIeeeState*> state = ForSet(ifname);
  if (!state.ok()) return state.status();
  for (const dcb_app& app : apps) {
    std::vector<dcb_app>& table = (*state)->apps;
    bool found = false;
    for (auto it = table.begin(); it != table.end(); ++it) {
      if (it->selector == app.selector && it->protocol == app.protocol &&
          it->priority == app.priority) {
        table.erase(it);
        found = true;
        break;
      }
    }
    if (!found) return DcbErrnoStatus(-ENOENT, absl::StrCat(ifname, ": RTM_SETDCB DCB_CMD_IEEE_DEL"));
  }
  return absl::OkStatus();
}

}  // namespace weft::agent
