#include "agent/tunables/rdma_cm_tos.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "agent/tunables/tunable_params.h"

namespace weft::agent {

RdmaCmTosTunables::RdmaCmTosTunables(const std::string& root, std::string device, uint32_t port)
    : sysfs_(root), device_(std::move(device)), port_(port) {}

std::string RdmaCmTosTunables::GroupDir() const { return absl::StrCat(kRdmaCmDir, "/", device_); }

std::string RdmaCmTosTunables::TosFile() const {
  return absl::StrCat(GroupDir(), "/ports/", port_, "/default_roce_tos");
}

std::vector<std::string> RdmaCmTosTunables::Parameters() const { return {kRoceTosParam}; }

absl::StatusOr<std::string> RdmaCmTosTunables::Read(absl::string_view parameter) {
  if (parameter != kRoceTosParam) {
    return absl::UnimplementedError(absl::StrCat("no file for parameter '", parameter, "'"));
  }
  if (!sysfs_.Exists(GroupDir())) return std::string("0");  // no group yet: rdma_cm uses 0
  absl::StatusOr<uint64_t> tos = sysfs_.ReadU64(TosFile());
  if (!tos.ok()) return tos.status();
  return absl::StrCat(*tos);
}

absl::Status RdmaCmTosTunables::Write(absl::string_view parameter, absl::string_view value) {
  if (parameter != kRoceTosParam) {
    return absl::UnimplementedError(absl::StrCat("no file for parameter '", parameter, "'"));
  }
  uint32_t tos = 0;
  if (!absl::SimpleAtoi(value, &tos)) {
    return absl::InvalidArgumentError(absl::StrCat("'", value, "' is not an unsigned integer"));
  }
  if (!sysfs_.Exists(GroupDir())) {
    absl::Status made = sysfs_.MakeDir(GroupDir());
    if (!made.ok()) return made;
  }
  return sysfs_.WriteString(TosFile(), absl::StrCat(tos));
}

}  // namespace weft::agent
