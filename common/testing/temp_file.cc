#include "common/testing/temp_file.h"

#include <fstream>

#include "common/testing/temp_dir.h"

namespace weft::testing {

std::string WriteTempFile(const std::string& name, const std::string& contents) {
  const std::string path = TempPath(name);
  std::ofstream(path) << contents;
  return path;
}

}  // namespace weft::testing
