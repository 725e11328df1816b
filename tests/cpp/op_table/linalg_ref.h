// The scaffolding the linalg op table entries (op_table/linalg_*.cc) share:
// their input shapes, the conditioning of their matrices, batch iteration and
// the float64 matrix helpers their oracles are written with. The helpers are
// templates over the element type, double or complex double (cdouble), so one
// oracle serves the real and the complex walks.
#pragma once

#include <cmath>
#include <complex>
#include <type_traits>
#include <utility>

#include "op_table/table.h"

namespace op_table::linalg_ref {

// The dtypes the linalg ops take.
inline const std::vector<DType> kLinalgDtypes = {DType::Float32, DType::Float64, DType::Complex64,
                                                 DType::Complex128};

// ---- input shapes ------------------------------------------------------------

// One matrix input [.., m, n] per shape class: [0, m, n], [1, 1], [m, n], a
// transposed [3, m, n] and [3, m, n] expanded from [1, m, n].
inline std::function<std::vector<InputSpec>(ShapeClass)> matrix_shapes(int64_t m, int64_t n) {
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
inline std::function<std::vector<InputSpec>(ShapeClass)> square_shapes(int64_t n) {
  return matrix_shapes(n, n);
}

// A linear system A X = B (or X A = B when !left): A [.., n, n], B [.., n, m].
inline std::function<std::vector<InputSpec>(ShapeClass)> system_shapes(int64_t n, int64_t m, bool left) {
  return [n, m, left](ShapeClass c) -> std::vector<InputSpec> {
    std::vector<InputSpec> s;
    switch (c) {
      case ShapeClass::Empty:
        s = {{{0, n, n}}, {{0, n, m}}};
        break;
      case ShapeClass::Scalar:
        s = {{{1, 1}}, {{1, 1}}};
        break;
      case ShapeClass::Odd:
        s = {{{n, n}}, {{n, m}}};
        break;
      case ShapeClass::NonContiguous:
        s = {{{2, n, n}, InputSpec::Transposed}, {{2, n, m}, InputSpec::Strided}};
        break;
      case ShapeClass::Broadcast:
        s = {{{3, n, n}, InputSpec::Expanded, {1, n, n}}, {{n, m}}};
        break;
    }
    if (!left) std::swap(s[1].shape[s[1].shape.size() - 1], s[1].shape[s[1].shape.size() - 2]);
    return s;
  };
}

// ---- conditioning ------------------------------------------------------------

// Adds 4n + 4 to entry (i, i) (or (i, n-1-i) when `anti`) of every n x n
// matrix of input 0 (entries are in [-4, 4], so each row's dominant entry
// outweighs the rest of the row by >= 4); complex entries (parts in [-4, 4],
// moduli up to 4 sqrt 2) get 6n + 6 on the real part.
template <typename T>
void add_dominant(size_t input, const Shape& shape, std::vector<T>& v, bool anti) {
  if (input != 0 || shape.size() < 2) return;
  const int64_t n = shape.back();
  if (n == 0 || shape[shape.size() - 2] != n) return;
  const double add = std::is_same_v<T, double> ? 4.0 * double(n) + 4.0 : 6.0 * double(n) + 6.0;
  for (size_t m = 0; m < v.size() / size_t(n * n); ++m)
    for (int64_t i = 0; i < n; ++i) v[m * n * n + i * n + (anti ? n - 1 - i : i)] += add;
}
// Sets e's conditions (real and complex walks) to add_dominant.
inline void make_dominant(Entry& e, bool anti = false) {
  e.condition = [anti](size_t i, const Shape& s, std::vector<double>& v) { add_dominant(i, s, v, anti); };
  e.complex_condition = [anti](size_t i, const Shape& s, std::vector<cdouble>& v) {
    add_dominant(i, s, v, anti);
  };
}

// ---- oracles over double and complex double ------------------------------------

inline double conj(double x) { return x; }
inline cdouble conj(cdouble x) { return std::conj(x); }
inline double re(double x) { return x; }
inline double re(cdouble x) { return x.real(); }
// The magnitude LAPACK's pivot searches compare (i?amax): |x|, and
// |re| + |im| for a complex x.
inline double pivot_abs(double x) { return std::fabs(x); }
inline double pivot_abs(cdouble x) { return std::fabs(x.real()) + std::fabs(x.imag()); }

// Sets e's oracle and complex oracle from one generic f(values, in, out)
// (values: in.values or in.cvalues); a real result f gives from complex
// values (eigenvalues, ranks, log|det|) is compared as complex with imaginary
// parts 0.
template <typename F>
void set_oracles(Entry& e, F f) {
  e.oracle = [f](const Inputs& in, const Tensor& out) { return f(in.values, in, out); };
  e.complex_oracle = [f](const Inputs& in, const Tensor& out) {
    auto y = f(in.cvalues, in, out);
    return std::vector<cdouble>(y.begin(), y.end());
  };
}

// Matrix b (row-major, `size` elements each) of x.
template <typename T>
std::vector<T> slice(const std::vector<T>& x, size_t b, size_t size) {
  return std::vector<T>(x.begin() + b * size, x.begin() + (b + 1) * size);
}

// The rows x cols row-major x transposed (conjugated when `adjoint`).
template <typename T>
std::vector<T> transposed(const std::vector<T>& x, int64_t rows, int64_t cols, bool adjoint = false) {
  std::vector<T> t(x.size());
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) t[j * rows + i] = adjoint ? conj(x[i * cols + j]) : x[i * cols + j];
  return t;
}

// The Hermitian (real: symmetric) matrix whose `upper` (else lower) triangle
// is a's; the diagonal's imaginary part is not read (as LAPACK).
template <typename T>
std::vector<T> hermitian(const std::vector<T>& a, int64_t n, bool upper) {
  std::vector<T> s(n * n);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j)
      s[i * n + j] = i == j                    ? T(re(a[i * n + i]))
                     : (upper ? i < j : i > j) ? a[i * n + j]
                                               : conj(a[j * n + i]);
  return s;
}

// The batch dims of a shape with `core` trailing matrix/vector dims.
inline Shape batch_of(const Shape& s, size_t core) { return Shape(s.begin(), s.end() - core); }

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
template <typename T>
std::vector<T> gauss_jordan(std::vector<T> a, std::vector<T> b, int64_t n, int64_t m) {
  for (int64_t c = 0; c < n; ++c) {
    int64_t p = c;
    for (int64_t r = c + 1; r < n; ++r)
      if (std::abs(a[r * n + c]) > std::abs(a[p * n + c])) p = r;
    for (int64_t j = 0; j < n; ++j) std::swap(a[c * n + j], a[p * n + j]);
    for (int64_t j = 0; j < m; ++j) std::swap(b[c * m + j], b[p * m + j]);
    const T d = a[c * n + c];
    for (int64_t j = 0; j < n; ++j) a[c * n + j] /= d;
    for (int64_t j = 0; j < m; ++j) b[c * m + j] /= d;
    for (int64_t r = 0; r < n; ++r) {
      if (r == c) continue;
      const T f = a[r * n + c];
      for (int64_t j = 0; j < n; ++j) a[r * n + j] -= f * a[c * n + j];
      for (int64_t j = 0; j < m; ++j) b[r * m + j] -= f * b[c * m + j];
    }
  }
  return b;
}

// The Gram matrix of the shorter side of the rows x cols row-major a:
// A^H A (cols x cols) when rows >= cols, else A A^H (rows x rows).
template <typename T>
std::vector<T> gram(const T* a, int64_t rows, int64_t cols) {
  const bool tall = rows >= cols;
  const int64_t g = tall ? cols : rows;
  std::vector<T> s(g * g, T(0));
  for (int64_t i = 0; i < g; ++i)
    for (int64_t j = 0; j < g; ++j)
      for (int64_t l = 0; l < (tall ? rows : cols); ++l)
        s[i * g + j] +=
            tall ? conj(a[l * cols + i]) * a[l * cols + j] : a[i * cols + l] * conj(a[j * cols + l]);
  return s;
}

}  // namespace op_table::linalg_ref
