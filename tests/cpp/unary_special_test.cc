// frexp (special values, every subnormal scale, all dtypes) and the Laguerre
// polynomials against a double recurrence (n < 0, x == 0, broadcasting, dtypes).
#include "unary_test_util.h"

using namespace kiln;
using namespace unary_test;

namespace {
const double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::numeric_limits<double>::quiet_NaN();

// Independent reference: the exponent from the binary representation (a loop
// of exact halvings/doublings), then the mantissa as x * 2^-e.
std::pair<double, int> frexp_ref(double x) {
  if (x == 0 || !std::isfinite(x)) return {x, 0};
  int e = 0;
  double a = std::fabs(x);
  while (a >= 1.0) { a *= 0.5; ++e; }
  while (a < 0.5) { a *= 2.0; --e; }
  return {std::copysign(a, x), e};
}
}  // namespace

TEST(Frexp, SpecialsAndSubnormalSweep) {
  for (DType dt : {DType::Float32, DType::Float64, DType::BFloat16, DType::Float16}) {
    std::vector<double> xs = {0.0, -0.0, 1.0, -1.0, 0.5, 0.75, -3.0, 1024.0, 65504.0, 1e-5, kInf, -kInf, kNaN,
                              0.1, -123.456};
    // Every power-of-two scale of the dtype, including each subnormal binade,
    // with a few significands.
    const int lo = dt == DType::Float64 ? -1074 : dt == DType::Float32 ? -149 : dt == DType::Float16 ? -24 : -133;
    const int hi = dt == DType::Float64 ? 1023 : dt == DType::Float16 ? 15 : 127;
    for (int e = lo; e <= hi; ++e)
      for (double m : {1.0, 1.5, -1.25, 1.875}) xs.push_back(std::ldexp(m, e));
    const Tensor x = make(xs, dt);
    const auto [mant, expo] = kiln::frexp(x);
    ASSERT_EQ(mant.dtype(), dt);
    ASSERT_EQ(expo.dtype(), DType::Int32);
    const std::vector<double> in = values(x), m = values(mant), e = values(expo);
    for (size_t i = 0; i < in.size(); ++i) {
      const auto [rm, re] = frexp_ref(in[i]);
      if (std::isnan(rm)) {
        EXPECT_TRUE(std::isnan(m[i]));
      } else {
        EXPECT_EQ(m[i], rm) << dname(dt) << " x=" << in[i];
        EXPECT_EQ(std::signbit(m[i]), std::signbit(rm)) << dname(dt) << " x=" << in[i];
        if (std::isfinite(in[i]) && in[i] != 0) {
          EXPECT_EQ(std::ldexp(m[i], int(e[i])), in[i]);
        }
      }
      EXPECT_EQ(int(e[i]), re) << dname(dt) << " x=" << in[i];
    }
  }
}

TEST(Frexp, NonContiguousAndErrors) {
  const Tensor x = make({1.0, 2.0, 3.0, 4.0, 5.0, 6.0}, DType::Float32).view({2, 3}).t();
  const auto [m, e] = kiln::frexp(x);
  EXPECT_EQ(m.sizes(), (Shape{3, 2}));
  const std::vector<double> xs = values(x), ms = values(m), es = values(e);
  for (size_t i = 0; i < xs.size(); ++i) EXPECT_EQ(std::ldexp(ms[i], int(es[i])), xs[i]);
  const auto [m0, e0] = kiln::frexp(scalar_tensor(Scalar(8.0), DType::Float64));
  EXPECT_EQ(m0.dim(), 0);
  EXPECT_EQ(m0.item<double>(), 0.5);
  EXPECT_EQ(e0.item<int64_t>(), 4);
  EXPECT_THROW(kiln::frexp(arange(0, 3)), TypeError);
  EXPECT_THROW(kiln::frexp(zeros({2}, DType::Complex64)), TypeError);
  EXPECT_THROW(kiln::frexp(zeros({2}, DType::Float8_e4m3fn)), TypeError);
}

namespace {
double laguerre_ref(double x, double nf) {
  const long n = long(nf);
  if (n < 0) return 0;
  if (x == 0) return 1;
  std::vector<long double> L = {1.0L, 1.0L - x};
  for (long k = 1; k < n; ++k)
    L.push_back(((2 * k + 1 - (long double)x) * L[k] - k * L[k - 1]) / (k + 1));
  return double(L[size_t(n)]);
}
}  // namespace

TEST(Laguerre, AgainstRecurrenceWithBroadcast) {
  const std::vector<double> xv = {-3.0, -0.5, 0.0, 0.25, 1.0, 2.5, 7.0, 15.0};
  const std::vector<double> nv = {-2.0, -1.0, 0.0, 1.0, 2.0, 3.0, 5.0, 2.9, 10.0, 25.0};
  for (DType dt : {DType::Float32, DType::Float64}) {
    const Tensor x = make(xv, dt).view({int64_t(xv.size()), 1});  // [8, 1]
    const Tensor n = make(nv, dt);                                 // [10]
    const Tensor r = special_laguerre_polynomial_l(x, n);          // [8, 10]
    ASSERT_EQ(r.sizes(), (Shape{8, 10}));
    ASSERT_EQ(r.dtype(), dt);
    const std::vector<double> got = values(r);
    for (size_t i = 0; i < xv.size(); ++i)
      for (size_t j = 0; j < nv.size(); ++j) {
        const double want = laguerre_ref(xv[i], nv[j]);
        const double tol = (dt == DType::Float32 ? 1e-6 : 1e-13) * (1 + std::fabs(want)) * 10;
        EXPECT_NEAR(got[i * nv.size() + j], want, tol) << "x=" << xv[i] << " n=" << nv[j];
      }
  }
}

TEST(Laguerre, DtypesScalarsAndErrors) {
  // Integer n with float x: float x's dtype; integer both: float32.
  const Tensor xf = make({0.5, 1.5}, DType::Float64);
  const Tensor ni = arange(2, 4);  // int64 [2, 3]
  EXPECT_EQ(special_laguerre_polynomial_l(xf, ni).dtype(), DType::Float64);
  const Tensor r = special_laguerre_polynomial_l(arange(0, 3), ni.narrow(0, 0, 1));
  EXPECT_EQ(r.dtype(), DType::Float32);
  const std::vector<double> rv = values(r);
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(rv[i], laguerre_ref(i, 2), 1e-6);
  // Scalar overloads: a Python float does not widen a float32 tensor.
  const Tensor xs = make({0.0, 1.0, 2.0}, DType::Float32);
  const Tensor a = special_laguerre_polynomial_l(xs, Scalar(3));
  EXPECT_EQ(a.dtype(), DType::Float32);
  const std::vector<double> av = values(a);
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(av[i], laguerre_ref(i, 3), 1e-6);
  const Tensor b = special_laguerre_polynomial_l(Scalar(0.5), arange(-1, 3));
  EXPECT_EQ(b.dtype(), DType::Float32);
  const std::vector<double> bv = values(b);
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(bv[i], laguerre_ref(0.5, i - 1), 1e-6);
  const Tensor h = special_laguerre_polynomial_l(make({0.5}, DType::BFloat16), Scalar(2.0));
  EXPECT_EQ(h.dtype(), DType::BFloat16);
  EXPECT_NEAR(values(h)[0], laguerre_ref(0.5, 2), 1e-2);
  // Non-finite n: torch's cast gives INT64_MIN on x86 (n < 0), so 0.
  EXPECT_EQ(values(special_laguerre_polynomial_l(xs, Scalar(kNaN)))[1], 0.0);
  // Empty and 0-dim.
  EXPECT_EQ(special_laguerre_polynomial_l(empty({0}), Scalar(2)).numel(), 0);
  EXPECT_EQ(special_laguerre_polynomial_l(scalar_tensor(Scalar(1.0), DType::Float64), Scalar(1)).dim(), 0);
  EXPECT_THROW(special_laguerre_polynomial_l(make({1, 2, 3}, DType::Float32), make({1, 2}, DType::Float32)),
               ValueError);
  EXPECT_THROW(special_laguerre_polynomial_l(zeros({2}, DType::Complex64), Scalar(1)), TypeError);
  EXPECT_THROW(special_laguerre_polynomial_l(zeros({2}, DType::Float8_e4m3fn), Scalar(1)), TypeError);
}
