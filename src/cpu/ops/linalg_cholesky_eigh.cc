// CPU kernels of linalg.cholesky (LAPACK potrf) and eigh / eigvalsh (syevd /
// heevd, divide and conquer) (ops/registry/linalg.h). Only the named triangle
// of A is read. cholesky reports a matrix whose triangle holds a NaN or inf as
// not positive-definite, with info = the order of the smallest leading minor
// holding one (potrf is not called on it).
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

Tensor cholesky_kernel(const Tensor& A, bool upper, const Tensor& info, const Tensor& nonfinite) {
  const Shape batch = batch_shape(A);
  const int64_t n = A.size(-1), count = numel_of(batch);
  const char uplo = upper ? 'U' : 'L';
  Tensor buf = colmajor_copy(A);
  dispatch<kLinalgSet>(A.dtype(), "linalg.cholesky", [&]<typename T>() {
    T* ap = buf.data<T>();
    int32_t* ip = info.data<int32_t>();
    uint8_t* nf = nonfinite.data<uint8_t>();
    for_each_matrix(count, n, [&](int64_t b) {
      T* a = ap + b * n * n;
      if (const int64_t k = nonfinite_minor(a, n, uplo); k > 0) {
        ip[b] = int32_t(k);
        nf[b] = 1;
      } else if (n > 0) {
        real_diagonal(a, n);
        ip[b] = lapack::potrf<T>(uplo, n, a, n);
      }
      for (int64_t j = 0; j < n; ++j)  // zero the other triangle
        for (int64_t i = 0; i < n; ++i)
          if (upper ? i > j : i < j) a[j * n + i] = T(0);
    });
  });
  return colmajor_view(buf);
}

template <bool vectors>
void eigh_kernel(const Tensor& buf, bool upper, const Tensor& w, const Tensor& info) {
  const int64_t n = buf.size(-1), count = info.numel();
  const char uplo = upper ? 'U' : 'L';
  dispatch<kLinalgSet>(buf.dtype(), vectors ? "linalg.eigh" : "linalg.eigvalsh", [&]<typename T>() {
    using R = lapack::real_t<T>;
    T* ap = buf.data<T>();
    R* wp = w.data<R>();
    int32_t* ip = info.data<int32_t>();
    for_each_matrix(count, n, [&](int64_t b) {
      T* a = ap + b * n * n;
      real_diagonal(a, n);
      if (n > 0) ip[b] = lapack::syevd<T>(vectors ? 'V' : 'N', uplo, n, a, n, wp + b * n);
    });
  });
}

}  // namespace

void register_linalg_cholesky_eigh_kernels() {
  ops::linalg_cholesky.set_kernel(DeviceKind::CPU, cholesky_kernel);
  ops::linalg_eigh.set_kernel(DeviceKind::CPU, eigh_kernel<true>);
  ops::linalg_eigvalsh.set_kernel(DeviceKind::CPU, eigh_kernel<false>);
}

}  // namespace kiln::cpu
