// linalg.inv / inv_ex / solve / solve_ex front-ends: validate, broadcast the
// batch dims, call the op (kernels: cpu/ops/linalg_solve.cc) and raise on a
// singular matrix where asked.
#include <algorithm>

#include "kiln/linalg.h"
#include "linalg/common.h"
#include "linalg/grad.h"
#include "ops/registry/all.h"

namespace kiln::linalg {
using namespace detail;

InvEx inv_ex(const Tensor& A, bool check_errors) {
  autograd::Record rec("linalg.inv", {&A});
  grad::no_complex(rec, A, "linalg.inv");
  check_dtype(A, "linalg.inv");
  check_matrix(A, "linalg.inv", true);
  InvEx r = ops::linalg_inv(common_device("linalg.inv", {&A}), A);
  if (check_errors) check_infos(r.info, "linalg.inv", InfoKind::LU, A);
  if (rec)
    rec.finish("LinalgInvExBackward0", {&r.inverse}, {r.inverse},
               [](autograd::FnNode& n, autograd::Grads& g) {
                 return autograd::Grads{grad::inv_backward(g[0], n.saved(0))};
               });
  return r;
}

Tensor inv(const Tensor& A) { return inv_ex(A, true).inverse; }

SolveEx solve_ex(const Tensor& A, const Tensor& B, bool left, bool check_errors) {
  const char* op = "linalg.solve";
  autograd::Record rec(op, {&A, &B});
  grad::no_complex(rec, A, op);
  check_dtype(A, op);
  check_dtype(B, op);
  check_same_dtype(A, B, op);
  check_matrix(A, op, true);
  KILN_CHECK(B.dim() >= 1, ValueError, "[" << op << "] B must have at least 1 dimension, got a 0-dim tensor");
  // torch's rule: B is a (batch of) vector(s) when 1-D or shaped like A without its last dim.
  bool vector_case = B.dim() == 1;
  if (!vector_case && B.dim() == A.dim() - 1) {
    const Shape a = A.sizes(), b = B.sizes();
    vector_case = std::equal(b.begin(), b.end(), a.begin());
  }
  Tensor Bm = vector_case ? B.unsqueeze(-1) : B;
  const int64_t n = A.size(-1);
  const Tensor Al = left ? A : A.transpose(-2, -1);
  if (!left) {
    KILN_CHECK(!vector_case, ValueError,
               "[" << op << "] left=False needs B to be a matrix, got shape " << B.shape_str());
    Bm = Bm.transpose(-2, -1);
  }
  KILN_CHECK(Bm.size(-2) == n, ValueError,
             "[" << op << "] incompatible shapes of A " << A.shape_str() << " and B " << B.shape_str()
                 << (left ? "" : " (left=False)"));
  const Shape batch = broadcast_shapes(batch_shape(A), batch_shape(Bm), op);
  SolveEx r = ops::linalg_solve(common_device(op, {&A, &B}), Al, Bm, batch);
  if (check_errors) check_infos(r.info, op, InfoKind::LU, A);
  if (!left) r.result = r.result.transpose(-2, -1);
  if (vector_case) r.result = r.result.squeeze(-1);
  if (rec)
    rec.finish("LinalgSolveExBackward0", {&r.result}, {A, r.result},
               [left, vector_case](autograd::FnNode& n, autograd::Grads& g) {
                 auto [gA, gB] = grad::solve_backward(g[0], n.saved(0), n.saved(1), left, vector_case,
                                                      n.needs(0), n.needs(1));
                 return autograd::Grads{gA, gB};
               });
  return r;
}

Tensor solve(const Tensor& A, const Tensor& B, bool left) { return solve_ex(A, B, left, true).result; }

}  // namespace kiln::linalg
