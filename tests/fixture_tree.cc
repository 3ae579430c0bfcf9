#include "tests/fixture_tree.h"

#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace weft::testing {
namespace {

namespace fs = std::filesystem;

absl::Status CheckInside(absl::string_view path, int line_no) {
  if (path.empty() || path.front() == '/' || absl::StrContains(path, "..")) {
    return absl::InvalidArgumentError(
        absl::StrCat("fixture line ", line_no, ": path '", path, "' must stay inside the root"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status WriteFixtureFile(absl::string_view root, absl::string_view path,
                              absl::string_view content) {
  const fs::path full = fs::path(std::string(root)) / std::string(path);
  std::error_code ec;
  fs::create_directories(full.parent_path(), ec);
  std::ofstream out(full, std::ios::trunc);
  if (!out) return absl::InternalError(absl::StrCat("cannot write ", full.string()));
  out << content << "\n";
  return absl::OkStatus();
}

absl::Status MaterializeFixture(absl::string_view tree_file, absl::string_view root) {
  std::ifstream in{std::string(tree_file)};
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read fixture ", tree_file));
  std::error_code ec;
  fs::create_directories(std::string(root), ec);
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    absl::string_view rest = line;
    if (rest.empty() || rest.front() == '#') continue;
    if (absl::ConsumePrefix(&rest, "dir  ")) {
      if (auto s = CheckInside(rest, line_no); !s.ok()) return s;
      fs::create_directories(fs::path(std::string(root)) / std::string(rest), ec);
    } else if (absl::ConsumePrefix(&rest, "file ")) {
      std::pair<absl::string_view, absl::string_view> kv = absl::StrSplit(rest, " = ");
      if (auto s = CheckInside(kv.first, line_no); !s.ok()) return s;
      // C escapes (\n, \\) let a value carry the stray blank lines real files have.
      std::string content;
      std::string error;
      if (!absl::CUnescape(kv.second, &content, &error)) {
        return absl::InvalidArgumentError(
            absl::StrCat(tree_file, ":", line_no, ": bad escape in '", kv.second, "': ", error));
      }
      if (auto s = WriteFixtureFile(root, kv.first, content); !s.ok()) return s;
    } else if (absl::ConsumePrefix(&rest, "link ")) {
      std::pair<absl::string_view, absl::string_view> kv = absl::StrSplit(rest, " -> ");
      if (auto s = CheckInside(kv.first, line_no); !s.ok()) return s;
      const fs::path link = fs::path(std::string(root)) / std::string(kv.first);
      fs::create_directories(link.parent_path(), ec);
      fs::remove(link, ec);
      fs::create_symlink(std::string(kv.second), link, ec);
      if (ec) {
        return absl::InternalError(
            absl::StrCat("fixture line ", line_no, ": symlink ", link.string(), ": ", ec.message()));
      }
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          tree_file, ":", line_no, ": expected 'dir', 'file' or 'link', got '", line, "'"));
    }
  }
  return absl::OkStatus();
}

}  // namespace weft::testing
