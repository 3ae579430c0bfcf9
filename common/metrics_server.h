// Serves a prometheus::Registry on http://<address>/metrics (prometheus-cpp's
// civetweb Exposer). The returned object owns the HTTP server; destroy it to stop.
#ifndef WEFT_COMMON_METRICS_SERVER_H_
#define WEFT_COMMON_METRICS_SERVER_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "prometheus/exposer.h"
#include "prometheus/registry.h"

namespace weft {

class MetricsServer {
 public:
  // Binds `address` ("host:port"; port 0 picks a free one) and serves `registry`,
  // which must outlive the server. Fails with UNAVAILABLE when the address cannot be bound.
  static absl::StatusOr<std::unique_ptr<MetricsServer>> Start(
      absl::string_view address, std::shared_ptr<prometheus::Registry> registry);

  // "host:port" actually bound.
  std::string address() const { return address_; }

 private:
  MetricsServer(std::unique_ptr<prometheus::Exposer> exposer, std::string address)
      : exposer_(std::move(exposer)), address_(std::move(address)) {}

  std::unique_ptr<prometheus::Exposer> exposer_;
  std::string address_;
};

}  // namespace weft

#endif  // WEFT_COMMON_METRICS_SERVER_H_
