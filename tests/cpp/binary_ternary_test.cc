// where, clamp, lerp, addcmul.
#include "binary_test_util.h"

using namespace kiln;
using kiln::test::expect_same;
using kiln::test::make;
using kiln::test::values;

TEST(BinaryTernary, Where) {
  const Tensor c = make({1, 0, 1}, DType::Bool);
  const Tensor a = make({1, 2, 3}, DType::Int32), b = make({10, 20, 30}, DType::Int64);
  Tensor r = where(c, a, b);
  EXPECT_EQ(r.dtype(), DType::Int64);
  expect_same(values(r), {1, 20, 3}, 0, "where tt");
  EXPECT_EQ(where(c, a, Scalar(0.5)).dtype(), DType::Float32);
  expect_same(values(where(c, a, Scalar(0.5))), {1, 0.5, 3}, 0, "where ts");
  EXPECT_EQ(where(c, Scalar(1), Scalar(0)).dtype(), DType::Int64);
  EXPECT_EQ(where(c, Scalar(1.0), Scalar(0)).dtype(), DType::Float32);
  EXPECT_EQ(where(c, zeros({}, DType::Float64), a).dtype(), DType::Float64);
  // uint8 condition and broadcasting: cond [3, 1] with a [3].
  Tensor cu = make({1, 0, 1}, DType::UInt8, {3, 1});
  Tensor rb = where(cu, a, Scalar(-1));
  EXPECT_EQ(rb.sizes(), (Shape{3, 3}));
  expect_same(values(rb), {1, 2, 3, -1, -1, -1, 1, 2, 3}, 0, "where broadcast");
  EXPECT_THROW(where(a, a, b), TypeError);
  EXPECT_THROW(where(make({1, 0}, DType::Bool), a, b), ValueError);
}

TEST(BinaryTernary, Clamp) {
  const Tensor x = make({-2, 0.5, 3, NAN}, DType::Float32);
  expect_same(values(clamp(x, Scalar(0), Scalar(1))), {0, 0.5, 1, NAN}, 0, "clamp");
  expect_same(values(clamp(x, Scalar(0), std::nullopt)), {0, 0.5, 3, NAN}, 0, "clamp min");
  expect_same(values(clamp_max(x, Scalar(1))), {-2, 0.5, 1, NAN}, 0, "clamp max");
  expect_same(values(clamp(x, Scalar(NAN), Scalar(1))), {NAN, NAN, NAN, NAN}, 0, "nan bound");
  expect_same(values(clamp(x, Scalar(2), Scalar(1))), {1, 1, 1, NAN}, 0, "min > max");
  EXPECT_THROW(clamp(x, std::optional<Scalar>(), std::optional<Scalar>()), ValueError);
  const Tensor i = make({-5, 5, 50}, DType::Int32);
  EXPECT_EQ(clamp(i, Scalar(0), Scalar(10)).dtype(), DType::Int32);
  expect_same(values(clamp(i, Scalar(0), Scalar(10))), {0, 5, 10}, 0, "int clamp");
  EXPECT_EQ(clamp(i, Scalar(0.5), std::nullopt).dtype(), DType::Float32);
  Tensor u = make({0, 200}, DType::UInt8);
  expect_same(values(clamp(u, Scalar(10), Scalar(100))), {10, 100}, 0, "uint8 clamp");
  // Tensor bounds, broadcast.
  const Tensor lo = make({0, 1, 2, 0}, DType::Float32), hi = make({1}, DType::Float64);
  Tensor r = clamp(x, lo, hi);
  EXPECT_EQ(r.dtype(), DType::Float64);
  expect_same(values(r), {0, 1, 1, NAN}, 0, "tensor clamp");
  expect_same(values(clamp_min(x, lo)), {0, 1, 3, NAN}, 0, "clamp_min tensor");
  Tensor y = make({-2, 0.5, 3}, DType::Float32);
  clamp_(y, Scalar(-1), Scalar(1));
  expect_same(values(y), {-1, 0.5, 1}, 0, "clamp_");
  Tensor yi = make({-2, 3}, DType::Int32);
  EXPECT_THROW(clamp_(yi, Scalar(0.5), std::nullopt), TypeError);
}

TEST(BinaryTernary, Lerp) {
  const Tensor s = make({0, 1, -4}, DType::Float32), e = make({10, 3, 4}, DType::Float32);
  expect_same(values(lerp(s, e, Scalar(0.25))), {2.5, 1.5, -2}, 0, "lerp scalar");
  expect_same(values(lerp(s, e, Scalar(1))), {10, 3, 4}, 0, "lerp end exact");
  const Tensor w = make({0, 0.5, 1}, DType::Float32);
  expect_same(values(lerp(s, e, w)), {0, 2, 4}, 0, "lerp tensor");
  EXPECT_THROW(lerp(s, e.to(DType::Float64), Scalar(0.5)), TypeError);
  EXPECT_THROW(lerp(make({1}, DType::Int32), make({1}, DType::Int32), Scalar(0.5)), TypeError);
  expect_same(values(lerp(s.to(DType::BFloat16), e.to(DType::BFloat16), Scalar(0.5))), {5, 2, 0}, 0, "bf16");
}

TEST(BinaryTernary, Addcmul) {
  const Tensor in = make({1, 2, 3}, DType::Float32);
  const Tensor t1 = make({2, 3, 4}, DType::Float32), t2 = make({1, -1, 0.5}, DType::Float64);
  Tensor r = addcmul(in, t1, t2, 2);
  EXPECT_EQ(r.dtype(), DType::Float64);
  expect_same(values(r), {5, -4, 7}, 0, "addcmul");
  Tensor ii = make({1, 2}, DType::Int32);
  expect_same(values(addcmul(ii, ii, ii, 3)), {4, 14}, 0, "int addcmul");
  EXPECT_THROW(addcmul(ii, ii, ii, 0.5), TypeError);
  Tensor x = make({1, 1}, DType::Float32);
  addcmul_(x, make({2}, DType::Float32), make({3, 4}, DType::Float32), 1);
  expect_same(values(x), {7, 9}, 0, "addcmul_");
}
