#include "common/testing/metrics.h"

#include <vector>

#include "prometheus/metric_family.h"

namespace weft {

std::optional<double> MetricValue(const prometheus::Registry& registry, absl::string_view name,
                                  const std::map<std::string, std::string>& labels) {
  for (const prometheus::MetricFamily& family : registry.Collect()) {
    // A histogram answers for its "<name>_count" series (observations so far).
    const bool histogram_count = family.type == prometheus::MetricType::Histogram &&
                                 name == family.name + "_count";
    if (family.name != name && !histogram_count) continue;
    for (const prometheus::ClientMetric& metric : family.metric) {
      std::map<std::string, std::string> have;
      for (const auto& label : metric.label) have[label.name] = label.value;
      if (have != labels) continue;
      if (histogram_count) return static_cast<double>(metric.histogram.sample_count);
      switch (family.type) {
        case prometheus::MetricType::Counter:
          return metric.counter.value;
        case prometheus::MetricType::Gauge:
          return metric.gauge.value;
        default:
          return metric.untyped.value;
      }
    }
  }
  return std::nullopt;
}

}  // namespace weft
