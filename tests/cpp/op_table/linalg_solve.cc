// Op table entries of linalg.inv, solve and solve_triangular (ops/registry/
// linalg.h), on the batched small-matrix kernels (n <= 16) and on LAPACK
// (n = 19, or few right-hand sides for solve_triangular); and of pinv and
// matrix_rank. Matrices
// are made diagonally dominant so every case is well-conditioned; the oracles
// are Gauss-Jordan elimination and substitution in float64.
#include <cmath>

#include "kiln/linalg.h"
#include "op_table/linalg_ref.h"

namespace op_table {
namespace {

using namespace kiln;
using namespace linalg_ref;

// X = A^-1 B with A triangular (only its `upper` triangle read, unit: ones on
// the diagonal) by substitution; a: n x n, b: n x m, row-major.
template <typename T>
std::vector<T> substitute(const std::vector<T>& a, std::vector<T> b, int64_t n, int64_t m, bool upper,
                          bool unit) {
  for (int64_t s = 0; s < n; ++s) {
    const int64_t i = upper ? n - 1 - s : s;
    for (int64_t j = 0; j < m; ++j) {
      T acc = b[i * m + j];
      for (int64_t k = 0; k < n; ++k)
        if (upper ? k > i : k < i) acc -= a[i * n + k] * b[k * m + j];
      b[i * m + j] = unit ? acc : acc / a[i * n + i];
    }
  }
  return b;
}

// ---- inv ----

Entry inv_entry(int64_t n) {
  Entry e;
  e.op = "linalg_inv";
  e.dtypes = kLinalgDtypes;
  e.shapes = square_shapes(n);
  make_dominant(e);
  e.call = [](const std::vector<Tensor>& x) { return linalg::inv(x[0]); };
  set_oracles(e, [](const auto& v, const Inputs& in, const Tensor& out) {
    using T = typename std::decay_t<decltype(v[0])>::value_type;
    const Shape& s = in.shapes[0];
    const int64_t k = s.back();
    expect_shape(out, s);
    std::vector<T> id(k * k, 0.0), y;
    for (int64_t i = 0; i < k; ++i) id[i * k + i] = 1.0;
    for (size_t b = 0; k > 0 && b < v[0].size() / size_t(k * k); ++b) {
      const std::vector<T> r = gauss_jordan(slice(v[0], b, k * k), id, k, k);
      y.insert(y.end(), r.begin(), r.end());
    }
    return y;
  });
  e.ulps = 64;
  e.perf_shapes = {{{4096, 4, 4}}};
  return e;
}

// ---- solve ----

// A [.., n, n] with B [.., n, m] (or B a vector [n] when m == 0).
std::function<std::vector<InputSpec>(ShapeClass)> solve_shapes(int64_t n, int64_t m) {
  return [n, m](ShapeClass c) -> std::vector<InputSpec> {
    switch (c) {
      case ShapeClass::Empty:
        return {{{0, n, n}}, {{0, n, m}}};
      case ShapeClass::Scalar:
        return {{{1, 1}}, {{1}}};
      case ShapeClass::Odd:
        return {{{n, n}}, {{n, m}}};
      case ShapeClass::NonContiguous:
        return {{{2, n, n}, InputSpec::Transposed}, {{2, n, m}, InputSpec::Strided}};
      case ShapeClass::Broadcast:
        return {{{3, n, n}, InputSpec::Expanded, {1, n, n}}, {{n, m}}};
    }
    return {};
  };
}

Entry solve_entry(int64_t n, int64_t m, bool left) {
  Entry e;
  e.op = "linalg_solve";
  e.dtypes = kLinalgDtypes;
  e.shapes = left ? solve_shapes(n, m) : [n, m](ShapeClass c) -> std::vector<InputSpec> {
    if (c == ShapeClass::Scalar) return {};  // left=False takes a matrix B
    std::vector<InputSpec> s = solve_shapes(n, m)(c);
    std::swap(s[1].shape[s[1].shape.size() - 1], s[1].shape[s[1].shape.size() - 2]);  // B: [.., m, n]
    return s;
  };
  make_dominant(e);
  e.call = [left](const std::vector<Tensor>& x) { return linalg::solve(x[0], x[1], left); };
  set_oracles(e, [left](const auto& v, const Inputs& in, const Tensor& out) {
    using T = typename std::decay_t<decltype(v[0])>::value_type;
    const Shape &sa = in.shapes[0], &sb = in.shapes[1];
    const int64_t k = sa.back();
    const bool vec = sb.size() == 1;
    const int64_t m = vec ? 1 : left ? sb.back() : sb[sb.size() - 2];
    std::vector<T> y;
    const Shape batch =
        for_each_batch(batch_of(sa, 2), batch_of(sb, vec ? 1 : 2), [&](int64_t ia, int64_t ib) {
          std::vector<T> a = slice(v[0], ia, k * k), b = slice(v[1], ib, k * m);
          if (!left) {  // X A = B  <=>  A^T X^T = B^T
            a = transposed(a, k, k);
            b = transposed(b, m, k);
          }
          std::vector<T> x = gauss_jordan(a, b, k, m);
          if (!left) x = transposed(x, k, m);
          y.insert(y.end(), x.begin(), x.end());
        });
    Shape want = batch;
    if (vec) {
      want.push_back(k);
    } else {
      want.push_back(left ? k : m);
      want.push_back(left ? m : k);
    }
    expect_shape(out, want);
    return y;
  });
  e.ulps = 64;
  e.perf_shapes = {{{4096, 4, 4}}, {{4096, 4, 1}}};
  return e;
}

// ---- solve_triangular ----

Entry solve_triangular_entry(int64_t n, int64_t m, bool upper, bool left, bool unit) {
  Entry e;
  e.op = "linalg_solve_triangular";
  e.dtypes = kLinalgDtypes;
  e.shapes = system_shapes(n, m, left);
  make_dominant(e);
  if (unit) {  // the diagonal is not read: keep the substitution's growth small
    e.lo = -0.5;
    e.hi = 0.5;
  }
  e.call = [upper, left, unit](const std::vector<Tensor>& x) {
    return linalg::solve_triangular(x[0], x[1], upper, left, unit);
  };
  set_oracles(e, [upper, left, unit](const auto& v, const Inputs& in, const Tensor& out) {
    using T = typename std::decay_t<decltype(v[0])>::value_type;
    const Shape &sa = in.shapes[0], &sb = in.shapes[1];
    const int64_t k = sa.back(), m = left ? sb.back() : sb[sb.size() - 2];
    std::vector<T> y;
    const Shape batch = for_each_batch(batch_of(sa, 2), batch_of(sb, 2), [&](int64_t ia, int64_t ib) {
      std::vector<T> a = slice(v[0], ia, k * k), b = slice(v[1], ib, k * m);
      bool up = upper;
      if (!left) {  // X A = B  <=>  A^T X^T = B^T, A^T triangular the other way
        a = transposed(a, k, k);
        b = transposed(b, m, k);
        up = !up;
      }
      std::vector<T> x = substitute(a, b, k, m, up, unit);
      if (!left) x = transposed(x, k, m);
      y.insert(y.end(), x.begin(), x.end());
    });
    Shape want = batch;
    want.push_back(left ? k : m);
    want.push_back(left ? m : k);
    expect_shape(out, want);
    return y;
  });
  e.ulps = 64;
  e.perf_shapes = {{{64, 64, 64}}, {{64, 64, 64}}};
  return e;
}

// ---- pinv and matrix_rank ----

// pinv of full-rank [*, m, n] (m >= n: (A^H A)^-1 A^H; else A^H (A A^H)^-1),
// as the Hermitian pinv when `hermitian` (square, lower triangle read).
Entry pinv_entry(int64_t m, int64_t n, bool hermitian) {
  Entry e;
  e.op = "linalg_pinv";
  e.dtypes = kLinalgDtypes;
  e.shapes = matrix_shapes(m, n);
  make_dominant(e);
  e.call = [hermitian](const std::vector<Tensor>& x) {
    return linalg::pinv(x[0], std::nullopt, std::nullopt, hermitian);
  };
  set_oracles(e, [hermitian](const auto& v, const Inputs& in, const Tensor& out) {
    using T = typename std::decay_t<decltype(v[0])>::value_type;
    const Shape& s = in.shapes[0];
    const int64_t rows = s[s.size() - 2], cols = s.back();
    Shape want(s.begin(), s.end() - 2);
    want.push_back(cols);
    want.push_back(rows);
    expect_shape(out, want);
    std::vector<T> y;
    for (size_t b = 0; rows * cols > 0 && b < v[0].size() / size_t(rows * cols); ++b) {
      std::vector<T> a = slice(v[0], b, rows * cols);
      if (hermitian) a = linalg_ref::hermitian(a, rows, false);
      const std::vector<T> ah = transposed(a, rows, cols, true);  // cols x rows
      const bool tall = rows >= cols;
      const int64_t g = tall ? cols : rows;
      const std::vector<T> gm = gram(a.data(), rows, cols);  // A^H A or A A^H
      std::vector<T> p;
      if (tall) {
        p = gauss_jordan(gm, ah, g, rows);  // (A^H A)^-1 A^H: cols x rows
      } else {                              // A^H (A A^H)^-1 = ((A A^H)^-1 A)^H
        p = transposed(gauss_jordan(gm, a, g, cols), rows, cols, true);
      }
      y.insert(y.end(), p.begin(), p.end());
    }
    return y;
  });
  e.ulps = 256;
  e.perf_shapes = {{{64, 16, 16}}};
  return e;
}

// Makes row 0 of every matrix of input 0 equal to its last row (rank <= r - 1).
template <typename T>
void repeat_row(size_t input, const Shape& shape, std::vector<T>& v) {
  if (input != 0 || shape.size() < 2) return;
  const int64_t r = shape[shape.size() - 2], c = shape.back();
  if (r < 2 || c == 0) return;
  for (size_t m = 0; m < v.size() / size_t(r * c); ++m)
    for (int64_t j = 0; j < c; ++j) v[m * r * c + j] = v[m * r * c + (r - 1) * c + j];
}

// The rank of the m x n row-major a: Gaussian elimination with full pivoting,
// pivots below 1e-9 of the largest entry counted as zero.
template <typename T>
double rank_ref(std::vector<T> a, int64_t m, int64_t n) {
  double amax = 0;
  for (T x : a) amax = std::max(amax, std::abs(x));
  int64_t rank = 0;
  for (int64_t r = 0; r < std::min(m, n); ++r) {
    int64_t pi = r, pj = r;
    for (int64_t i = r; i < m; ++i)
      for (int64_t j = r; j < n; ++j)
        if (std::abs(a[i * n + j]) > std::abs(a[pi * n + pj])) pi = i, pj = j;
    if (std::abs(a[pi * n + pj]) <= 1e-9 * amax) break;
    for (int64_t j = 0; j < n; ++j) std::swap(a[r * n + j], a[pi * n + j]);
    for (int64_t i = 0; i < m; ++i) std::swap(a[i * n + r], a[i * n + pj]);
    for (int64_t i = r + 1; i < m; ++i) {
      const T f = a[i * n + r] / a[r * n + r];
      for (int64_t j = r; j < n; ++j) a[i * n + j] -= f * a[r * n + j];
    }
    ++rank;
  }
  return double(rank);
}

Entry matrix_rank_entry(int64_t m, int64_t n, bool deficient, bool hermitian) {
  Entry e;
  e.op = "linalg_matrix_rank";
  e.dtypes = kLinalgDtypes;
  e.shapes = matrix_shapes(m, n);
  if (deficient) {
    e.condition = repeat_row<double>;
    e.complex_condition = repeat_row<cdouble>;
  } else {
    make_dominant(e);
  }
  e.call = [hermitian](const std::vector<Tensor>& x) {
    return linalg::matrix_rank(x[0], std::nullopt, std::nullopt, hermitian);
  };
  set_oracles(e, [hermitian](const auto& v, const Inputs& in, const Tensor& out) {
    using T = typename std::decay_t<decltype(v[0])>::value_type;
    const Shape& s = in.shapes[0];
    const int64_t rows = s[s.size() - 2], cols = s.back();
    expect_shape(out, Shape(s.begin(), s.end() - 2));
    std::vector<T> y;
    for (size_t b = 0; rows * cols > 0 && b < v[0].size() / size_t(rows * cols); ++b) {
      std::vector<T> a = slice(v[0], b, rows * cols);
      if (hermitian) a = linalg_ref::hermitian(a, rows, false);
      y.push_back(rank_ref(a, rows, cols));
    }
    return y;
  });
  e.perf_shapes = {{{64, 16, 16}}};
  return e;
}

// lstsq(A [.., m, n], B [.., m, r]).solution for full-rank tall A:
// (A^H A)^-1 A^H B.
Entry lstsq_entry(int64_t m, int64_t n, int64_t r, const char* driver) {
  Entry e;
  e.op = "linalg_lstsq";
  e.dtypes = kLinalgDtypes;
  e.shapes = [m, n, r](ShapeClass c) -> std::vector<InputSpec> {
    switch (c) {
      case ShapeClass::Empty:
        return {{{0, m, n}}, {{0, m, r}}};
      case ShapeClass::Scalar:
        return {{{1, 1}}, {{1, 1}}};
      case ShapeClass::Odd:
        return {{{m, n}}, {{m, r}}};
      case ShapeClass::NonContiguous:
        return {{{2, m, n}, InputSpec::Transposed}, {{2, m, r}, InputSpec::Strided}};
      case ShapeClass::Broadcast:
        return {{{3, m, n}, InputSpec::Expanded, {1, m, n}},
                {{1, m, r}}};  // [m, r] would be a batch of vectors
    }
    return {};
  };
  make_dominant(e);  // square A: well-conditioned
  e.call = [driver](const std::vector<Tensor>& x) {
    return linalg::lstsq(x[0], x[1], std::nullopt, std::string(driver)).solution;
  };
  set_oracles(e, [](const auto& v, const Inputs& in, const Tensor& out) {
    using T = typename std::decay_t<decltype(v[0])>::value_type;
    const Shape &sa = in.shapes[0], &sb = in.shapes[1];
    const int64_t rows = sa[sa.size() - 2], cols = sa.back(), rhs = sb.back();
    std::vector<T> y;
    const Shape batch = for_each_batch(batch_of(sa, 2), batch_of(sb, 2), [&](int64_t ia, int64_t ib) {
      const std::vector<T> a = slice(v[0], ia, rows * cols), b = slice(v[1], ib, rows * rhs);
      std::vector<T> ahb(cols * rhs, 0.0);
      for (int64_t l = 0; l < rows; ++l)
        for (int64_t i = 0; i < cols; ++i)
          for (int64_t j = 0; j < rhs; ++j) ahb[i * rhs + j] += conj(a[l * cols + i]) * b[l * rhs + j];
      const std::vector<T> x = gauss_jordan(gram(a.data(), rows, cols), ahb, cols, rhs);
      y.insert(y.end(), x.begin(), x.end());
    });
    Shape want = batch;
    want.push_back(cols);
    want.push_back(rhs);
    expect_shape(out, want);
    return y;
  });
  e.ulps = 256;
  e.perf_shapes = {{{64, 32, 16}}, {{64, 32, 4}}};
  return e;
}

KILN_OP_TABLE({
    lstsq_entry(7, 5, 3, "gelsy"),
    lstsq_entry(7, 5, 3, "gels"),
    lstsq_entry(7, 5, 2, "gelsd"),
    lstsq_entry(6, 6, 2, "gelss"),
    pinv_entry(6, 6, false),
    pinv_entry(7, 5, false),
    pinv_entry(5, 7, false),
    pinv_entry(6, 6, true),
    matrix_rank_entry(6, 6, false, false),
    matrix_rank_entry(6, 6, true, false),
    matrix_rank_entry(7, 5, true, false),
    matrix_rank_entry(6, 6, false, true),
});

KILN_OP_TABLE({
    inv_entry(5), inv_entry(19), solve_entry(5, 3, true), solve_entry(19, 2, true), solve_entry(6, 4, false),
    solve_triangular_entry(5, 9, false, true, false),  // float32: the substitution kernel
    solve_triangular_entry(5, 9, true, true, true), solve_triangular_entry(19, 3, true, true, false),  // trsm
    solve_triangular_entry(6, 4, false, false, false),  // X A = B
});

}  // namespace
}  // namespace op_table
