// Minimal structured logging to stderr, one line per event, in a form journald keeps
// well. On a terminal or in a file:
//   2026-11-30T06:00:00.123Z level=info src=agent.cc:42 registered node=gpu-a01 epoch=3
// Under systemd, when stderr is the journal ($JOURNAL_STREAM names it), the timestamp
// (journald stamps each entry) gives way to the syslog priority prefix journald reads
// (SyslogLevelPrefix=), so `journalctl -p warning` filters by level:
//   <6>level=info src=agent.cc:42 registered node=gpu-a01 epoch=3
// Callers put key=value fields in the message themselves, quoting values that may hold
// spaces (error="..."). A newline inside a message is written as \n, so one event is
// always one line. Thread-safe: each line is written with a single write(2).
//
// Example:
//   WEFT_LOG(INFO) << "registered node=" << name << " epoch=" << epoch;
#ifndef WEFT_COMMON_LOGGING_H_
#define WEFT_COMMON_LOGGING_H_

#include <sstream>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace weft {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };

// Lines below this level are dropped. Default kInfo; set once at start-up.
void SetMinLogLevel(LogLevel level);

// One log line, newline-terminated, as described above: with the syslog priority
// prefix and no timestamp when `for_journal`, else with the UTC timestamp `when`.
std::string FormatLogLine(LogLevel level, absl::Time when, absl::string_view source_file,
                          int source_line, absl::string_view message, bool for_journal);

// Whether the stream on `fd` is the journal: $JOURNAL_STREAM ("device:inode", set by
// systemd for a service whose output goes to journald) names that file.
bool IsJournalStream(int fd, const char* journal_stream_env);

class LogMessage {
 public:
  LogMessage(LogLevel level, const char* file, int line);
  ~LogMessage();
  LogMessage(const LogMessage&) = delete;
  LogMessage& operator=(const LogMessage&) = delete;
  std::ostream& stream() { return stream_; }

 private:
  LogLevel level_;
  const char* file_;
  int line_;
  absl::Time when_;
  std::ostringstream stream_;
};

}  // namespace weft

#define WEFT_LOG_LEVEL_DEBUG ::weft::LogLevel::kDebug
#define WEFT_LOG_LEVEL_INFO ::weft::LogLevel::kInfo
#define WEFT_LOG_LEVEL_WARNING ::weft::LogLevel::kWarning
#define WEFT_LOG_LEVEL_ERROR ::weft::LogLevel::kError

#define WEFT_LOG(level) \
  ::weft::LogMessage(WEFT_LOG_LEVEL_##level, __FILE__, __LINE__).stream()

#endif  // WEFT_COMMON_LOGGING_H_
