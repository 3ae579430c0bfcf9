#include "agent/agent_flags.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace weft::agent {

absl::StatusOr<weft::v1::SimFault> ParseSimFault(absl::string_view name) {
  std::string upper = absl::AsciiStrToUpper(absl::StripAsciiWhitespace(name));
  absl::string_view bare = upper;
  absl::ConsumePrefix(&bare, "SIM_FAULT_");
  weft::v1::SimFault fault;
  if (bare != "NONE" && bare != "UNSPECIFIED" &&
      weft::v1::SimFault_Parse(absl::StrCat("SIM_FAULT_", bare), &fault)) {
    return fault;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("flag --fault: value '", name,
                   "' is not a simulated fault; accepted: pfc_storm, link_down, "
                   "retransmits, dead, reject_tunables (comma-separated or repeated), or none"));
}

absl::Status ApplyAgentFlags(const AgentFlagOverrides& flags, weft::v1::AgentConfig* config) {
  if (flags.node) config->set_node_name(*flags.node);
  if (flags.rack) config->set_rack(*flags.rack);
  if (flags.pod) config->set_pod(*flags.pod);
  if (flags.controller) config->set_controller_address(*flags.controller);
  if (flags.metrics) config->set_metrics_address(*flags.metrics);
  if (flags.health) config->set_health_address(*flags.health == "off" ? "" : *flags.health);
  if (flags.interval_ms) config->set_interval_ms(*flags.interval_ms);
  if (flags.backend) config->set_backend(*flags.backend);
  if (flags.root) config->mutable_linux()->set_root(*flags.root);
  if (flags.fabric) config->mutable_fabric()->set_address(*flags.fabric);
  if (flags.lldp) config->set_lldp(*flags.lldp);
  if (flags.tunables_dry_run) config->set_tunables_dry_run(*flags.tunables_dry_run);
  if (flags.job_socket) config->set_job_socket(*flags.job_socket);
  if (flags.probe_port) config->mutable_probe()->set_udp_port(*flags.probe_port);
  if (flags.nic_ipv4) {
    google::protobuf::RepeatedPtrField<std::string>* addresses = nullptr;
    if (config->backend() == "simulated") addresses = config->mutable_simulated()->mutable_nic_ipv4();
    if (config->backend() == "fabric") addresses = config->mutable_fabric()->mutable_nic_ipv4();
    if (addresses == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          "flag --nic_ipv4: backend '", config->backend(),
          "' reads its NICs' addresses from the NICs; accepted only with --backend simulated "
          "or fabric"));
    }
    addresses->Clear();
    for (absl::string_view address : absl::StrSplit(*flags.nic_ipv4, ',', absl::SkipWhitespace())) {
      addresses->Add(std::string(absl::StripAsciiWhitespace(address)));
    }
  }
  weft::v1::SimulatedBackendConfig* sim = config->mutable_simulated();
  if (flags.nics) sim->set_nics(*flags.nics);
  if (flags.gpus) sim->set_gpus(*flags.gpus);
  if (flags.traffic_level) sim->set_traffic_level(*flags.traffic_level);
  if (flags.fault_delay_ms) sim->set_fault_delay_ms(*flags.fault_delay_ms);
  if (flags.faults) {
    sim->clear_faults();
    for (absl::string_view name : absl::StrSplit(*flags.faults, ',', absl::SkipWhitespace())) {
      if (absl::AsciiStrToLower(absl::StripAsciiWhitespace(name)) == "none") continue;
      absl::StatusOr<weft::v1::SimFault> fault = ParseSimFault(name);
      if (!fault.ok()) return fault.status();
      sim->add_faults(*fault);
    }
  }
  return absl::OkStatus();
}

std::vector<std::string> MergeRepeatedFlag(const std::vector<std::string>& args,
                                           absl::string_view name) {
  const std::string long_form = absl::StrCat("--", name);
  const std::string short_form = absl::StrCat("-", name);
  std::vector<std::string> out;
  std::vector<std::string> values;
  bool terminated = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (i == 0 || terminated) {
      out.push_back(arg);
      continue;
    }
    if (arg == "--") {
      terminated = true;
      out.push_back(arg);
      continue;
    }
    if (arg == long_form || arg == short_form) {
      if (i + 1 < args.size()) values.push_back(args[++i]);
      continue;
    }
    absl::string_view rest = arg;
    if (absl::ConsumePrefix(&rest, long_form + "=") ||
        absl::ConsumePrefix(&rest, short_form + "=")) {
      values.emplace_back(rest);
      continue;
    }
    out.push_back(arg);
  }
  if (!values.empty()) {
    // Before any "--", so absl still parses it as a flag.
    auto at = std::find(out.begin() + (out.empty() ? 0 : 1), out.end(), "--");
    out.insert(at, absl::StrCat(long_form, "=", absl::StrJoin(values, ",")));
  }
  return out;
}

}  // namespace weft::agent
