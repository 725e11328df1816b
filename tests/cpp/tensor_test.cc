// Tensor views, copies and factories against hand-computed index arithmetic.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "core/strided_loop.h"
#include "kiln/kiln.h"

using namespace kiln;

namespace {
// Reads element at a multi-index through shape/strides/offset, as int64.
int64_t at(const Tensor& t, std::initializer_list<int64_t> idx) {
  Tensor v = t;
  for (int64_t i : idx) v = v.select(0, i);
  return v.item<int64_t>();
}
}  // namespace

TEST(Tensor, ViewsShareStorage) {
  Tensor a = arange(0, 24).reshape({2, 3, 4});
  EXPECT_EQ(a.dtype(), DType::Int64);
  EXPECT_EQ(a.sizes(), (Shape{2, 3, 4}));
  EXPECT_EQ(a.stride_vec(), (Shape{12, 4, 1}));
  EXPECT_TRUE(a.is_contiguous());

  Tensor t = a.transpose(0, 2);  // [4, 3, 2]
  EXPECT_FALSE(t.is_contiguous());
  EXPECT_EQ(at(t, {1, 2, 1}), 12 + 8 + 1);
  EXPECT_EQ(t.storage(), a.storage());

  Tensor p = a.permute({1, 2, 0});  // [3, 4, 2]
  EXPECT_EQ(p.sizes(), (Shape{3, 4, 2}));
  EXPECT_EQ(at(p, {2, 3, 1}), 12 + 8 + 3);

  Tensor s = a.slice(2, 1, 4, 2);  // [2, 3, 2]: columns 1, 3
  EXPECT_EQ(s.sizes(), (Shape{2, 3, 2}));
  EXPECT_EQ(at(s, {1, 2, 1}), 12 + 8 + 3);
  EXPECT_EQ(a.slice(0, -1, 100).size(0), 1);  // clamped like Python
  EXPECT_EQ(a.slice(1, 2, 1).size(1), 0);

  Tensor n = a.narrow(1, 1, 2);
  EXPECT_EQ(at(n, {0, 0, 0}), 4);
  EXPECT_THROW(a.narrow(1, 2, 2), IndexError);

  Tensor u = a.unsqueeze(1);
  EXPECT_EQ(u.sizes(), (Shape{2, 1, 3, 4}));
  EXPECT_EQ(u.squeeze(1).sizes(), a.sizes());
  EXPECT_EQ(u.squeeze().sizes(), a.sizes());
  EXPECT_EQ(a.unsqueeze(-1).sizes(), (Shape{2, 3, 4, 1}));

  Tensor e = arange(0, 3).reshape({3, 1}).expand({2, 3, 5});
  EXPECT_EQ(e.sizes(), (Shape{2, 3, 5}));
  EXPECT_EQ(e.stride_vec(), (Shape{0, 1, 0}));
  EXPECT_EQ(at(e, {1, 2, 4}), 2);
  EXPECT_THROW(a.expand({2, 5, 4}), ValueError);

  Tensor f = a.flatten(1);
  EXPECT_EQ(f.sizes(), (Shape{2, 12}));
  EXPECT_EQ(f.storage(), a.storage());

  Tensor st = a.as_strided({3, 3}, {5, 1}, 2);
  EXPECT_EQ(at(st, {2, 1}), 13);
  EXPECT_THROW(a.as_strided({5, 5}, {5, 1}, 2), IndexError);  // reaches past storage
}

TEST(Tensor, ViewVersusReshape) {
  Tensor a = arange(0, 24).reshape({4, 6});
  Tensor t = a.t();
  EXPECT_THROW(t.view({24}), ValueError);
  Tensor r = t.reshape({24});
  EXPECT_NE(r.storage(), a.storage());  // had to copy
  for (int64_t i = 0; i < 24; ++i) EXPECT_EQ(at(r, {i}), (i % 4) * 6 + i / 4);
  // Splitting a dim of a transposed tensor is still a view.
  Tensor v = t.view({2, 3, 4});
  EXPECT_EQ(v.storage(), a.storage());
  EXPECT_EQ(at(v, {1, 2, 3}), 3 * 6 + 5);
  EXPECT_EQ(a.view({-1}).numel(), 24);
  EXPECT_THROW(a.view({-1, -1}), ValueError);
  EXPECT_THROW(a.view({5, -1}), ValueError);
  EXPECT_THROW(a.view({7, 4}), ValueError);
}

TEST(Tensor, ZeroDimAndEmpty) {
  Tensor s = scalar_tensor(Scalar(3.5), DType::Float32);
  EXPECT_EQ(s.dim(), 0);
  EXPECT_EQ(s.numel(), 1);
  EXPECT_EQ(s.item<double>(), 3.5);
  EXPECT_EQ(s.reshape({1, 1}).sizes(), (Shape{1, 1}));
  Tensor e = empty({0, 3});
  EXPECT_EQ(e.numel(), 0);
  EXPECT_TRUE(e.is_contiguous());
  EXPECT_EQ(e.reshape({3, 0, 5}).numel(), 0);
  EXPECT_EQ(e.t().contiguous().sizes(), (Shape{3, 0}));
  EXPECT_THROW(empty({2, -1}), ValueError);
  EXPECT_THROW(empty({1, 1, 1, 1, 1, 1, 1, 1, 1}), ValueError);  // 9 dims
  EXPECT_THROW((void)e.item<int64_t>(), ValueError);
}

TEST(Tensor, CopyConvertsAndBroadcasts) {
  Tensor a = arange(0, 6).reshape({2, 3});
  Tensor b = zeros({4, 2, 3}, DType::Float64);
  b.copy_(a);
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 2; ++j)
      for (int64_t k = 0; k < 3; ++k) EXPECT_EQ(b.select(0, i).select(0, j).select(0, k).item<double>(), j * 3 + k);
  EXPECT_THROW(zeros({2, 4}).copy_(a), ValueError);

  // Overlapping copy: shifting a row by one within the same storage.
  Tensor r = arange(0, 5);
  r.slice(0, 1, 5).copy_(r.slice(0, 0, 4));
  for (int64_t i = 1; i < 5; ++i) EXPECT_EQ(at(r, {i}), i - 1);

  // Casting rules: float -> int truncates, negative -> uint8 wraps, bool is != 0.
  Tensor f = full({3}, Scalar(-1.75), DType::Float32);
  EXPECT_EQ(f.to(DType::Int32).select(0, 0).item<int64_t>(), -1);
  EXPECT_EQ(f.to(DType::UInt8).select(0, 0).item<int64_t>(), 255);
  EXPECT_EQ(f.to(DType::Bool).select(0, 0).item<bool>(), true);
  EXPECT_EQ(zeros({2}).to(DType::Bool).select(0, 1).item<bool>(), false);
  // complex -> real keeps the real part
  Tensor c = full({2}, Scalar(complex128(2.5, -1.0)), DType::Complex64);
  EXPECT_EQ(c.to(DType::Float64).select(0, 0).item<double>(), 2.5);
}

// A transposed matrix made contiguous (the blocked transpose of the copy
// kernel): every element size, sizes around its 32 x 32 blocks, a batch dim
// with its own stride, and a source whose columns lie further apart than
// its rows are long. Checked against index arithmetic on the source.
TEST(Tensor, TransposedCopiesMatchIndexArithmetic) {
  for (DType d : {DType::Int8, DType::Int16, DType::Int32, DType::Int64})
    for (int64_t R : {2, 31, 32, 33, 70})
      for (int64_t C : {2, 32, 65}) {
        // base[b][c][r + pad] = unique ids; src = base[..., :R] viewed as [B, R, C].
        const int64_t B = 3, pad = 5, mod = d == DType::Int8 ? 101 : 1 << 14;
        const Tensor base =
            remainder(arange(0, B * C * (R + pad)), Scalar(mod)).reshape({B, C, R + pad}).to(d);
        const Tensor src = base.slice(2, 0, R).transpose(1, 2).slice(0, 1, B);  // [B - 1, R, C]
        const Tensor dst = src.contiguous();
        ASSERT_TRUE(dst.is_contiguous());
        const Tensor got = dst.to(DType::Int64), flat = base.to(DType::Int64).contiguous();
        const int64_t* g = got.data<int64_t>();
        const int64_t* f = flat.data<int64_t>();
        int bad = 0;
        for (int64_t b = 0; b < B - 1; ++b)
          for (int64_t r = 0; r < R; ++r)
            for (int64_t c = 0; c < C; ++c)
              bad += g[(b * R + r) * C + c] != f[((b + 1) * C + c) * (R + pad) + r];
        EXPECT_EQ(bad, 0) << name(d) << " R=" << R << " C=" << C;
      }
}

TEST(Tensor, NarrowFloatsRoundTrip) {
  Tensor x = linspace(-500, 500, 1001);
  for (DType d : {DType::BFloat16, DType::Float16, DType::Float8_e4m3fn, DType::Float8_e5m2}) {
    Tensor y = x.to(d).to(DType::Float32);
    for (int64_t i = 0; i < x.numel(); i += 37) {
      const float v = x.select(0, i).item<float>();
      const float got = y.select(0, i).item<float>();
      float want = 0;
      switch (d) {
        case DType::BFloat16: want = float(bfloat16(v)); break;
        case DType::Float16: want = float(half(v)); break;
        case DType::Float8_e4m3fn: want = float(float8_e4m3fn(v)); break;
        default: want = float(float8_e5m2(v)); break;
      }
      if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(got)) << name(d) << " " << v;
      } else {
        EXPECT_EQ(got, want) << name(d) << " " << v;
      }
    }
  }
  // e4m3fn: out of range gives NaN, never saturates.
  EXPECT_TRUE(std::isnan(full({1}, Scalar(500.0)).to(DType::Float8_e4m3fn).to(DType::Float32).item<float>()));
  EXPECT_TRUE(std::isinf(full({1}, Scalar(1e6)).to(DType::Float8_e5m2).to(DType::Float32).item<float>()));
}

TEST(Tensor, RangeFactories) {
  Tensor a = arange(Scalar(1.0), Scalar(2.0), Scalar(0.25));
  EXPECT_EQ(a.dtype(), DType::Float32);
  ASSERT_EQ(a.numel(), 4);
  EXPECT_EQ(a.select(0, 3).item<double>(), 1.75);
  EXPECT_EQ(arange(10, 0, -3).numel(), 4);  // 10 7 4 1
  EXPECT_EQ(arange(10, 0, -3).select(0, 3).item<int64_t>(), 1);
  EXPECT_THROW(arange(0, 10, 0), ValueError);
  EXPECT_THROW(arange(0, 10, -1), ValueError);

  Tensor l = linspace(0, 1, 5, DType::Float64);
  for (int i = 0; i < 5; ++i) EXPECT_DOUBLE_EQ(l.select(0, i).item<double>(), i * 0.25);
  EXPECT_EQ(linspace(3, 7, 1).select(0, 0).item<double>(), 3.0);
  EXPECT_EQ(linspace(3, 7, 0).numel(), 0);
  Tensor g = logspace(0, 3, 4, 2.0, DType::Float64);
  for (int i = 0; i < 4; ++i) EXPECT_DOUBLE_EQ(g.select(0, i).item<double>(), std::pow(2.0, i));

  Tensor e = eye(3, 4, DType::Int32);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) EXPECT_EQ(at(e, {i, j}), i == j ? 1 : 0);
  Tensor f = full({2, 2}, Scalar(int64_t(7)));
  EXPECT_EQ(f.dtype(), DType::Int64);
  EXPECT_EQ(full({2}, Scalar(true)).dtype(), DType::Bool);
  EXPECT_EQ(ones({3}, DType::BFloat16).select(0, 2).item<double>(), 1.0);
}

TEST(Tensor, FromBlobIsZeroCopy) {
  std::vector<float> buf(12);
  std::iota(buf.begin(), buf.end(), 0.0f);
  bool released = false;
  {
    Tensor t = from_blob(buf.data(), {3, 4}, {4, 1}, DType::Float32, [&] { released = true; });
    t.select(0, 1).select(0, 2).fill_(Scalar(-1.0));
    EXPECT_EQ(buf[6], -1.0f);
    Tensor col = t.select(1, 3);  // keeps the storage alive
    t = Tensor();
    EXPECT_FALSE(released);
    EXPECT_EQ(col.select(0, 2).item<float>(), 11.0f);
  }
  EXPECT_TRUE(released);
  Tensor c = from_buffer_copy(buf.data(), {12}, DType::Float32);
  buf[0] = 100.0f;
  EXPECT_EQ(c.select(0, 0).item<float>(), 0.0f);
}

TEST(Tensor, Repr) {
  EXPECT_EQ(arange(0, 3).repr(), "tensor([0, 1, 2])");
  EXPECT_EQ(full({2}, Scalar(1.5)).repr(), "tensor([1.5, 1.5])");
  EXPECT_EQ(zeros({1}, DType::BFloat16).repr(), "tensor([0.], dtype=kiln.bfloat16)");
  EXPECT_EQ(zeros({0, 2}).repr(), "tensor([], size=[0, 2])");
}

TEST(Tensor, WritesIntoExpandedViewsAreRefused) {
  Tensor e = zeros({3}).expand({2, 3});
  EXPECT_THROW(e.fill_(Scalar(1.0)), ValueError);
  EXPECT_THROW(e.copy_(ones({2, 3})), ValueError);
  // Reading through the expanded view is fine, and so is writing a stride-0
  // dim of size 1.
  EXPECT_EQ(e.contiguous().numel(), 6);
  Tensor one = zeros({3}).expand({1, 3});
  one.fill_(Scalar(2.0));
  EXPECT_EQ(one.select(0, 0).select(0, 2).item<double>(), 2.0);
}

TEST(Tensor, HugeSizesRaiseInsteadOfWrapping) {
  EXPECT_THROW(empty({int64_t(1) << 62}, DType::Float64), ValueError);  // bytes overflow size_t
  EXPECT_THROW(empty({int64_t(3) << 60}, DType::Float32), ValueError);
  EXPECT_THROW(empty({int64_t(1) << 40, int64_t(1) << 40}), ValueError);  // numel overflows
  EXPECT_THROW(empty_strided({2, 2}, {int64_t(1) << 62, 1}), ValueError);
}

TEST(Tensor, ArangeEdgeCases) {
  // The span of the bounds exceeds int64: sized in 128 bits.
  Tensor a = arange(Scalar(INT64_MIN), Scalar(INT64_MAX), Scalar(int64_t(1) << 62));
  ASSERT_EQ(a.numel(), 4);
  EXPECT_EQ(a.select(0, 3).item<int64_t>(), int64_t(1) << 62);
  EXPECT_THROW(arange(Scalar(0.0), Scalar(1e30), Scalar(1.0)), ValueError);
  EXPECT_THROW(arange(Scalar(0.0), Scalar(10.0), Scalar(std::nan(""))), ValueError);
  EXPECT_EQ(arange(Scalar(0.0), Scalar(1.0), Scalar(0.1)).numel(), 10);
  // 2^64 - 1 elements: the count wrapped to -1 and [empty] blamed a negative size.
  try {
    arange(Scalar(INT64_MIN), Scalar(INT64_MAX), Scalar(int64_t(1)));
    ADD_FAILURE() << "no exception";
  } catch (const ValueError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("[arange]", 0), 0u) << e.what();
  }
}

TEST(Tensor, FloatToIntMatchesNumpyOnX86) {
  // NumPy/torch on x86: NaN and out-of-range give the "integer indefinite".
  Tensor f = from_buffer_copy(std::vector<double>{std::nan(""), INFINITY, -INFINITY, 3e9, -1.5, 300.0}.data(),
                              {6}, DType::Float64);
  Tensor i64 = f.to(DType::Int64), i32 = f.to(DType::Int32), u8 = f.to(DType::UInt8);
  const int64_t want64[] = {INT64_MIN, INT64_MIN, INT64_MIN, 3000000000, -1, 300};
  const int64_t want32[] = {INT32_MIN, INT32_MIN, INT32_MIN, INT32_MIN, -1, 300};
  const int64_t want8[] = {0, 0, 0, 0, 255, 44};
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(i64.select(0, i).item<int64_t>(), want64[i]) << i;
    EXPECT_EQ(i32.select(0, i).item<int64_t>(), want32[i]) << i;
    EXPECT_EQ(u8.select(0, i).item<int64_t>(), want8[i]) << i;
  }
  // full() goes through Scalar::to and agrees with the tensor cast.
  EXPECT_EQ(full({1}, Scalar(std::nan("")), DType::Int32).item<int64_t>(), INT32_MIN);
  // Unsigned scalars above INT64_MAX stay exact in floating point.
  EXPECT_EQ(Scalar(uint64_t(UINT64_MAX)).to_double(), 18446744073709551615.0);
  EXPECT_EQ(full({1}, Scalar(uint64_t(UINT64_MAX)), DType::Float64).item<double>(), 18446744073709551615.0);
}

// ---- size/stride/offset arithmetic that would overflow int64 ----------------
// Each case wrapped to a small or negative value before, passing a bounds check.

namespace {
constexpr int64_t kP61 = int64_t(1) << 61, kP62 = int64_t(1) << 62;
}  // namespace

TEST(TensorOverflow, AsStridedExtentIsCheckedWithoutWrapping) {
  Tensor a = arange(0, 3);  // 24 bytes of int64
  // (2^61 + 1) * 8 and (2^62 - 1 + 2) * 8 bytes wrap to small values.
  EXPECT_THROW(a.as_strided({2}, {kP61}, 0), IndexError);
  EXPECT_THROW(a.as_strided({1}, {1}, kP61), IndexError);
  EXPECT_THROW(a.as_strided({2}, {1}, kP62 - 1), IndexError);
  EXPECT_THROW(a.as_strided({3, 2}, {1, INT64_MAX}, 0), IndexError);
  EXPECT_THROW(a.as_strided({1}, {1}, INT64_MAX), IndexError);
  Tensor f = ones({3});  // 12 bytes of float32: the cases of the report
  EXPECT_THROW(f.as_strided({2}, {kP61}, 0), IndexError);
  EXPECT_THROW(f.as_strided({1}, {1}, kP61), IndexError);
  EXPECT_THROW(f.as_strided({2}, {1}, kP62 - 1), IndexError);
  // The bound itself is exact: the last element is reachable, one past it is not.
  EXPECT_EQ(at(a.as_strided({1}, {1}, 2), {0}), 2);
  EXPECT_EQ(at(a.as_strided({2}, {2}, 0), {1}), 2);
  EXPECT_THROW(a.as_strided({1}, {1}, 3), IndexError);
  EXPECT_THROW(a.as_strided({2}, {3}, 0), IndexError);
  // An empty view reads nothing: any stride, as torch, but the count must fit.
  EXPECT_EQ(a.as_strided({0, 2}, {1, kP62}, 0).numel(), 0);
  EXPECT_THROW(a.as_strided({0, kP62, 4}, {1, 1, 1}, 0), ValueError);
  EXPECT_THROW(a.as_strided({0}, {1}, kP62), IndexError);  // byte offset overflows
}

TEST(TensorOverflow, ExpandNumelMustFitInt64) {
  Tensor one = ones({1});
  EXPECT_THROW(one.expand({kP62, 4}), ValueError);  // 2^64 elements wrapped to 0
  EXPECT_THROW(one.expand({INT64_MAX, 2}), ValueError);
  EXPECT_THROW(one.expand({4, 4, kP61}), ValueError);
  Tensor big = one.expand({int64_t(1) << 31, int64_t(1) << 31});
  EXPECT_EQ(big.numel(), int64_t(1) << 62);
  EXPECT_EQ(big.stride_vec(), (Shape{0, 0}));
  EXPECT_THROW((void)big.nbytes(), ValueError);  // 2^62 * 4 bytes does not fit
  EXPECT_EQ(one.expand({int64_t(1) << 30, 2}).nbytes(), size_t(1) << 33);
}

TEST(TensorOverflow, ViewAndReshapeSizeProductsDoNotWrap) {
  Tensor a = arange(0, 8);
  // 4 * (2^62 + 1) wraps to 4, so -1 was inferred as 2; with all sizes given
  // the product wraps to exactly 8.
  EXPECT_THROW(a.view({4, kP62 + 1, -1}), ValueError);
  EXPECT_THROW(a.reshape({4, kP62 + 1, -1}), ValueError);
  EXPECT_THROW(a.view({4, kP62 + 1, 2}), ValueError);
  EXPECT_THROW(a.reshape({4, kP62 + 1, 2}), ValueError);
  EXPECT_THROW(a.view({kP62, kP62, -1}), ValueError);
  EXPECT_EQ(a.view({2, -1}).sizes(), (Shape{2, 4}));
  // An empty tensor may have huge sizes, as long as its non-zero sizes multiply
  // into int64, so that contiguous strides fit too.
  Tensor e = empty({0, kP62});
  EXPECT_EQ(e.stride_vec(), (Shape{kP62, 1}));
  EXPECT_EQ(e.reshape({kP62, 0}).stride_vec(), (Shape{1, 1}));
  EXPECT_EQ(e.flatten().sizes(), (Shape{0}));
  EXPECT_THROW(empty({0, kP62, 4}), ValueError);
  EXPECT_THROW(empty({kP62, 4, 0}), ValueError);
  EXPECT_THROW(e.reshape({0, kP62, 4}), ValueError);
}

TEST(TensorOverflow, SliceNarrowSelectOffsetsDoNotWrap) {
  Tensor a = arange(0, 3);
  // start + length wrapped negative and passed the bound check.
  EXPECT_THROW(a.narrow(0, 1, INT64_MAX), IndexError);
  // (end - start + step - 1) / step wrapped to a negative size.
  Tensor s = a.slice(0, 1, 3, INT64_MAX);
  EXPECT_EQ(s.sizes(), (Shape{1}));
  EXPECT_EQ(at(s, {0}), 1);
  Tensor t = arange(0, 8).reshape({4, 2}).t();  // [2, 4], strides [1, 2]
  Tensor ts = t.slice(1, 1, 4, INT64_MAX);      // stride 2 * step does not fit; one element
  EXPECT_EQ(ts.sizes(), (Shape{2, 1}));
  EXPECT_EQ(at(ts, {1, 0}), 3);
  // Empty views may carry strides whose multiples overflow the offset.
  Tensor e = a.as_strided({0, 4}, {1, kP62}, 0);
  EXPECT_THROW(e.select(1, 3), IndexError);
  EXPECT_THROW(e.narrow(1, 3, 1), IndexError);
  EXPECT_THROW(e.slice(1, 3, 4), IndexError);
  EXPECT_THROW(e.slice(1, 0, 4, 2), ValueError);  // stride 2^63 with two steps
  EXPECT_EQ(a.as_strided({0, 4}, {1, kP62 / 8}, 0).select(1, 1).offset(), kP62 / 8);
  EXPECT_THROW(a.as_strided({0, 4}, {1, kP62 / 8}, 0).select(1, 3), IndexError);  // bytes overflow
}

TEST(TensorOverflow, UnsqueezeOfEmptyViewKeepsStridesNonNegative) {
  // size * stride (2 * 2^62) is the stride torch gives the new dim; it wrapped
  // to INT64_MIN.
  Tensor e = arange(0, 3).as_strided({2, 0}, {kP62, 1}, 0);
  Tensor u = e.unsqueeze(0);
  EXPECT_EQ(u.sizes(), (Shape{1, 2, 0}));
  EXPECT_GE(u.stride(0), 0);
  EXPECT_EQ(arange(0, 6).reshape({2, 3}).unsqueeze(1).stride_vec(), (Shape{3, 3, 1}));
}

TEST(TensorOverflow, FactoriesCheckElementCountAndExtent) {
  // empty_strided: the extent was computed only for non-empty shapes.
  EXPECT_THROW(empty_strided({0, kP62, 4}, {1, 1, 1}), ValueError);
  EXPECT_THROW(empty_strided({2}, {INT64_MAX}), ValueError);
  EXPECT_THROW(empty_strided({2, 2}, {-1, 1}), ValueError);
  EXPECT_EQ(empty_strided({0, 3}, {1, INT64_MAX}).numel(), 0);
  Tensor s = empty_strided({2, 3}, {1, 2}, DType::Int64);
  EXPECT_EQ(s.storage()->nbytes(), 6 * 8u);
  EXPECT_THROW(full({kP62, 4}, Scalar(1.0)), ValueError);
  EXPECT_THROW(from_buffer_copy(nullptr, {kP62, 4}, DType::UInt8), ValueError);

  // from_blob: 1 + 4 * 2^62 elements wrapped to 1; 2^62 * 4 elements to 0.
  std::vector<float> buf(4, 1.0f);
  EXPECT_THROW(from_blob(buf.data(), {5}, {kP62}, DType::Float32), ValueError);
  EXPECT_THROW(from_blob(buf.data(), {kP62, 4}, {0, 0}, DType::Float32), ValueError);
  EXPECT_THROW(from_blob(buf.data(), {2, 2}, {INT64_MAX, 1}, DType::Float32), ValueError);
  EXPECT_THROW(from_blob(buf.data(), {2}, {-1}, DType::Float32), ValueError);
  Tensor b = from_blob(buf.data(), {2, 2}, {2, 1}, DType::Float32);
  EXPECT_EQ(b.storage()->nbytes(), 16u);
  EXPECT_EQ(from_blob(buf.data(), {0, 2}, {1, kP62}, DType::Float32).numel(), 0);
}

TEST(TensorOverflow, ContiguousStridesOverflowRaises) {
  EXPECT_THROW(contiguous_strides(Shape{2, kP62, 2}), ValueError);
  EXPECT_EQ(contiguous_strides(Shape{kP62, 2}), (Shape{2, 1}));
  EXPECT_THROW(shape_numel(Shape{kP62, 4, 0}, "test"), ValueError);
  EXPECT_EQ(shape_numel(Shape{0, kP62}, "test"), 0);
}

TEST(StridedLoop, ElementCountIsCheckedAndEmptyLoopsRunNothing) {
  // 2^62 * 4 elements wrapped to 0: the loop silently ran nothing.
  EXPECT_THROW(StridedLoop::make(Shape{kP62, 4}, std::span<const Tensor* const>()), ValueError);
  // An empty view may have strides whose byte multiples do not fit.
  Tensor e = arange(0, 3).as_strided({0, 2}, {1, kP62}, 0);
  const Tensor* ops[1] = {&e};
  const StridedLoop loop = StridedLoop::make(e.shape(), ops);
  EXPECT_EQ(loop.numel, 0);
  int calls = 0;
  for_each(loop, 1, [&](char**, const int64_t*, int64_t) { ++calls; });
  EXPECT_EQ(calls, 0);
  // Contiguous dims still coalesce into one run.
  Tensor c = arange(0, 24).reshape({2, 3, 4});
  const Tensor* cops[1] = {&c};
  const StridedLoop l2 = StridedLoop::make(c.shape(), cops);
  EXPECT_EQ(l2.numel, 24);
  EXPECT_EQ(l2.ndim, 1);
  EXPECT_EQ(l2.strides[0][0], 8);
}
