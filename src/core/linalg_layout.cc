#include "core/linalg_layout.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "kiln/error.h"

namespace kiln::linalg::detail {

Shape batch_shape(const Tensor& A) {
  Shape s = A.sizes();
  s.resize(s.size() - 2);
  return s;
}

Shape with_matrix(const Shape& batch, int64_t rows, int64_t cols) {
  Shape s = batch;
  s.push_back(rows);
  s.push_back(cols);
  return s;
}

int64_t numel_of(const Shape& s) {
  int64_t n = 1;
  for (int64_t v : s) n *= v;
  return n;
}

namespace {

struct Bytes16 {
  uint64_t lo, hi;
};

// in: count row-major [m, n] matrices -> out: count [n, m] (column-major of each).
template <typename E>
void transpose_tiles(const uint8_t* in_bytes, uint8_t* out_bytes, int64_t count, int64_t m, int64_t n) {
  constexpr int64_t kTile = 32;
  for (int64_t b = 0; b < count; ++b) {
    const E* in = reinterpret_cast<const E*>(in_bytes) + b * m * n;
    E* out = reinterpret_cast<E*>(out_bytes) + b * m * n;
    for (int64_t i0 = 0; i0 < m; i0 += kTile)
      for (int64_t j0 = 0; j0 < n; j0 += kTile) {
        const int64_t i1 = std::min(m, i0 + kTile), j1 = std::min(n, j0 + kTile);
        for (int64_t j = j0; j < j1; ++j)
          for (int64_t i = i0; i < i1; ++i) out[j * m + i] = in[i * n + j];
      }
  }
}

}  // namespace

Tensor colmajor_copy(const Tensor& A, const Shape& batch) {
  const int64_t m = A.size(-2), n = A.size(-1);
  // LAPACK's integers are 32-bit: a matrix may hold any number of elements,
  // but each of its dims (a leading dimension) must fit.
  KILN_CHECK(m <= std::numeric_limits<int32_t>::max() && n <= std::numeric_limits<int32_t>::max(), ValueError,
             "[linalg] matrix dims " << m << " x " << n << " exceed LAPACK's 32-bit integers");
  const Shape b = batch.empty() && A.dim() > 2 ? batch_shape(A) : batch;
  Tensor src = A.expand(with_matrix(b, m, n));
  Tensor buf = empty(with_matrix(b, n, m), A.dtype(), A.device());
  if (A.is_contiguous() && src.sizes() == A.sizes()) {
    // The common case (a plain row-major batch): a tiled transpose per matrix,
    // several times faster than the general strided copy on tall matrices.
    const int64_t count = m * n == 0 ? 0 : A.numel() / (m * n);
    const auto* in = static_cast<const uint8_t*>(A.data_ptr());
    auto* out = static_cast<uint8_t*>(buf.data_ptr());
    switch (A.itemsize()) {
      case 4: transpose_tiles<uint32_t>(in, out, count, m, n); break;
      case 8: transpose_tiles<uint64_t>(in, out, count, m, n); break;
      case 16: transpose_tiles<Bytes16>(in, out, count, m, n); break;
      default: buf.copy_(src.transpose(-2, -1));
    }
    return buf;
  }
  buf.copy_(src.transpose(-2, -1));
  return buf;
}

Tensor colmajor_empty(const Shape& batch, int64_t m, int64_t n, DType dtype, Device device) {
  return empty(with_matrix(batch, n, m), dtype, device);
}

namespace {

// All exponent bits set: inf or NaN. OR-reduced without branches so the
// loop vectorizes; the caller's loops over matrices stop at the first hit.
template <typename U, typename F>
bool any_nonfinite_bits(const F* p, int64_t n, U exp_mask) {
  U acc = 0;
  for (int64_t i = 0; i < n; ++i) {
    U u;
    std::memcpy(&u, p + i, sizeof(U));
    acc |= U((~u & exp_mask) == 0);
  }
  return acc != 0;
}

template <typename T>
bool finite_one(const T& v) {
  if constexpr (!std::is_floating_point_v<T>)
    return std::isfinite(v.real()) && std::isfinite(v.imag());
  else
    return std::isfinite(v);
}

}  // namespace

bool any_nonfinite(const float* p, int64_t n) { return any_nonfinite_bits<uint32_t>(p, n, 0x7f800000u); }
bool any_nonfinite(const double* p, int64_t n) {
  return any_nonfinite_bits<uint64_t>(p, n, 0x7ff0000000000000ull);
}

template <typename T>
int64_t nonfinite_minor(const T* a, int64_t n, char uplo) {
  const bool lower = uplo == 'L';
  // Element (i, j) of the triangle belongs to the leading minors of order
  // max(i, j) + 1 and up. Complex: LAPACK reads only the real part of the
  // diagonal, so the diagonal is checked on its own.
  auto bad = [&](int64_t i, int64_t j) {
    const T& v = a[j * n + i];
    if constexpr (!std::is_floating_point_v<T>)
      return i == j ? !std::isfinite(v.real()) : !finite_one(v);
    else
      return !finite_one(v);
  };
  int64_t order = 0;
  for (int64_t j = 0; j < n && (order == 0 || j < order); ++j) {
    // Column j of the triangle: rows j..n-1 (lower) or 0..j (upper), contiguous.
    const int64_t lo = lower ? j : 0, hi = lower ? n : j + 1;
    if (!any_nonfinite(a + j * n + lo, hi - lo)) continue;
    for (int64_t i = lo; i < hi; ++i)
      if (bad(i, j)) {
        const int64_t o = std::max(i, j) + 1;
        if (order == 0 || o < order) order = o;
        break;  // rows below only give larger orders
      }
  }
  return order;
}
template int64_t nonfinite_minor(const float*, int64_t, char);
template int64_t nonfinite_minor(const double*, int64_t, char);
template int64_t nonfinite_minor(const std::complex<float>*, int64_t, char);
template int64_t nonfinite_minor(const std::complex<double>*, int64_t, char);

}  // namespace kiln::linalg::detail
