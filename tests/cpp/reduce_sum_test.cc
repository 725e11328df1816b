// sum, mean, prod, all, any, count_nonzero against double references.
#include <numeric>

#include "reduce_test_util.h"

using namespace kiln;
using namespace kiln::test;

namespace {
double ref_sum(const std::vector<double>& g) { return std::accumulate(g.begin(), g.end(), 0.0); }
double ref_prod(const std::vector<double>& g) {
  double p = 1;
  for (double v : g) p *= v;
  return p;
}
}  // namespace

TEST(ReduceSum, DtypesDimsKeepdimLayouts) {
  for (DType dt : all_real_dtypes()) {
    for (const Tensor& x : inputs_345(dt)) {
      for (const DimList& dims : dim_sets()) {
        for (bool keepdim : {false, true}) {
          const std::string what = std::string(name(dt)) + " dims=" + dims_str(dims);
          const Tensor s = sum(x, dims, keepdim);
          EXPECT_EQ(s.dtype(), is_integral(dt, true) ? DType::Int64 : dt) << what;
          const std::vector<bool> m = mask_of(dims, 3);
          Shape expect;
          for (int d = 0; d < 3; ++d)
            if (!m[size_t(d)]) expect.push_back(x.shape()[d]);
            else if (keepdim) expect.push_back(1);
          EXPECT_EQ(s.sizes(), expect) << what;
          expect_close(s, ref_reduce(x, dims, ref_sum), 1.0, "sum " + what);
        }
      }
    }
  }
}

TEST(ReduceSum, DtypeArgument) {
  const Tensor x = random_tensor({4, 6}, DType::Int32);
  const Tensor s = sum(x, std::vector<int>{1}, false, DType::Float64);
  EXPECT_EQ(s.dtype(), DType::Float64);
  expect_close(s, ref_reduce(x, std::vector<int>{1}, ref_sum));
  const Tensor s32 = sum(x, std::nullopt, false, DType::Int32);
  EXPECT_EQ(s32.dtype(), DType::Int32);
  EXPECT_EQ(s32.item<int64_t>(), int64_t(ref_sum(values(x))));
  // f16 inputs summed with a float32 result.
  const Tensor h = random_tensor({100}, DType::Float16);
  const Tensor hs = sum(h, std::nullopt, false, DType::Float32);
  EXPECT_EQ(hs.dtype(), DType::Float32);
  expect_close(hs, {ref_sum(values(h))});
  EXPECT_THROW(sum(h, std::nullopt, false, DType::Float8_e4m3fn), TypeError);
}

TEST(ReduceSum, IntegerOverflowWrapsInInt64) {
  // int32 values whose sum overflows int32 but not int64.
  const Tensor x = full({4}, Scalar(int64_t(2000000000)), DType::Int32);
  EXPECT_EQ(sum(x).item<int64_t>(), 8000000000LL);
  const Tensor b = full({300}, Scalar(true), DType::Bool);
  EXPECT_EQ(sum(b).dtype(), DType::Int64);
  EXPECT_EQ(sum(b).item<int64_t>(), 300);
}

TEST(ReduceSum, LongSumsSplitAcrossThreads) {
  // Few outputs with long reductions (split path), row and column layouts.
  const Tensor a = random_tensor({2, 200003}, DType::Float32, 7);
  expect_close(sum(a, std::vector<int>{1}), ref_reduce(a, std::vector<int>{1}, ref_sum), 100);
  const Tensor c = random_tensor({200003, 3}, DType::Float32, 8);
  expect_close(sum(c, std::vector<int>{0}), ref_reduce(c, std::vector<int>{0}, ref_sum), 100);
  const Tensor t = random_tensor({3, 200003}, DType::Float64, 9).t();  // column of a transposed matrix
  expect_close(sum(t, std::vector<int>{0}), ref_reduce(t, std::vector<int>{0}, ref_sum), 100);
  const Tensor b = random_tensor({300001}, DType::BFloat16, 10);
  expect_close(sum(b), {ref_sum(values(b))}, 1000);
  const Tensor i = random_tensor({300001}, DType::Int16, 11);
  expect_close(sum(i), {ref_sum(values(i))});
}

TEST(ReduceSum, LargeFloat32SumIsAccurate) {
  // 10M copies of 0.1f: naive float32 accumulation is off by percent.
  const int64_t n = 10'000'000;
  const Tensor x = full({n}, Scalar(0.1), DType::Float32);
  const double exact = double(0.1f) * double(n);
  EXPECT_NEAR(double(sum(x).item<float>()), exact, exact * 6e-8);  // one float32 rounding
  EXPECT_NEAR(mean(x).item<double>(), double(0.1f), 1e-8);
  // Strided (column) layout accumulates in double too.
  const Tensor y = full({n / 2, 2}, Scalar(0.1), DType::Float32);
  const Tensor cs = sum(y, std::vector<int>{0});
  EXPECT_NEAR(values(cs)[0], exact / 2, exact * 6e-8);
}

TEST(ReduceMean, FloatsAndErrors) {
  for (DType dt : {DType::Float16, DType::BFloat16, DType::Float32, DType::Float64}) {
    for (const Tensor& x : inputs_345(dt)) {
      for (const DimList& dims : dim_sets()) {
        const Tensor m = mean(x, dims, true);
        EXPECT_EQ(m.dtype(), dt);
        expect_close(m, ref_reduce(x, dims, [](const std::vector<double>& g) { return ref_sum(g) / double(g.size()); }),
                     1.0, std::string("mean ") + name(dt) + dims_str(dims));
      }
    }
  }
  const Tensor i = random_tensor({3, 4}, DType::Int64);
  EXPECT_THROW(mean(i), TypeError);
  EXPECT_THROW(mean(random_tensor({3}, DType::Bool)), TypeError);
  EXPECT_THROW(mean(i, std::nullopt, false, DType::Int32), TypeError);
  const Tensor mi = mean(i, std::vector<int>{0}, false, DType::Float64);
  expect_close(mi, ref_reduce(i, std::vector<int>{0}, [](const std::vector<double>& g) { return ref_sum(g) / 3; }));
  EXPECT_THROW(mean(random_tensor({3}, DType::Float32).to(DType::Float8_e5m2)), TypeError);
}

TEST(ReduceProd, DtypesAndDims) {
  for (DType dt : all_real_dtypes()) {
    for (const DimList& dims : dim_sets()) {
      // Values near 1 so products stay representable.
      const Tensor x = is_floating(dt) ? random_tensor({3, 4, 5}, dt, 3, 0.5, 1.5) : random_tensor({3, 4, 5}, dt, 3);
      const Tensor p = prod(x, dims);
      EXPECT_EQ(p.dtype(), is_integral(dt, true) ? DType::Int64 : dt);
      expect_close(p, ref_reduce(x, dims, ref_prod), 1.0, std::string("prod ") + name(dt) + dims_str(dims));
    }
  }
}

TEST(ReduceLogical, AllAnyCountNonzero) {
  for (DType dt : all_real_dtypes()) {
    for (const Tensor& x0 : inputs_345(dt, 5)) {
      // Mostly non-zero, some zeros.
      const Tensor x = x0;
      for (const DimList& dims : dim_sets()) {
        const std::string what = std::string(name(dt)) + dims_str(dims);
        const Tensor a = all(x, dims), o = any(x, dims, true), c = count_nonzero(x, dims);
        EXPECT_EQ(a.dtype(), dt == DType::UInt8 ? DType::UInt8 : DType::Bool);
        EXPECT_EQ(c.dtype(), DType::Int64);
        expect_close(a, ref_reduce(x, dims, [](const std::vector<double>& g) {
          for (double v : g) if (v == 0) return 0.0;
          return 1.0;
        }), 1, "all " + what);
        expect_close(o, ref_reduce(x, dims, [](const std::vector<double>& g) {
          for (double v : g) if (v != 0) return 1.0;
          return 0.0;
        }), 1, "any " + what);
        expect_close(c, ref_reduce(x, dims, [](const std::vector<double>& g) {
          double n = 0;
          for (double v : g) n += v != 0;
          return n;
        }), 1, "count_nonzero " + what);
      }
    }
  }
  const Tensor nan = full({3}, Scalar(NAN), DType::Float32);
  EXPECT_TRUE(all(nan).item<bool>());  // NaN is non-zero
}

TEST(ReduceSum, EmptyAndScalar) {
  const Tensor e = empty({0, 3}, DType::Float32);
  expect_close(sum(e, std::vector<int>{0}), {0, 0, 0});
  EXPECT_EQ(sum(e, std::vector<int>{1}).sizes(), (Shape{0}));
  expect_close(prod(e, std::vector<int>{0}), {1, 1, 1});
  expect_close(mean(e, std::vector<int>{0}), {NAN, NAN, NAN});
  expect_close(mean(e), {NAN});
  EXPECT_EQ(sum(empty({0}, DType::Int32)).item<int64_t>(), 0);
  EXPECT_TRUE(all(e).item<bool>());
  EXPECT_FALSE(any(e).item<bool>());
  EXPECT_EQ(count_nonzero(e).item<int64_t>(), 0);
  // 0-dim tensors accept dim 0 and -1.
  const Tensor s = scalar_tensor(Scalar(2.5), DType::Float32);
  EXPECT_EQ(sum(s).dim(), 0);
  EXPECT_FLOAT_EQ(sum(s, std::vector<int>{0}).item<float>(), 2.5f);
  EXPECT_FLOAT_EQ(mean(s, std::vector<int>{-1}, true).item<float>(), 2.5f);
  EXPECT_THROW(sum(s, std::vector<int>{1}), IndexError);
}

TEST(ReduceSum, DimErrors) {
  const Tensor x = random_tensor({2, 3}, DType::Float32);
  EXPECT_THROW(sum(x, std::vector<int>{2}), IndexError);
  EXPECT_THROW(sum(x, std::vector<int>{-3}), IndexError);
  EXPECT_THROW(sum(x, std::vector<int>{0, -2}), ValueError);
  EXPECT_THROW(sum(x.to(DType::Float8_e4m3fn)), TypeError);
  EXPECT_THROW(all(x.to(DType::Float8_e5m2)), TypeError);
}

TEST(ReduceSum, Complex) {
  const Tensor re = random_tensor({4, 5}, DType::Float64, 1), im = random_tensor({4, 5}, DType::Float64, 2);
  std::vector<complex128> v(20);
  const auto rv = values(re), iv = values(im);
  for (int i = 0; i < 20; ++i) v[size_t(i)] = {rv[size_t(i)], iv[size_t(i)]};
  const Tensor z = from_buffer_copy(v.data(), {4, 5}, DType::Complex128).to(DType::Complex64);
  const Tensor s = sum(z, std::vector<int>{1});
  EXPECT_EQ(s.dtype(), DType::Complex64);
  const complex64* sp = s.data<complex64>();
  for (int r = 0; r < 4; ++r) {
    complex128 ref = 0;
    for (int c = 0; c < 5; ++c) ref += complex128(complex64(v[size_t(r * 5 + c)]));
    EXPECT_NEAR(sp[r].real(), ref.real(), 1e-5);
    EXPECT_NEAR(sp[r].imag(), ref.imag(), 1e-5);
  }
}
