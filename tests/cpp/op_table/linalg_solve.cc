// Op table entries of linalg.inv, solve and solve_triangular (ops/registry/
// linalg.h), on the batched small-matrix kernels (n <= 16) and on LAPACK
// (n = 19, or few right-hand sides for solve_triangular); and of pinv and
// matrix_rank. Matrices
// are made diagonally dominant so every case is well-conditioned; the oracles
// are Gauss-Jordan elimination and substitution in float64.
#include <cmath>

#include "kiln/linalg.h"
#include "op_table/linalg_shapes.h"
#include "op_table/table.h"

namespace op_table {
namespace {

using namespace kiln;

// Adds 4n + 4 to the diagonal of every n x n matrix of input 0 (entries are in
// [-4, 4], so each row's diagonal outweighs the rest of the row by >= 4).
void dominant_diagonal(size_t input, const Shape& shape, std::vector<double>& v) {
  if (input != 0 || shape.size() < 2) return;
  const int64_t n = shape.back();
  if (n == 0 || shape[shape.size() - 2] != n) return;
  for (size_t m = 0; m < v.size() / size_t(n * n); ++m)
    for (int64_t i = 0; i < n; ++i) v[m * n * n + i * n + i] += 4.0 * double(n) + 4.0;
}

// The batch dims of a shape with `core` trailing matrix/vector dims.
Shape batch_of(const Shape& s, size_t core) { return Shape(s.begin(), s.end() - core); }

// Calls f(ia, ib) for each index of the broadcast of batch shapes a and b, in
// row-major order, with the (row-major) batch element of each; returns the
// broadcast shape.
template <typename F>
Shape for_each_batch(const Shape& a, const Shape& b, F&& f) {
  const size_t nd = std::max(a.size(), b.size());
  Shape out(nd);
  auto at = [&](const Shape& s, size_t k) { return k + s.size() < nd ? int64_t(1) : s[k + s.size() - nd]; };
  for (size_t k = 0; k < nd; ++k) out[k] = std::max(at(a, k), at(b, k));
  int64_t total = 1;
  for (int64_t d : out) total *= d;
  for (int64_t i = 0; i < total; ++i) {
    int64_t rem = i, ia = 0, ib = 0, sa = 1, sb = 1;
    for (size_t k = nd; k-- > 0;) {
      const int64_t idx = rem % out[k];
      rem /= out[k];
      if (at(a, k) != 1) ia += idx * sa;
      if (at(b, k) != 1) ib += idx * sb;
      sa *= at(a, k);
      sb *= at(b, k);
    }
    f(ia, ib);
  }
  return out;
}

// X = A^-1 B by Gauss-Jordan with partial pivoting; a: n x n, b: n x m, row-major.
std::vector<double> gauss_jordan(std::vector<double> a, std::vector<double> b, int64_t n, int64_t m) {
  for (int64_t c = 0; c < n; ++c) {
    int64_t p = c;
    for (int64_t r = c + 1; r < n; ++r)
      if (std::fabs(a[r * n + c]) > std::fabs(a[p * n + c])) p = r;
    for (int64_t j = 0; j < n; ++j) std::swap(a[c * n + j], a[p * n + j]);
    for (int64_t j = 0; j < m; ++j) std::swap(b[c * m + j], b[p * m + j]);
    const double d = a[c * n + c];
    for (int64_t j = 0; j < n; ++j) a[c * n + j] /= d;
    for (int64_t j = 0; j < m; ++j) b[c * m + j] /= d;
    for (int64_t r = 0; r < n; ++r) {
      if (r == c) continue;
      const double f = a[r * n + c];
      for (int64_t j = 0; j < n; ++j) a[r * n + j] -= f * a[c * n + j];
      for (int64_t j = 0; j < m; ++j) b[r * m + j] -= f * b[c * m + j];
    }
  }
  return b;
}

// X = A^-1 B with A triangular (only its `upper` triangle read, unit: ones on
// the diagonal) by substitution; a: n x n, b: n x m, row-major.
std::vector<double> substitute(const std::vector<double>& a, std::vector<double> b, int64_t n, int64_t m,
                               bool upper, bool unit) {
  for (int64_t s = 0; s < n; ++s) {
    const int64_t i = upper ? n - 1 - s : s;
    for (int64_t j = 0; j < m; ++j) {
      double acc = b[i * m + j];
      for (int64_t k = 0; k < n; ++k)
        if (upper ? k > i : k < i) acc -= a[i * n + k] * b[k * m + j];
      b[i * m + j] = unit ? acc : acc / a[i * n + i];
    }
  }
  return b;
}

std::vector<double> transposed(const std::vector<double>& x, int64_t rows, int64_t cols) {
  std::vector<double> t(x.size());
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) t[j * rows + i] = x[i * cols + j];
  return t;
}

std::vector<double> slice(const std::vector<double>& x, int64_t b, int64_t size) {
  return std::vector<double>(x.begin() + b * size, x.begin() + (b + 1) * size);
}

// ---- inv ----

std::function<std::vector<InputSpec>(ShapeClass)> inv_shapes(int64_t n) {
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

Entry inv_entry(int64_t n) {
  Entry e;
  e.op = "linalg_inv";
  e.dtypes = {DType::Float32, DType::Float64};
  e.shapes = inv_shapes(n);
  e.condition = dominant_diagonal;
  e.call = [](const std::vector<Tensor>& x) { return linalg::inv(x[0]); };
  e.oracle = [](const Inputs& in, const Tensor& out) {
    const Shape& s = in.shapes[0];
    const int64_t k = s.back();
    expect_shape(out, s);
    std::vector<double> id(k * k, 0.0), y;
    for (int64_t i = 0; i < k; ++i) id[i * k + i] = 1.0;
    for (size_t b = 0; k > 0 && b < in.values[0].size() / size_t(k * k); ++b) {
      const std::vector<double> r = gauss_jordan(slice(in.values[0], b, k * k), id, k, k);
      y.insert(y.end(), r.begin(), r.end());
    }
    return y;
  };
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
  e.dtypes = {DType::Float32, DType::Float64};
  e.shapes = left ? solve_shapes(n, m) : [n, m](ShapeClass c) -> std::vector<InputSpec> {
    if (c == ShapeClass::Scalar) return {};  // left=False takes a matrix B
    std::vector<InputSpec> s = solve_shapes(n, m)(c);
    std::swap(s[1].shape[s[1].shape.size() - 1], s[1].shape[s[1].shape.size() - 2]);  // B: [.., m, n]
    return s;
  };
  e.condition = dominant_diagonal;
  e.call = [left](const std::vector<Tensor>& x) { return linalg::solve(x[0], x[1], left); };
  e.oracle = [left](const Inputs& in, const Tensor& out) {
    const Shape &sa = in.shapes[0], &sb = in.shapes[1];
    const int64_t k = sa.back();
    const bool vec = sb.size() == 1;
    const int64_t m = vec ? 1 : left ? sb.back() : sb[sb.size() - 2];
    std::vector<double> y;
    const Shape batch =
        for_each_batch(batch_of(sa, 2), batch_of(sb, vec ? 1 : 2), [&](int64_t ia, int64_t ib) {
          std::vector<double> a = slice(in.values[0], ia, k * k), b = slice(in.values[1], ib, k * m);
          if (!left) {  // X A = B  <=>  A^T X^T = B^T
            a = transposed(a, k, k);
            b = transposed(b, m, k);
          }
          std::vector<double> x = gauss_jordan(a, b, k, m);
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
  };
  e.ulps = 64;
  e.perf_shapes = {{{4096, 4, 4}}, {{4096, 4, 1}}};
  return e;
}

// ---- solve_triangular ----

Entry solve_triangular_entry(int64_t n, int64_t m, bool upper, bool left, bool unit) {
  Entry e;
  e.op = "linalg_solve_triangular";
  e.dtypes = {DType::Float32, DType::Float64};
  e.shapes = system_shapes(n, m, left);
  e.condition = dominant_diagonal;
  if (unit) {  // the diagonal is not read: keep the substitution's growth small
    e.lo = -0.5;
    e.hi = 0.5;
  }
  e.call = [upper, left, unit](const std::vector<Tensor>& x) {
    return linalg::solve_triangular(x[0], x[1], upper, left, unit);
  };
  e.oracle = [upper, left, unit](const Inputs& in, const Tensor& out) {
    const Shape &sa = in.shapes[0], &sb = in.shapes[1];
    const int64_t k = sa.back(), m = left ? sb.back() : sb[sb.size() - 2];
    std::vector<double> y;
    const Shape batch = for_each_batch(batch_of(sa, 2), batch_of(sb, 2), [&](int64_t ia, int64_t ib) {
      std::vector<double> a = slice(in.values[0], ia, k * k), b = slice(in.values[1], ib, k * m);
      bool up = upper;
      if (!left) {  // X A = B  <=>  A^T X^T = B^T, A^T triangular the other way
        a = transposed(a, k, k);
        b = transposed(b, m, k);
        up = !up;
      }
      std::vector<double> x = substitute(a, b, k, m, up, unit);
      if (!left) x = transposed(x, k, m);
      y.insert(y.end(), x.begin(), x.end());
    });
    Shape want = batch;
    want.push_back(left ? k : m);
    want.push_back(left ? m : k);
    expect_shape(out, want);
    return y;
  };
  e.ulps = 64;
  e.perf_shapes = {{{64, 64, 64}}, {{64, 64, 64}}};
  return e;
}

// ---- pinv and matrix_rank ----

std::function<std::vector<InputSpec>(ShapeClass)> matrix_shapes(int64_t m, int64_t n) {
  return [m, n](ShapeClass c) -> std::vector<InputSpec> {
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
}

// pinv of full-rank [*, m, n] (m >= n: (A^T A)^-1 A^T; else A^T (A A^T)^-1),
// as the symmetric pinv when `hermitian` (square, lower triangle read).
Entry pinv_entry(int64_t m, int64_t n, bool hermitian) {
  Entry e;
  e.op = "linalg_pinv";
  e.dtypes = {DType::Float32, DType::Float64};
  e.shapes = matrix_shapes(m, n);
  e.condition = dominant_diagonal;
  e.call = [hermitian](const std::vector<Tensor>& x) {
    return linalg::pinv(x[0], std::nullopt, std::nullopt, hermitian);
  };
  e.oracle = [hermitian](const Inputs& in, const Tensor& out) {
    const Shape& s = in.shapes[0];
    const int64_t rows = s[s.size() - 2], cols = s.back();
    Shape want(s.begin(), s.end() - 2);
    want.push_back(cols);
    want.push_back(rows);
    expect_shape(out, want);
    std::vector<double> y;
    for (size_t b = 0; rows * cols > 0 && b < in.values[0].size() / size_t(rows * cols); ++b) {
      std::vector<double> a = slice(in.values[0], b, rows * cols);
      if (hermitian)
        for (int64_t i = 0; i < rows; ++i)
          for (int64_t j = i + 1; j < cols; ++j) a[i * cols + j] = a[j * cols + i];
      const std::vector<double> at = transposed(a, rows, cols);  // cols x rows
      const bool tall = rows >= cols;
      const int64_t g = tall ? cols : rows;
      std::vector<double> gram(g * g, 0.0);  // A^T A or A A^T
      for (int64_t i = 0; i < g; ++i)
        for (int64_t j = 0; j < g; ++j)
          for (int64_t l = 0; l < (tall ? rows : cols); ++l)
            gram[i * g + j] += tall ? a[l * cols + i] * a[l * cols + j] : a[i * cols + l] * a[j * cols + l];
      std::vector<double> p;
      if (tall) {
        p = gauss_jordan(gram, at, g, rows);  // (A^T A)^-1 A^T: cols x rows
      } else {                                // A^T (A A^T)^-1 = ((A A^T)^-1 A)^T
        p = transposed(gauss_jordan(gram, a, g, cols), rows, cols);
      }
      y.insert(y.end(), p.begin(), p.end());
    }
    return y;
  };
  e.ulps = 256;
  e.perf_shapes = {{{64, 16, 16}}};
  return e;
}

// Makes row 0 of every matrix of input 0 equal to its last row (rank <= r - 1).
void repeat_row(size_t input, const Shape& shape, std::vector<double>& v) {
  if (input != 0 || shape.size() < 2) return;
  const int64_t r = shape[shape.size() - 2], c = shape.back();
  if (r < 2 || c == 0) return;
  for (size_t m = 0; m < v.size() / size_t(r * c); ++m)
    for (int64_t j = 0; j < c; ++j) v[m * r * c + j] = v[m * r * c + (r - 1) * c + j];
}

// The rank of the m x n row-major a: Gaussian elimination with full pivoting,
// pivots below 1e-9 of the largest entry counted as zero.
double rank_ref(std::vector<double> a, int64_t m, int64_t n) {
  double amax = 0;
  for (double x : a) amax = std::max(amax, std::fabs(x));
  int64_t rank = 0;
  for (int64_t r = 0; r < std::min(m, n); ++r) {
    int64_t pi = r, pj = r;
    for (int64_t i = r; i < m; ++i)
      for (int64_t j = r; j < n; ++j)
        if (std::fabs(a[i * n + j]) > std::fabs(a[pi * n + pj])) pi = i, pj = j;
    if (std::fabs(a[pi * n + pj]) <= 1e-9 * amax) break;
    for (int64_t j = 0; j < n; ++j) std::swap(a[r * n + j], a[pi * n + j]);
    for (int64_t i = 0; i < m; ++i) std::swap(a[i * n + r], a[i * n + pj]);
    for (int64_t i = r + 1; i < m; ++i) {
      const double f = a[i * n + r] / a[r * n + r];
      for (int64_t j = r; j < n; ++j) a[i * n + j] -= f * a[r * n + j];
    }
    ++rank;
  }
  return double(rank);
}

Entry matrix_rank_entry(int64_t m, int64_t n, bool deficient, bool hermitian) {
  Entry e;
  e.op = "linalg_matrix_rank";
  e.dtypes = {DType::Float32, DType::Float64};
  e.shapes = matrix_shapes(m, n);
  e.condition = deficient ? repeat_row : dominant_diagonal;
  e.call = [hermitian](const std::vector<Tensor>& x) {
    return linalg::matrix_rank(x[0], std::nullopt, std::nullopt, hermitian);
  };
  e.oracle = [hermitian](const Inputs& in, const Tensor& out) {
    const Shape& s = in.shapes[0];
    const int64_t rows = s[s.size() - 2], cols = s.back();
    expect_shape(out, Shape(s.begin(), s.end() - 2));
    std::vector<double> y;
    for (size_t b = 0; rows * cols > 0 && b < in.values[0].size() / size_t(rows * cols); ++b) {
      std::vector<double> a = slice(in.values[0], b, rows * cols);
      if (hermitian)
        for (int64_t i = 0; i < rows; ++i)
          for (int64_t j = i + 1; j < cols; ++j) a[i * cols + j] = a[j * cols + i];
      y.push_back(rank_ref(a, rows, cols));
    }
    return y;
  };
  e.perf_shapes = {{{64, 16, 16}}};
  return e;
}

// lstsq(A [.., m, n], B [.., m, r]).solution for full-rank tall A:
// (A^T A)^-1 A^T B.
Entry lstsq_entry(int64_t m, int64_t n, int64_t r, const char* driver) {
  Entry e;
  e.op = "linalg_lstsq";
  e.dtypes = {DType::Float32, DType::Float64};
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
  e.condition = dominant_diagonal;  // square A: well-conditioned
  e.call = [driver](const std::vector<Tensor>& x) {
    return linalg::lstsq(x[0], x[1], std::nullopt, std::string(driver)).solution;
  };
  e.oracle = [](const Inputs& in, const Tensor& out) {
    const Shape &sa = in.shapes[0], &sb = in.shapes[1];
    const int64_t rows = sa[sa.size() - 2], cols = sa.back(), rhs = sb.back();
    std::vector<double> y;
    const Shape batch = for_each_batch(batch_of(sa, 2), batch_of(sb, 2), [&](int64_t ia, int64_t ib) {
      const std::vector<double> a = slice(in.values[0], ia, rows * cols),
                                b = slice(in.values[1], ib, rows * rhs);
      std::vector<double> gram(cols * cols, 0.0), atb(cols * rhs, 0.0);
      for (int64_t l = 0; l < rows; ++l) {
        for (int64_t i = 0; i < cols; ++i)
          for (int64_t j = 0; j < cols; ++j) gram[i * cols + j] += a[l * cols + i] * a[l * cols + j];
        for (int64_t i = 0; i < cols; ++i)
          for (int64_t j = 0; j < rhs; ++j) atb[i * rhs + j] += a[l * cols + i] * b[l * rhs + j];
      }
      const std::vector<double> x = gauss_jordan(gram, atb, cols, rhs);
      y.insert(y.end(), x.begin(), x.end());
    });
    Shape want = batch;
    want.push_back(cols);
    want.push_back(rhs);
    expect_shape(out, want);
    return y;
  };
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
