// softmax / log_softmax against a float64 reference computed from the same
// input values, over dims, dtypes, row lengths that do and do not split across
// threads, special values, non-contiguous inputs and bad arguments.
#include "cpu/softmax.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "kiln/kiln.h"
#include "kiln/softmax.h"

namespace kiln {
namespace {

std::vector<double> values(const Tensor& x) {
  const Tensor d = x.to(DType::Float64).contiguous();
  const double* p = d.data<double>();
  return std::vector<double>(p, p + d.numel());
}

Tensor from_vals(const std::vector<float>& v, const Shape& shape) {
  return from_buffer_copy(v.data(), shape, DType::Float32);
}

std::vector<float> random_vals(int64_t n, float scale, uint32_t seed) {
  std::mt19937 g(seed);
  std::normal_distribution<float> nd(0.0f, scale);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& e : v) e = nd(g);
  return v;
}

// Reference over dim of a contiguous tensor (float64 in and out).
std::vector<double> reference(const Tensor& x, int dim, bool log) {
  const std::vector<double> v = values(x);
  const int nd = x.dim();
  const int d = dim < 0 ? dim + nd : dim;
  int64_t outer = 1, inner = 1;
  for (int k = 0; k < d; ++k) outer *= x.size(k);
  for (int k = d + 1; k < nd; ++k) inner *= x.size(k);
  const int64_t n = x.size(d);
  std::vector<double> r(v.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      auto at = [&](int64_t j) { return size_t((o * n + j) * inner + i); };
      double m = -INFINITY;
      bool nan = false;
      for (int64_t j = 0; j < n; ++j) {
        nan |= std::isnan(v[at(j)]);
        m = std::max(m, v[at(j)]);
      }
      double s = 0;
      for (int64_t j = 0; j < n; ++j) s += std::exp(v[at(j)] - m);
      for (int64_t j = 0; j < n; ++j) {
        const double z = v[at(j)] - m;
        r[at(j)] = (nan || !std::isfinite(m)) ? NAN : log ? z - std::log(s) : std::exp(z) / s;
      }
    }
  return r;
}

// Every element within a tolerance that grows with |x - max| (the f32 rounding
// of x - max is amplified by exp) and with the storage eps of the result.
void expect_close(const Tensor& got, const Tensor& x, int dim, bool log, double eps, double atol = 1e-44) {
  const std::vector<double> g = values(got), ref = reference(x.contiguous(), dim, log);
  const std::vector<double> xv = values(x.contiguous());
  ASSERT_EQ(g.size(), ref.size());
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(ref[i])) {
      EXPECT_TRUE(std::isnan(g[i])) << i;
      continue;
    }
    if (std::isinf(ref[i])) {
      EXPECT_EQ(g[i], ref[i]) << i;
      continue;
    }
    const double mag = log ? std::abs(ref[i]) + 1.0 : ref[i];
    const double tol = eps * mag * (4.0 + std::abs(log ? ref[i] : std::log(std::max(ref[i], 1e-300)))) + atol;
    EXPECT_NEAR(g[i], ref[i], tol) << "element " << i << " x=" << xv[i];
  }
}

TEST(Softmax, LastDimRowLengths) {
  for (int64_t n : {1, 2, 7, 8, 9, 31, 100, 1000, 4099, 16384, 40000, 131072, 151936}) {
    for (int64_t rows : {1, 3}) {
      const Tensor x = from_vals(random_vals(rows * n, 4.0f, uint32_t(n + rows)), {rows, n});
      for (bool log : {false, true}) {
        SCOPED_TRACE(testing::Message() << "n=" << n << " rows=" << rows << " log=" << log);
        const Tensor y = log ? log_softmax(x, -1) : softmax(x, -1);
        EXPECT_EQ(y.dtype(), DType::Float32);
        expect_close(y, x, -1, log, 1.2e-7);
      }
    }
  }
}

TEST(Softmax, SumsToOne) {
  const Tensor x = from_vals(random_vals(2 * 128256, 3.0f, 5), {2, 128256});
  const std::vector<double> y = values(softmax(x, 1));
  for (int r = 0; r < 2; ++r) {
    double s = 0;
    for (int64_t i = 0; i < 128256; ++i) s += y[size_t(r * 128256 + i)];
    EXPECT_NEAR(s, 1.0, 1e-5);
  }
}

TEST(Softmax, AnyDimAndNonContiguous) {
  const Tensor x = from_vals(random_vals(4 * 5 * 6, 2.0f, 9), {4, 5, 6});
  for (int dim : {0, 1, 2, -1, -2}) {
    for (bool log : {false, true}) {
      expect_close(log ? log_softmax(x, dim) : softmax(x, dim), x, dim, log, 1.2e-7);
      const Tensor xt = x.transpose(0, 2);  // [6, 5, 4], not contiguous
      expect_close(log ? log_softmax(xt, dim) : softmax(xt, dim), xt, dim, log, 1.2e-7);
      const Tensor xs = x.slice(2, 0, 6, 2);  // strided last dim
      expect_close(log ? log_softmax(xs, dim) : softmax(xs, dim), xs, dim, log, 1.2e-7);
    }
  }
}

TEST(Softmax, NarrowAndDoubleDtypes) {
  const Tensor x32 = from_vals(random_vals(3 * 20000, 3.0f, 11), {3, 20000});
  for (DType dt : {DType::BFloat16, DType::Float16, DType::Float64}) {
    const Tensor x = x32.to(dt);
    for (bool log : {false, true}) {
      const Tensor y = log ? log_softmax(x, 1) : softmax(x, 1);
      EXPECT_EQ(y.dtype(), dt);
      const double eps = dt == DType::BFloat16 ? 1.0 / 256 : dt == DType::Float16 ? 1.0 / 2048 : 1e-15;
      // float16 results below 6.1e-5 are subnormal: absolute spacing 6e-8.
      expect_close(y, x, 1, log, eps, dt == DType::Float16 ? 3e-8 : 1e-44);
      // dtype=float32 computes and returns float32 from the narrow input.
      const Tensor y32 = log ? log_softmax(x, 1, DType::Float32) : softmax(x, 1, DType::Float32);
      EXPECT_EQ(y32.dtype(), DType::Float32);
      expect_close(y32, x, 1, log, dt == DType::Float64 ? 1.2e-7 : 1.2e-7);
    }
  }
}

TEST(Softmax, SpecialValues) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::nanf("");
  // row 0: some -inf; row 1: all -inf; row 2: a NaN; row 3: +inf; row 4: huge finite.
  const std::vector<float> v = {0.f, -inf, 1.f, -inf, -inf, -inf, -inf, -inf,  1.f, nan,
                                2.f, 3.f,  1.f, inf,  2.f,  0.f,  3e4f, -3e4f, 1.f, 0.f};
  const Tensor x = from_vals(v, {5, 4});
  for (bool log : {false, true}) {
    const std::vector<double> y = values(log ? log_softmax(x, 1) : softmax(x, 1));
    EXPECT_EQ(y[1], log ? -INFINITY : 0.0);
    EXPECT_EQ(y[3], log ? -INFINITY : 0.0);
    for (int i = 4; i < 16; ++i) EXPECT_TRUE(std::isnan(y[size_t(i)])) << i;
    expect_close(log ? log_softmax(x, 1) : softmax(x, 1), x, 1, log, 1.2e-7);
  }
  // The same in a long row that splits across threads: one NaN poisons it all,
  // a chunk of only -inf contributes zeros.
  std::vector<float> big(100000, -inf);
  big[99999] = 0.0f;
  const std::vector<double> y = values(softmax(from_vals(big, {100000}), 0));
  EXPECT_EQ(y[0], 0.0);
  EXPECT_EQ(y[99999], 1.0);
  big[5] = nan;
  const std::vector<double> yn = values(log_softmax(from_vals(big, {100000}), 0));
  EXPECT_TRUE(std::isnan(yn[0]) && std::isnan(yn[99999]));
}

TEST(Softmax, EmptyAndScalar) {
  EXPECT_EQ(softmax(empty({0, 5}), 1).sizes(), (Shape{0, 5}));
  EXPECT_EQ(log_softmax(empty({3, 0}), 1).sizes(), (Shape{3, 0}));
  const Tensor s = scalar_tensor(Scalar(2.5), DType::Float32);
  EXPECT_EQ(softmax(s, 0).item<float>(), 1.0f);
  EXPECT_EQ(log_softmax(s, -1).item<float>(), 0.0f);
  EXPECT_EQ(softmax(s, 0).dim(), 0);
}

TEST(Softmax, BadArguments) {
  const Tensor i = arange(Scalar(int64_t(0)), Scalar(int64_t(6)));
  EXPECT_THROW(softmax(i, 0), TypeError);
  EXPECT_NO_THROW(softmax(i, 0, DType::Float32));
  EXPECT_THROW(softmax(i.to(DType::Float32), 0, DType::Int32), TypeError);
  EXPECT_THROW(softmax(i.to(DType::Float8_e4m3fn), 0), TypeError);
  EXPECT_THROW(softmax(zeros({2, 3}), 2), IndexError);
  EXPECT_THROW(log_softmax(zeros({2, 3}), -3), IndexError);
  EXPECT_THROW(softmax_out(zeros({2, 3}), 1, zeros({3, 2})), ValueError);
}

TEST(Softmax, OutVariants) {
  const Tensor x = from_vals(random_vals(2 * 50000, 2.0f, 3), {2, 50000});
  Tensor out = empty({2, 50000});
  softmax_out(x, -1, out);
  expect_close(out, x, -1, false, 1.2e-7);
  log_softmax_out(x, -1, out);
  expect_close(out, x, -1, true, 1.2e-7);
  // In place, and into a narrow output.
  Tensor y = x.clone();
  softmax_out(y, 1, y);
  expect_close(y, x, 1, false, 1.2e-7);
  Tensor ob = empty({2, 50000}, DType::BFloat16);
  softmax_out(x, 1, ob);
  expect_close(ob, x, 1, false, 1.0 / 256);
}

// The exp the kernels use, against float64 exp: at most 1 ulp (Highway's
// documented bound) over the range softmax feeds it, subnormal results included.
TEST(Softmax, ExpUlp) {
  std::vector<float> x;
  for (float v = -104.0f; v <= 0.0f; v = std::nextafter(v + 0.0007f, 1.0f)) x.push_back(v);
  std::vector<float> y(x.size());
  cpu::exp_f32(x.data(), y.data(), int64_t(x.size()));
  int worst = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const float ref = float(std::exp(double(x[i])));
    int32_t a, b;
    std::memcpy(&a, &y[i], 4);
    std::memcpy(&b, &ref, 4);
    worst = std::max(worst, std::abs(a - b));
  }
  EXPECT_LE(worst, 1);
}

}  // namespace
}  // namespace kiln
