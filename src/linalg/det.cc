// linalg.det / slogdet front-ends: validate, allocate the results and call the
// ops (kernels: cpu/ops/linalg_det.cc).
#include "kiln/linalg.h"
#include "linalg/common.h"
#include "ops/registry/all.h"

namespace kiln::linalg {
using namespace detail;

Tensor det(const Tensor& A) {
  const char* op = "linalg.det";
  check_dtype(A, op);
  check_matrix(A, op, true);
  Tensor out = empty(batch_shape(A), A.dtype(), A.device());
  ops::linalg_det(common_device(op, {&A}), A, out);
  return out;
}

SlogDet slogdet(const Tensor& A) {
  const char* op = "linalg.slogdet";
  check_dtype(A, op);
  check_matrix(A, op, true);
  const Shape batch = batch_shape(A);
  Tensor sign = empty(batch, A.dtype(), A.device());
  Tensor logabs = empty(batch, to_real(A.dtype()), A.device());
  ops::linalg_slogdet(common_device(op, {&A}), A, sign, logabs);
  return {sign, logabs};
}

}  // namespace kiln::linalg
