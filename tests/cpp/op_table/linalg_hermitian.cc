// Op table entries of linalg.cholesky, eigh and eigvalsh (ops/registry/
// linalg.h) on real symmetric and complex Hermitian input: only the lower (or
// upper) triangle is read, and the diagonal is made dominant so the matrix is
// positive-definite; and of svd / svdvals (singular values). Oracles in
// float64: the Cholesky-Banachiewicz recurrence and cyclic Jacobi rotations
// (eigenvalues, of a Hermitian matrix through its real symmetric embedding;
// singular values as the square roots of those of A^H A).
#include <algorithm>
#include <cmath>

#include "kiln/linalg.h"
#include "op_table/linalg_ref.h"

namespace op_table {
namespace {

using namespace kiln;
using namespace linalg_ref;

// Lower Cholesky factor of the Hermitian (symmetric) positive-definite s.
template <typename T>
std::vector<T> cholesky_ref(const std::vector<T>& s, int64_t n) {
  std::vector<T> l(n * n, 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j <= i; ++j) {
      T acc = s[i * n + j];
      for (int64_t k = 0; k < j; ++k) acc -= l[i * n + k] * conj(l[j * n + k]);
      l[i * n + j] = i == j ? T(std::sqrt(re(acc))) : acc / l[j * n + j];
    }
  return l;
}

// Eigenvalues (ascending) of the symmetric s by cyclic Jacobi rotations.
std::vector<double> eigvals_ref(std::vector<double> s, int64_t n) {
  for (int sweep = 0; sweep < 100; ++sweep) {
    double off = 0;
    for (int64_t p = 0; p < n; ++p)
      for (int64_t q = p + 1; q < n; ++q) off += s[p * n + q] * s[p * n + q];
    if (off < 1e-30) break;
    for (int64_t p = 0; p < n; ++p)
      for (int64_t q = p + 1; q < n; ++q) {
        if (s[p * n + q] == 0.0) continue;
        const double theta = (s[q * n + q] - s[p * n + p]) / (2 * s[p * n + q]);
        const double t = (theta >= 0 ? 1.0 : -1.0) / (std::fabs(theta) + std::sqrt(theta * theta + 1));
        const double c = 1 / std::sqrt(t * t + 1), sn = t * c;
        for (int64_t k = 0; k < n; ++k) {  // columns p, q
          const double a = s[k * n + p], b = s[k * n + q];
          s[k * n + p] = c * a - sn * b;
          s[k * n + q] = sn * a + c * b;
        }
        for (int64_t k = 0; k < n; ++k) {  // rows p, q
          const double a = s[p * n + k], b = s[q * n + k];
          s[p * n + k] = c * a - sn * b;
          s[q * n + k] = sn * a + c * b;
        }
      }
  }
  std::vector<double> w(n);
  for (int64_t i = 0; i < n; ++i) w[i] = s[i * n + i];
  std::sort(w.begin(), w.end());
  return w;
}
// Eigenvalues (ascending) of the Hermitian h = A + iB: those of the real
// symmetric [[A, -B], [B, A]], where each appears twice.
std::vector<double> eigvals_ref(const std::vector<cdouble>& h, int64_t n) {
  std::vector<double> s(4 * n * n);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) {
      const cdouble z = h[i * n + j];
      s[i * 2 * n + j] = s[(n + i) * 2 * n + n + j] = z.real();
      s[i * 2 * n + n + j] = -z.imag();
      s[(n + i) * 2 * n + j] = z.imag();
    }
  const std::vector<double> w2 = eigvals_ref(s, 2 * n);
  std::vector<double> w(n);
  for (int64_t i = 0; i < n; ++i) w[i] = w2[2 * i];
  return w;
}

// what: 0 cholesky, 1 eigh's eigenvalues, 2 eigvalsh.
Entry hermitian_entry(int what, int64_t n, bool upper) {
  Entry e;
  e.op = what == 0 ? "linalg_cholesky" : what == 1 ? "linalg_eigh" : "linalg_eigvalsh";
  e.dtypes = kLinalgDtypes;
  e.shapes = square_shapes(n);
  make_dominant(e);
  e.call = [what, upper](const std::vector<Tensor>& x) {
    if (what == 0) return linalg::cholesky(x[0], upper);
    const std::string uplo = upper ? "U" : "L";
    return what == 1 ? linalg::eigh(x[0], uplo).eigenvalues : linalg::eigvalsh(x[0], uplo);
  };
  set_oracles(e, [what, upper](const auto& v, const Inputs& in, const Tensor& out) {
    using T = typename std::decay_t<decltype(v[0])>::value_type;
    const Shape& s = in.shapes[0];
    const int64_t k = s.back();
    Shape want(s.begin(), s.end() - (what == 0 ? 0 : 1));
    expect_shape(out, want);
    std::vector<T> y;
    for (size_t b = 0; b < v[0].size() / size_t(k * k); ++b) {
      const std::vector<T> a = slice(v[0], b, k * k);
      const std::vector<T> h = hermitian(a, k, upper);
      if (what == 0) {
        const std::vector<T> l = cholesky_ref(h, k);  // upper: U = L^H
        for (int64_t i = 0; i < k; ++i)
          for (int64_t j = 0; j < k; ++j) y.push_back(upper ? conj(l[j * k + i]) : l[i * k + j]);
      } else {
        const std::vector<double> w = eigvals_ref(h, k);
        y.insert(y.end(), w.begin(), w.end());
      }
    }
    return y;
  });
  e.ulps = 64;
  e.floor = 4.0 * double(n) + 4.0;  // eigenvalues and the factor's scale
  e.perf_shapes = {{{256, 8, 8}}};
  return e;
}

// Singular values (descending) of [*, m, n] inputs: svd's S or svdvals.
Entry singular_values_entry(bool full, int64_t m, int64_t n) {
  Entry e;
  e.op = full ? "linalg_svd" : "linalg_svdvals";
  e.dtypes = kLinalgDtypes;
  e.shapes = matrix_shapes(m, n);
  e.call = [full](const std::vector<Tensor>& x) {
    return full ? linalg::svd(x[0]).S : linalg::svdvals(x[0]);
  };
  set_oracles(e, [](const auto& v, const Inputs& in, const Tensor& out) {
    using T = typename std::decay_t<decltype(v[0])>::value_type;
    const Shape& s = in.shapes[0];
    const int64_t rows = s[s.size() - 2], cols = s.back(), k = std::min(rows, cols);
    Shape want(s.begin(), s.end() - 2);
    want.push_back(k);
    expect_shape(out, want);
    std::vector<T> y;
    for (size_t b = 0; b < v[0].size() / size_t(rows * cols); ++b) {
      const T* a = v[0].data() + b * rows * cols;
      // The Gram matrix of the shorter side: its eigenvalues are the squares.
      const std::vector<double> w = eigvals_ref(gram(a, rows, cols), k);
      for (int64_t i = k; i-- > 0;) y.push_back(std::sqrt(std::max(w[i], 0.0)));
    }
    return y;
  });
  e.ulps = 64;
  e.floor = 4.0 * double(std::max(m, n));  // the largest singular value's scale
  e.perf_shapes = {{{64, 32, 32}}};
  return e;
}

KILN_OP_TABLE({
    singular_values_entry(true, 7, 5),
    singular_values_entry(true, 5, 7),
    singular_values_entry(false, 6, 6),
    singular_values_entry(false, 7, 5),
});

KILN_OP_TABLE({
    hermitian_entry(0, 6, false),
    hermitian_entry(0, 6, true),
    hermitian_entry(0, 19, false),
    hermitian_entry(1, 6, false),
    hermitian_entry(1, 7, true),
    hermitian_entry(2, 6, false),
    hermitian_entry(2, 7, true),
});

}  // namespace
}  // namespace op_table
