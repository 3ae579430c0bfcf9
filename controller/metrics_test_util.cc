#include "controller/metrics_test_util.h"

#include "prometheus/metric_family.h"
#include "prometheus/metric_type.h"

namespace weft::controller {

std::optional<double> MetricValue(const prometheus::Registry& registry,
                                  absl::string_view name,
                                  const std::map<std::string, std::string>& labels) {
  for (const prometheus::MetricFamily& family : registry.Collect()) {
    if (family.name != name) continue;
    for (const prometheus::ClientMetric& metric : family.metric) {
      std::map<std::string, std::string> metric_labels;
      for (const auto& label : metric.label) metric_labels[label.name] = label.value;
      if (metric_labels != labels) continue;
      switch (family.type) {
        case prometheus::MetricType::Counter:
          return metric.counter.value;
        case prometheus::MetricType::Gauge:
          return metric.gauge.value;
        default:
          return std::nullopt;
      }
    }
  }
  return std::nullopt;
}

}  // namespace weft::controller
