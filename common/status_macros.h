// Status propagation macros. Abseil 20220623 (Debian 12) ships absl::Status and
// absl::StatusOr but not these, so Weft defines them once here.
//
// Example:
//   absl::StatusOr<Config> Load(absl::string_view path) {
//     ASSIGN_OR_RETURN(std::string text, ReadFile(path));
//     RETURN_IF_ERROR(Validate(text));
//     ...
//   }
#ifndef WEFT_COMMON_STATUS_MACROS_H_
#define WEFT_COMMON_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define WEFT_STATUS_CONCAT_INNER_(a, b) a##b
#define WEFT_STATUS_CONCAT_(a, b) WEFT_STATUS_CONCAT_INNER_(a, b)

// Returns the status from the enclosing function if `expr` is not OK.
#define RETURN_IF_ERROR(expr)                          \
  do {                                                 \
    ::absl::Status weft_status_ = (expr);              \
    if (!weft_status_.ok()) return weft_status_;       \
  } while (0)

// Evaluates `rexpr` (an absl::StatusOr<T>); on error returns its status, otherwise
// moves the value into `lhs` (which may be a declaration).
#define ASSIGN_OR_RETURN(lhs, rexpr)                                         \
  WEFT_ASSIGN_OR_RETURN_IMPL_(WEFT_STATUS_CONCAT_(weft_statusor_, __LINE__), \
                              lhs, rexpr)

#define WEFT_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, rexpr) \
  auto statusor = (rexpr);                                \
  if (!statusor.ok()) return std::move(statusor).status(); \
  lhs = std::move(statusor).value()

#endif  // WEFT_COMMON_STATUS_MACROS_H_
