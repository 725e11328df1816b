// linalg.qr and householder_product front-ends: validate, allocate R and Q's
// column-major buffer, call the ops (kernels: cpu/ops/linalg_qr.cc).
#include "kiln/linalg.h"
#include "linalg/common.h"
#include "linalg/grad.h"
#include "ops/registry/all.h"

namespace kiln::linalg {
using namespace detail;

QR qr(const Tensor& A, const std::string& mode) {
  const char* op = "linalg.qr";
  autograd::Record rec(op, {&A});
  grad::no_complex(rec, A, op);
  check_dtype(A, op);
  check_matrix(A, op, false);
  KILN_CHECK(mode == "reduced" || mode == "complete" || mode == "r", ValueError,
             "[" << op << "] qr received unrecognized mode '" << mode
                 << "' but expected one of 'reduced' (default), 'r', or 'complete'");
  const Shape batch = batch_shape(A);
  const int64_t m = A.size(-2), n = A.size(-1), k = std::min(m, n);
  const bool complete = mode == "complete";
  // As torch: without Q (mode 'r'), or with Q's extra columns (complete, m > n),
  // the gradient is not defined by the factorization.
  if (rec && (mode == "r" || (complete && m > n)))
    throw NotImplementedError("[" + std::string(op) + "] the derivative of mode='" + mode + "' with input " +
                              A.shape_str() + " is not implemented; use mode='reduced'");
  const int64_t rrows = complete ? m : k, qcols = complete ? m : k;
  Tensor R = zeros(with_matrix(batch, rrows, n), A.dtype(), A.device());
  // Zeroed: orgqr/ungqr must not meet stale NaNs in the columns past k, which
  // OpenBLAS's cungqr was seen to carry into Q (complete mode, m > n).
  Tensor qbuf = mode == "r" ? empty({0}, A.dtype(), A.device()) : zeros(with_matrix(batch, qcols, m), A.dtype(), A.device());
  ops::linalg_qr(common_device(op, {&A}), A, R, mode == "r" ? Tensor() : qbuf);
  if (mode == "r") return {qbuf, R};
  Tensor Q = colmajor_view(qbuf);
  if (rec)
    rec.finish("LinalgQrBackward0", {&Q, &R}, {Q, R}, [](autograd::FnNode& n, autograd::Grads& g) {
      return autograd::Grads{
          grad::qr_backward(grad::unless_zero(g[0]), grad::unless_zero(g[1]), n.saved(0), n.saved(1))};
    });
  return {Q, R};
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
  Shape tb = tau.sizes();
  tb.pop_back();
  const Shape batch = broadcast_shapes(batch_shape(A), tb, op);
  return ops::linalg_householder_product(common_device(op, {&A, &tau}), A, tau, batch);
}

}  // namespace kiln::linalg
