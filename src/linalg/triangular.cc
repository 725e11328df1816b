// linalg.solve_triangular front-end: validate, reduce X A = B to a left solve,
// broadcast the batch dims and call the op (kernel: cpu/ops/linalg_solve.cc).
#include "kiln/linalg.h"
#include "linalg/common.h"
#include "linalg/grad.h"
#include "ops/registry/all.h"

namespace kiln::linalg {
using namespace detail;

Tensor solve_triangular(const Tensor& A, const Tensor& B, bool upper, bool left, bool unitriangular) {
  const char* op = "linalg.solve_triangular";
  autograd::Record rec(op, {&A, &B});
  grad::no_complex(rec, A, op);
  check_dtype(A, op);
  check_dtype(B, op);
  check_same_dtype(A, B, op);
  check_matrix(A, op, true);
  check_matrix(B, op, false);
  // X A = B  <=>  A^T X^T = B^T, and A^T has the other triangle.
  const Tensor Al = left ? A : A.transpose(-2, -1);
  const Tensor Bl = left ? B : B.transpose(-2, -1);
  const bool up = left ? upper : !upper;
  const int64_t n = Al.size(-1);
  KILN_CHECK(Bl.size(-2) == n, ValueError,
             "[" << op << "] incompatible shapes of A " << A.shape_str() << " and B " << B.shape_str()
                 << " (left=" << (left ? "True" : "False") << ")");
  const Shape batch = broadcast_shapes(batch_shape(Al), batch_shape(Bl), op);
  const Tensor X =
      ops::linalg_solve_triangular(common_device(op, {&A, &B}), Al, Bl, batch, up, unitriangular);
  Tensor out = left ? X : X.transpose(-2, -1);
  if (rec)
    rec.finish("LinalgSolveTriangularBackward0", {&out}, {A, out},
               [upper, left, unitriangular](autograd::FnNode& n, autograd::Grads& g) {
                 auto [gA, gB] = grad::solve_triangular_backward(g[0], n.saved(0), n.saved(1), upper, left,
                                                                 unitriangular, n.needs(0), n.needs(1));
                 return autograd::Grads{gA, gB};
               });
  return out;
}

}  // namespace kiln::linalg
