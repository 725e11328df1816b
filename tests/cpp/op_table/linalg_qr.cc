// Op table entries of linalg.qr, householder_product and geqrf (ops/registry/
// linalg.h). The oracle is Householder QR in float64 with LAPACK's reflector
// convention (beta = -sign(alpha) ||x||, tau = 0 when the column below the
// diagonal is zero), so Q and R carry LAPACK's signs.
#include <algorithm>
#include <cmath>

#include "kiln/linalg.h"
#include "op_table/linalg_ref.h"

namespace op_table {
namespace {

using namespace kiln;
using namespace linalg_ref;

// Applies H = I - tau v v^H (v: m entries, zero above row j) to the m x c
// row-major matrix x from the left.
template <typename T>
void reflect(std::vector<T>& x, int64_t m, int64_t c, const std::vector<T>& v, T tau) {
  for (int64_t col = 0; col < c; ++col) {
    T dot = 0;
    for (int64_t i = 0; i < m; ++i) dot += conj(v[i]) * x[i * c + col];
    for (int64_t i = 0; i < m; ++i) x[i * c + col] -= tau * v[i] * dot;
  }
}

// LAPACK geqrf's output for the m x n row-major a, as torch.geqrf returns it:
// R on and above the diagonal and the reflectors' vectors (v[j] = 1 implied)
// below it, plus the vectors themselves and tau. Complex reflectors as
// zlarfg: beta real, tau = (beta - alpha) / beta, and A := H^H A.
template <typename T>
struct Householder {
  std::vector<T> a;
  std::vector<std::vector<T>> vs;
  std::vector<T> taus;
};
template <typename T>
Householder<T> geqrf_ref(std::vector<T> a, int64_t m, int64_t n) {
  const int64_t k = std::min(m, n);
  Householder<T> h;
  for (int64_t j = 0; j < k; ++j) {
    const T alpha = a[j * n + j];
    double xnorm = 0;
    for (int64_t i = j + 1; i < m; ++i) xnorm += std::norm(a[i * n + j]);
    std::vector<T> v(m, 0.0);
    v[j] = 1.0;
    T tau = 0.0;
    if (xnorm != 0.0 || alpha != conj(alpha)) {
      const double beta = -std::copysign(std::sqrt(std::norm(alpha) + xnorm), re(alpha));
      tau = (beta - alpha) / beta;
      for (int64_t i = j + 1; i < m; ++i) v[i] = a[i * n + j] / (alpha - beta);
      reflect(a, m, n, v, conj(tau));
    }
    h.vs.push_back(v);
    h.taus.push_back(tau);
  }
  for (int64_t j = 0; j < k; ++j)  // what geqrf stores below R
    for (int64_t i = j + 1; i < m; ++i) a[i * n + j] = h.vs[size_t(j)][size_t(i)];
  h.a = std::move(a);
  return h;
}

// Q (m x q) and R (r x n) of the m x n row-major a; q = r = min(m, n), or m
// for both when `complete`.
template <typename T>
std::pair<std::vector<T>, std::vector<T>> qr_ref(const std::vector<T>& a_in, int64_t m, int64_t n,
                                                 bool complete) {
  const int64_t k = std::min(m, n), q = complete ? m : k;
  const Householder<T> h = geqrf_ref(a_in, m, n);
  std::vector<T> Q(m * m, 0.0);
  for (int64_t i = 0; i < m; ++i) Q[i * m + i] = 1.0;
  for (int64_t j = k; j-- > 0;) reflect(Q, m, m, h.vs[j], h.taus[j]);  // H_1 ... H_k I
  std::vector<T> Qc(m * q), R(q * n, 0.0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < q; ++j) Qc[i * q + j] = Q[i * m + j];
  for (int64_t i = 0; i < std::min(q, m); ++i)
    for (int64_t j = i; j < n; ++j) R[i * n + j] = h.a[i * n + j];
  return {Qc, R};
}

// geqrf(A): its `a` (want_a) or tau.
Entry geqrf_entry(bool want_a, int64_t m, int64_t n) {
  Entry e;
  e.op = "linalg_geqrf";
  e.dtypes = kLinalgDtypes;
  e.shapes = matrix_shapes(m, n);
  e.call = [want_a](const std::vector<Tensor>& x) {
    const linalg::Geqrf r = linalg::geqrf(x[0]);
    return want_a ? r.a : r.tau;
  };
  set_oracles(e, [want_a](const auto& v, const Inputs& in, const Tensor& out) {
    using T = typename std::decay_t<decltype(v[0])>::value_type;
    const Shape& s = in.shapes[0];
    const int64_t rows = s[s.size() - 2], cols = s.back();
    Shape want(s.begin(), s.end() - 2);
    if (want_a) {
      want.push_back(rows);
      want.push_back(cols);
    } else {
      want.push_back(std::min(rows, cols));
    }
    expect_shape(out, want);
    std::vector<T> y;
    for (size_t b = 0; b < v[0].size() / size_t(std::max<int64_t>(rows * cols, 1)); ++b) {
      const Householder<T> h = geqrf_ref(slice(v[0], b, rows * cols), rows, cols);
      const std::vector<T>& r = want_a ? h.a : h.taus;
      y.insert(y.end(), r.begin(), r.end());
    }
    return y;
  });
  e.ulps = 64;
  e.floor = 4.0 * double(std::max(m, n));  // R's scale
  e.perf_shapes = {{{64, 32, 32}}};
  return e;
}

// Q (want_q) or R of qr(A, mode).
Entry qr_entry(const std::string& mode, bool want_q, int64_t m, int64_t n) {
  Entry e;
  e.op = "linalg_qr";
  e.dtypes = kLinalgDtypes;
  e.shapes = matrix_shapes(m, n);
  e.call = [mode, want_q](const std::vector<Tensor>& x) {
    const linalg::QR r = linalg::qr(x[0], mode);
    return want_q ? r.Q : r.R;
  };
  set_oracles(e, [mode, want_q](const auto& v, const Inputs& in, const Tensor& out) {
    using T = typename std::decay_t<decltype(v[0])>::value_type;
    const Shape& s = in.shapes[0];
    const int64_t rows = s[s.size() - 2], cols = s.back();
    const bool complete = mode == "complete";
    const int64_t q = complete ? rows : std::min(rows, cols);
    Shape want(s.begin(), s.end() - 2);
    want.push_back(want_q ? rows : q);
    want.push_back(want_q ? q : cols);
    expect_shape(out, want);
    std::vector<T> y;
    for (size_t b = 0; b < v[0].size() / size_t(rows * cols); ++b) {
      const std::vector<T> a = slice(v[0], b, rows * cols);
      const auto [Q, R] = qr_ref(a, rows, cols, complete);
      const std::vector<T>& r = want_q ? Q : R;
      y.insert(y.end(), r.begin(), r.end());
    }
    return y;
  });
  e.ulps = 64;
  e.floor = 4.0 * double(std::max(m, n));  // R's scale
  e.perf_shapes = {{{64, 32, 32}}};
  return e;
}

// householder_product(A [.., m, n], tau [.., k]).
Entry householder_entry(int64_t m, int64_t n, int64_t k) {
  Entry e;
  e.op = "linalg_householder_product";
  e.dtypes = kLinalgDtypes;
  e.lo = -0.5;  // keeps the (not orthogonal) product near 1
  e.hi = 0.5;
  e.shapes = [m, n, k](ShapeClass c) -> std::vector<InputSpec> {
    switch (c) {
      case ShapeClass::Empty:
        return {{{0, m, n}}, {{0, k}}};
      case ShapeClass::Scalar:
        return {{{1, 1}}, {{1}}};
      case ShapeClass::Odd:
        return {{{m, n}}, {{k}}};
      case ShapeClass::NonContiguous:
        return {{{2, m, n}, InputSpec::Transposed}, {{2, k}, InputSpec::Strided}};
      case ShapeClass::Broadcast:
        return {{{3, m, n}, InputSpec::Expanded, {1, m, n}}, {{k}}};
    }
    return {};
  };
  e.call = [](const std::vector<Tensor>& x) { return linalg::householder_product(x[0], x[1]); };
  set_oracles(e, [](const auto& v, const Inputs& in, const Tensor& out) {
    using T = typename std::decay_t<decltype(v[0])>::value_type;
    const Shape &sa = in.shapes[0], &st = in.shapes[1];
    const int64_t rows = sa[sa.size() - 2], cols = sa.back(), kk = st.back();
    Shape want(sa.begin(), sa.end() - 2);
    want.push_back(rows);
    want.push_back(cols);
    expect_shape(out, want);
    const size_t count = v[0].size() / size_t(rows * cols), tcount = v[1].size() / size_t(kk);
    std::vector<T> y;
    for (size_t b = 0; b < count; ++b) {
      const T* a = v[0].data() + b * rows * cols;
      const T* tau = v[1].data() + (tcount == 1 ? 0 : b) * kk;
      std::vector<T> Q(rows * rows, 0.0);
      for (int64_t i = 0; i < rows; ++i) Q[i * rows + i] = 1.0;
      for (int64_t j = kk; j-- > 0;) {  // H_1 ... H_k I, v_j = e_j + A[j+1:, j]
        std::vector<T> v(rows, 0.0);
        v[j] = 1.0;
        for (int64_t i = j + 1; i < rows; ++i) v[i] = a[i * cols + j];
        reflect(Q, rows, rows, v, tau[j]);
      }
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j) y.push_back(Q[i * rows + j]);
    }
    return y;
  });
  e.ulps = 64;
  e.perf_shapes = {{{64, 32, 32}}, {{64, 32}}};
  return e;
}

KILN_OP_TABLE({
    qr_entry("reduced", true, 7, 5),
    qr_entry("reduced", false, 7, 5),
    qr_entry("reduced", true, 5, 7),
    qr_entry("complete", true, 7, 5),
    qr_entry("complete", false, 7, 5),
    qr_entry("r", false, 6, 6),
    householder_entry(7, 5, 4),
    householder_entry(6, 6, 6),
    geqrf_entry(true, 7, 5),
    geqrf_entry(false, 7, 5),
    geqrf_entry(true, 5, 7),
});

}  // namespace
}  // namespace op_table
