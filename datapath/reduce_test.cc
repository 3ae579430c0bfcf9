#include "datapath/reduce.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "gtest/gtest.h"

namespace weft::datapath {
namespace {

TEST(ReduceTest, SumMaxMinForEveryType) {
  std::vector<int64_t> a = {1, -5, 7}, b = {2, 3, -9};
  ReduceInto(DataType::kInt64, ReduceOp::kSum, a.data(), b.data(), 3);
  EXPECT_EQ(a, (std::vector<int64_t>{3, -2, -2}));
  std::vector<int32_t> c = {1, -5, 7}, d = {2, 3, -9};
  ReduceInto(DataType::kInt32, ReduceOp::kMax, c.data(), d.data(), 3);
  EXPECT_EQ(c, (std::vector<int32_t>{2, 3, 7}));
  std::vector<double> e = {1.5, -5, 7}, f = {2, 3, -9.25};
  ReduceInto(DataType::kFloat64, ReduceOp::kMin, e.data(), f.data(), 3);
  EXPECT_EQ(e, (std::vector<double>{1.5, -5, -9.25}));
  std::vector<float> g = {0.5f, 1}, h = {0.25f, -1};
  ReduceInto(DataType::kFloat32, ReduceOp::kSum, g.data(), h.data(), 2);
  EXPECT_EQ(g, (std::vector<float>{0.75f, 0}));
  // count 0 touches nothing.
  ReduceInto(DataType::kFloat32, ReduceOp::kSum, g.data(), h.data(), 0);
  EXPECT_EQ(g[0], 0.75f);
}

TEST(ReduceTest, NamesAndSizes) {
  EXPECT_EQ(DataTypeBytes(DataType::kFloat64), 8u);
  EXPECT_EQ(DataTypeBytes(DataType::kInt32), 4u);
  EXPECT_EQ(DataTypeName(DataType::kInt64), "int64");
  EXPECT_EQ(ReduceOpName(ReduceOp::kMax), "max");
}

TEST(Bf16Test, ExactValuesRoundTrip) {
  for (float v : {0.0f, 1.0f, -2.0f, 0.5f, 256.0f, -3.0f, 0x1p100f, -0x1.fep-120f}) {
    EXPECT_EQ(Bf16ToFloat(FloatToBf16(v)), v) << v;
  }
}

TEST(Bf16Test, RoundsToNearestEven) {
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties go to the even mantissa (1.0).
  EXPECT_EQ(Bf16ToFloat(FloatToBf16(1.0f + std::ldexp(1.0f, -8))), 1.0f);
  // 1 + 3 * 2^-8 is halfway between 1 + 2^-7 (odd) and 1 + 2^-6 (even).
  EXPECT_EQ(Bf16ToFloat(FloatToBf16(1.0f + 3 * std::ldexp(1.0f, -8))), 1.0f + std::ldexp(1.0f, -6));
  // Relative error stays under 2^-8.
  for (float v : {3.14159f, -123.456f, 1e-3f, 6.02e23f}) {
    EXPECT_NEAR(Bf16ToFloat(FloatToBf16(v)), v, std::fabs(v) * std::ldexp(1.0f, -8)) << v;
  }
}

TEST(Bf16Test, SpecialValues) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(Bf16ToFloat(FloatToBf16(inf)), inf);
  EXPECT_EQ(Bf16ToFloat(FloatToBf16(-inf)), -inf);
  EXPECT_TRUE(std::isnan(Bf16ToFloat(FloatToBf16(std::nanf("")))));
  // The largest float rounds up to infinity, as IEEE rounding does.
  EXPECT_EQ(Bf16ToFloat(FloatToBf16(std::numeric_limits<float>::max())), inf);
}

TEST(Bf16Test, CompressDecompressAndReduce) {
  std::vector<float> src = {1.0f, 2.5f, -4.0f};
  std::vector<uint16_t> wire(3);
  CompressBf16(src.data(), wire.data(), 3);
  std::vector<float> back(3);
  DecompressBf16(wire.data(), back.data(), 3);
  EXPECT_EQ(back, src);
  std::vector<float> acc = {1.0f, 1.0f, 1.0f};
  ReduceBf16Into(ReduceOp::kSum, acc.data(), wire.data(), 3);
  EXPECT_EQ(acc, (std::vector<float>{2.0f, 3.5f, -3.0f}));
  ReduceBf16Into(ReduceOp::kMin, acc.data(), wire.data(), 3);
  EXPECT_EQ(acc, (std::vector<float>{1.0f, 2.5f, -4.0f}));
  std::vector<float> r = {3.14159f};
  RoundToBf16(r.data(), 1);
  EXPECT_EQ(r[0], Bf16ToFloat(FloatToBf16(3.14159f)));
}

}  // namespace
}  // namespace weft::datapath
