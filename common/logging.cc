#include "common/logging.h"

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"

namespace weft {
namespace {

std::atomic<int> min_level{static_cast<int>(LogLevel::kInfo)};

const char* LevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return "debug";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kWarning:
      return "warning";
    case LogLevel::kError:
      return "error";
  }
  return "info";
}

// syslog(3) priorities, as journald reads them from a "<N>" line prefix.
int SyslogPriority(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return 7;
    case LogLevel::kInfo:
      return 6;
    case LogLevel::kWarning:
      return 4;
    case LogLevel::kError:
      return 3;
  }
  return 6;
}

// Decided once: a daemon's stderr does not change where it goes.
bool StderrIsJournal() {
  static const bool journal = IsJournalStream(STDERR_FILENO, std::getenv("JOURNAL_STREAM"));
  return journal;
}

}  // namespace

void SetMinLogLevel(LogLevel level) { min_level = static_cast<int>(level); }

std::string FormatLogLine(LogLevel level, absl::Time when, absl::string_view source_file,
                          int source_line, absl::string_view message, bool for_journal) {
  const size_t slash = source_file.rfind('/');
  if (slash != absl::string_view::npos) source_file.remove_prefix(slash + 1);
  std::string line =
      for_journal
          ? absl::StrCat("<", SyslogPriority(level), ">")
          : absl::StrCat(absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", when, absl::UTCTimeZone()),
                         " ");
  absl::StrAppend(&line, "level=", LevelName(level), " src=", source_file, ":", source_line,
                  " ");
  line.reserve(line.size() + message.size() + 1);
  for (char c : message) {
    if (c == '\n') {
      line += "\\n";
    } else if (c == '\r') {
      line += "\\r";
    } else {
      line += c;
    }
  }
  line += '\n';
  return line;
}

bool IsJournalStream(int fd, const char* journal_stream_env) {
  if (journal_stream_env == nullptr) return false;
  std::pair<std::string, std::string> parts = absl::StrSplit(journal_stream_env, ':');
  uint64_t device = 0, inode = 0;
  if (!absl::SimpleAtoi(parts.first, &device) || !absl::SimpleAtoi(parts.second, &inode)) {
    return false;
  }
  struct stat st;
  if (fstat(fd, &st) != 0) return false;
  return static_cast<uint64_t>(st.st_dev) == device && static_cast<uint64_t>(st.st_ino) == inode;
}

LogMessage::LogMessage(LogLevel level, const char* file, int line)
    : level_(level), file_(file), line_(line), when_(absl::Now()) {}

LogMessage::~LogMessage() {
  if (static_cast<int>(level_) < min_level) return;
  const std::string line =
      FormatLogLine(level_, when_, file_, line_, stream_.str(), StderrIsJournal());
  // One write per line keeps lines from different threads whole.
  ssize_t ignored = ::write(STDERR_FILENO, line.data(), line.size());
  (void)ignored;
}

}  // namespace weft
