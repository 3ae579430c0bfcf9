#include "common/metrics_server.h"

#include <exception>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace weft {

absl::StatusOr<std::unique_ptr<MetricsServer>> MetricsServer::Start(
    absl::string_view address, std::shared_ptr<prometheus::Registry> registry) {
  std::unique_ptr<prometheus::Exposer> exposer;
  try {
    // One worker thread is plenty for a scrape every few seconds.
    exposer = std::make_unique<prometheus::Exposer>(std::string(address), 1);
  } catch (const std::exception& e) {
    return absl::UnavailableError(
        absl::StrCat("cannot serve /metrics on ", address, ": ", e.what()));
  }
  exposer->RegisterCollectable(registry);
  std::string bound(address);
  const auto ports = exposer->GetListeningPorts();
  const size_t colon = bound.rfind(':');
  if (!ports.empty() && colon != std::string::npos) {
    bound = absl::StrCat(bound.substr(0, colon), ":", ports.front());
  }
  return std::unique_ptr<MetricsServer>(new MetricsServer(std::move(exposer), bound));
}

}  // namespace weft
