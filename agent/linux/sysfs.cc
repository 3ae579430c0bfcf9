#include "agent/linux/sysfs.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace weft {
namespace {

namespace fs = std::filesystem;

absl::Status ErrnoStatus(int err, absl::string_view what, absl::string_view path) {
  const std::string message = absl::StrCat(what, " ", path, ": ", std::strerror(err));
  switch (err) {
    case ENOENT:
    case ENODEV:
    case ENOTDIR:
      return absl::NotFoundError(message);
    case EACCES:
    case EPERM:
      return absl::PermissionDeniedError(message);
    case EINVAL:
      // sysfs answers EINVAL for an attribute with no value (e.g. an empty GID slot).
      return absl::FailedPreconditionError(message);
    default:
      return absl::UnavailableError(message);
  }
}

}  // namespace

std::string Sysfs::Path(absl::string_view path) const {
  absl::ConsumePrefix(&path, "/");
  if (root_.empty() || root_ == "/") return absl::StrCat("/", path);
  return absl::StrCat(absl::StripSuffix(root_, "/"), "/", path);
}

absl::StatusOr<std::string> Sysfs::ReadString(absl::string_view path) const {
  const std::string full = Path(path);
  const int fd = open(full.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus(errno, "open", full);
  // sysfs attributes are at most a page; one read returns them whole.
  char buf[4096];
  const ssize_t n = read(fd, buf, sizeof(buf));
  const int err = errno;
  close(fd);
  if (n < 0) return ErrnoStatus(err, "read", full);
  return std::string(TrimSysfsValue(absl::string_view(buf, static_cast<size_t>(n))));
}

absl::Status Sysfs::WriteString(absl::string_view path, absl::string_view value) const {
  const std::string full = Path(path);
  const int fd = open(full.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus(errno, "open", full);
  const std::string line = absl::StrCat(value, "\n");
  const ssize_t n = write(fd, line.data(), line.size());
  const int err = errno;
  close(fd);
  if (n < 0) return ErrnoStatus(err, absl::StrCat("write '", value, "' to"), full);
  if (static_cast<size_t>(n) != line.size()) {
    return absl::UnavailableError(absl::StrCat("write '", value, "' to ", full, ": short write"));
  }
  return absl::OkStatus();
}

absl::Status Sysfs::MakeDir(absl::string_view path) const {
  const std::string full = Path(path);
  if (mkdir(full.c_str(), 0755) != 0 && errno != EEXIST) return ErrnoStatus(errno, "mkdir", full);
  return absl::OkStatus();
}

absl::string_view TrimSysfsValue(absl::string_view text) {
  return absl::StripAsciiWhitespace(text);
}

bool IsNoPma(absl::string_view text) { return TrimSysfsValue(text) == kNoPmaText; }

absl::StatusOr<uint64_t> ParseU64(absl::string_view text) {
  text = absl::StripAsciiWhitespace(text);
  uint64_t value = 0;
  if (absl::ConsumePrefix(&text, "0x") || absl::ConsumePrefix(&text, "0X")) {
    if (!text.empty() && absl::SimpleHexAtoi(text, &value)) return value;
  } else if (!text.empty() && text[0] != '-' && text[0] != '+' &&
             absl::SimpleAtoi(text, &value)) {
    return value;
  }
  return absl::InvalidArgumentError("not an unsigned integer");
}

absl::StatusOr<uint64_t> Sysfs::ReadU64(absl::string_view path) const {
  absl::StatusOr<std::string> text = ReadString(path);
  if (!text.ok()) return text.status();
  absl::StatusOr<uint64_t> value = ParseU64(*text);
  if (!value.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(Path(path), ": expected an unsigned integer, read '", *text, "'"));
  }
  return value;
}

absl::StatusOr<int64_t> Sysfs::ReadI64(absl::string_view path) const {
  absl::StatusOr<std::string> text = ReadString(path);
  if (!text.ok()) return text.status();
  int64_t value = 0;
  if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(*text), &value)) {
    return absl::InvalidArgumentError(
        absl::StrCat(Path(path), ": expected an integer, read '", *text, "'"));
  }
  return value;
}

absl::StatusOr<std::vector<std::string>> Sysfs::List(absl::string_view path) const {
  const std::string full = Path(path);
  std::error_code ec;
  fs::directory_iterator it(full, ec);
  if (ec) return ErrnoStatus(ec.value(), "list", full);
  std::vector<std::string> names;
  for (const auto& entry : it) names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

absl::StatusOr<std::string> Sysfs::LinkTargetName(absl::string_view path) const {
  const std::string full = Path(path);
  std::error_code ec;
  const fs::path target = fs::read_symlink(full, ec);
  if (ec) return ErrnoStatus(ec.value(), "readlink", full);
  return target.filename().string();
}

absl::StatusOr<std::string> Sysfs::Resolve(absl::string_view path) const {
  const std::string full = Path(path);
  std::error_code ec;
  const fs::path resolved = fs::canonical(full, ec);
  if (ec) return ErrnoStatus(ec.value(), "resolve", full);
  std::error_code ec_root;
  const fs::path root = fs::canonical(root_.empty() ? "/" : root_, ec_root);
  if (ec_root) return ErrnoStatus(ec_root.value(), "resolve", root_);
  return resolved.lexically_relative(root).string();
}

bool Sysfs::Exists(absl::string_view path) const {
  std::error_code ec;
  return fs::exists(Path(path), ec);
}

absl::StatusOr<SysfsFile> SysfsFile::Open(const Sysfs& sysfs, absl::string_view path) {
  std::string full = sysfs.Path(path);
  const int fd = open(full.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus(errno, "open", full);
  return SysfsFile(fd, std::move(full));
}

SysfsFile::SysfsFile(SysfsFile&& other) noexcept
    : fd_(other.fd_), path_(std::move(other.path_)) {
  other.fd_ = -1;
}

SysfsFile& SysfsFile::operator=(SysfsFile&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    fd_ = other.fd_;
    path_ = std::move(other.path_);
    other.fd_ = -1;
  }
  return *this;
}

SysfsFile::~SysfsFile() {
  if (fd_ >= 0) close(fd_);
}

absl::StatusOr<std::string> SysfsFile::ReadString() const {
  char buf[4096];
  const ssize_t n = pread(fd_, buf, sizeof(buf), 0);
  if (n < 0) return ErrnoStatus(errno, "read", path_);
  return std::string(TrimSysfsValue(absl::string_view(buf, static_cast<size_t>(n))));
}

absl::StatusOr<uint64_t> SysfsFile::ReadU64() const {
  absl::StatusOr<std::string> text = ReadString();
  if (!text.ok()) return text.status();
  absl::StatusOr<uint64_t> value = ParseU64(*text);
  if (!value.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path_, ": expected an unsigned integer, read '", *text, "'"));
  }
  return value;
}

absl::StatusOr<weft::v1::PortState> ParsePortState(absl::string_view text) {
  // "<number>: <NAME>", numbered as enum ib_port_state.
  const size_t colon = text.find(':');
  int number = 0;
  if (colon != absl::string_view::npos && absl::SimpleAtoi(text.substr(0, colon), &number) &&
      number >= 1 && number <= 5) {
    return static_cast<weft::v1::PortState>(number);
  }
  return absl::InvalidArgumentError(
      absl::StrCat("port state '", text, "' is not like '4: ACTIVE'"));
}

absl::StatusOr<uint64_t> ParseRateMbps(absl::string_view text) {
  // "400 Gb/sec (4X NDR)"; the kernel prints fractional rates as "2.5 Gb/sec".
  const size_t unit = text.find(" Gb/sec");
  double gbps = 0;
  if (unit != absl::string_view::npos && absl::SimpleAtod(text.substr(0, unit), &gbps) &&
      gbps >= 0 && gbps <= 1e6) {  // 1 Pb/s; far more overflows the cast
    return static_cast<uint64_t>(gbps * 1000 + 0.5);
  }
  return absl::InvalidArgumentError(
      absl::StrCat("rate '", text, "' is not like '400 Gb/sec (4X NDR)'"));
}

absl::StatusOr<weft::v1::GidType> ParseGidType(absl::string_view text) {
  if (text == "RoCE v2") return weft::v1::GID_TYPE_ROCE_V2;
  if (text == "IB/RoCE v1") return weft::v1::GID_TYPE_IB_ROCE_V1;
  return absl::InvalidArgumentError(
      absl::StrCat("GID type '", text, "' is neither 'RoCE v2' nor 'IB/RoCE v1'"));
}

}  // namespace weft
