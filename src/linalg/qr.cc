// linalg.qr and householder_product through LAPACK geqrf + orgqr/ungqr: both
// are blocked Householder with compact-WY (GEMM) trailing updates in
// OpenBLAS, which is the right tool here -- a second implementation of the
// same algorithm would at best tie it. A matrix holding a NaN gets all-NaN Q
// and R (R's zeros below the diagonal kept; see linalg.h).
#include <cstring>

#include "kiln/linalg.h"
#include "linalg/common.h"
#include "linalg/lapack.h"

namespace kiln::linalg {
using namespace detail;

QR qr(const Tensor& A, const std::string& mode) {
  const char* op = "linalg.qr";
  check_dtype(A, op);
  check_matrix(A, op, false);
  KILN_CHECK(mode == "reduced" || mode == "complete" || mode == "r", ValueError,
             "[" << op << "] qr received unrecognized mode '" << mode
                 << "' but expected one of 'reduced' (default), 'r', or 'complete'");
  const Shape batch = batch_shape(A);
  const int64_t m = A.size(-2), n = A.size(-1), k = std::min(m, n), count = numel_of(batch);
  const bool complete = mode == "complete";
  const int64_t rrows = complete ? m : k, qcols = complete ? m : k;
  Tensor buf = colmajor_copy(A);
  Tensor R = zeros(with_matrix(batch, rrows, n), A.dtype());
  // Zeroed: orgqr/ungqr must not meet stale NaNs in the columns past k, which
  // OpenBLAS's cungqr was seen to carry into Q (complete mode, m > n).
  Tensor qbuf = mode == "r" ? empty({0}, A.dtype()) : zeros(with_matrix(batch, qcols, m), A.dtype());
  dispatch<kLinalgSet>(A.dtype(), op, [&]<typename T>() {
    T* ap = buf.data<T>();
    T* rp = R.data<T>();
    T* qp = mode == "r" ? nullptr : qbuf.data<T>();
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
  if (mode == "r") return {qbuf, R};
  return {colmajor_view(qbuf), R};
}

Tensor householder_product(const Tensor& A, const Tensor& tau) {
  const char* op = "linalg.householder_product";
  check_dtype(A, op);
  check_matrix(A, op, false);
  check_same_dtype(A, tau, op);
  const int64_t m = A.size(-2), n = A.size(-1);
  KILN_CHECK(m >= n, ValueError,
             "[" << op << "] input.shape[-2] must be greater than or equal to input.shape[-1], got "
                 << A.shape_str());
  KILN_CHECK(tau.dim() >= 1 && tau.size(-1) <= n, ValueError,
             "[" << op << "] input.shape[-1] must be greater than or equal to tau.shape[-1], got A "
                 << A.shape_str() << " and tau " << tau.shape_str());
  const int64_t k = tau.size(-1);
  Shape tb = tau.sizes();
  tb.pop_back();
  const Shape batch = broadcast_shapes(batch_shape(A), tb, op);
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

}  // namespace kiln::linalg
