#include "common/file.h"

#include <cerrno>
#include <cstdio>
#include <memory>
#include <system_error>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace weft {

absl::StatusOr<std::string> ReadWholeFile(absl::string_view path, absl::string_view what) {
  const std::string path_string(path);
  auto cannot_read = [&](int error) {
    return absl::NotFoundError(absl::StrCat("cannot read ", what, " '", path, "': ",
                                            std::generic_category().message(error)));
  };
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path_string.c_str(), "rb"),
                                                       &std::fclose);
  if (file == nullptr) return cannot_read(errno);
  std::string contents;
  char buffer[8192];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), file.get())) > 0) contents.append(buffer, n);
  if (std::ferror(file.get())) return cannot_read(errno);
  return contents;
}

}  // namespace weft
