// Materialises a sysfs fixture (tests/fixtures/*.tree, written by
// tests/fixtures/generate.py) as a real directory tree with real symlinks, so the Linux
// NIC backend reads it exactly as it reads /sys. Not thread-safe; testonly.
//
// Example:
//   ASSERT_OK_AND_ASSIGN... MaterializeFixture("tests/fixtures/mlx5_8nic_8gpu.tree", root);
//   LinuxNicBackend backend(root, ...);   // reads root + "/sys/class/infiniband/..."
#ifndef WEFT_TESTS_FIXTURE_TREE_H_
#define WEFT_TESTS_FIXTURE_TREE_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace weft::testing {

// Creates every dir, file and link of the .tree file under `root` (created if
// missing). A file's content may use C escapes ("4: ACTIVE\n\n": the value, then a
// blank line; the trailing newline is added as always). INVALID_ARGUMENT names the
// line of a malformed entry; a path that escapes `root` ("..", absolute) is refused.
absl::Status MaterializeFixture(absl::string_view tree_file, absl::string_view root);

// Overwrites (or creates) one file under `root`, adding the trailing newline sysfs has.
absl::Status WriteFixtureFile(absl::string_view root, absl::string_view path,
                              absl::string_view content);

}  // namespace weft::testing

#endif  // WEFT_TESTS_FIXTURE_TREE_H_
