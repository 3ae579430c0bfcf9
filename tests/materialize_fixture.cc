// materialize_fixture TREE_FILE DEST_ROOT: writes a sysfs fixture tree to disk, for
// benchmarks and manual runs (`weft-agent inspect --root DEST_ROOT`).
#include <iostream>

#include "tests/fixture_tree.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: materialize_fixture TREE_FILE DEST_ROOT\n";
    return 2;
  }
  absl::Status status = weft::testing::MaterializeFixture(argv[1], argv[2]);
  if (!status.ok()) {
    std::cerr << "materialize_fixture: " << status.message() << "\n";
    return 1;
  }
  return 0;
}
