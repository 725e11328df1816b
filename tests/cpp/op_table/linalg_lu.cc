// Op table entries of linalg.det, slogdet, lu_factor, lu and lu_solve
// (ops/registry/linalg.h). Matrices are made dominant on the diagonal or, to
// exercise row exchanges and a negative sign, on the anti-diagonal; the
// oracle is an LU factorization with partial pivoting in float64.
#include <cmath>
#include <limits>

#include "kiln/linalg.h"
#include "op_table/linalg_ref.h"

namespace op_table {
namespace {

using namespace kiln;
using namespace linalg_ref;

// LU factorization with partial pivoting (the first entry of largest
// magnitude, |re| + |im| for complex, as getrf) of the m x n row-major
// matrix a, in place: L (unit, below the diagonal) and U share a; perm[i] is
// the row of A that row i of L U equals; swaps counts the row exchanges.
// Exact zero pivots are skipped.
template <typename T>
struct LuRef {
  std::vector<T> lu;
  std::vector<int64_t> perm;
  int swaps = 0;
};
template <typename T>
LuRef<T> lu_ref(std::vector<T> a, int64_t m, int64_t n) {
  LuRef<T> r;
  r.perm.resize(m);
  for (int64_t i = 0; i < m; ++i) r.perm[i] = i;
  for (int64_t c = 0; c < std::min(m, n); ++c) {
    int64_t p = c;
    for (int64_t i = c + 1; i < m; ++i)
      if (pivot_abs(a[i * n + c]) > pivot_abs(a[p * n + c])) p = i;
    if (p != c) {
      for (int64_t j = 0; j < n; ++j) std::swap(a[c * n + j], a[p * n + j]);
      std::swap(r.perm[c], r.perm[p]);
      ++r.swaps;
    }
    const T d = a[c * n + c];
    if (d == T(0)) continue;
    for (int64_t i = c + 1; i < m; ++i) {
      a[i * n + c] /= d;
      for (int64_t j = c + 1; j < n; ++j) a[i * n + j] -= a[i * n + c] * a[c * n + j];
    }
  }
  r.lu = std::move(a);
  return r;
}

// (sign, log|det|) of the n x n row-major matrix a (sign: d / |d| for
// complex); 0 and -inf when singular.
template <typename T>
std::pair<T, double> slogdet_ref(const std::vector<T>& a, int64_t n) {
  const LuRef<T> f = lu_ref(a, n, n);
  T sign = f.swaps % 2 ? -1.0 : 1.0;
  double logabs = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    const T d = f.lu[i * n + i];
    if (d == T(0)) return {T(0), -std::numeric_limits<double>::infinity()};
    sign *= d / std::abs(d);
    logabs += std::log(std::abs(d));
  }
  return {sign, logabs};
}

// X = A^-1 B from A's LU; a: n x n, b: n x m row-major.
template <typename T>
std::vector<T> lu_solve_ref(const std::vector<T>& a, std::vector<T> b, int64_t n, int64_t m) {
  const LuRef<T> f = lu_ref(a, n, n);
  std::vector<T> x(n * m);
  for (int64_t j = 0; j < m; ++j) {
    std::vector<T> y(n);
    for (int64_t i = 0; i < n; ++i) {  // L y = P b
      y[i] = b[f.perm[i] * m + j];
      for (int64_t k = 0; k < i; ++k) y[i] -= f.lu[i * n + k] * y[k];
    }
    for (int64_t i = n; i-- > 0;) {  // U x = y
      T acc = y[i];
      for (int64_t k = i + 1; k < n; ++k) acc -= f.lu[i * n + k] * x[k * m + j];
      x[i * m + j] = acc / f.lu[i * n + i];
    }
  }
  return x;
}

// what: 0 det, 1 slogdet's sign, 2 slogdet's logabsdet.
Entry det_entry(int what, int64_t n, bool anti) {
  Entry e;
  e.op = what == 0 ? "linalg_det" : "linalg_slogdet";
  e.dtypes = kLinalgDtypes;
  e.shapes = square_shapes(n);
  make_dominant(e, anti);
  e.call = [what](const std::vector<Tensor>& x) {
    if (what == 0) return linalg::det(x[0]);
    const linalg::SlogDet r = linalg::slogdet(x[0]);
    return what == 1 ? r.sign : r.logabsdet;
  };
  set_oracles(e, [what](const auto& v, const Inputs& in, const Tensor& out) {
    using T = typename std::decay_t<decltype(v[0])>::value_type;
    const Shape& s = in.shapes[0];
    const int64_t k = s.back();
    expect_shape(out, Shape(s.begin(), s.end() - 2));
    std::vector<T> y;
    for (size_t b = 0; b < v[0].size() / size_t(k * k); ++b) {
      const std::vector<T> a = slice(v[0], b, k * k);
      const auto [sign, logabs] = slogdet_ref(a, k);
      y.push_back(what == 0 ? sign * std::exp(logabs) : what == 1 ? sign : logabs);
    }
    return y;
  });
  e.ulps = 64;
  e.perf_shapes = {{{4096, 4, 4}}};
  return e;
}

// lu_factor's LU (what 0) or lu's P, L, U (what 1, 2, 3) of [*, m, n] inputs.
Entry lu_entry(int what, int64_t m, int64_t n, bool anti) {
  Entry e;
  e.op = what == 0 ? "linalg_lu_factor" : "linalg_lu";
  e.dtypes = kLinalgDtypes;
  e.shapes = matrix_shapes(m, n);
  make_dominant(e, anti);
  e.call = [what](const std::vector<Tensor>& x) {
    if (what == 0) return linalg::lu_factor(x[0]).LU;
    const linalg::PLU r = linalg::lu(x[0]);
    return what == 1 ? r.P : what == 2 ? r.L : r.U;
  };
  set_oracles(e, [what](const auto& v, const Inputs& in, const Tensor& out) {
    using T = typename std::decay_t<decltype(v[0])>::value_type;
    const Shape& s = in.shapes[0];
    const int64_t rows = s[s.size() - 2], cols = s.back(), k = std::min(rows, cols);
    Shape want(s.begin(), s.end() - 2);
    want.push_back(what == 3 ? k : rows);
    want.push_back(what == 0 || what == 3 ? cols : what == 1 ? rows : k);
    expect_shape(out, want);
    std::vector<T> y;
    for (size_t b = 0; rows * cols > 0 && b < v[0].size() / size_t(rows * cols); ++b) {
      const LuRef<T> f = lu_ref(slice(v[0], b, rows * cols), rows, cols);
      for (int64_t i = 0; i < want[want.size() - 2]; ++i)
        for (int64_t j = 0; j < want.back(); ++j) {
          const T x = f.lu[i * cols + j];
          if (what == 0) y.push_back(x);
          if (what == 1) y.push_back(f.perm[j] == i ? 1.0 : 0.0);  // row j of L U is row perm[j] of A
          if (what == 2) y.push_back(i == j ? T(1) : i > j ? x : T(0));
          if (what == 3) y.push_back(j >= i ? x : T(0));
        }
    }
    return y;
  });
  e.ulps = 64;
  e.perf_shapes = {{{256, 8, 8}}};
  return e;
}

// lu_solve(lu_factor(A), B) for A [.., n, n], B [.., n, m] (left) or [.., m, n].
Entry lu_solve_entry(int64_t n, int64_t m, bool left, bool adjoint) {
  Entry e;
  e.op = "linalg_lu_solve";
  e.dtypes = kLinalgDtypes;
  e.shapes = system_shapes(n, m, left);
  make_dominant(e, true);
  e.call = [left, adjoint](const std::vector<Tensor>& x) {
    const linalg::LUFactor f = linalg::lu_factor(x[0]);
    return linalg::lu_solve(f.LU, f.pivots, x[1], left, adjoint);
  };
  set_oracles(e, [left, adjoint](const auto& v, const Inputs& in, const Tensor& out) {
    using T = typename std::decay_t<decltype(v[0])>::value_type;
    const Shape &sa = in.shapes[0], &sb = in.shapes[1];
    const int64_t k = sa.back(), rhs = left ? sb.back() : sb[sb.size() - 2];
    const size_t count = v[0].size() / size_t(k * k), bcount = v[1].size() / size_t(k * rhs);
    Shape want = sa.size() >= sb.size() ? Shape(sa.begin(), sa.end() - 2) : Shape(sb.begin(), sb.end() - 2);
    want.push_back(left ? k : rhs);
    want.push_back(left ? rhs : k);
    expect_shape(out, want);
    std::vector<T> y;
    for (size_t b = 0; b < std::max(count, bcount); ++b) {
      const std::vector<T> a = slice(v[0], count == 1 ? 0 : b, k * k);
      std::vector<T> rb = slice(v[1], bcount == 1 ? 0 : b, k * rhs);
      if (left) {  // op(A) X = B, op(A) = A or A^H
        const std::vector<T> x = lu_solve_ref(adjoint ? transposed(a, k, k, true) : a, rb, k, rhs);
        y.insert(y.end(), x.begin(), x.end());
      } else {  // X op(A) = B  <=>  op(A)^T X^T = B^T, op(A)^T = A^T or conj(A)
        std::vector<T> bt(k * rhs), opt = adjoint ? a : transposed(a, k, k);
        if (adjoint)
          for (T& z : opt) z = conj(z);
        for (int64_t i = 0; i < rhs; ++i)
          for (int64_t j = 0; j < k; ++j) bt[j * rhs + i] = rb[i * k + j];
        const std::vector<T> x = lu_solve_ref(opt, bt, k, rhs);
        for (int64_t i = 0; i < rhs; ++i)
          for (int64_t j = 0; j < k; ++j) y.push_back(x[j * rhs + i]);
      }
    }
    return y;
  });
  e.ulps = 64;
  e.perf_shapes = {{{256, 8, 8}}, {{256, 8, 4}}};
  return e;
}

KILN_OP_TABLE({
    lu_entry(0, 6, 6, true),
    lu_entry(0, 7, 5, false),
    lu_entry(0, 5, 7, true),
    lu_entry(1, 6, 6, true),
    lu_entry(2, 7, 5, true),
    lu_entry(3, 5, 7, true),
    lu_solve_entry(6, 3, true, false),
    lu_solve_entry(6, 3, true, true),
    lu_solve_entry(5, 4, false, false),
    lu_solve_entry(5, 4, false, true),
});

KILN_OP_TABLE({
    det_entry(0, 5, false),
    det_entry(0, 6, true),  // row exchanges, det < 0
    det_entry(0, 12, false),
    det_entry(1, 6, true),
    det_entry(1, 5, false),
    det_entry(2, 6, true),
    det_entry(2, 12, false),
});

}  // namespace
}  // namespace op_table
