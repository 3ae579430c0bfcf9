#include "agent/tunables/file_dcqcn.h"

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "agent/tunables/tunable_params.h"
#include "common/tunable_ranges.h"

namespace weft::agent {
namespace {

// DcqcnParams name -> MLNX_OFED ecn file (roce-facts.md §2). np_cnp_prio_mode has none.
constexpr std::pair<const char*, const char*> kOfedFiles[] = {
    {"rp_clamp_tgt_rate", "roce_rp/clamp_tgt_rate"},
    {"rp_clamp_tgt_rate_ati", "roce_rp/clamp_tgt_rate_after_time_inc"},
    {"rp_time_reset", "roce_rp/rpg_time_reset"},
    {"rp_byte_reset", "roce_rp/rpg_byte_reset"},
    {"rp_threshold", "roce_rp/rpg_threshold"},
    {"rp_ai_rate", "roce_rp/rpg_ai_rate"},
    {"rp_max_rate", "roce_rp/rpg_max_rate"},
    {"rp_hai_rate", "roce_rp/rpg_hai_rate"},
    {"rp_min_dec_fac", "roce_rp/rpg_min_dec_fac"},
    {"rp_min_rate", "roce_rp/rpg_min_rate"},
    {"rp_rate_to_set_on_first_cnp", "roce_rp/rate_to_set_on_first_cnp"},
    {"rp_dce_tcp_g", "roce_rp/dce_tcp_g"},
    {"rp_dce_tcp_rtt", "roce_rp/dce_tcp_rtt"},
    {"rp_rate_reduce_monitor_period", "roce_rp/rate_reduce_monitor_period"},
    {"rp_initial_alpha_value", "roce_rp/initial_alpha_value"},
    {"rp_gd", "roce_rp/rpg_gd"},
    {"np_min_time_between_cnps", "roce_np/min_time_between_cnps"},
    {"np_cnp_dscp", "roce_np/cnp_dscp"},
    {"np_cnp_prio", "roce_np/cnp_802p_prio"},
};

}  // namespace

std::string FileDcqcnTunables::CcParamsDir(const std::string& pci_address) {
  return absl::StrCat("sys/kernel/debug/mlx5/", pci_address, "/cc_params");
}

std::string FileDcqcnTunables::OfedEcnDir(const std::string& netdev) {
  return absl::StrCat("sys/class/net/", netdev, "/ecn");
}

std::unique_ptr<FileDcqcnTunables> FileDcqcnTunables::ForCcParams(const std::string& root,
                                                                  std::string device,
                                                                  const std::string& pci_address) {
  auto tunables = std::unique_ptr<FileDcqcnTunables>(new FileDcqcnTunables(root, std::move(device)));
  const std::string dir = CcParamsDir(pci_address);
  for (const DcqcnParamRange& range : DcqcnParamRanges()) {
    tunables->files_[range.name] = absl::StrCat(dir, "/", range.name);
  }
  return tunables;
}

std::unique_ptr<FileDcqcnTunables> FileDcqcnTunables::ForOfedEcn(const std::string& root,
                                                                 std::string device,
                                                                 const std::string& netdev) {
  auto tunables = std::unique_ptr<FileDcqcnTunables>(new FileDcqcnTunables(root, std::move(device)));
  const std::string dir = OfedEcnDir(netdev);
  for (const auto& [parameter, file] : kOfedFiles) {
    tunables->files_[parameter] = absl::StrCat(dir, "/", file);
  }
  tunables->enable_dirs_[kRpEnabledParam] = absl::StrCat(dir, "/roce_rp/enable");
  tunables->enable_dirs_[kNpEnabledParam] = absl::StrCat(dir, "/roce_np/enable");
  return tunables;
}

std::vector<std::string> FileDcqcnTunables::Parameters() const {
  std::vector<std::string> out;
  for (const std::string& name : AllParameterNames()) {
    if (files_.count(name) > 0 || enable_dirs_.count(name) > 0) out.push_back(name);
  }
  return out;
}

absl::StatusOr<std::string> FileDcqcnTunables::Read(absl::string_view parameter) {
  if (auto it = files_.find(std::string(parameter)); it != files_.end()) {
    absl::StatusOr<uint64_t> value = sysfs_.ReadU64(it->second);
    if (!value.ok()) return value.status();
    return absl::StrCat(*value);
  }
  if (auto it = enable_dirs_.find(std::string(parameter)); it != enable_dirs_.end()) {
    std::vector<uint32_t> enabled;
    for (uint32_t priority = 0; priority < kNumPriorities; ++priority) {
      absl::StatusOr<uint64_t> on = sysfs_.ReadU64(absl::StrCat(it->second, "/", priority));
      if (!on.ok()) return on.status();
      if (*on != 0) enabled.push_back(priority);
    }
    return FormatPriorityList(enabled);
  }
  return absl::UnimplementedError(absl::StrCat("no file for parameter '", parameter, "'"));
}

absl::Status FileDcqcnTunables::Write(absl::string_view parameter, absl::string_view value) {
  if (auto it = files_.find(std::string(parameter)); it != files_.end()) {
    uint32_t number = 0;
    if (!absl::SimpleAtoi(value, &number)) {
      return absl::InvalidArgumentError(absl::StrCat("'", value, "' is not an unsigned integer"));
    }
    return sysfs_.WriteString(it->second, absl::StrCat(number));
  }
  if (auto it = enable_dirs_.find(std::string(parameter)); it != enable_dirs_.end()) {
    absl::StatusOr<std::vector<uint32_t>> enabled = ParsePriorityList(value);
    if (!enabled.ok()) return enabled.status();
    for (uint32_t priority = 0; priority < kNumPriorities; ++priority) {
      const bool on = std::find(enabled->begin(), enabled->end(), priority) != enabled->end();
      absl::Status written = sysfs_.WriteString(absl::StrCat(it->second, "/", priority), on ? "1" : "0");
      if (!written.ok()) return written;
    }
    return absl::OkStatus();
  }
  return absl::UnimplementedError(absl::StrCat("no file for parameter '", parameter, "'"));
}

}  // namespace weft::agent
