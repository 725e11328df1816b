#include "linalg/common.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <sstream>

#include "linalg/lapack.h"

namespace kiln::linalg::detail {

void check_dtype(const Tensor& A, const char* op) {
  if ((kLinalgSet & bit(A.dtype())) == 0)
    throw TypeError(std::string("[") + op +
                    "] expected a float32, float64, complex64 or complex128 tensor, got " + name(A.dtype()) +
                    " of shape " + A.shape_str());
}

void check_matrix(const Tensor& A, const char* op, bool square) {
  KILN_CHECK(A.dim() >= 2, ValueError,
             "[" << op << "] expected a tensor with 2 or more dimensions, got shape " << A.shape_str());
  KILN_CHECK(!square || A.size(-1) == A.size(-2), ValueError,
             "[" << op << "] A must be batches of square matrices, but they are " << A.size(-2) << " by "
                 << A.size(-1) << " matrices (shape " << A.shape_str() << ")");
}

void check_same_dtype(const Tensor& a, const Tensor& b, const char* op) {
  KILN_CHECK(a.dtype() == b.dtype(), TypeError,
             "[" << op << "] expected both inputs to have the same dtype, got " << name(a.dtype()) << " "
                 << a.shape_str() << " and " << name(b.dtype()) << " " << b.shape_str());
}

Shape batch_shape(const Tensor& A) {
  Shape s = A.sizes();
  s.resize(s.size() - 2);
  return s;
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  const size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t x = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const int64_t y = i < n - b.size() ? 1 : b[i - (n - b.size())];
    KILN_CHECK(x == y || x == 1 || y == 1, ValueError,
               "[" << op << "] batch dims " << shape_to_string(a) << " and " << shape_to_string(b)
                   << " do not broadcast");
    out[i] = x == 1 ? y : x;
  }
  return out;
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

std::string describe(const Tensor& A) { return std::string(name(A.dtype())) + " " + A.shape_str(); }

std::string matrix_at(int64_t b, bool batched) {
  return batched ? "the matrix in batch element " + std::to_string(b) : std::string("the matrix");
}

}  // namespace

void check_infos(const Tensor& info, const char* op, InfoKind kind, const Tensor& A,
                 const uint8_t* nonfinite) {
  const int32_t* ip = info.data<int32_t>();
  const int64_t count = info.numel();
  int32_t any = 0;  // a branch-free scan first (vectorizes): almost always all zero
  for (int64_t b = 0; b < count; ++b) any |= ip[b];
  if (any == 0) return;
  const bool batched = info.dim() > 0;
  for (int64_t b = 0; b < count; ++b) {
    const int32_t i = ip[b];
    if (i == 0) continue;
    std::ostringstream os;
    os << "[" << op << "] ";
    const std::string what = matrix_at(b, batched), in = describe(A);
    if (i == -1010) {
      os << "out of memory: LAPACK could not allocate its workspace for " << what << " (input " << in << ")";
    } else if (i < 0) {
      os << "internal error: LAPACK rejected argument " << -i << " of the call for " << what << " (input "
         << in << "); this is a bug in kiln, please report it";
    } else {
      switch (kind) {
        case InfoKind::LU:
        case InfoKind::LUFactor:
          os << what << " is singular: U[" << i - 1 << ", " << i - 1
             << "] of its LU factorization is zero (info " << i << "; input " << in << ")";
          if (kind == InfoKind::LUFactor)
            os << "; lu_solve would divide by it, linalg.lu_factor_ex returns the factors without raising";
          break;
        case InfoKind::Cholesky:
          os << what << " is not positive-definite: its leading minor of order " << i
             << (nonfinite && nonfinite[b] ? " contains non-finite values (NaN or inf)" : " is not")
             << " (info " << i << "; input " << in << ")";
          break;
        case InfoKind::Converge:
          os << "the algorithm did not converge on " << what << " (LAPACK info " << i << "; input " << in
             << ")";
          break;
        case InfoKind::FullRank:
          os << what << " does not have full rank: R[" << i - 1 << ", " << i - 1
             << "] of its QR factorization is zero (info " << i << "; input " << in
             << "); driver 'gels' needs full rank, 'gelsy', 'gelsd' and 'gelss' do not";
          break;
      }
    }
    throw Error(os.str());
  }
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

// Exponent bits all set and a nonzero mantissa: NaN. Branch-free as above.
template <typename U, typename F>
bool any_nan_bits(const F* p, int64_t n, U abs_mask, U inf_bits) {
  U acc = 0;
  for (int64_t i = 0; i < n; ++i) {
    U u;
    std::memcpy(&u, p + i, sizeof(U));
    acc |= U((u & abs_mask) > inf_bits);
  }
  return acc != 0;
}

template <typename T>
bool finite_one(const T& v) {
  if constexpr (lapack::is_cplx<T>)
    return std::isfinite(v.real()) && std::isfinite(v.imag());
  else
    return std::isfinite(v);
}

}  // namespace

bool any_nonfinite(const float* p, int64_t n) { return any_nonfinite_bits<uint32_t>(p, n, 0x7f800000u); }
bool any_nonfinite(const double* p, int64_t n) {
  return any_nonfinite_bits<uint64_t>(p, n, 0x7ff0000000000000ull);
}

bool any_nan(const float* p, int64_t n) { return any_nan_bits<uint32_t>(p, n, 0x7fffffffu, 0x7f800000u); }
bool any_nan(const double* p, int64_t n) {
  return any_nan_bits<uint64_t>(p, n, 0x7fffffffffffffffull, 0x7ff0000000000000ull);
}

template <typename T>
int64_t nonfinite_minor(const T* a, int64_t n, char uplo) {
  const bool lower = uplo == 'L';
  // Element (i, j) of the triangle belongs to the leading minors of order
  // max(i, j) + 1 and up. Complex: LAPACK reads only the real part of the
  // diagonal, so the diagonal is checked on its own.
  auto bad = [&](int64_t i, int64_t j) {
    const T& v = a[j * n + i];
    if constexpr (lapack::is_cplx<T>)
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

namespace {

[[noreturn]] void throw_nonfinite(const char* op, const char* what, int64_t b, bool batched,
                                  const Tensor& shown) {
  std::ostringstream os;
  os << "[" << op << "] " << what << " contains non-finite values (NaN or inf)";
  if (batched) os << " in batch element " << b;
  os << " (" << describe(shown) << ")";
  throw Error(os.str());
}

}  // namespace

void check_finite(const Tensor& buf, int64_t count, const char* op, const char* what, const Tensor& shown,
                  bool batched) {
  if (count == 0) return;
  const int64_t per = buf.numel() / count;
  dispatch<kLinalgSet>(buf.dtype(), op, [&]<typename T>() {
    const T* p = buf.data<T>();
    for (int64_t b = 0; b < count; ++b)
      if (any_nonfinite(p + b * per, per)) throw_nonfinite(op, what, b, batched, shown);
  });
}

void check_finite_hermitian(const Tensor& buf, int64_t n, char uplo, const char* op, const Tensor& shown) {
  if (n == 0) return;
  const int64_t count = buf.numel() / (n * n);
  dispatch<kLinalgSet>(buf.dtype(), op, [&]<typename T>() {
    const T* p = buf.data<T>();
    for (int64_t b = 0; b < count; ++b)
      if (nonfinite_minor(p + b * n * n, n, uplo) != 0)
        throw_nonfinite(op, "the input", b, shown.dim() > 2, shown);
  });
}

double eps_of(DType d) {
  return (d == DType::Float32 || d == DType::Complex64) ? double(std::numeric_limits<float>::epsilon())
                                                        : std::numeric_limits<double>::epsilon();
}

}  // namespace kiln::linalg::detail
