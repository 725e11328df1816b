// softmax / log_softmax against a float64 reference computed from the same
// input values, over dims, dtypes, row lengths that do and do not split across
// threads, special values, non-contiguous inputs and bad arguments.
#include "cpu/softmax.h"

#include <gtest/gtest.h>
#include <hwy/targets.h>

#include <cmath>
#include <cstring>
#include <functional>
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
  for (int64_t n :
       {1, 2, 7, 8, 9, 31, 46, 64, 65, 100, 127, 128, 129, 1000, 4099, 16384, 40000, 131072, 151936}) {
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

// Runs fn once per SIMD target compiled in and supported here (the AVX-512
// exp uses vscalef, the others two power-of-two factors), then restores the
// normal choice.
void for_each_target(const std::function<void()>& fn) {
  // What was allowed before (KILN_SIMD_TARGET's cap, which scripts/test sets):
  // restored after, so later tests of a capped run stay capped.
  const int64_t before = hwy::SupportedTargets();
  for (int64_t target : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(target);
    hwy::GetChosenTarget().Update(hwy::SupportedTargets());
    SCOPED_TRACE(hwy::TargetName(target));
    fn();
  }
  hwy::SetSupportedTargetsForTest(before);
  hwy::GetChosenTarget().Update(hwy::SupportedTargets());
}

int32_t ulp_distance(float a, float b) {
  int32_t ia, ib;
  std::memcpy(&ia, &a, 4);
  std::memcpy(&ib, &b, 4);
  return std::abs(ia - ib);  // same sign (both >= 0) here
}

// The exp the kernels use, against float64 exp rounded to f32: at most 1 ulp
// over a dense sweep of [-104, 88.7] (step 1e-4 near 0, every float in the
// subnormal-result range's edges, and the overflow edge), on every target.
TEST(Softmax, ExpUlp) {
  std::vector<float> x;
  for (float v = -105.0f; v <= 89.0f; v = std::nextafter(v + 1e-4f, 100.0f)) x.push_back(v);
  // Every float around where results turn subnormal, vanish and overflow.
  for (float c : {-87.33654f, -103.27893f, -103.97208f, 88.72283f})
    for (float v = c - 0.002f; v <= c + 0.002f; v = std::nextafter(v, 100.0f)) x.push_back(v);
  for (float v = -1e-6f; v <= 1e-6f; v = std::nextafter(v, 1.0f)) {
    x.push_back(v);
    v += 1e-10f;
  }
  for_each_target([&] {
    std::vector<float> y(x.size());
    cpu::exp_f32(x.data(), y.data(), int64_t(x.size()));
    int worst = 0;
    float at = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      const float ref = float(std::exp(double(x[i])));
      const int u = ulp_distance(y[i], ref);
      if (u > worst) worst = u, at = x[i];
    }
    EXPECT_LE(worst, 1) << "at x=" << at;
    // Special inputs, and tails shorter than a vector.
    const float inf = std::numeric_limits<float>::infinity();
    const std::vector<float> sp = {-inf, -1e30f, -200.0f, 0.0f, -0.0f, std::nanf(""), 1e30f, inf, 100.0f};
    std::vector<float> ys(sp.size());
    cpu::exp_f32(sp.data(), ys.data(), int64_t(sp.size()));
    EXPECT_EQ(ys[0], 0.0f);
    EXPECT_EQ(ys[1], 0.0f);
    EXPECT_EQ(ys[2], 0.0f);
    EXPECT_EQ(ys[3], 1.0f);
    EXPECT_EQ(ys[4], 1.0f);
    EXPECT_TRUE(std::isnan(ys[5]));
    EXPECT_EQ(ys[6], inf);
    EXPECT_EQ(ys[7], inf);
    EXPECT_EQ(ys[8], inf);
  });
}

// The online pass and the write pass on every target, rows shorter and longer
// than a block and a vector.
TEST(Softmax, EveryTarget) {
  for_each_target([] {
    for (int64_t n : std::initializer_list<int64_t>{1, 5, 17, 100, kiln::cpu::kSoftmaxBlock - 1,
                                                    kiln::cpu::kSoftmaxBlock + 3, 40000}) {
      const Tensor x = from_vals(random_vals(3 * n, 5.0f, uint32_t(n)), {3, n});
      for (bool log : {false, true}) {
        SCOPED_TRACE(testing::Message() << "n=" << n << " log=" << log);
        expect_close(log ? log_softmax(x, -1) : softmax(x, -1), x, -1, log, 1.2e-7);
      }
    }
  });
}

// Sizes around the thresholds where work moves between the calling thread,
// whole rows per thread and rows split across threads, with 2 and 3 threads
// (uneven chunks), including rows left over after batching.
TEST(Softmax, ThreadSplitThresholds) {
  const int saved = num_threads();
  const int64_t B = cpu::kSoftmaxBlock, S = cpu::kSoftmaxSplitMin, P = cpu::kSoftmaxParallelMin;
  for (int nt : {2, 3}) {
    set_num_threads(nt);
    for (int64_t n : std::initializer_list<int64_t>{S - 1, S, S + B - 1, P / 2 + 1, 3 * B * nt + 5}) {
      for (int64_t rows : {1, 3, 5}) {
        const Tensor x = from_vals(random_vals(rows * n, 4.0f, uint32_t(n * 7 + rows)), {rows, n});
        for (bool log : {false, true}) {
          SCOPED_TRACE(testing::Message()
                       << "threads=" << nt << " n=" << n << " rows=" << rows << " log=" << log);
          expect_close(log ? log_softmax(x, -1) : softmax(x, -1), x, -1, log, 1.2e-7);
        }
      }
    }
    // Special values in split rows: a leading run of -inf longer than a
    // thread's chunk, a NaN only in the last chunk, +inf in the middle.
    const float inf = std::numeric_limits<float>::infinity();
    const int64_t n = 4 * S + 3;
    std::vector<float> v = random_vals(3 * n, 2.0f, 11);
    for (int64_t i = 0; i < n - 100; ++i) v[size_t(i)] = -inf;
    v[size_t(2 * n - 1)] = std::nanf("");
    v[size_t(2 * n + n / 2)] = inf;
    const Tensor x = from_vals(v, {3, n});
    for (bool log : {false, true}) {
      SCOPED_TRACE(testing::Message() << "threads=" << nt << " special log=" << log);
      const Tensor y = log ? log_softmax(x, -1) : softmax(x, -1);
      expect_close(y, x, -1, log, 1.2e-7);
      const std::vector<double> yv = values(y);
      EXPECT_EQ(yv[0], log ? -INFINITY : 0.0);
      EXPECT_TRUE(std::isnan(yv[size_t(n)]) && std::isnan(yv[size_t(3 * n - 1)]));
    }
  }
  set_num_threads(saved);
}

// log_softmax of long rows stays within a few ulp of float64 (its error is
// that of x - max, log(sum) and one subtraction; no exp in the write pass).
TEST(Softmax, LogSoftmaxAccuracy) {
  for (int64_t n : {1000, 128256, 201088}) {
    const Tensor x = from_vals(random_vals(2 * n, 3.0f, uint32_t(n)), {2, n});
    const std::vector<double> g = values(log_softmax(x, -1)), ref = reference(x, -1, true);
    double worst = 0;
    for (size_t i = 0; i < g.size(); ++i) {
      const double ulp = std::ldexp(1.0, std::ilogb(float(ref[i])) - 23);
      worst = std::max(worst, std::abs(g[i] - ref[i]) / ulp);
    }
    EXPECT_LE(worst, 2.0) << "n=" << n;
  }
}

// top-p's candidate gather: the same z (to the bit), kept set and order as
// the scalar loop, on every target, with entries exactly at the threshold,
// -inf and NaN logits, and lengths around the vector width.
TEST(Softmax, GatherAboveMatchesScalar) {
  for_each_target([] {
    for (int64_t V : std::initializer_list<int64_t>{0, 1, 7, 8, 9, 31, 100, 1003, 151936}) {
      std::vector<float> x = random_vals(V, 4.0f, uint32_t(V + 7));
      const float m = 9.5f, inv_t = 1.25f;
      const float zthr = (x.empty() ? 0.0f : (x[0] - m) * inv_t);  // x[0] sits exactly at the threshold
      if (V > 20) {
        x[5] = -std::numeric_limits<float>::infinity();
        x[11] = std::nanf("");
        x[17] = x[0];
      }
      std::vector<float> cz(size_t(V) + cpu::kGatherSlack);
      std::vector<int32_t> cid(size_t(V) + cpu::kGatherSlack);
      const int64_t n = cpu::gather_above_f32(x.data(), V, m, inv_t, zthr, cz.data(), cid.data());
      std::vector<float> rz;
      std::vector<int32_t> rid;
      for (int64_t i = 0; i < V; ++i) {
        const float z = (x[size_t(i)] - m) * inv_t;
        if (z >= zthr) {
          rz.push_back(z);
          rid.push_back(int32_t(i));
        }
      }
      ASSERT_EQ(n, int64_t(rz.size())) << "V=" << V;
      for (int64_t j = 0; j < n; ++j) {
        EXPECT_EQ(cid[size_t(j)], rid[size_t(j)]) << "V=" << V << " j=" << j;
        EXPECT_EQ(std::memcmp(&cz[size_t(j)], &rz[size_t(j)], 4), 0) << "V=" << V << " j=" << j;
      }
    }
  });
}

}  // namespace
}  // namespace kiln
