#include "common/file.h"

#include <cstdlib>
#include <fstream>
#include <string>

#include "common/testing/temp_dir.h"
#include "gtest/gtest.h"

namespace weft {
namespace {

std::string TempDir() { return weft::testing::TempPath(""); }

TEST(ReadWholeFileTest, ReturnsEveryByteIncludingNulsAndLargeFiles) {
  const std::string path = TempDir() + "/whole.bin";
  std::string written(100000, 'x');  // spans many 8 KiB reads
  written[5] = '\0';
  written[99999] = '\n';
  std::ofstream(path, std::ios::binary) << written;
  const absl::StatusOr<std::string> read = ReadWholeFile(path);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(*read, written);
}

TEST(ReadWholeFileTest, AnEmptyFileIsAnEmptyString) {
  const std::string path = TempDir() + "/empty";
  std::ofstream(path).flush();
  const absl::StatusOr<std::string> read = ReadWholeFile(path);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(*read, "");
}

TEST(ReadWholeFileTest, ErrorsNameWhatThePathAndTheReason) {
  const std::string missing = TempDir() + "/no-such-file";
  absl::StatusOr<std::string> read = ReadWholeFile(missing, "tokens file");
  EXPECT_EQ(read.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(read.status().message(),
            "cannot read tokens file '" + missing + "': No such file or directory");
  read = ReadWholeFile(TempDir());
  EXPECT_EQ(read.status().message(), "cannot read file '" + TempDir() + "': Is a directory");
}

}  // namespace
}  // namespace weft
