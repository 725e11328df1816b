// linalg.lu_factor / lu_factor_ex / lu / lu_solve through LAPACK getrf/getrs.
// getrf pivots with i?amax, which for complex input picks the first entry of
// largest |re| + |im|; the factors and 1-based int32 pivots are LAPACK's own,
// hence equal to SciPy's (which calls the same routine; 0-based there).
// A matrix holding a NaN factors as all-NaN LU with pivots 1..k (no row
// exchange) and info 0 (see linalg.h); lu_solve computes with what it is given.
#include <complex>
#include <utility>

#include "kiln/linalg.h"
#include "linalg/common.h"
#include "linalg/lapack.h"

namespace kiln::linalg {
using namespace detail;

namespace {

template <typename T>
T conj_of(T v) {
  if constexpr (lapack::is_cplx<T>)
    return std::conj(v);
  else
    return v;
}

template <typename T>
void conj_inplace(Tensor& t) {
  if constexpr (lapack::is_cplx<T>) {
    T* p = t.data<T>();
    for (int64_t i = 0, n = t.numel(); i < n; ++i) p[i] = std::conj(p[i]);
  }
}

void check_pivot_flag(bool pivot, const char* op) {
  if (!pivot)
    throw NotImplementedError(std::string("[") + op + "] LU without pivoting is not implemented on the CPU");
}

}  // namespace

LUFactorEx lu_factor_ex(const Tensor& A, bool pivot, bool check_errors) {
  const char* op = "linalg.lu_factor";
  check_dtype(A, op);
  check_matrix(A, op, false);
  check_pivot_flag(pivot, op);
  const Shape batch = batch_shape(A);
  const int64_t m = A.size(-2), n = A.size(-1), k = std::min(m, n), count = numel_of(batch);
  Tensor buf = colmajor_copy(A);
  Shape pshape = batch;
  pshape.push_back(k);
  Tensor pivots = empty(pshape, DType::Int32);
  Tensor info = zeros(batch, DType::Int32);
  if (count > 0 && k > 0) {
    dispatch<kLinalgSet>(A.dtype(), op, [&]<typename T>() {
      T* ap = buf.data<T>();
      int32_t* pp = pivots.data<int32_t>();
      int32_t* ip = info.data<int32_t>();
      for_each_matrix(count, std::max(m, n), [&](int64_t b) {
        T* a = ap + b * m * n;
        if (any_nan(a, m * n)) {
          fill_nan(a, m * n);
          for (int64_t i = 0; i < k; ++i) pp[b * k + i] = int32_t(i + 1);
          return;
        }
        ip[b] = lapack::getrf<T>(m, n, a, m, pp + b * k);
      });
    });
  }
  if (check_errors) check_infos(info, op, InfoKind::LUFactor, A);
  return {colmajor_view(buf), pivots, info};
}

LUFactor lu_factor(const Tensor& A, bool pivot) {
  LUFactorEx r = lu_factor_ex(A, pivot, true);
  return {r.LU, r.pivots};
}

PLU lu(const Tensor& A, bool pivot) {
  const char* op = "linalg.lu";
  check_dtype(A, op);
  check_matrix(A, op, false);
  check_pivot_flag(pivot, op);
  const LUFactorEx f = lu_factor_ex(A, true, false);
  const Shape batch = batch_shape(A);
  const int64_t m = A.size(-2), n = A.size(-1), k = std::min(m, n), count = numel_of(batch);
  Tensor P = zeros(with_matrix(batch, m, m), A.dtype());
  Tensor L = zeros(with_matrix(batch, m, k), A.dtype());
  Tensor U = zeros(with_matrix(batch, k, n), A.dtype());
  const Tensor LU = f.LU.contiguous();  // row-major copy of the factors
  dispatch<kLinalgSet>(A.dtype(), op, [&]<typename T>() {
    const T* lu = LU.data<T>();
    const int32_t* piv = f.pivots.data<int32_t>();
    T* pp = P.data<T>();
    T* lp = L.data<T>();
    T* up = U.data<T>();
    for (int64_t b = 0; b < count; ++b) {
      const T* a = lu + b * m * n;
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < k; ++j)
          lp[b * m * k + i * k + j] = i == j ? T(1) : i > j ? a[i * n + j] : T(0);
      for (int64_t i = 0; i < k; ++i)
        for (int64_t j = i; j < n; ++j) up[b * k * n + i * n + j] = a[i * n + j];
      // Row i of L U is row perm[i] of A: P[perm[i], i] = 1.
      std::vector<int64_t> perm(m);
      for (int64_t i = 0; i < m; ++i) perm[i] = i;
      for (int64_t i = 0; i < k; ++i) std::swap(perm[i], perm[piv[b * k + i] - 1]);
      for (int64_t i = 0; i < m; ++i) pp[b * m * m + perm[i] * m + i] = T(1);
    }
  });
  return {P, L, U};
}

Tensor lu_solve(const Tensor& LU, const Tensor& pivots, const Tensor& B, bool left, bool adjoint) {
  const char* op = "linalg.lu_solve";
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
  // Left: op(A) X = B. Right: X op(A) = B <=> op(A)^T X^T = B^T, where
  // op(A)^T is A^T (trans 'T') or, for the adjoint, conj(A): solved as
  // A X^H = B^H (trans 'N') and conjugated back.
  const Tensor Bl = left ? B : B.transpose(-2, -1);
  const bool cplx = is_complex(LU.dtype());
  char trans = 'N';
  bool conj_b = false;
  if (left)
    trans = adjoint ? (cplx ? 'C' : 'T') : 'N';
  else if (!adjoint)
    trans = 'T';
  else
    conj_b = cplx;
  const Shape batch = broadcast_shapes(broadcast_shapes(batch_shape(LU), pbatch, op), batch_shape(Bl), op);
  const int64_t m = Bl.size(-1), count = numel_of(batch);
  const Tensor a = colmajor_copy(LU, batch);
  Shape pfull = batch;
  pfull.push_back(n);
  const Tensor piv = pivots.expand(pfull).contiguous();
  {  // getrs swaps rows of B by these: one outside [1, n] would index past it.
    const Tensor pc = pivots.contiguous();
    const int32_t* pv = pc.data<int32_t>();
    for (int64_t i = 0, c = pc.numel(); i < c; ++i)
      KILN_CHECK(pv[i] >= 1 && pv[i] <= n, ValueError,
                 "[" << op << "] pivots must lie in [1, " << n
                     << "] (1-based, as lu_factor returns them), got " << pv[i] << " at flat index " << i
                     << " of pivots " << pivots.shape_str());
  }
  Tensor x = colmajor_copy(Bl, batch);
  if (count > 0 && n > 0 && m > 0) {
    dispatch<kLinalgSet>(LU.dtype(), op, [&]<typename T>() {
      if (conj_b) conj_inplace<T>(x);
      const T* ap = a.data<T>();
      const int32_t* pp = piv.data<int32_t>();
      T* xp = x.data<T>();
      for_each_matrix(count, n, [&](int64_t b) {
        lapack::getrs<T>(trans, n, m, ap + b * n * n, n, pp + b * n, xp + b * n * m, n);
      });
      if (conj_b) conj_inplace<T>(x);
    });
  }
  const Tensor X = colmajor_view(x);
  return left ? X : X.transpose(-2, -1);
}

}  // namespace kiln::linalg
