// CPU kernels of linalg.det / slogdet (ops/registry/linalg.h) from the LU
// factors (getrf): the product of U's diagonal times the sign of the row
// permutation. A matrix holding a NaN has det NaN and slogdet (NaN, NaN) (see
// kiln/linalg.h).
#include <cmath>
#include <complex>
#include <limits>
#include <vector>

#include "core/linalg_layout.h"
#include "cpu/lapack.h"
#include "cpu/ops/linalg.h"
#include "cpu/ops/linalg_batch.h"
#include "cpu/ops/linalg_common.h"
#include "ops/registry/all.h"

namespace kiln::cpu {
namespace {

using namespace kiln::linalg::detail;

// Runs getrf on every matrix of A and calls fn(b, lu, piv) (lu column-major).
template <typename T, typename F>
void for_each_lu(const Tensor& A, const char* op, F&& fn) {
  const int64_t n = A.size(-1), count = numel_of(batch_shape(A));
  Tensor buf = colmajor_copy(A);
  T* ap = buf.data<T>();
  for_each_matrix(count, n, [&](int64_t b) {
    std::vector<lapack::lint> piv(std::max<int64_t>(n, 1));
    T* lu = ap + b * n * n;
    if (any_nan(lu, n * n)) {  // NaN factors, no row exchanges: det NaN
      fill_nan(lu, n * n);
      for (int64_t i = 0; i < n; ++i) piv[i] = lapack::lint(i + 1);
    } else if (n > 0) {
      lapack::getrf<T>(n, n, lu, n, piv.data());
    }
    fn(b, lu, piv.data());
  });
}

// u / |u| for u != 0; for an infinite u (where that is inf / inf = NaN) the
// direction of its infinite parts, so slogdet's sign agrees with det's.
template <typename T, typename R>
T unit_of(T u, R mag) {
  if (!std::isinf(mag)) return u / mag;
  if constexpr (lapack::is_cplx<T>) {
    const R re = std::isinf(u.real()) ? std::copysign(R(1), u.real()) : std::copysign(R(0), u.real());
    const R im = std::isinf(u.imag()) ? std::copysign(R(1), u.imag()) : std::copysign(R(0), u.imag());
    return T(re, im) / std::abs(T(re, im));
  } else {
    return u > 0 ? T(1) : T(-1);
  }
}

void det_kernel(const Tensor& A, const Tensor& out) {
  const char* op = "linalg.det";
  const int64_t n = A.size(-1);
  dispatch<kLinalgSet>(A.dtype(), op, [&]<typename T>() {
    T* o = out.data<T>();
    for_each_lu<T>(A, op, [&](int64_t b, const T* lu, const lapack::lint* piv) {
      T d = T(1);
      for (int64_t i = 0; i < n; ++i) {
        d *= lu[i * n + i];
        if (piv[i] != i + 1) d = -d;
      }
      o[b] = d;
    });
  });
}

void slogdet_kernel(const Tensor& A, const Tensor& sign, const Tensor& logabs) {
  const char* op = "linalg.slogdet";
  const int64_t n = A.size(-1);
  dispatch<kLinalgSet>(A.dtype(), op, [&]<typename T>() {
    using R = lapack::real_t<T>;
    T* s = sign.data<T>();
    R* la = logabs.data<R>();
    for_each_lu<T>(A, op, [&](int64_t b, const T* lu, const lapack::lint* piv) {
      T sg = T(1);
      R acc = 0;
      bool zero = false;
      for (int64_t i = 0; i < n; ++i) {
        const T u = lu[i * n + i];
        const R mag = std::abs(u);
        if (mag == R(0)) {
          zero = true;
          break;
        }
        sg *= unit_of(u, mag);
        acc += std::log(mag);
        if (piv[i] != i + 1) sg = -sg;
      }
      s[b] = zero ? T(0) : sg;
      la[b] = zero ? -std::numeric_limits<R>::infinity() : acc;
    });
  });
}

}  // namespace

void register_linalg_det_kernels() {
  ops::linalg_det.set_kernel(DeviceKind::CPU, det_kernel);
  ops::linalg_slogdet.set_kernel(DeviceKind::CPU, slogdet_kernel);
}

}  // namespace kiln::cpu
