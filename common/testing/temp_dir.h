// Test helper for every component: paths and fresh directories under TEST_TMPDIR (the
// directory Bazel gives each test; /tmp outside Bazel), so tests stay hermetic and one
// test's files never meet another's. Thread-safe (mkdtemp picks a unique name).
#ifndef WEFT_COMMON_TESTING_TEMP_DIR_H_
#define WEFT_COMMON_TESTING_TEMP_DIR_H_

#include <string>

namespace weft::testing {

// TEST_TMPDIR (or /tmp) joined with `name`.
std::string TempPath(const std::string& name);

// A new empty directory TempPath(name + ".XXXXXX") (mkdtemp), e.g. a controller's
// --state_dir that no earlier run left state in. Empty string on failure.
std::string MakeTempDir(const std::string& name);

}  // namespace weft::testing

#endif  // WEFT_COMMON_TESTING_TEMP_DIR_H_
