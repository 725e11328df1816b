// linalg.svd / svdvals front-ends (kernels: cpu/ops/linalg_svd.cc), pinv and
// matrix_rank.
//
// Non-finite input raises (as torch): LAPACKE refuses a NaN, and an inf sends
// gesdd's scaling into xerbla (printing) or its iteration into an endless loop.
#include "kiln/linalg.h"
#include "linalg/common.h"
#include "linalg/grad.h"
#include "ops/registry/all.h"

namespace kiln::linalg {
using namespace detail;

namespace {

void fill_eye(Tensor& t) {
  t.fill_(0);
  const int64_t r = t.size(-2), c = t.size(-1);
  for (int64_t i = 0; i < std::min(r, c); ++i) t.select(-1, i).select(-1, i).fill_(1);
}

}  // namespace

namespace detail {

SVD svd_for(const Tensor& A, bool full_matrices, const char* op) {
  check_dtype(A, op);
  check_matrix(A, op, false);
  const Shape batch = batch_shape(A);
  const int64_t m = A.size(-2), n = A.size(-1), k = std::min(m, n), count = numel_of(batch);
  const int64_t ucols = full_matrices ? m : k, vrows = full_matrices ? n : k;
  const Tensor a = colmajor_copy(A);
  check_finite(a, count, op, "the input", A, A.dim() > 2);
  Shape sb = batch;
  sb.push_back(k);
  Tensor S = empty(sb, to_real(A.dtype()), A.device());
  Tensor ub = colmajor_empty(batch, m, ucols, A.dtype(), A.device());
  Tensor vb = colmajor_empty(batch, vrows, n, A.dtype(), A.device());
  Tensor info = zeros(batch, DType::Int32, A.device());
  if (k == 0) {
    Tensor U = colmajor_view(ub), Vh = colmajor_view(vb);
    fill_eye(U);
    fill_eye(Vh);
    return {U, S, Vh};
  }
  ops::linalg_svd(common_device(op, {&A}), a, full_matrices, S, ub, vb, info);
  check_infos(info, op, InfoKind::Converge, A);
  return {colmajor_view(ub), S, colmajor_view(vb)};
}

Tensor svdvals_for(const Tensor& A, const char* op) {
  check_dtype(A, op);
  check_matrix(A, op, false);
  const Shape batch = batch_shape(A);
  const int64_t m = A.size(-2), n = A.size(-1), k = std::min(m, n), count = numel_of(batch);
  const Tensor a = colmajor_copy(A);
  check_finite(a, count, op, "the input", A, A.dim() > 2);
  Shape sb = batch;
  sb.push_back(k);
  Tensor S = empty(sb, to_real(A.dtype()), A.device());
  Tensor info = zeros(batch, DType::Int32, A.device());
  if (k == 0) return S;
  ops::linalg_svdvals(common_device(op, {&A}), a, S, info);
  check_infos(info, op, InfoKind::Converge, A);
  return S;
}

}  // namespace detail

SVD svd(const Tensor& A, bool full_matrices) {
  const char* op = "linalg.svd";
  autograd::Record rec(op, {&A});
  grad::no_complex(rec, A, op);
  SVD r = svd_for(A, full_matrices, op);
  if (rec) {
    const bool extra = full_matrices && A.size(-1) != A.size(-2);
    rec.finish("LinalgSvdBackward0", {&r.U, &r.S, &r.Vh}, {r.U, r.S, r.Vh},
               [extra](autograd::FnNode& n, autograd::Grads& g) {
                 const Tensor gU = grad::unless_zero(g[0]), gVh = grad::unless_zero(g[2]);
                 // As torch: the extra singular vectors of the full SVD are arbitrary.
                 if (extra && (gU.defined() || gVh.defined()))
                   throw NotImplementedError(
                       "[linalg.svd] the derivative through U or Vh with full_matrices=True of a non-square "
                       "matrix is not implemented; use full_matrices=False");
                 const Tensor S = n.saved(1);
                 const int64_t k = S.size(-1);
                 const Tensor U = n.saved(0).narrow(-1, 0, k), Vh = n.saved(2).narrow(-2, 0, k);
                 return autograd::Grads{grad::svd_backward(gU, grad::unless_zero(g[1]), gVh, U, S, Vh)};
               });
  }
  return r;
}

Tensor svdvals(const Tensor& A) {
  const char* op = "linalg.svdvals";
  autograd::Record rec(op, {&A});
  grad::no_complex(rec, A, op);
  if (!rec) return svdvals_for(A, op);
  // Recording: the gradient U diag(gS) Vh needs the singular vectors. They are
  // outputs of the node (as torch's svdvals records linalg_svd), so that a
  // double backward differentiates through them.
  SVD r = svd_for(A, false, op);
  rec.finish("LinalgSvdBackward0", {&r.U, &r.S, &r.Vh}, {r.U, r.S, r.Vh},
             [](autograd::FnNode& n, autograd::Grads& g) {
               return autograd::Grads{grad::svd_backward(grad::unless_zero(g[0]), grad::unless_zero(g[1]),
                                                         grad::unless_zero(g[2]), n.saved(0), n.saved(1),
                                                         n.saved(2))};
             });
  return r.S;
}

namespace {

// torch's tolerance rule: rtol defaults to eps * max(m, n) unless atol is
// given and positive (then 0).
double default_rtol(DType d, int64_t m, int64_t n, std::optional<double> atol, std::optional<double> rtol) {
  if (rtol) return *rtol;
  if (atol && *atol > 0) return 0.0;
  return eps_of(d) * double(std::max(m, n));
}

}  // namespace

Tensor pinv(const Tensor& A, std::optional<double> atol, std::optional<double> rtol, bool hermitian) {
  const char* op = "linalg.pinv";
  autograd::Record rec(op, {&A});
  grad::no_complex(rec, A, op);
  check_dtype(A, op);
  check_matrix(A, op, hermitian);
  const Shape batch = batch_shape(A);
  const int64_t m = A.size(-2), n = A.size(-1), count = numel_of(batch);
  const double rt = default_rtol(A.dtype(), m, n, atol, rtol), at = atol.value_or(0.0);
  Tensor out = colmajor_empty(batch, n, m, A.dtype(), A.device());  // n x m, column-major
  if (count == 0 || m == 0 || n == 0) {
    out.fill_(0);
    return colmajor_view(out);
  }
  // A = U diag(s) Vh (Hermitian: A = Q diag(w) Q^H, s = |w|, U = Q sign(w)).
  Tensor U, S, Vh;
  if (hermitian) {
    Eigh e = eigh_for(A, "L", true, op);
    U = e.eigenvectors;
    S = e.eigenvalues;
    Vh = e.eigenvectors;  // used as V (= Q) below
  } else {
    SVD s = svd_for(A, false, op);
    U = s.U, S = s.S, Vh = s.Vh;
  }
  const Tensor ub = U.transpose(-2, -1).contiguous();   // column-major m x k
  const Tensor vb = Vh.transpose(-2, -1).contiguous();  // column-major: Vh (k x n, ld k) or Q (n x n, ld n)
  const Tensor sc = S.contiguous();
  ops::linalg_pinv(common_device(op, {&A}), ub, vb, sc, at, rt, hermitian, out);
  Tensor P = colmajor_view(out);
  // The closed form holds where the rank is locally constant (full rank).
  if (rec)
    rec.finish("LinalgPinvBackward0", {&P}, {A, P}, [hermitian](autograd::FnNode& n, autograd::Grads& g) {
      if (!hermitian) return autograd::Grads{grad::pinv_backward(g[0], n.saved(0), n.saved(1))};
      // Hermitian: the lower triangle defines the matrix.
      const Tensor G = grad::pinv_backward(g[0], grad::symmetric_from(n.saved(0), false), n.saved(1));
      return autograd::Grads{grad::fold_to_triangle(G, false)};
    });
  return P;
}

Tensor matrix_rank(const Tensor& A, std::optional<double> atol, std::optional<double> rtol, bool hermitian) {
  const char* op = "linalg.matrix_rank";
  check_dtype(A, op);
  check_matrix(A, op, hermitian);
  const int64_t m = A.size(-2), n = A.size(-1);
  const Tensor S = (hermitian ? eigh_for(A, "L", false, op).eigenvalues : svdvals_for(A, op)).contiguous();
  const double rt = default_rtol(A.dtype(), m, n, atol, rtol), at = atol.value_or(0.0);
  const Shape batch = batch_shape(A);
  Tensor out = empty(batch, DType::Int64, A.device());
  ops::linalg_matrix_rank(common_device(op, {&A}), S, at, rt, out);
  return out;
}

}  // namespace kiln::linalg
