// Minimal structured logging to stderr, one line per event, in a form journald keeps
// well:  2026-11-30T06:00:00.123Z level=info src=agent.cc:42 msg text key=value ...
// Callers put key=value fields in the message themselves. Thread-safe: each line is
// written with a single write(2).
//
// Example:
//   WEFT_LOG(INFO) << "registered node=" << name << " epoch=" << epoch;
#ifndef WEFT_COMMON_LOGGING_H_
#define WEFT_COMMON_LOGGING_H_

#include <sstream>

namespace weft {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };

// Lines below this level are dropped. Default kInfo; set once at start-up.
void SetMinLogLevel(LogLevel level);

class LogMessage {
 public:
  LogMessage(LogLevel level, const char* file, int line);
  ~LogMessage();
  LogMessage(const LogMessage&) = delete;
  LogMessage& operator=(const LogMessage&) = delete;
  std::ostream& stream() { return stream_; }

 private:
  LogLevel level_;
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
