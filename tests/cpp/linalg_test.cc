// kiln::linalg against double-precision scalar references: the batched small
// kernel (inverse, solve, singular info), the batched triangular kernel, LU
// pivots (icamax for complex), QR and SVD residuals; NaN and inf input;
// kiln's messages for LAPACK's info codes.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kiln/kiln.h"
#include "linalg/common.h"

namespace kiln {
namespace {

std::vector<double> as_f64(const Tensor& x) {
  const Tensor d = x.to(DType::Float64).contiguous();
  return std::vector<double>(d.data<double>(), d.data<double>() + d.numel());
}

Tensor random_matrices(const Shape& shape, DType dt, uint32_t seed) {
  std::mt19937 g(seed);
  std::normal_distribution<double> nd;
  std::vector<double> v(size_t(shape_numel(shape, "test")));
  for (double& x : v) x = nd(g);
  return from_buffer_copy(v.data(), shape, DType::Float64).to(dt);
}

// max |A X - I| over a batch of n x n matrices, in double.
double inverse_residual(const Tensor& A, const Tensor& X, int64_t n) {
  const auto a = as_f64(A), x = as_f64(X);
  double worst = 0;
  for (size_t b = 0; b < a.size() / size_t(n * n); ++b)
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t k = 0; k < n; ++k) s += a[b * n * n + i * n + k] * x[b * n * n + k * n + j];
        worst = std::max(worst, std::abs(s - (i == j ? 1.0 : 0.0)));
      }
  return worst;
}

TEST(LinalgInv, BatchedSmallAndLapackPaths) {
  for (DType dt : {DType::Float32, DType::Float64}) {
    const double tol = dt == DType::Float32 ? 2e-3 : 1e-10;
    for (int64_t n : {1, 2, 3, 4, 5, 9, 16, 17, 33}) {
      // Diagonally dominant: condition number small, so |AX - I| is a fair check.
      Tensor A = random_matrices({37, n, n}, dt, uint32_t(n));
      A = add(A, mul(eye(n, n, dt), scalar_tensor(Scalar(double(2 * n)), dt)));
      const Tensor X = linalg::inv(A);
      ASSERT_EQ(X.sizes(), A.sizes());
      EXPECT_LT(inverse_residual(A, X, n), tol) << name(dt) << " n=" << n;
    }
  }
}

TEST(LinalgInv, SingularInfoAsGetrf) {
  for (int64_t n : {2, 4, 8, 16, 20}) {
    for (int64_t k = 0; k < n; ++k) {
      Tensor A = random_matrices({3, n, n}, DType::Float32, uint32_t(n * 31 + k));
      A.select(0, 1).select(1, k).fill_(0);  // matrix 1: column k zero -> info k+1
      const linalg::InvEx r = linalg::inv_ex(A);
      const int32_t* info = r.info.data<int32_t>();
      EXPECT_EQ(info[0], 0);
      EXPECT_EQ(info[1], k + 1) << "n=" << n;
      EXPECT_EQ(info[2], 0);
      EXPECT_THROW(linalg::inv(A), Error);
    }
  }
  EXPECT_THROW(linalg::inv(zeros({2, 3})), ValueError);
  EXPECT_THROW(linalg::inv(zeros({2, 2}, DType::Int32)), TypeError);
}

// Big batches of 4x4 f32 (the register kernel: 16 matrices per chunk, work
// claimed in pieces by the pool's threads): every inverse against a float64
// Gauss-Jordan with the same pivot rule (the pivots are forced: row k's
// diagonal is tiny, so every step swaps), singular matrices scattered over
// chunks and pieces report getrf's info, a partial last chunk included.
TEST(LinalgInv, BatchedFourByFourAcrossThreads) {
  const int saved = num_threads();
  for (int nt : {1, 2, 3}) {
    set_num_threads(nt);
    for (int64_t count : {16, 37, 5000, 20011}) {
      Tensor A = random_matrices({count, 4, 4}, DType::Float32, uint32_t(count + nt));
      float* a = A.data<float>();
      for (int64_t b = 0; b < count; ++b)
        for (int k = 0; k < 4; ++k) a[b * 16 + k * 5] *= 1e-3f;  // pivoting needed
      std::vector<int32_t> want(size_t(count), 0);
      for (int64_t b = 3; b < count; b += 997) {  // column k of matrix b zero -> info k + 1
        const int k = int(b % 4);
        for (int i = 0; i < 4; ++i) a[b * 16 + i * 4 + k] = 0.0f;
        want[size_t(b)] = k + 1;
      }
      const linalg::InvEx r = linalg::inv_ex(A);
      const int32_t* info = r.info.data<int32_t>();
      const float* x = r.inverse.contiguous().data<float>();
      double worst = 0;
      for (int64_t b = 0; b < count; ++b) {
        ASSERT_EQ(info[b], want[size_t(b)]) << "matrix " << b << " threads " << nt;
        if (want[size_t(b)] != 0) continue;
        // double Gauss-Jordan on [A | I]
        double m[4][8];
        for (int i = 0; i < 4; ++i)
          for (int j = 0; j < 8; ++j) m[i][j] = j < 4 ? a[b * 16 + i * 4 + j] : double(j - 4 == i);
        for (int k = 0; k < 4; ++k) {
          int p = k;
          for (int q = k + 1; q < 4; ++q)
            if (std::abs(m[q][k]) > std::abs(m[p][k])) p = q;
          for (int j = 0; j < 8; ++j) std::swap(m[k][j], m[p][j]);
          const double rp = 1.0 / m[k][k];
          for (int j = 0; j < 8; ++j) m[k][j] *= rp;
          for (int i = 0; i < 4; ++i)
            if (i != k) {
              const double f = m[i][k];
              for (int j = 0; j < 8; ++j) m[i][j] -= f * m[k][j];
            }
        }
        // error relative to max |A^-1| and to cond_inf(A) * eps, the f32 bound
        double scale = 0, na = 0, ni = 0;
        for (int i = 0; i < 4; ++i) {
          double ra = 0, ri = 0;
          for (int j = 0; j < 4; ++j) {
            scale = std::max(scale, std::abs(m[i][j + 4]));
            ra += std::abs(double(a[b * 16 + i * 4 + j]));
            ri += std::abs(m[i][j + 4]);
          }
          na = std::max(na, ra);
          ni = std::max(ni, ri);
        }
        for (int i = 0; i < 4; ++i)
          for (int j = 0; j < 4; ++j)
            worst = std::max(
                worst, std::abs(double(x[b * 16 + i * 4 + j]) - m[i][j + 4]) / scale / (na * ni * 0x1p-24));
      }
      EXPECT_LT(worst, 16.0) << "count " << count << " threads " << nt;
      EXPECT_THROW(linalg::inv(A), Error);
    }
  }
  set_num_threads(saved);
}

TEST(LinalgSolve, SmallPathBroadcastsAndMatchesInverse) {
  const Tensor A = add(random_matrices({4, 1, 3, 3}, DType::Float64, 5),
                       mul(eye(3, 3, DType::Float64), scalar_tensor(Scalar(6.0), DType::Float64)));
  const Tensor B = random_matrices({2, 3, 2}, DType::Float64, 6);
  const Tensor X = linalg::solve(A, B);
  ASSERT_EQ(X.sizes(), (Shape{4, 2, 3, 2}));
  const auto a = as_f64(A), x = as_f64(X), b = as_f64(B);
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 2; ++j)
      for (int64_t r = 0; r < 3; ++r)
        for (int64_t c = 0; c < 2; ++c) {
          double s = 0;
          for (int64_t k = 0; k < 3; ++k) s += a[i * 9 + r * 3 + k] * x[((i * 2 + j) * 3 + k) * 2 + c];
          EXPECT_NEAR(s, b[(j * 3 + r) * 2 + c], 1e-12);
        }
}

TEST(LinalgTriangular, BatchedKernelMatchesSubstitution) {
  for (int64_t n : {16, 32, 64}) {
    for (bool upper : {false, true}) {
      for (bool unit : {false, true}) {
        const int64_t m = 24;
        Tensor A = random_matrices({3, n, n}, DType::Float32, uint32_t(n));
        A = add(mul(A, scalar_tensor(Scalar(0.1), DType::Float32)), eye(n, n, DType::Float32));
        const Tensor B = random_matrices({3, n, m}, DType::Float32, 9);
        const Tensor X = linalg::solve_triangular(A, B, upper, true, unit);
        const auto a = as_f64(A), b = as_f64(B), x = as_f64(X);
        for (int64_t bi = 0; bi < 3; ++bi)
          for (int64_t c = 0; c < m; ++c) {
            std::vector<double> ref(static_cast<size_t>(n), 0.0);
            for (int64_t s = 0; s < n; ++s) {
              const int64_t i = upper ? n - 1 - s : s;
              double v = b[(bi * n + i) * m + c];
              for (int64_t k = upper ? i + 1 : 0; k < (upper ? n : i); ++k)
                v -= a[(bi * n + i) * n + k] * ref[k];
              ref[i] = unit ? v : v / a[(bi * n + i) * n + i];
            }
            for (int64_t i = 0; i < n; ++i)
              EXPECT_NEAR(x[(bi * n + i) * m + c], ref[i], 1e-3 * (1 + std::abs(ref[i])));
          }
      }
    }
  }
}

TEST(LinalgLU, ComplexPivotIsIcamax) {
  // |3| > |2+2i| but |re| + |im|: 3 < 4, so LAPACK's icamax takes row 2.
  const std::complex<float> v[4] = {{3, 0}, {1, 0}, {2, 2}, {1, 0}};
  const Tensor A = from_buffer_copy(v, {2, 2}, DType::Complex64);
  const linalg::LUFactor f = linalg::lu_factor(A);
  EXPECT_EQ(f.pivots.contiguous().data<int32_t>()[0], 2);
  const linalg::PLU plu = linalg::lu(A);
  EXPECT_EQ(plu.P.sizes(), (Shape{2, 2}));
}

TEST(LinalgQRSVD, Residuals) {
  const Tensor A = random_matrices({40, 7}, DType::Float64, 3);
  const linalg::QR qr = linalg::qr(A);
  const auto q = as_f64(qr.Q), r = as_f64(qr.R), a = as_f64(A);
  for (int i = 0; i < 40; ++i)
    for (int j = 0; j < 7; ++j) {
      double s = 0;
      for (int k = 0; k < 7; ++k) s += q[i * 7 + k] * r[k * 7 + j];
      EXPECT_NEAR(s, a[i * 7 + j], 1e-12);
    }
  const linalg::SVD s = linalg::svd(A, false);
  const auto u = as_f64(s.U), sv = as_f64(s.S), vh = as_f64(s.Vh);
  for (int i = 0; i < 40; ++i)
    for (int j = 0; j < 7; ++j) {
      double t = 0;
      for (int k = 0; k < 7; ++k) t += u[i * 7 + k] * sv[k] * vh[k * 7 + j];
      EXPECT_NEAR(t, a[i * 7 + j], 1e-12);
    }
}

// The message of the kiln::Error that fn throws ("" when it throws none).
template <typename F>
std::string error_of(F&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// Input with a NaN or inf never reaches LAPACK's SVD: before, an inf looped
// forever (small matrices) or made LAPACK's xerbla print "On entry to DLASCL
// parameter number 4 had an illegal value" to stdout (large ones), and a NaN
// came back as "Argument 6 has illegal value ... bug in the implementation".
TEST(LinalgNonFinite, SvdRaisesKilnErrorAndPrintsNothing) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  for (DType dt : {DType::Float32, DType::Float64, DType::Complex128}) {
    for (int64_t n : {100, 4}) {
      for (double v : {inf, -inf, nan}) {
        Tensor A = random_matrices({2, n, n}, DType::Float64, 5).to(dt);
        A.select(0, 1).select(0, 2).select(0, 1).fill_(Scalar(v));
        testing::internal::CaptureStdout();
        testing::internal::CaptureStderr();
        const std::string msg = error_of([&] { linalg::svd(A); });
        const std::string out = testing::internal::GetCapturedStdout();
        const std::string err = testing::internal::GetCapturedStderr();
        EXPECT_EQ(msg, "[linalg.svd] the input contains non-finite values (NaN or inf) in batch element 1 (" +
                           std::string(name(dt)) + " [2, " + std::to_string(n) + ", " + std::to_string(n) +
                           "])");
        EXPECT_EQ(out, "");
        EXPECT_EQ(err, "");
        EXPECT_NE(
            error_of([&] { linalg::eigvalsh(A); }).find("[linalg.eigvalsh] the input contains non-finite"),
            std::string::npos);
      }
    }
  }
}

// A matrix holding a NaN: an all-NaN inverse and info 0 on the small kernel
// (every chunk shape: full 16-lane chunks, a partial one, n = 7's general
// loop) and on LAPACK; the other matrices are untouched. Before, LAPACK's
// path raised "illegal value" (LAPACKE refuses NaN), det was the product of
// the unfactored diagonal, and a zero pivot met before the NaN reported the
// matrix singular on the small path.
TEST(LinalgNonFinite, InverseOfNanMatrixIsNan) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (DType dt : {DType::Float32, DType::Float64}) {
    for (int64_t n : {2, 4, 7, 16, 40}) {
      Tensor A = random_matrices({37, n, n}, dt, uint32_t(n));
      A = add(A, mul(eye(n, n, dt), scalar_tensor(Scalar(double(2 * n)), dt)));
      A.select(0, 3).select(0, n - 1).select(0, 0).fill_(Scalar(nan));
      A.select(0, 20).select(1, 0).fill_(0);                         // getrf would stop at U[0, 0] == 0 ...
      A.select(0, 20).select(0, 1).select(0, 1).fill_(Scalar(nan));  // ... but the NaN decides
      const linalg::InvEx r = linalg::inv_ex(A);
      const auto x = as_f64(r.inverse);
      for (int64_t b = 0; b < 37; ++b) {
        EXPECT_EQ(r.info.data<int32_t>()[b], 0) << name(dt) << " n=" << n << " b=" << b;
        for (int64_t e = 0; e < n * n; ++e)
          ASSERT_EQ(std::isnan(x[b * n * n + e]), b == 3 || b == 20) << name(dt) << " n=" << n << " b=" << b;
      }
      const auto d = as_f64(linalg::det(A));
      EXPECT_TRUE(std::isnan(d[3]) && std::isnan(d[20]) && !std::isnan(d[0]));
    }
  }
}

// Every nonzero info gets a kiln message; a negative one (LAPACK rejected an
// argument) is an internal error that names kiln, never "a bug in the
// implementation".
TEST(LinalgInfo, KilnMessages) {
  using linalg::detail::check_infos;
  using linalg::detail::InfoKind;
  const Tensor A = zeros({2, 4, 4});
  auto msg = [&](int32_t i1, InfoKind kind) {
    const int32_t v[2] = {0, i1};
    const Tensor info = from_buffer_copy(v, {2}, DType::Int32);
    return error_of([&] { check_infos(info, "linalg.op", kind, A); });
  };
  EXPECT_EQ(msg(0, InfoKind::LU), "");
  EXPECT_EQ(
      msg(-6, InfoKind::Converge),
      "[linalg.op] internal error: LAPACK rejected argument 6 of the call for the matrix in batch element 1 "
      "(input float32 [2, 4, 4]); this is a bug in kiln, please report it");
  EXPECT_EQ(
      msg(-1010, InfoKind::LU),
      "[linalg.op] out of memory: LAPACK could not allocate its workspace for the matrix in batch element 1 "
      "(input float32 [2, 4, 4])");
  EXPECT_EQ(msg(3, InfoKind::LU),
            "[linalg.op] the matrix in batch element 1 is singular: U[2, 2] of its LU factorization is zero "
            "(info 3; "
            "input float32 [2, 4, 4])");
  EXPECT_EQ(msg(2, InfoKind::Cholesky),
            "[linalg.op] the matrix in batch element 1 is not positive-definite: its leading minor of order "
            "2 is not "
            "(info 2; input float32 [2, 4, 4])");
  EXPECT_EQ(
      msg(5, InfoKind::Converge),
      "[linalg.op] the algorithm did not converge on the matrix in batch element 1 (LAPACK info 5; input "
      "float32 [2, 4, 4])");
  EXPECT_NE(msg(1, InfoKind::FullRank).find("does not have full rank: R[0, 0]"), std::string::npos);
  const int32_t one = 2;
  EXPECT_EQ(error_of([&] {
              check_infos(from_buffer_copy(&one, {}, DType::Int32), "linalg.op", InfoKind::LU, zeros({4, 4}));
            }),
            "[linalg.op] the matrix is singular: U[1, 1] of its LU factorization is zero (info 2; input "
            "float32 [4, "
            "4])");
}

// The smallest leading minor holding a NaN or inf, in the triangle LAPACK reads.
TEST(LinalgNonFinite, NonfiniteMinor) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<double> a(25, 1.0);  // column-major 5 x 5
  EXPECT_EQ(linalg::detail::nonfinite_minor(a.data(), 5, 'L'), 0);
  a[1 * 5 + 3] = nan;  // (3, 1): lower, order 4
  a[4 * 5 + 2] = nan;  // (2, 4): upper, order 5
  EXPECT_EQ(linalg::detail::nonfinite_minor(a.data(), 5, 'L'), 4);
  EXPECT_EQ(linalg::detail::nonfinite_minor(a.data(), 5, 'U'), 5);
  a[0 * 5 + 4] = -std::numeric_limits<double>::infinity();  // (4, 0): lower, order 5
  EXPECT_EQ(linalg::detail::nonfinite_minor(a.data(), 5, 'L'), 4);
  std::vector<std::complex<float>> c(9, {1.0f, 0.0f});
  c[4] = {2.0f, std::numeric_limits<float>::quiet_NaN()};  // the diagonal's imaginary part is not read
  EXPECT_EQ(linalg::detail::nonfinite_minor(c.data(), 3, 'L'), 0);
  c[5] = {std::numeric_limits<float>::infinity(), 0.0f};  // (2, 1)
  EXPECT_EQ(linalg::detail::nonfinite_minor(c.data(), 3, 'L'), 3);
  EXPECT_EQ(linalg::detail::nonfinite_minor(c.data(), 3, 'U'), 0);
}

}  // namespace
}  // namespace kiln
