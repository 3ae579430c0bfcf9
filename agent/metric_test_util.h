// Test helper: reads one series' value out of a prometheus::Registry in-process, the
// way a scrape would see it, so tests assert metric values instead of log lines.
// Thread-safe (Registry::Collect is).
#ifndef WEFT_AGENT_METRIC_TEST_UTIL_H_
#define WEFT_AGENT_METRIC_TEST_UTIL_H_

#include <map>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"
#include "prometheus/registry.h"

namespace weft::agent {

// The value of the counter or gauge `name` whose labels are exactly `labels`;
// nullopt when the family or that series does not exist.
std::optional<double> MetricValue(const prometheus::Registry& registry, absl::string_view name,
                                  const std::map<std::string, std::string>& labels = {});

}  // namespace weft::agent

#endif  // WEFT_AGENT_METRIC_TEST_UTIL_H_
