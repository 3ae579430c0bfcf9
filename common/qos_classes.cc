#include "common/qos_classes.h"

#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace weft {
namespace {

constexpr uint32_t kEct0 = 0b10;

constexpr QosClass kQosClasses[] = {
    {"training", 26, 26 << 2 | kEct0},
    {"storage", 24, 24 << 2 | kEct0},
    {"control", 16, 16 << 2 | kEct0},
};

}  // namespace

absl::Span<const QosClass> QosClasses() { return kQosClasses; }

absl::StatusOr<QosClass> FindQosClass(absl::string_view name) {
  if (name.empty()) return kQosClasses[0];
  for (const QosClass& c : kQosClasses) {
    if (c.name == name) return c;
  }
  std::vector<absl::string_view> names;
  for (const QosClass& c : kQosClasses) names.push_back(c.name);
  return absl::InvalidArgumentError(absl::StrCat("unknown qos_class '", name,
                                                 "'; accepted: ", absl::StrJoin(names, ", ")));
}

}  // namespace weft
