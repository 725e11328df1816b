// linalg.cholesky / cholesky_ex and eigh / eigvalsh front-ends: validate,
// check eigh's input for non-finite values, call the ops (kernels:
// cpu/ops/linalg_cholesky_eigh.cc) and raise on LAPACK's reports.
//
// Non-finite input: cholesky reports a matrix whose triangle holds a NaN or
// inf as not positive-definite, with info = the order of the smallest leading
// minor holding one (potrf is not called on it); eigh / eigvalsh raise.
#include "kiln/linalg.h"
#include "linalg/common.h"
#include "linalg/grad.h"
#include "ops/registry/all.h"

namespace kiln::linalg {
using namespace detail;

CholeskyEx cholesky_ex(const Tensor& A, bool upper, bool check_errors) {
  const char* op = "linalg.cholesky";
  autograd::Record rec(op, {&A});
  grad::no_complex(rec, A, op);
  check_dtype(A, op);
  check_matrix(A, op, true);
  const Shape batch = batch_shape(A);
  Tensor info = zeros(batch, DType::Int32, A.device());
  Tensor nonfinite = zeros(batch, DType::UInt8, A.device());
  Tensor L = ops::linalg_cholesky(common_device(op, {&A}), A, upper, info, nonfinite);
  if (check_errors) check_infos(info, op, InfoKind::Cholesky, A, nonfinite.cpu().data<uint8_t>());
  if (rec)
    rec.finish("LinalgCholeskyExBackward0", {&L}, {L}, [upper](autograd::FnNode& n, autograd::Grads& g) {
      return autograd::Grads{grad::cholesky_backward(g[0], n.saved(0), upper)};
    });
  return {L, info};
}

Tensor cholesky(const Tensor& A, bool upper) { return cholesky_ex(A, upper, true).L; }

namespace detail {

Eigh eigh_for(const Tensor& A, const std::string& UPLO, bool vectors, const char* op) {
  check_dtype(A, op);
  check_matrix(A, op, true);
  KILN_CHECK(UPLO == "L" || UPLO == "U" || UPLO == "l" || UPLO == "u", ValueError,
             "[" << op << "] Expected UPLO argument to be 'L' or 'U', but got " << UPLO);
  const char uplo = (UPLO == "U" || UPLO == "u") ? 'U' : 'L';
  const Shape batch = batch_shape(A);
  const int64_t n = A.size(-1);
  Tensor buf = colmajor_copy(A);
  check_finite_hermitian(buf, n, uplo, op, A);
  Shape wb = batch;
  wb.push_back(n);
  Tensor w = empty(wb, to_real(A.dtype()), A.device());
  Tensor info = zeros(batch, DType::Int32, A.device());
  (vectors ? ops::linalg_eigh : ops::linalg_eigvalsh)(common_device(op, {&A}), buf, uplo == 'U', w, info);
  check_infos(info, op, InfoKind::Converge, A);
  return {w, vectors ? colmajor_view(buf) : Tensor()};
}

}  // namespace detail

namespace {

// eigh / eigvalsh, recorded. eigvalsh computes the eigenvectors too when
// recording: its gradient is V diag(gL) V^T.
Eigh eigh_recorded(const Tensor& A, const std::string& UPLO, bool vectors, const char* op) {
  autograd::Record rec(op, {&A});
  grad::no_complex(rec, A, op);
  Eigh r = eigh_for(A, UPLO, vectors || bool(rec), op);
  if (!rec) return r;
  const bool upper = UPLO == "U" || UPLO == "u";
  if (vectors) {
    rec.finish("LinalgEighBackward0", {&r.eigenvalues, &r.eigenvectors}, {r.eigenvalues, r.eigenvectors},
               [upper](autograd::FnNode& n, autograd::Grads& g) {
                 return autograd::Grads{grad::eigh_backward(grad::unless_zero(g[0]), grad::unless_zero(g[1]),
                                                            n.saved(0), n.saved(1), upper)};
               });
  } else {
    // The eigenvectors are an output of the node (not returned), so that a
    // double backward differentiates through them.
    rec.finish("LinalgEighBackward0", {&r.eigenvalues, &r.eigenvectors}, {r.eigenvalues, r.eigenvectors},
               [upper](autograd::FnNode& n, autograd::Grads& g) {
                 return autograd::Grads{grad::eigh_backward(grad::unless_zero(g[0]), grad::unless_zero(g[1]),
                                                            n.saved(0), n.saved(1), upper)};
               });
    r.eigenvectors = Tensor();
  }
  return r;
}

}  // namespace

Eigh eigh(const Tensor& A, const std::string& UPLO) { return eigh_recorded(A, UPLO, true, "linalg.eigh"); }
Tensor eigvalsh(const Tensor& A, const std::string& UPLO) {
  return eigh_recorded(A, UPLO, false, "linalg.eigvalsh").eigenvalues;
}

}  // namespace kiln::linalg
