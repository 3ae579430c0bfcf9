#include "store/rollout_store.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/file.h"

namespace weft::store {
namespace {

constexpr absl::string_view kSuffix = ".pb";

absl::Status SystemError(absl::string_view what, absl::string_view path) {
  return absl::InternalError(absl::StrCat("cannot ", what, " ", path, ": ", strerror(errno)));
}

absl::Status MakeDirs(const std::string& dir) {
  for (size_t pos = 1; pos <= dir.size(); ++pos) {
    if (pos != dir.size() && dir[pos] != '/') continue;
    const std::string prefix = dir.substr(0, pos);
    if (mkdir(prefix.c_str(), 0750) != 0 && errno != EEXIST) {
      return SystemError("create directory", prefix);
    }
  }
  return absl::OkStatus();
}

// Writes all of `data` to `fd`.
bool WriteAll(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

// A rollout id becomes a file name: only [A-Za-z0-9._-] are kept.
bool SafeId(absl::string_view id) {
  if (id.empty() || id[0] == '.') return false;
  for (char c : id) {
    if (!(isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.')) {
      return false;
    }
  }
  return true;
}

}  // namespace

absl::StatusOr<std::unique_ptr<FileRolloutStore>> FileRolloutStore::Open(std::string dir) {
  if (dir.empty()) return absl::InvalidArgumentError("rollout store: empty directory");
  if (absl::Status made = MakeDirs(dir); !made.ok()) return made;
  return std::unique_ptr<FileRolloutStore>(new FileRolloutStore(std::move(dir)));
}

absl::Status FileRolloutStore::Save(const weft::v1::Rollout& rollout) {
  if (!SafeId(rollout.id())) {
    return absl::InvalidArgumentError(
        absl::StrCat("rollout id '", rollout.id(), "' is not a safe file name"));
  }
  const std::string path = absl::StrCat(dir_, "/", rollout.id(), kSuffix);
  const std::string tmp = absl::StrCat(path, ".tmp");
  std::string data;
  if (!rollout.SerializeToString(&data)) {
    return absl::InternalError(absl::StrCat("cannot serialize rollout ", rollout.id()));
  }
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
  if (fd < 0) return SystemError("create", tmp);
  if (!WriteAll(fd, data) || fsync(fd) != 0) {
    absl::Status error = SystemError("write", tmp);
    close(fd);
    unlink(tmp.c_str());
    return error;
  }
  close(fd);
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    absl::Status error = SystemError("rename onto", path);
    unlink(tmp.c_str());
    return error;
  }
  // The rename itself must survive a crash.
  const int dir_fd = open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0) return SystemError("open directory", dir_);
  const int synced = fsync(dir_fd);
  close(dir_fd);
  if (synced != 0) return SystemError("fsync directory", dir_);
  return absl::OkStatus();
}

absl::StatusOr<StoredRollouts> FileRolloutStore::LoadAll() {
  StoredRollouts out;
  DIR* dir = opendir(dir_.c_str());
  if (dir == nullptr) return SystemError("list", dir_);
  while (dirent* entry = readdir(dir)) {
    const std::string name = entry->d_name;
    if (!absl::EndsWith(name, kSuffix)) continue;
    const std::string path = absl::StrCat(dir_, "/", name);
    const absl::StatusOr<std::string> bytes = ReadWholeFile(path, "rollout record");
    weft::v1::Rollout rollout;
    if (!bytes.ok() || !rollout.ParseFromString(*bytes) || rollout.id().empty()) {
      out.unreadable.push_back(path);
      continue;
    }
    out.rollouts.push_back(std::move(rollout));
  }
  closedir(dir);
  return out;
}

absl::Status FileRolloutStore::Quarantine(const std::string& path) {
  const std::string aside = absl::StrCat(path, ".unreadable");
  if (rename(path.c_str(), aside.c_str()) != 0) return SystemError("move aside", path);
  return absl::OkStatus();
}

absl::Status MemoryRolloutStore::Save(const weft::v1::Rollout& rollout) {
  records_[rollout.id()] = rollout;
  return absl::OkStatus();
}

absl::StatusOr<StoredRollouts> MemoryRolloutStore::LoadAll() {
  StoredRollouts out;
  for (const auto& [id, rollout] : records_) out.rollouts.push_back(rollout);
  return out;
}

absl::Status MemoryRolloutStore::Quarantine(const std::string& path) {
  return absl::NotFoundError(absl::StrCat("no record ", path, " in memory"));
}

}  // namespace weft::store
