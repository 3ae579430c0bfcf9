#include "cli/flag_spelling.h"

#include "absl/strings/ascii.h"

namespace weft {

std::vector<std::string> UnderscoreFlagNames(const std::vector<std::string>& args) {
  std::vector<std::string> out;
  out.reserve(args.size());
  bool flags_ended = false;
  for (const std::string& arg : args) {
    if (flags_ended || arg == "--") {
      flags_ended = true;
      out.push_back(arg);
      continue;
    }
    const size_t dashes = arg.rfind("--", 0) == 0 ? 2 : (arg.rfind('-', 0) == 0 ? 1 : 0);
    if (dashes == 0 || arg.size() <= dashes ||
        !absl::ascii_isalpha(static_cast<unsigned char>(arg[dashes]))) {
      out.push_back(arg);
      continue;
    }
    std::string flag = arg;
    const size_t end = flag.find('=');
    for (size_t i = dashes; i < flag.size() && i < end; ++i) {
      if (flag[i] == '-') flag[i] = '_';
    }
    out.push_back(std::move(flag));
  }
  return out;
}

}  // namespace weft
