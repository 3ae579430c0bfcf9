#include "security/certificate_monitor.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/logging.h"

namespace weft::security {
std::unique_ptr<CertificateMonitor> CertificateMonitor::Start(const weft::v1::TlsConfig& tls,
                                                              prometheus::Registry& registry,
                                                              absl::Duration interval) {
  auto& expiry = prometheus::BuildGauge()
                     .Name("weft_tls_certificate_expiry_timestamp_seconds")
                     .Help("When the certificate in each TLS file expires (its notAfter, Unix "
                           "seconds), as last read; alert well before it.")
                     .Register(registry);
  auto& valid = prometheus::BuildGauge()
                    .Name("weft_tls_certificate_valid")
                    .Help("1 when the TLS file holds a certificate valid now, 0 when it is "
                          "expired, not yet valid or unreadable (gRPC would still serve it).")
                    .Register(registry);
  std::vector<Watched> files;
  for (const auto& [label, path] : {std::pair<std::string, std::string>{"cert", tls.cert_file()},
                                    {"ca", tls.ca_file()}}) {
    if (path.empty()) continue;
    Watched w;
    w.label = label;
    w.path = path;
    w.expiry = &expiry.Add({{"file", label}});
    w.valid = &valid.Add({{"file", label}});
    files.push_back(std::move(w));
  }
  if (files.empty()) return nullptr;
  if (interval <= absl::ZeroDuration()) {
    interval = absl::Seconds(tls.refresh_interval_s() > 0 ? tls.refresh_interval_s() : 60);
  }
  return std::unique_ptr<CertificateMonitor>(new CertificateMonitor(std::move(files), interval));
}

CertificateMonitor::CertificateMonitor(std::vector<Watched> files, absl::Duration interval)
    : interval_(interval), files_(std::move(files)) {
  CheckNow();
  thread_ = std::thread([this] { Loop(); });
}

CertificateMonitor::~CertificateMonitor() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  thread_.join();
}

void CertificateMonitor::Loop() {
  absl::MutexLock lock(&mu_);
  while (!mu_.AwaitWithTimeout(absl::Condition(&stopping_), interval_)) {
    mu_.Unlock();
    CheckNow();
    mu_.Lock();
  }
}

void CertificateMonitor::CheckNow() {
  absl::MutexLock lock(&mu_);
  const absl::Time now = absl::Now();
  for (Watched& w : files_) {
    std::string problem;
    absl::StatusOr<CertificateDates> dates = ReadCertificateDates(w.path);
    if (!dates.ok()) {
      problem = std::string(dates.status().message());
    } else {
      w.expiry->Set(static_cast<double>(absl::ToUnixSeconds(dates->not_after)));
      absl::Status valid = CheckValidity(absl::StrCat(w.label, "_file"), w.path, *dates, now);
      if (!valid.ok()) problem = std::string(valid.message());
    }
    w.valid->Set(problem.empty() ? 1 : 0);
    if (problem != w.last_problem) {
      if (problem.empty()) {
        WEFT_LOG(INFO) << "tls." << w.label << "_file is valid again path=" << w.path
                       << " not_after=\"" << FormatCertificateTime(dates->not_after) << "\"";
      } else {
        WEFT_LOG(ERROR) << problem;
      }
      w.last_problem = problem;
    }
  }
}

}  // namespace weft::security
