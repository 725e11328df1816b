// What the CPU linalg kernels (cpu/ops/linalg_*.cc) do to their LAPACK
// buffers around the call: NaN scans and fills, and the real diagonal of
// Hermitian input.
#pragma once

#include <algorithm>
#include <complex>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace kiln::cpu {

// ---- NaN input ----

// n NaNs at p (complex: NaN + NaN i): the LU/QR family's result for a matrix
// holding a NaN (see linalg.h).
template <typename T>
void fill_nan(T* p, int64_t n) {
  if constexpr (std::is_floating_point_v<T>) {
    std::fill(p, p + n, std::numeric_limits<T>::quiet_NaN());
  } else {
    using R = typename T::value_type;
    std::fill(p, p + n, T(std::numeric_limits<R>::quiet_NaN(), std::numeric_limits<R>::quiet_NaN()));
  }
}

// True when any of the n values at p is NaN (complex: either part).
bool any_nan(const float* p, int64_t n);
bool any_nan(const double* p, int64_t n);
template <typename T>
bool any_nan(const std::complex<T>* p, int64_t n) {
  return any_nan(reinterpret_cast<const T*>(p), 2 * n);
}

// Zeroes the imaginary part of the diagonal of a complex n x n matrix (a
// no-op for real T). LAPACK's Hermitian routines ignore it, but LAPACKE's
// NaN scan does not: a NaN there would be refused although never read.
template <typename T>
void real_diagonal(T* a, int64_t n) {
  if constexpr (!std::is_floating_point_v<T>)
    for (int64_t j = 0; j < n; ++j) a[j * n + j] = T(a[j * n + j].real(), 0);
}

}  // namespace kiln::cpu
