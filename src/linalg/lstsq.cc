// linalg.lstsq front-end: validate, check A and B for non-finite values,
// allocate, call the op (kernel: cpu/ops/linalg_lstsq.cc) and raise on
// LAPACK's report.
//
// Non-finite A or B raises, whatever the driver: LAPACKE refuses a NaN, and
// an inf is scaled into zeros and NaNs (gels then reports a rank deficiency
// that is not there, gelsd/gelss call xerbla or never converge).
#include "kiln/linalg.h"
#include "linalg/common.h"
#include "linalg/grad.h"
#include "ops/registry/all.h"

namespace kiln::linalg {
using namespace detail;

Lstsq lstsq(const Tensor& A, const Tensor& B, std::optional<double> rcond,
            std::optional<std::string> driver_opt) {
  const char* op = "linalg.lstsq";
  autograd::Record rec(op, {&A, &B});
  grad::no_complex(rec, A, op);
  check_dtype(A, op);
  check_dtype(B, op);
  check_same_dtype(A, B, op);
  check_matrix(A, op, false);
  const std::string driver = driver_opt.value_or("gelsy");
  KILN_CHECK(driver == "gels" || driver == "gelsy" || driver == "gelsd" || driver == "gelss", ValueError,
             "[" << op << "] parameter `driver` should be one of (gels, gelsy, gelsd, gelss), got '" << driver
                 << "'");
  KILN_CHECK(B.dim() >= 1, ValueError, "[" << op << "] B must have at least 1 dimension");
  const bool vector_case = B.dim() == 1 || B.dim() == A.dim() - 1;
  const Tensor Bm = vector_case ? B.unsqueeze(-1) : B;
  const int64_t m = A.size(-2), n = A.size(-1), nrhs = Bm.size(-1);
  KILN_CHECK(!rec || m >= n, NotImplementedError,
             "[" << op << "] the derivative of the minimum-norm solution (A " << A.shape_str()
                 << " with fewer rows than columns) is not implemented; use linalg.pinv(A) @ B");
  KILN_CHECK(Bm.size(-2) == m, ValueError,
             "[" << op << "] input.size(-2) should match other.size(-2), got A " << A.shape_str() << " and B "
                 << B.shape_str());
  const Shape batch = broadcast_shapes(batch_shape(A), batch_shape(Bm), op);
  const int64_t count = numel_of(batch), k = std::min(m, n), ldb = std::max<int64_t>({m, n, 1});
  const double rc = rcond.value_or(eps_of(A.dtype()) * double(std::max(m, n)));
  const Tensor a = colmajor_copy(A, batch);
  const Tensor bsrc = colmajor_copy(Bm, batch);  // m x nrhs, column-major
  const bool batched = !batch.empty();
  check_finite(a, count, op, "A", A, batched);
  check_finite(bsrc, count, op, "B", B, batched);
  Tensor x = zeros(with_matrix(batch, nrhs, ldb), A.dtype(), A.device());  // ldb x nrhs, column-major
  const bool want_rank = driver != "gels", want_s = driver == "gelsd" || driver == "gelss";
  Tensor rank = want_rank ? zeros(batch, DType::Int64, A.device()) : empty({0}, DType::Int64, A.device());
  Shape sb = batch;
  sb.push_back(k);
  Tensor sv = want_s ? zeros(sb, to_real(A.dtype()), A.device()) : empty({0}, to_real(A.dtype()), A.device());
  Tensor info = zeros(batch, DType::Int32, A.device());
  const ops::LstsqDriver drv = driver == "gels"    ? ops::LstsqDriver::Gels
                               : driver == "gelsy" ? ops::LstsqDriver::Gelsy
                               : driver == "gelsd" ? ops::LstsqDriver::Gelsd
                                                   : ops::LstsqDriver::Gelss;
  Tensor residuals = ops::linalg_lstsq(common_device(op, {&A, &B}), a, bsrc, drv, rc, x, rank, sv, info);
  check_infos(info, op, driver == "gels" ? InfoKind::FullRank : InfoKind::Converge, A);
  Tensor solution = colmajor_view(x).narrow(-2, 0, n);
  if (vector_case) {
    solution = solution.squeeze(-1);
    if (residuals.numel() > 0) residuals = residuals.squeeze(-1);
  }
  // The solution's derivative for full-rank A (residuals, rank and singular
  // values carry none, as torch).
  if (rec)
    rec.finish("LinalgLstsqBackward0", {&solution}, {A, B, solution},
               [vector_case](autograd::FnNode& n, autograd::Grads& g) {
                 auto [gA, gB] = grad::lstsq_backward(g[0], n.saved(0), n.saved(1), n.saved(2), vector_case,
                                                      n.needs(0), n.needs(1));
                 return autograd::Grads{gA, gB};
               });
  return {solution, residuals, rank, sv};
}

}  // namespace kiln::linalg
