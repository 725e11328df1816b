// The layout of kiln.linalg's LAPACK working buffers, shared by the
// front-ends (src/linalg) and the CPU kernels (cpu/ops/linalg_*.cc): the
// dtypes, batch shapes, column-major copies, and the non-finite scans that the
// front-ends' input checks and the kernels both run.
#pragma once

#include <complex>
#include <cstdint>

#include "kiln/dtype.h"
#include "kiln/tensor.h"

namespace kiln::linalg::detail {

inline constexpr DTypeSet kLinalgSet =
    bit(DType::Float32) | bit(DType::Float64) | bit(DType::Complex64) | bit(DType::Complex128);

// A's batch dims (all but the last two).
Shape batch_shape(const Tensor& A);

// `batch` + {rows, cols}.
Shape with_matrix(const Shape& batch, int64_t rows, int64_t cols);
int64_t numel_of(const Shape& s);

// A fresh contiguous tensor of shape batch + {n, m} holding A^T row-major, i.e.
// every matrix of A (batch + {m, n}) column-major with leading dim m. A is
// broadcast to `batch` first (empty `batch`: A's own).
Tensor colmajor_copy(const Tensor& A, const Shape& batch = {});
// The m x n view of a column-major buffer from colmajor_copy (or laid out so).
inline Tensor colmajor_view(const Tensor& buf) { return buf.transpose(-2, -1); }
// An uninitialized column-major batch of m x n matrices: the returned buffer
// has shape batch + {n, m}; colmajor_view(buf) is the matrix view.
Tensor colmajor_empty(const Shape& batch, int64_t m, int64_t n, DType dtype, Device device);

// ---- non-finite input ----
// The iterative routines (SVD, eigensolvers, least squares) must not see a
// NaN or inf: LAPACKE refuses NaN with a negative info, and an inf makes
// LAPACK's scaling call xerbla (which prints to stdout) or loop forever.

// True when any of the n values at p is NaN or +-inf. Branch-free (vectorizes).
bool any_nonfinite(const float* p, int64_t n);
bool any_nonfinite(const double* p, int64_t n);
template <typename T>
bool any_nonfinite(const std::complex<T>* p, int64_t n) {
  return any_nonfinite(reinterpret_cast<const T*>(p), 2 * n);
}

// The order (1-based) of the smallest leading minor of the n x n column-major
// matrix `a` whose `uplo` triangle ('L' or 'U', the part LAPACK's Hermitian
// routines read; complex: not the imaginary part of the diagonal) holds a NaN
// or inf; 0 when that triangle is finite.
template <typename T>
int64_t nonfinite_minor(const T* a, int64_t n, char uplo);

}  // namespace kiln::linalg::detail
