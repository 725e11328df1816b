// Op table entries of linalg.det, slogdet, lu_factor, lu and lu_solve
// (ops/registry/linalg.h). Matrices are made dominant on the diagonal or, to
// exercise row exchanges and a negative sign, on the anti-diagonal; the
// oracle is an LU factorization with partial pivoting in float64.
#include <cmath>
#include <limits>

#include "kiln/linalg.h"
#include "op_table/linalg_shapes.h"
#include "op_table/table.h"

namespace op_table {
namespace {

using namespace kiln;

// Adds 4n + 4 to entry (i, i) (or (i, n-1-i) when `anti`) of every n x n matrix.
std::function<void(size_t, const Shape&, std::vector<double>&)> dominant(bool anti) {
  return [anti](size_t input, const Shape& shape, std::vector<double>& v) {
    if (input != 0 || shape.size() < 2) return;
    const int64_t n = shape.back();
    if (n == 0 || shape[shape.size() - 2] != n) return;
    for (size_t m = 0; m < v.size() / size_t(n * n); ++m)
      for (int64_t i = 0; i < n; ++i) v[m * n * n + i * n + (anti ? n - 1 - i : i)] += 4.0 * double(n) + 4.0;
  };
}

// LU factorization with partial pivoting (the first entry of largest
// magnitude, as getrf) of the m x n row-major matrix a, in place: L (unit,
// below the diagonal) and U share a; perm[i] is the row of A that row i of
// L U equals; swaps counts the row exchanges. Exact zero pivots are skipped.
struct LuRef {
  std::vector<double> lu;
  std::vector<int64_t> perm;
  int swaps = 0;
};
LuRef lu_ref(std::vector<double> a, int64_t m, int64_t n) {
  LuRef r;
  r.perm.resize(m);
  for (int64_t i = 0; i < m; ++i) r.perm[i] = i;
  for (int64_t c = 0; c < std::min(m, n); ++c) {
    int64_t p = c;
    for (int64_t i = c + 1; i < m; ++i)
      if (std::fabs(a[i * n + c]) > std::fabs(a[p * n + c])) p = i;
    if (p != c) {
      for (int64_t j = 0; j < n; ++j) std::swap(a[c * n + j], a[p * n + j]);
      std::swap(r.perm[c], r.perm[p]);
      ++r.swaps;
    }
    const double d = a[c * n + c];
    if (d == 0.0) continue;
    for (int64_t i = c + 1; i < m; ++i) {
      a[i * n + c] /= d;
      for (int64_t j = c + 1; j < n; ++j) a[i * n + j] -= a[i * n + c] * a[c * n + j];
    }
  }
  r.lu = std::move(a);
  return r;
}

// (sign, log|det|) of the n x n row-major matrix a; 0 and -inf when singular.
std::pair<double, double> slogdet_ref(const std::vector<double>& a, int64_t n) {
  const LuRef f = lu_ref(a, n, n);
  double sign = f.swaps % 2 ? -1.0 : 1.0, logabs = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    const double d = f.lu[i * n + i];
    if (d == 0.0) return {0.0, -std::numeric_limits<double>::infinity()};
    sign *= d < 0 ? -1.0 : 1.0;
    logabs += std::log(std::fabs(d));
  }
  return {sign, logabs};
}

// X = A^-1 B (or A^T X = B when `trans`) from A's LU; b: n x m row-major.
std::vector<double> lu_solve_ref(const std::vector<double>& a, std::vector<double> b, int64_t n, int64_t m,
                                 bool trans) {
  std::vector<double> at = a;
  if (trans)
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) at[i * n + j] = a[j * n + i];
  const LuRef f = lu_ref(at, n, n);
  std::vector<double> x(n * m);
  for (int64_t j = 0; j < m; ++j) {
    std::vector<double> y(n);
    for (int64_t i = 0; i < n; ++i) {  // L y = P b
      y[i] = b[f.perm[i] * m + j];
      for (int64_t k = 0; k < i; ++k) y[i] -= f.lu[i * n + k] * y[k];
    }
    for (int64_t i = n; i-- > 0;) {  // U x = y
      double acc = y[i];
      for (int64_t k = i + 1; k < n; ++k) acc -= f.lu[i * n + k] * x[k * m + j];
      x[i * m + j] = acc / f.lu[i * n + i];
    }
  }
  return x;
}

std::function<std::vector<InputSpec>(ShapeClass)> square_shapes(int64_t n) {
  return [n](ShapeClass c) -> std::vector<InputSpec> {
    switch (c) {
      case ShapeClass::Empty:
        return {{{0, n, n}}};
      case ShapeClass::Scalar:
        return {{{1, 1}}};
      case ShapeClass::Odd:
        return {{{n, n}}};
      case ShapeClass::NonContiguous:
        return {{{3, n, n}, InputSpec::Transposed}};
      case ShapeClass::Broadcast:
        return {{{3, n, n}, InputSpec::Expanded, {1, n, n}}};
    }
    return {};
  };
}

// what: 0 det, 1 slogdet's sign, 2 slogdet's logabsdet.
Entry det_entry(int what, int64_t n, bool anti) {
  Entry e;
  e.op = what == 0 ? "linalg_det" : "linalg_slogdet";
  e.dtypes = {DType::Float32, DType::Float64};
  e.shapes = square_shapes(n);
  e.condition = dominant(anti);
  e.call = [what](const std::vector<Tensor>& x) {
    if (what == 0) return linalg::det(x[0]);
    const linalg::SlogDet r = linalg::slogdet(x[0]);
    return what == 1 ? r.sign : r.logabsdet;
  };
  e.oracle = [what](const Inputs& in, const Tensor& out) {
    const Shape& s = in.shapes[0];
    const int64_t k = s.back();
    expect_shape(out, Shape(s.begin(), s.end() - 2));
    std::vector<double> y;
    for (size_t b = 0; b < in.values[0].size() / size_t(k * k); ++b) {
      const std::vector<double> a(in.values[0].begin() + b * k * k, in.values[0].begin() + (b + 1) * k * k);
      const auto [sign, logabs] = slogdet_ref(a, k);
      y.push_back(what == 0 ? sign * std::exp(logabs) : what == 1 ? sign : logabs);
    }
    return y;
  };
  e.ulps = 64;
  e.perf_shapes = {{{4096, 4, 4}}};
  return e;
}

std::vector<double> slice(const std::vector<double>& x, size_t b, size_t size) {
  return std::vector<double>(x.begin() + b * size, x.begin() + (b + 1) * size);
}

// lu_factor's LU (what 0) or lu's P, L, U (what 1, 2, 3) of [*, m, n] inputs.
Entry lu_entry(int what, int64_t m, int64_t n, bool anti) {
  Entry e;
  e.op = what == 0 ? "linalg_lu_factor" : "linalg_lu";
  e.dtypes = {DType::Float32, DType::Float64};
  e.shapes = [m, n](ShapeClass c) -> std::vector<InputSpec> {
    switch (c) {
      case ShapeClass::Empty:
        return {{{0, m, n}}};
      case ShapeClass::Scalar:
        return {{{1, 1}}};
      case ShapeClass::Odd:
        return {{{m, n}}};
      case ShapeClass::NonContiguous:
        return {{{3, m, n}, InputSpec::Transposed}};
      case ShapeClass::Broadcast:
        return {{{3, m, n}, InputSpec::Expanded, {1, m, n}}};
    }
    return {};
  };
  e.condition = dominant(anti);
  e.call = [what](const std::vector<Tensor>& x) {
    if (what == 0) return linalg::lu_factor(x[0]).LU;
    const linalg::PLU r = linalg::lu(x[0]);
    return what == 1 ? r.P : what == 2 ? r.L : r.U;
  };
  e.oracle = [what](const Inputs& in, const Tensor& out) {
    const Shape& s = in.shapes[0];
    const int64_t rows = s[s.size() - 2], cols = s.back(), k = std::min(rows, cols);
    Shape want(s.begin(), s.end() - 2);
    want.push_back(what == 3 ? k : rows);
    want.push_back(what == 0 || what == 3 ? cols : what == 1 ? rows : k);
    expect_shape(out, want);
    std::vector<double> y;
    for (size_t b = 0; rows * cols > 0 && b < in.values[0].size() / size_t(rows * cols); ++b) {
      const LuRef f = lu_ref(slice(in.values[0], b, rows * cols), rows, cols);
      for (int64_t i = 0; i < want[want.size() - 2]; ++i)
        for (int64_t j = 0; j < want.back(); ++j) {
          const double v = f.lu[i * cols + j];
          if (what == 0) y.push_back(v);
          if (what == 1) y.push_back(f.perm[j] == i ? 1.0 : 0.0);  // row j of L U is row perm[j] of A
          if (what == 2) y.push_back(i == j ? 1.0 : i > j ? v : 0.0);
          if (what == 3) y.push_back(j >= i ? v : 0.0);
        }
    }
    return y;
  };
  e.ulps = 64;
  e.perf_shapes = {{{256, 8, 8}}};
  return e;
}

// lu_solve(lu_factor(A), B) for A [.., n, n], B [.., n, m] (left) or [.., m, n].
Entry lu_solve_entry(int64_t n, int64_t m, bool left, bool adjoint) {
  Entry e;
  e.op = "linalg_lu_solve";
  e.dtypes = {DType::Float32, DType::Float64};
  e.shapes = system_shapes(n, m, left);
  e.condition = dominant(true);
  e.call = [left, adjoint](const std::vector<Tensor>& x) {
    const linalg::LUFactor f = linalg::lu_factor(x[0]);
    return linalg::lu_solve(f.LU, f.pivots, x[1], left, adjoint);
  };
  e.oracle = [left, adjoint](const Inputs& in, const Tensor& out) {
    const Shape &sa = in.shapes[0], &sb = in.shapes[1];
    const int64_t k = sa.back(), rhs = left ? sb.back() : sb[sb.size() - 2];
    const size_t count = in.values[0].size() / size_t(k * k), bcount = in.values[1].size() / size_t(k * rhs);
    Shape want = sa.size() >= sb.size() ? Shape(sa.begin(), sa.end() - 2) : Shape(sb.begin(), sb.end() - 2);
    want.push_back(left ? k : rhs);
    want.push_back(left ? rhs : k);
    expect_shape(out, want);
    std::vector<double> y;
    for (size_t b = 0; b < std::max(count, bcount); ++b) {
      const std::vector<double> a = slice(in.values[0], count == 1 ? 0 : b, k * k);
      std::vector<double> rb = slice(in.values[1], bcount == 1 ? 0 : b, k * rhs);
      if (left) {  // op(A) X = B
        const std::vector<double> x = lu_solve_ref(a, rb, k, rhs, adjoint);
        y.insert(y.end(), x.begin(), x.end());
      } else {  // X op(A) = B  <=>  op(A)^T X^T = B^T
        std::vector<double> bt(k * rhs);
        for (int64_t i = 0; i < rhs; ++i)
          for (int64_t j = 0; j < k; ++j) bt[j * rhs + i] = rb[i * k + j];
        const std::vector<double> x = lu_solve_ref(a, bt, k, rhs, !adjoint);
        for (int64_t i = 0; i < rhs; ++i)
          for (int64_t j = 0; j < k; ++j) y.push_back(x[j * rhs + i]);
      }
    }
    return y;
  };
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
