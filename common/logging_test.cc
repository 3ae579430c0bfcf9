#include "common/logging.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "common/testing/temp_dir.h"
#include "gtest/gtest.h"

namespace weft {
namespace {

const absl::Time kWhen = absl::FromUnixMillis(1796025600123);  // 2026-11-30T08:00:00.123Z

TEST(FormatLogLineTest, TerminalLineHasTimestampLevelSourceAndFields) {
  EXPECT_EQ(FormatLogLine(LogLevel::kInfo, kWhen, "agent/agent.cc", 42,
                          "registered node=gpu-a01 epoch=3", /*for_journal=*/false),
            "2026-11-30T08:00:00.123Z level=info src=agent.cc:42 registered node=gpu-a01 "
            "epoch=3\n");
}

TEST(FormatLogLineTest, JournalLineCarriesThePriorityInsteadOfATimestamp) {
  EXPECT_EQ(FormatLogLine(LogLevel::kError, kWhen, "main.cc", 7, "cannot start", true),
            "<3>level=error src=main.cc:7 cannot start\n");
  EXPECT_EQ(FormatLogLine(LogLevel::kWarning, kWhen, "a.cc", 1, "x", true).substr(0, 3), "<4>");
  EXPECT_EQ(FormatLogLine(LogLevel::kInfo, kWhen, "a.cc", 1, "x", true).substr(0, 3), "<6>");
  EXPECT_EQ(FormatLogLine(LogLevel::kDebug, kWhen, "a.cc", 1, "x", true).substr(0, 3), "<7>");
}

TEST(FormatLogLineTest, OneEventIsOneLineWhateverTheMessageHolds) {
  const std::string line = FormatLogLine(LogLevel::kWarning, kWhen, "a.cc", 1,
                                         "bad config error=\"line 1\nline 2\r\"", false);
  EXPECT_EQ(line.find('\n'), line.size() - 1) << line;
  EXPECT_NE(line.find("error=\"line 1\\nline 2\\r\""), std::string::npos) << line;
}

TEST(IsJournalStreamTest, MatchesTheFileJournalStreamNames) {
  const std::string path = weft::testing::TempPath("stream");
  const int fd = open(path.c_str(), O_CREAT | O_WRONLY, 0644);
  ASSERT_GE(fd, 0);
  struct stat st;
  ASSERT_EQ(fstat(fd, &st), 0);
  EXPECT_TRUE(IsJournalStream(fd, absl::StrCat(st.st_dev, ":", st.st_ino).c_str()));
  EXPECT_FALSE(IsJournalStream(fd, absl::StrCat(st.st_dev, ":", st.st_ino + 1).c_str()));
  EXPECT_FALSE(IsJournalStream(fd, nullptr));
  EXPECT_FALSE(IsJournalStream(fd, "garbage"));
  close(fd);
}

}  // namespace
}  // namespace weft
