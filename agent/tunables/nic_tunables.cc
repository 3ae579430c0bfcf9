#include "agent/tunables/nic_tunables.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "agent/tunables/tunable_params.h"

namespace weft::agent {

RoutedNicTunables::RoutedNicTunables(std::string device,
                                     std::vector<std::unique_ptr<NicTunables>> parts,
                                     std::vector<Missing> missing)
    : device_(std::move(device)), parts_(std::move(parts)), missing_(std::move(missing)) {}

std::vector<std::string> RoutedNicTunables::Parameters() const {
  std::vector<std::string> out;
  for (const std::string& name : AllParameterNames()) {
    if (PartFor(name) != nullptr) out.push_back(name);
  }
  return out;
}

NicTunables* RoutedNicTunables::PartFor(absl::string_view parameter) const {
  for (const std::unique_ptr<NicTunables>& part : parts_) {
    std::vector<std::string> names = part->Parameters();
    if (std::find(names.begin(), names.end(), parameter) != names.end()) return part.get();
  }
  return nullptr;
}

absl::Status RoutedNicTunables::Unsupported(absl::string_view parameter) const {
  for (const Missing& missing : missing_) {
    if (std::find(missing.parameters.begin(), missing.parameters.end(), parameter) !=
        missing.parameters.end()) {
      return absl::UnimplementedError(absl::StrCat("not settable on this node: ", missing.reason));
    }
  }
  return absl::UnimplementedError(absl::StrCat("unknown parameter '", parameter, "'"));
}

absl::StatusOr<std::string> RoutedNicTunables::Read(absl::string_view parameter) {
  NicTunables* part = PartFor(parameter);
  if (part == nullptr) return Unsupported(parameter);
  return part->Read(parameter);
}

absl::Status RoutedNicTunables::Write(absl::string_view parameter, absl::string_view value) {
  NicTunables* part = PartFor(parameter);
  if (part == nullptr) return Unsupported(parameter);
  return part->Write(parameter, value);
}

}  // namespace weft::agent
