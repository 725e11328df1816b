// linalg.det / slogdet front-ends: validate, allocate the results and call the
// ops (kernels: cpu/ops/linalg_det.cc).
#include "kiln/linalg.h"
#include "linalg/common.h"
#include "linalg/grad.h"
#include "ops/registry/all.h"

namespace kiln::linalg {
using namespace detail;

Tensor det(const Tensor& A) {
  const char* op = "linalg.det";
  autograd::Record rec(op, {&A});
  check_dtype(A, op);
  check_matrix(A, op, true);
  Tensor out = empty(batch_shape(A), A.dtype(), A.device());
  ops::linalg_det(common_device(op, {&A}), A, out);
  if (rec)
    rec.finish("LinalgDetBackward0", {&out}, {A, out}, [](autograd::FnNode& n, autograd::Grads& g) {
      return autograd::Grads{grad::det_backward(g[0], n.saved(1), n.saved(0))};
    });
  return out;
}

SlogDet slogdet(const Tensor& A) {
  const char* op = "linalg.slogdet";
  autograd::Record rec(op, {&A});
  grad::no_complex(rec, A, op);
  check_dtype(A, op);
  check_matrix(A, op, true);
  const Shape batch = batch_shape(A);
  Tensor sign = empty(batch, A.dtype(), A.device());
  Tensor logabs = empty(batch, to_real(A.dtype()), A.device());
  ops::linalg_slogdet(common_device(op, {&A}), A, sign, logabs);
  // The sign of a complex determinant moves with A: no formula for it yet.
  // The sign of a real determinant is locally constant: no gradient flows from it.
  if (rec)
    rec.finish("LinalgSlogdetBackward0", {&sign, &logabs}, {A}, [](autograd::FnNode& n, autograd::Grads& g) {
      if (!g[1].defined()) return autograd::Grads{Tensor()};
      return autograd::Grads{grad::logabsdet_backward(g[1], n.saved(0))};
    });
  return {sign, logabs};
}

}  // namespace kiln::linalg
