// CPU kernels of linalg.eigvals (LAPACK geev, no eigenvectors) and
// linalg.ldl_factor (Bunch-Kaufman sytrf / hetrf) (ops/registry/linalg.h).
#include <complex>
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

void eigvals_kernel(const Tensor& A, const Tensor& w, const Tensor& info) {
  const Shape batch = batch_shape(A);
  const int64_t n = A.size(-1), count = numel_of(batch);
  Tensor buf = colmajor_copy(A);
  dispatch<kLinalgSet>(A.dtype(), "linalg.eigvals", [&]<typename T>() {
    using W = std::complex<lapack::real_t<T>>;
    T* ap = buf.data<T>();
    W* wp = w.data<W>();
    int32_t* ip = info.data<int32_t>();
    for_each_matrix(count, n, [&](int64_t b) {
      T* a = ap + b * n * n;
      W* wb = wp + b * n;
      if (any_nonfinite(a, n * n)) return fill_nan(wb, n);  // geev would refuse or loop
      if (n > 0) ip[b] = int32_t(lapack::geev_values<T>(n, a, n, wb));
    });
  });
}

Tensor ldl_factor_kernel(const Tensor& A, bool hermitian, const Tensor& pivots, const Tensor& info) {
  const Shape batch = batch_shape(A);
  const int64_t n = A.size(-1), count = numel_of(batch);
  Tensor buf = colmajor_copy(A);
  dispatch<kLinalgSet>(A.dtype(), "linalg.ldl_factor", [&]<typename T>() {
    T* ap = buf.data<T>();
    int32_t* pp = pivots.data<int32_t>();
    int32_t* ip = info.data<int32_t>();
    for_each_matrix(count, n, [&](int64_t b) {
      T* a = ap + b * n * n;
      if (n == 0) return;
      std::vector<lapack::lint> ipiv(static_cast<size_t>(n));
      ip[b] = int32_t(lapack::sytrf<T>(hermitian, 'L', n, a, n, ipiv.data()));
      for (int64_t i = 0; i < n; ++i) pp[b * n + i] = int32_t(ipiv[size_t(i)]);
      for (int64_t j = 1; j < n; ++j)  // zero the strict upper triangle (not read by sytrf)
        for (int64_t i = 0; i < j; ++i) a[j * n + i] = T(0);
    });
  });
  return colmajor_view(buf);
}

}  // namespace

void register_linalg_eigvals_ldl_kernels() {
  ops::linalg_eigvals.set_kernel(DeviceKind::CPU, eigvals_kernel);
  ops::linalg_ldl_factor.set_kernel(DeviceKind::CPU, ldl_factor_kernel);
}

}  // namespace kiln::cpu
