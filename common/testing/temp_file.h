// Test helper: a file with given contents under TEST_TMPDIR (temp_dir.h), for configs
// and fixtures a test hands to a daemon. Thread-compatible.
#ifndef WEFT_COMMON_TESTING_TEMP_FILE_H_
#define WEFT_COMMON_TESTING_TEMP_FILE_H_

#include <string>

namespace weft::testing {

// Writes `contents` to TempPath(name), replacing it; returns the path.
std::string WriteTempFile(const std::string& name, const std::string& contents);

}  // namespace weft::testing

#endif  // WEFT_COMMON_TESTING_TEMP_FILE_H_
