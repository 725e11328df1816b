// var/std/var_mean/std_mean, logsumexp, norm, cumsum/cumprod against double references.
#include <numeric>

#include "reduce_test_util.h"

using namespace kiln;
using namespace kiln::test;

namespace {
double ref_mean(const std::vector<double>& g) { return std::accumulate(g.begin(), g.end(), 0.0) / double(g.size()); }
double ref_var(const std::vector<double>& g, double correction) {
  const double m = ref_mean(g);
  double s = 0;
  for (double v : g) s += (v - m) * (v - m);
  return s / std::max(0.0, double(g.size()) - correction);
}
}  // namespace

TEST(ReduceMoments, VarStdMeanOverDims) {
  for (DType dt : {DType::Float16, DType::BFloat16, DType::Float32, DType::Float64}) {
    for (const Tensor& x : inputs_345(dt, 2)) {
      for (const DimList& dims : dim_sets()) {
        for (double c : {0.0, 1.0, 2.5}) {
          const std::string what = std::string(name(dt)) + dims_str(dims) + " c=" + std::to_string(c);
          const auto rv = ref_reduce(x, dims, [&](const auto& g) { return ref_var(g, c); });
          const auto rm = ref_reduce(x, dims, ref_mean);
          std::vector<double> rs(rv.size());
          for (size_t i = 0; i < rv.size(); ++i) rs[i] = std::sqrt(rv[i]);
          const Tensor v = var(x, dims, c, true);
          EXPECT_EQ(v.dtype(), dt);
          expect_close(v, rv, 1, "var " + what);
          expect_close(kiln::std(x, dims, c), rs, 1, "std " + what);
          auto [v2, m2] = var_mean(x, dims, c);
          expect_close(v2, rv, 1, "var_mean " + what);
          expect_close(m2, rm, 1, "var_mean.mean " + what);
          auto [s3, m3] = std_mean(x, dims, c, true);
          expect_close(s3, rs, 1, "std_mean " + what);
          expect_close(m3, rm, 1, "std_mean.mean " + what);
        }
      }
    }
  }
}

TEST(ReduceMoments, LargeOffsetDataStaysAccurate) {
  // Mean 1000, spread 1: a one-pass sum-of-squares formula would lose all digits.
  const Tensor x = random_tensor({3000017}, DType::Float64, 4, 999, 1001).to(DType::Float32);
  const auto g = values(x);
  auto [v, m] = var_mean(x);
  EXPECT_NEAR(v.item<double>(), ref_var(g, 1), 1e-5 * ref_var(g, 1));
  EXPECT_NEAR(m.item<double>(), ref_mean(g), 1e-4);
  // Column layout (Welford) and a strided row layout.
  const Tensor c = x.narrow(0, 0, 3000000).view({1000000, 3});
  expect_close(var(c, std::vector<int>{0}), ref_reduce(c, std::vector<int>{0}, [](const auto& g) { return ref_var(g, 1); }), 1);
  const Tensor t = c.t();  // [3, 1000000] with stride 3 along the reduced dim
  expect_close(var(t, std::vector<int>{1}), ref_reduce(t, std::vector<int>{1}, [](const auto& g) { return ref_var(g, 1); }), 1);
}

TEST(ReduceMoments, EdgeCasesAndErrors) {
  const Tensor one = full({1}, Scalar(3.0), DType::Float32);
  EXPECT_TRUE(std::isnan(var(one).item<float>()));  // 0 / 0
  EXPECT_FLOAT_EQ(var(one, std::nullopt, 0.0).item<float>(), 0.0f);
  std::vector<float> two = {1, 2};
  const Tensor t = from_buffer_copy(two.data(), {2}, DType::Float32);
  EXPECT_TRUE(std::isinf(var(t, std::nullopt, 5.0).item<float>()));  // 0.5 / 0
  const Tensor e = empty({0, 2}, DType::Float32);
  expect_close(var(e, std::vector<int>{0}), {NAN, NAN});
  expect_close(var_mean(e).second, {NAN});
  std::vector<float> nf = {1, INFINITY, 2};
  expect_close(var(from_buffer_copy(nf.data(), {3}, DType::Float32)), {NAN});
  EXPECT_THROW(var(random_tensor({3}, DType::Int32)), TypeError);
  EXPECT_THROW(kiln::std(random_tensor({3}, DType::Bool)), TypeError);
  EXPECT_THROW(var(random_tensor({3}, DType::Float32).to(DType::Float8_e4m3fn)), TypeError);
  // Complex: real variance of |x - mean|^2.
  std::vector<complex64> z = {{1, 2}, {3, -1}, {0, 0}, {-2, 5}};
  const Tensor zt = from_buffer_copy(z.data(), {4}, DType::Complex64);
  const Tensor zv = var(zt);
  EXPECT_EQ(zv.dtype(), DType::Float32);
  complex128 m = 0;
  for (auto c : z) m += complex128(c);
  m /= 4.0;
  double s = 0;
  for (auto c : z) s += std::norm(complex128(c) - m);
  EXPECT_NEAR(zv.item<double>(), s / 3, 1e-5);
}

TEST(ReduceLogSumExp, DimsInfAndDtypes) {
  for (DType dt : {DType::Float16, DType::BFloat16, DType::Float32, DType::Float64}) {
    for (const Tensor& x : inputs_345(dt, 6)) {
      for (const DimList& dims : dim_sets()) {
        const Tensor l = logsumexp(x, dims, true);
        EXPECT_EQ(l.dtype(), dt);
        expect_close(l, ref_reduce(x, dims, [](const auto& g) {
          double s = 0;
          for (double v : g) s += std::exp(v);
          return std::log(s);
        }), 1, std::string("logsumexp ") + name(dt) + dims_str(dims));
      }
    }
  }
  std::vector<float> v = {-INFINITY, -INFINITY, 1000, 1000, INFINITY, 1, NAN, 1, -INFINITY, 0};
  const Tensor x = from_buffer_copy(v.data(), {5, 2}, DType::Float32);
  expect_close(logsumexp(x, std::vector<int>{1}), {-INFINITY, 1000 + std::log(2.0), INFINITY, NAN, 0});
  const Tensor i = logsumexp(random_tensor({4}, DType::Int64));
  EXPECT_EQ(i.dtype(), DType::Float32);
  EXPECT_EQ(logsumexp(empty({0}, DType::Float32)).item<float>(), -INFINITY);
}

TEST(ReduceNorm, PValuesDimsDtypes) {
  for (DType dt : {DType::BFloat16, DType::Float32, DType::Float64}) {
    for (const Tensor& x : inputs_345(dt, 9)) {
      for (double p : {2.0, 1.0, 0.0, 3.0, 0.5, double(INFINITY), -double(INFINITY)}) {
        for (const DimList& dims : dim_sets()) {
          const Tensor n = norm(x, p, dims);
          expect_close(n, ref_reduce(x, dims, [&](const auto& g) {
            double s = p == -INFINITY ? INFINITY : 0;
            for (double v : g) {
              const double a = std::fabs(v);
              if (p == INFINITY) s = std::max(s, a);
              else if (p == -INFINITY) s = std::min(s, a);
              else if (p == 0) s += a != 0;
              else s += std::pow(a, p);
            }
            return (p == 0 || std::isinf(p)) ? s : std::pow(s, 1 / p);
          }), 1, std::string("norm ") + name(dt) + " p=" + std::to_string(p) + dims_str(dims));
        }
      }
    }
  }
  std::vector<complex128> z = {{3, 4}, {0, 1}};
  const Tensor zn = norm(from_buffer_copy(z.data(), {2}, DType::Complex128));
  EXPECT_EQ(zn.dtype(), DType::Float64);
  EXPECT_NEAR(values(zn)[0], std::sqrt(26.0), 1e-12);  // (item<double> goes through float)
  EXPECT_THROW(norm(random_tensor({3}, DType::Int64)), TypeError);
  EXPECT_EQ(norm(empty({0}, DType::Float32)).item<float>(), 0.0f);
  EXPECT_THROW(norm(empty({0}, DType::Float32), -INFINITY), IndexError);
  std::vector<float> nv = {1, NAN, 2};
  EXPECT_TRUE(std::isnan(norm(from_buffer_copy(nv.data(), {3}, DType::Float32), INFINITY).item<float>()));
  const Tensor nd = norm(random_tensor({3, 4}, DType::Float32), 2, std::vector<int>{1}, false, DType::Float64);
  EXPECT_EQ(nd.dtype(), DType::Float64);
}

TEST(ReduceScan, CumsumCumprod) {
  for (DType dt : all_real_dtypes()) {
    for (const Tensor& x0 : inputs_345(dt, 12)) {
      const Tensor x = is_floating(dt) ? x0.to(DType::Float64).to(dt) : x0;
      for (int d : {0, 1, 2, -1}) {
        const int dd = d < 0 ? d + 3 : d;
        const Tensor cs = cumsum(x, d), cp = cumprod(x, d);
        EXPECT_EQ(cs.dtype(), is_integral(dt, true) ? DType::Int64 : dt);
        EXPECT_EQ(cs.sizes(), x.sizes());
        // Reference: walk the contiguous copy.
        const std::vector<double> v = values(x);
        std::vector<double> rs(v.size()), rp(v.size());
        const Shape sh = x.sizes();
        const Shape st = contiguous_strides(sh);
        for (size_t i = 0; i < v.size(); ++i) {
          const int64_t pos = (int64_t(i) / st[size_t(dd)]) % sh[size_t(dd)];
          rs[i] = v[i] + (pos > 0 ? rs[i - size_t(st[size_t(dd)])] : 0.0);
          rp[i] = v[i] * (pos > 0 ? rp[i - size_t(st[size_t(dd)])] : 1.0);
        }
        expect_close(cs, rs, 2, std::string("cumsum ") + name(dt));
        expect_close(cp, rp, 2, std::string("cumprod ") + name(dt));
      }
    }
  }
  const Tensor i = random_tensor({5}, DType::Int8);
  EXPECT_EQ(cumsum(i, 0, DType::Float32).dtype(), DType::Float32);
  EXPECT_EQ(cumsum(empty({0, 3}, DType::Float32), 0).sizes(), (Shape{0, 3}));
  EXPECT_FLOAT_EQ(cumsum(scalar_tensor(Scalar(2.0), DType::Float32), 0).item<float>(), 2.0f);
  EXPECT_THROW(cumsum(i, 1), IndexError);
  EXPECT_THROW(cumsum(i.to(DType::Float8_e5m2), 0), TypeError);
}
