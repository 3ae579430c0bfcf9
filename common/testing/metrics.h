// Test helper for every component: reads one series' value out of a
// prometheus::Registry in-process, the way a scrape would see it, so tests assert metric
// values instead of log lines. In namespace weft so weft::agent, weft::controller, ...
// tests call it unqualified.
// Thread-safe (Registry::Collect is).
#ifndef WEFT_COMMON_TESTING_METRICS_H_
#define WEFT_COMMON_TESTING_METRICS_H_

#include <map>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"
#include "prometheus/registry.h"

namespace weft {

// The value of the counter or gauge `name` whose labels are exactly `labels` (a
// histogram answers as "<name>_count", its number of observations); nullopt when the
// family or that series does not exist.
std::optional<double> MetricValue(const prometheus::Registry& registry, absl::string_view name,
                                  const std::map<std::string, std::string>& labels = {});

}  // namespace weft

#endif  // WEFT_COMMON_TESTING_METRICS_H_
