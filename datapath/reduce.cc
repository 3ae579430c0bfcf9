#include "datapath/reduce.h"

#include <algorithm>
#include <cstring>

namespace weft::datapath {
namespace {

template <typename T>
void ReduceTyped(ReduceOp op, T* __restrict dst, const T* __restrict src, size_t count) {
  // Plain loops over restrict pointers: the compiler vectorizes them.
  switch (op) {
    case ReduceOp::kSum:
      for (size_t i = 0; i < count; ++i) dst[i] = dst[i] + src[i];
      return;
    case ReduceOp::kMax:
      for (size_t i = 0; i < count; ++i) dst[i] = std::max(dst[i], src[i]);
      return;
    case ReduceOp::kMin:
      for (size_t i = 0; i < count; ++i) dst[i] = std::min(dst[i], src[i]);
      return;
  }
}

}  // namespace

size_t DataTypeBytes(DataType type) {
  switch (type) {
    case DataType::kFloat32:
    case DataType::kInt32:
      return 4;
    case DataType::kFloat64:
    case DataType::kInt64:
      return 8;
  }
  return 0;
}

absl::string_view DataTypeName(DataType type) {
  switch (type) {
    case DataType::kFloat32:
      return "float32";
    case DataType::kFloat64:
      return "float64";
    case DataType::kInt32:
      return "int32";
    case DataType::kInt64:
      return "int64";
  }
  return "unknown";
}

absl::string_view ReduceOpName(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return "sum";
    case ReduceOp::kMax:
      return "max";
    case ReduceOp::kMin:
      return "min";
  }
  return "unknown";
}

void ReduceInto(DataType type, ReduceOp op, void* dst, const void* src, size_t count) {
  switch (type) {
    case DataType::kFloat32:
      ReduceTyped(op, static_cast<float*>(dst), static_cast<const float*>(src), count);
      return;
    case DataType::kFloat64:
      ReduceTyped(op, static_cast<double*>(dst), static_cast<const double*>(src), count);
      return;
    case DataType::kInt32:
      ReduceTyped(op, static_cast<int32_t*>(dst), static_cast<const int32_t*>(src), count);
      return;
    case DataType::kInt64:
      ReduceTyped(op, static_cast<int64_t*>(dst), static_cast<const int64_t*>(src), count);
      return;
  }
}

uint16_t FloatToBf16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  if ((bits & 0x7f800000u) == 0x7f800000u && (bits & 0x007fffffu) != 0) {
    return static_cast<uint16_t>((bits >> 16) | 0x0040u);  // quiet NaN, sign kept
  }
  const uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

float Bf16ToFloat(uint16_t value) {
  const uint32_t bits = static_cast<uint32_t>(value) << 16;
  float out;
  std::memcpy(&out, &bits, sizeof(out));
  return out;
}

void CompressBf16(const float* src, uint16_t* dst, size_t count) {
  for (size_t i = 0; i < count; ++i) dst[i] = FloatToBf16(src[i]);
}

void DecompressBf16(const uint16_t* src, float* dst, size_t count) {
  for (size_t i = 0; i < count; ++i) dst[i] = Bf16ToFloat(src[i]);
}

void RoundToBf16(float* data, size_t count) {
  for (size_t i = 0; i < count; ++i) data[i] = Bf16ToFloat(FloatToBf16(data[i]));
}

void ReduceBf16Into(ReduceOp op, float* dst, const uint16_t* src, size_t count) {
  switch (op) {
    case ReduceOp::kSum:
      for (size_t i = 0; i < count; ++i) dst[i] += Bf16ToFloat(src[i]);
      return;
    case ReduceOp::kMax:
      for (size_t i = 0; i < count; ++i) dst[i] = std::max(dst[i], Bf16ToFloat(src[i]));
      return;
    case ReduceOp::kMin:
      for (size_t i = 0; i < count; ++i) dst[i] = std::min(dst[i], Bf16ToFloat(src[i]));
      return;
  }
}

}  // namespace weft::datapath
