// CPU kernels of linalg.qr, householder_product and geqrf (ops/registry/linalg.h)
// through LAPACK geqrf + orgqr/ungqr: both are blocked Householder with
// compact-WY (GEMM) trailing updates in OpenBLAS, which is the right tool here
// -- a second implementation of the same algorithm would at best tie it. A
// matrix holding a NaN gets all-NaN Q and R (R's zeros below the diagonal
// kept; see kiln/linalg.h).
#include <cstring>
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

void qr_kernel(const Tensor& A, const Tensor& R, const Tensor& qbuf) {
  const char* op = "linalg.qr";
  const Shape batch = batch_shape(A);
  const int64_t m = A.size(-2), n = A.size(-1), k = std::min(m, n), count = numel_of(batch);
  const int64_t rrows = R.size(-2), qcols = qbuf.defined() ? qbuf.size(-2) : 0;
  Tensor buf = colmajor_copy(A);
  dispatch<kLinalgSet>(A.dtype(), op, [&]<typename T>() {
    T* ap = buf.data<T>();
    T* rp = R.data<T>();
    T* qp = qbuf.defined() ? qbuf.data<T>() : nullptr;
    for_each_matrix(count, std::max(m, n), [&](int64_t b) {
      T* a = ap + b * m * n;
      std::vector<T> tau(std::max<int64_t>(k, 1));
      const bool finite = !any_nan(a, m * n);
      if (!finite)
        fill_nan(a, m * n);
      else if (k > 0)
        lapack::geqrf<T>(m, n, a, m, tau.data());
      T* r = rp + b * rrows * n;  // row-major
      for (int64_t j = 0; j < n; ++j)
        for (int64_t i = 0; i <= std::min(j, rrows - 1); ++i) r[i * n + j] = a[j * m + i];
      if (!qp) return;
      T* q = qp + b * m * qcols;  // column-major, ld m
      if (!finite) return fill_nan(q, m * qcols);
      const int64_t copy_cols = std::min(n, qcols);
      if (m > 0 && copy_cols > 0) std::memcpy(q, a, sizeof(T) * m * copy_cols);
      if (m > 0 && qcols > 0) lapack::orgqr<T>(m, qcols, k, q, m, tau.data());
    });
  });
}

Tensor householder_product_kernel(const Tensor& A, const Tensor& tau, const Shape& batch) {
  const char* op = "linalg.householder_product";
  const int64_t m = A.size(-2), n = A.size(-1), k = tau.size(-1);
  Tensor buf = colmajor_copy(A, batch);
  Shape tfull = batch;
  tfull.push_back(k);
  const Tensor t = tau.expand(tfull).contiguous();
  const int64_t count = numel_of(batch);
  dispatch<kLinalgSet>(A.dtype(), op, [&]<typename T>() {
    T* ap = buf.data<T>();
    const T* tp = t.data<T>();
    for_each_matrix(count, m, [&](int64_t b) {
      T* a = ap + b * m * n;
      // orgqr reads tau and the vectors below the diagonal of A's first k columns.
      bool finite = !any_nan(tp + b * k, k);
      for (int64_t j = 0; j < k && finite; ++j) finite = !any_nan(a + j * m + j + 1, m - j - 1);
      if (!finite) return fill_nan(a, m * n);
      if (m > 0 && n > 0) lapack::orgqr<T>(m, n, k, a, m, tp + b * k);
    });
  });
  return colmajor_view(buf);
}

Tensor geqrf_kernel(const Tensor& A, const Tensor& tau) {
  const Shape batch = batch_shape(A);
  const int64_t m = A.size(-2), n = A.size(-1), k = std::min(m, n), count = numel_of(batch);
  Tensor buf = colmajor_copy(A);
  dispatch<kLinalgSet>(A.dtype(), "geqrf", [&]<typename T>() {
    T* ap = buf.data<T>();
    T* tp = tau.data<T>();
    for_each_matrix(count, std::max(m, n), [&](int64_t b) {
      T* a = ap + b * m * n;
      if (any_nan(a, m * n)) {
        fill_nan(a, m * n);
        return fill_nan(tp + b * k, k);
      }
      if (k > 0) lapack::geqrf<T>(m, n, a, m, tp + b * k);
    });
  });
  return colmajor_view(buf);
}

}  // namespace

void register_linalg_qr_kernels() {
  ops::linalg_geqrf.set_kernel(DeviceKind::CPU, geqrf_kernel);
  ops::linalg_qr.set_kernel(DeviceKind::CPU, qr_kernel);
  ops::linalg_householder_product.set_kernel(DeviceKind::CPU, householder_product_kernel);
}

}  // namespace kiln::cpu
