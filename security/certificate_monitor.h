// Watches the certificates a TlsConfig names while gRPC's FileWatcherCertificateProvider
// re-reads them (credentials.h), and says what gRPC does not:
//   - when each expires, as a gauge an alert can watch ("renew before it stops the
//     fleet"): weft_tls_certificate_expiry_timestamp_seconds{file="cert"|"ca"}, the
//     certificate's notAfter in Unix seconds;
//   - whether each file holds a certificate valid now: weft_tls_certificate_valid{file}
//     1 or 0. gRPC serves a renewed certificate that has expired or is not yet valid
//     without a word (handshakes then fail at the peer); the monitor logs an ERROR
//     naming the file and the dates once each time the file's state changes.
//
//   auto monitor = CertificateMonitor::Start(config.tls(), *registry);  // null: no TLS
//
// Thread-safe; the background thread stops when the monitor is destroyed.
#ifndef WEFT_SECURITY_CERTIFICATE_MONITOR_H_
#define WEFT_SECURITY_CERTIFICATE_MONITOR_H_

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/registry.h"
#include "proto/weft/v1/config.pb.h"
#include "security/credentials.h"

namespace weft::security {

class CertificateMonitor {
 public:
  // Checks now, then every `interval` (0: tls.refresh_interval_s, or 60 s when that is 0)
  // on its own thread. Null when `tls` names no certificate (plaintext).
  static std::unique_ptr<CertificateMonitor> Start(const weft::v1::TlsConfig& tls,
                                                   prometheus::Registry& registry,
                                                   absl::Duration interval = absl::ZeroDuration());
  ~CertificateMonitor();

  // Reads every watched file again and updates the gauges (the thread calls this).
  void CheckNow();

 private:
  struct Watched {
    std::string label;  // "cert", "ca"
    std::string path;
    prometheus::Gauge* expiry = nullptr;
    prometheus::Gauge* valid = nullptr;
    std::string last_problem;  // logged already; "" when the file was fine
  };

  CertificateMonitor(std::vector<Watched> files, absl::Duration interval);
  void Loop();

  const absl::Duration interval_;
  absl::Mutex mu_;
  std::vector<Watched> files_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace weft::security

#endif  // WEFT_SECURITY_CERTIFICATE_MONITOR_H_
