#include "linalg/common.h"

#include "core/autograd_record.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <sstream>

namespace kiln::linalg::detail {

void check_dtype(const Tensor& A, const char* op) {
  // The linalg front-ends copy their inputs into LAPACK's layout; one that
  // does not record a derivative must not drop a gradient.
  if (autograd::grad_recording() && A.requires_grad()) autograd::detail::throw_no_derivative(op);
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

namespace {

std::string describe(const Tensor& A) { return std::string(name(A.dtype())) + " " + A.shape_str(); }

std::string matrix_at(int64_t b, bool batched) {
  return batched ? "the matrix in batch element " + std::to_string(b) : std::string("the matrix");
}

}  // namespace

void check_infos(const Tensor& info, const char* op, InfoKind kind, const Tensor& A,
                 const uint8_t* nonfinite) {
  const Tensor ih = info.cpu();  // LAPACK's infos are read on the host
  const int32_t* ip = ih.data<int32_t>();
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
        case InfoKind::LDL:
          os << what << " is singular: D[" << i - 1 << ", " << i - 1
             << "] of its LDL factorization is exactly zero (info " << i << "; input " << in << ")";
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
