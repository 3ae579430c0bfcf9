// Reading sysfs-style files under a filesystem root, and parsing the formats the
// kernel's InfiniBand and PCI attributes use ("4: ACTIVE", "400 Gb/sec (4X NDR)",
// "0x030200", decimal counters). The root is "/" in production and a fixture tree in
// tests (tests/fixtures/). Errors name the full path and the reason. Thread-safe: no
// state beyond the root.
#ifndef WEFT_AGENT_LINUX_SYSFS_H_
#define WEFT_AGENT_LINUX_SYSFS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/weft/v1/node.pb.h"

namespace weft {

class Sysfs {
 public:
  explicit Sysfs(std::string root) : root_(std::move(root)) {}

  // `root` joined with `path` ("sys/class/infiniband"; a leading '/' is allowed).
  std::string Path(absl::string_view path) const;

  // The file's content trimmed of surrounding whitespace and blank lines (as every
  // value is, before it is parsed or stored). NOT_FOUND when it does not exist
  // (also when a device vanished), PERMISSION_DENIED, or UNAVAILABLE with strerror.
  absl::StatusOr<std::string> ReadString(absl::string_view path) const;
  // A decimal (or 0x-prefixed hex) unsigned integer file. INVALID_ARGUMENT names the
  // path and the content when it is not one.
  absl::StatusOr<uint64_t> ReadU64(absl::string_view path) const;
  // A signed integer file, e.g. numa_node, which reads -1 on single-node machines.
  absl::StatusOr<int64_t> ReadI64(absl::string_view path) const;
  // Entry names of a directory, sorted; NOT_FOUND when it does not exist.
  absl::StatusOr<std::vector<std::string>> List(absl::string_view path) const;
  // The final component of a symlink's target ("device" -> "0000:1a:00.0").
  absl::StatusOr<std::string> LinkTargetName(absl::string_view path) const;
  // The path, relative to root, with every symlink resolved (for PCI tree distance).
  absl::StatusOr<std::string> Resolve(absl::string_view path) const;
  bool Exists(absl::string_view path) const;
  // Writes `value` plus a newline in one write(2), as `echo value > path` does (the
  // kernel parses the whole value of a sysfs/debugfs/configfs attribute per write; the
  // file is truncated so a fixture tree's plain file reads back the new value). Errors
  // as ReadString; the kernel's refusal of a value (EINVAL, ERANGE) is
  // FAILED_PRECONDITION / UNAVAILABLE with strerror.
  absl::Status WriteString(absl::string_view path, absl::string_view value) const;
  // mkdir(2) of one directory (a configfs group); OK when it already exists.
  absl::Status MakeDir(absl::string_view path) const;

 private:
  std::string root_;
};

// One sysfs attribute kept open and re-read with pread(2) at offset 0, which makes the
// kernel regenerate the value: a collection re-reads hundreds of counters without
// walking their (symlinked) paths again. A read after the device went away fails
// (ENODEV), which tells the caller to reopen or report. Movable, not copyable;
// thread-compatible.
class SysfsFile {
 public:
  // Opens root-relative `path` of `sysfs`; errors as Sysfs::ReadString.
  static absl::StatusOr<SysfsFile> Open(const Sysfs& sysfs, absl::string_view path);
  SysfsFile(SysfsFile&& other) noexcept;
  SysfsFile& operator=(SysfsFile&& other) noexcept;
  SysfsFile(const SysfsFile&) = delete;
  SysfsFile& operator=(const SysfsFile&) = delete;
  ~SysfsFile();

  // As Sysfs::ReadString / ReadU64.
  absl::StatusOr<std::string> ReadString() const;
  absl::StatusOr<uint64_t> ReadU64() const;
  const std::string& path() const { return path_; }

 private:
  SysfsFile(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  int fd_ = -1;
  std::string path_;
};

// What a device without a performance management agent answers for every port counter
// (kernel drivers/infiniband/core/sysfs.c): the counter is absent, not zero.
inline constexpr absl::string_view kNoPmaText = "N/A (no PMA)";

// `text` without surrounding whitespace: "InfiniBand\n\n" -> "InfiniBand".
absl::string_view TrimSysfsValue(absl::string_view text);
// Whether a counter file read kNoPmaText.
bool IsNoPma(absl::string_view text);

// "4: ACTIVE" -> PORT_STATE_ACTIVE. INVALID_ARGUMENT on anything else.
absl::StatusOr<weft::v1::PortState> ParsePortState(absl::string_view text);
// "400 Gb/sec (4X NDR)" -> 400000, "2.5 Gb/sec (1X SDR)" -> 2500 (Mb/s).
absl::StatusOr<uint64_t> ParseRateMbps(absl::string_view text);
// "RoCE v2" / "IB/RoCE v1" (gid_attrs/types/<i>).
absl::StatusOr<weft::v1::GidType> ParseGidType(absl::string_view text);
// Decimal, or hex with a 0x prefix, surrounding whitespace allowed.
absl::StatusOr<uint64_t> ParseU64(absl::string_view text);

}  // namespace weft

#endif  // WEFT_AGENT_LINUX_SYSFS_H_
