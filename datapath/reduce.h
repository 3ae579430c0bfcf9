// Element types, reduction operators and the reduction kernels the collectives run,
// plus bfloat16 conversion for compressing float32 payloads on the wire.
//
// bfloat16 here is the top half of an IEEE float32 (8-bit exponent, 7-bit mantissa),
// rounded to nearest even; NaN stays NaN. Compressing halves the bytes a float32
// all-reduce moves, at about three significant decimal digits.
//
// Pure functions; thread-safe.
#ifndef WEFT_DATAPATH_REDUCE_H_
#define WEFT_DATAPATH_REDUCE_H_

#include <cstddef>
#include <cstdint>

#include "absl/strings/string_view.h"

namespace weft::datapath {

enum class DataType { kFloat32, kFloat64, kInt32, kInt64 };
enum class ReduceOp { kSum, kMax, kMin };

size_t DataTypeBytes(DataType type);
absl::string_view DataTypeName(DataType type);  // "float32", ...
absl::string_view ReduceOpName(ReduceOp op);    // "sum", "max", "min"

// dst[i] = dst[i] op src[i] for i < count.
void ReduceInto(DataType type, ReduceOp op, void* dst, const void* src, size_t count);

uint16_t FloatToBf16(float value);
float Bf16ToFloat(uint16_t value);
void CompressBf16(const float* src, uint16_t* dst, size_t count);
void DecompressBf16(const uint16_t* src, float* dst, size_t count);
// value = Bf16ToFloat(FloatToBf16(value)) in place.
void RoundToBf16(float* data, size_t count);
// dst[i] = dst[i] op Bf16ToFloat(src[i]).
void ReduceBf16Into(ReduceOp op, float* dst, const uint16_t* src, size_t count);

}  // namespace weft::datapath

#endif  // WEFT_DATAPATH_REDUCE_H_
