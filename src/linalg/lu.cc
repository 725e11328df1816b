// linalg.lu_factor / lu_factor_ex / lu / lu_solve front-ends: validate,
// allocate, call the ops (kernels: cpu/ops/linalg_lu.cc) and raise on a
// singular matrix where asked.
#include <algorithm>

#include "kiln/binary.h"
#include "kiln/linalg.h"
#include "kiln/shape.h"
#include "linalg/common.h"
#include "linalg/grad.h"
#include "ops/registry/all.h"

namespace kiln::linalg {
using namespace detail;

namespace {

void check_pivot_flag(bool pivot, const char* op) {
  if (!pivot)
    throw NotImplementedError(std::string("[") + op + "] LU without pivoting is not implemented on the CPU");
}

}  // namespace

LUFactorEx lu_factor_ex(const Tensor& A, bool pivot, bool check_errors) {
  const char* op = "linalg.lu_factor";
  autograd::Record rec(op, {&A});
  grad::no_complex(rec, A, op);
  check_dtype(A, op);
  check_matrix(A, op, false);
  check_pivot_flag(pivot, op);
  LUFactorEx r = ops::linalg_lu_factor(common_device(op, {&A}), A);
  if (check_errors) check_infos(r.info, op, InfoKind::LUFactor, A);
  if (rec) {
    const PLU f = lu(A);  // P as a matrix for the formula (grad mode is off here)
    // L and U are read off the saved output LU with recorded ops, so that a
    // double backward differentiates through them.
    rec.finish("LinalgLuFactorExBackward0", {&r.LU}, {f.P, r.LU},
               [](autograd::FnNode& n, autograd::Grads& g) {
                 const Tensor LU = n.saved(1);  // [*, m, n]
                 const int64_t m = LU.size(-2), k = std::min(m, LU.size(-1));
                 const Tensor L =
                     add(tril(LU, -1).narrow(-1, 0, k), eye(m, k, LU.dtype(), LU.device()));  // [*, m, k]
                 const Tensor U = triu(LU).narrow(-2, 0, k);                                  // [*, k, n]
                 const Tensor gL = tril(g[0], -1).narrow(-1, 0, k), gU = triu(g[0]).narrow(-2, 0, k);
                 return autograd::Grads{grad::lu_backward(gL, gU, n.saved(0), L, U)};
               });
  }
  return r;
}

LUFactor lu_factor(const Tensor& A, bool pivot) {
  LUFactorEx r = lu_factor_ex(A, pivot, true);
  return {r.LU, r.pivots};
}

PLU lu(const Tensor& A, bool pivot) {
  const char* op = "linalg.lu";
  autograd::Record rec(op, {&A});
  grad::no_complex(rec, A, op);
  check_dtype(A, op);
  check_matrix(A, op, false);
  check_pivot_flag(pivot, op);
  const Shape batch = batch_shape(A);
  const int64_t m = A.size(-2), n = A.size(-1), k = std::min(m, n);
  Tensor P = zeros(with_matrix(batch, m, m), A.dtype(), A.device());
  Tensor L = zeros(with_matrix(batch, m, k), A.dtype(), A.device());
  Tensor U = zeros(with_matrix(batch, k, n), A.dtype(), A.device());
  ops::linalg_lu(common_device(op, {&A}), A, P, L, U);
  // P is locally constant: its gradient is zero (torch leaves it outside the graph).
  if (rec)
    rec.finish("LinalgLuBackward0", {&P, &L, &U}, {P, L, U}, [](autograd::FnNode& n, autograd::Grads& g) {
      return autograd::Grads{grad::lu_backward(g[1], g[2], n.saved(0), n.saved(1), n.saved(2))};
    });
  return {P, L, U};
}

Tensor lu_solve(const Tensor& LU, const Tensor& pivots, const Tensor& B, bool left, bool adjoint) {
  const char* op = "linalg.lu_solve";
  autograd::Record rec(op, {&LU, &B});
  grad::no_complex(rec, LU, op);
  check_dtype(LU, op);
  check_dtype(B, op);
  check_same_dtype(LU, B, op);
  check_matrix(LU, op, true);
  check_matrix(B, op, false);
  const int64_t n = LU.size(-1);
  KILN_CHECK(pivots.dtype() == DType::Int32, TypeError,
             "[" << op << "] pivots must be int32, got " << name(pivots.dtype()));
  KILN_CHECK(pivots.dim() >= 1 && pivots.size(-1) == n, ValueError,
             "[" << op << "] pivots of shape " << pivots.shape_str() << " do not match LU of shape "
                 << LU.shape_str());
  KILN_CHECK((left ? B.size(-2) : B.size(-1)) == n, ValueError,
             "[" << op << "] incompatible shapes of LU " << LU.shape_str() << " and B " << B.shape_str()
                 << (left ? "" : " (left=False)"));
  Shape pbatch = pivots.sizes();
  pbatch.pop_back();
  const Tensor Bl = left ? B : B.transpose(-2, -1);
  const Shape batch = broadcast_shapes(broadcast_shapes(batch_shape(LU), pbatch, op), batch_shape(Bl), op);
  {  // getrs swaps rows of B by these: one outside [1, n] would index past it.
    const Tensor pc = pivots.contiguous();
    const Tensor ph = pc.cpu();  // the range check reads the pivots on the host
    const int32_t* pv = ph.data<int32_t>();
    for (int64_t i = 0, c = pc.numel(); i < c; ++i)
      KILN_CHECK(pv[i] >= 1 && pv[i] <= n, ValueError,
                 "[" << op << "] pivots must lie in [1, " << n
                     << "] (1-based, as lu_factor returns them), got " << pv[i] << " at flat index " << i
                     << " of pivots " << pivots.shape_str());
  }
  const Tensor X =
      ops::linalg_lu_solve(common_device(op, {&LU, &pivots, &B}), LU, pivots, Bl, batch, left, adjoint);
  Tensor out = left ? X : X.transpose(-2, -1);
  if (rec)
    rec.finish("LinalgLuSolveBackward0", {&out}, {LU, pivots, out},
               [left, adjoint](autograd::FnNode& n, autograd::Grads& g) {
                 auto [gLU, gB] = grad::lu_solve_backward(g[0], n.saved(0), n.saved(1), n.saved(2), left,
                                                          adjoint, n.needs(0), n.needs(1));
                 return autograd::Grads{gLU, gB};
               });
  return out;
}

}  // namespace kiln::linalg
