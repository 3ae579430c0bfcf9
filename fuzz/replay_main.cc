// The main() of a fuzz target when it is not linked with libFuzzer (the default gcc
// build, --config=asan, --config=tsan): runs LLVMFuzzerTestOneInput once on each file
// named on the command line, or on each file of a named directory (sorted, so a
// failure is reproducible). Arguments starting with '-' are libFuzzer flags and are
// ignored, so the corpus test invokes both builds the same way. Fails when no input
// was run: a replay of an empty corpus proves nothing.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

namespace fs = std::filesystem;

std::vector<std::string> InputFiles(int argc, char** argv) {
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.empty() || arg[0] == '-') continue;
    if (!fs::is_directory(arg)) {
      files.push_back(arg);
      continue;
    }
    std::vector<std::string> in_dir;
    for (const fs::directory_entry& entry : fs::directory_iterator(arg)) {
      if (entry.is_regular_file()) in_dir.push_back(entry.path().string());
    }
    std::sort(in_dir.begin(), in_dir.end());
    files.insert(files.end(), in_dir.begin(), in_dir.end());
  }
  return files;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> files = InputFiles(argc, argv);
  for (const std::string& file : files) {
    std::ifstream in(file, std::ios::binary);
    if (!in) {
      std::fprintf(stderr, "cannot read %s\n", file.c_str());
      return 1;
    }
    const std::string bytes((std::istreambuf_iterator<char>(in)),
                            std::istreambuf_iterator<char>());
    std::fprintf(stderr, "running %s (%zu bytes)\n", file.c_str(), bytes.size());
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  }
  if (files.empty()) {
    std::fprintf(stderr, "no input files given\n");
    return 1;
  }
  std::fprintf(stderr, "replayed %zu inputs\n", files.size());
  return 0;
}
