#include "common/testing/temp_dir.h"

#include <stdlib.h>

#include <cstdlib>

namespace weft::testing {

std::string TempPath(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return std::string(dir != nullptr ? dir : "/tmp") + "/" + name;
}

std::string MakeTempDir(const std::string& name) {
  std::string path = TempPath(name + ".XXXXXX");
  return mkdtemp(path.data()) != nullptr ? path : "";
}

}  // namespace weft::testing
