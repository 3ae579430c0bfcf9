// Reading a whole file, with an error a person can act on.
#ifndef WEFT_COMMON_FILE_H_
#define WEFT_COMMON_FILE_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace weft {

// The whole file at `path`, bytes as they are. NOT_FOUND when it cannot be opened or read,
// saying "cannot read <what> '<path>': <reason>" (e.g. "No such file or directory",
// "Is a directory"), so callers name what the file was for.
absl::StatusOr<std::string> ReadWholeFile(absl::string_view path,
                                          absl::string_view what = "file");

}  // namespace weft

#endif  // WEFT_COMMON_FILE_H_
