// linalg.eigvals, ldl_factor / ldl_factor_ex and geqrf front-ends: validate,
// allocate, call the ops (kernels: cpu/ops/linalg_eigvals_ldl.cc and
// cpu/ops/linalg_qr.cc) and raise on LAPACK's reports.
#include <algorithm>
#include <string>

#include "kiln/linalg.h"
#include "linalg/common.h"
#include "ops/registry/all.h"

namespace kiln::linalg {
using namespace detail;

Tensor eigvals(const Tensor& A) {
  const char* op = "linalg.eigvals";
  check_dtype(A, op);
  check_matrix(A, op, true);
  const Shape batch = batch_shape(A);
  const int64_t n = A.size(-1);
  // geev would refuse a NaN and may not return on an inf: raise, as torch.
  check_finite(colmajor_copy(A), numel_of(batch), op, "input", A, !batch.empty());
  Shape wb = batch;
  wb.push_back(n);
  Tensor w = empty(wb, to_complex(A.dtype()), A.device());
  Tensor info = zeros(batch, DType::Int32, A.device());
  ops::linalg_eigvals(common_device(op, {&A, &w}), A, w, info);
  check_infos(info, op, InfoKind::Converge, A);
  return w;
}

LDLFactorEx ldl_factor_ex(const Tensor& A, bool hermitian, bool check_errors) {
  const char* op = "linalg.ldl_factor_ex";
  check_dtype(A, op);
  check_matrix(A, op, true);
  const Shape batch = batch_shape(A);
  Shape pb = batch;
  pb.push_back(A.size(-1));
  Tensor pivots = empty(pb, DType::Int32, A.device());
  Tensor info = zeros(batch, DType::Int32, A.device());
  Tensor LD =
      ops::linalg_ldl_factor(common_device(op, {&A}), A, hermitian && is_complex(A.dtype()), pivots, info);
  if (check_errors) check_infos(info, "linalg.ldl_factor", InfoKind::LDL, A);
  return {LD, pivots, info};
}

LDLFactor ldl_factor(const Tensor& A, bool hermitian) {
  LDLFactorEx r = ldl_factor_ex(A, hermitian, false);
  check_infos(r.info, "linalg.ldl_factor", InfoKind::LDL, A);
  return {r.LD, r.pivots};
}

Geqrf geqrf(const Tensor& A) {
  const char* op = "geqrf";
  check_dtype(A, op);
  check_matrix(A, op, false);
  Shape tb = batch_shape(A);
  tb.push_back(std::min(A.size(-2), A.size(-1)));
  Tensor tau = empty(tb, A.dtype(), A.device());
  Tensor a = ops::linalg_geqrf(common_device(op, {&A, &tau}), A, tau);
  return {a, tau};
}

}  // namespace kiln::linalg
