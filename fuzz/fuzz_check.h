// FUZZ_CHECK(condition) << detail: a property a fuzz target holds the code under test
// to. A violation prints the condition, the detail and the input's size, then aborts,
// which libFuzzer reports as a crash and saves the input as a reproducer (and which
// fails the corpus replay test). Fuzz targets only; production code uses absl::Status.
#ifndef WEFT_FUZZ_FUZZ_CHECK_H_
#define WEFT_FUZZ_FUZZ_CHECK_H_

#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>

namespace weft::fuzz {

class CheckFailure {
 public:
  CheckFailure(const char* file, int line, const char* condition) {
    detail_ << file << ":" << line << ": property violated: " << condition << ": ";
  }
  // Prints and aborts once the whole `<<` expression has been streamed.
  [[noreturn]] ~CheckFailure() {
    std::fprintf(stderr, "%s\n", detail_.str().c_str());
    std::abort();
  }
  template <typename T>
  CheckFailure& operator<<(const T& value) {
    detail_ << value;
    return *this;
  }

 private:
  std::ostringstream detail_;
};

}  // namespace weft::fuzz

// A loop rather than an if/else, so that it nests under an unbraced `if`; the body
// aborts, so it never runs twice.
#define FUZZ_CHECK(condition) \
  while (!(condition)) ::weft::fuzz::CheckFailure(__FILE__, __LINE__, #condition)

#endif  // WEFT_FUZZ_FUZZ_CHECK_H_
