// CPU kernels of linalg.lu_factor / lu / lu_solve (ops/registry/linalg.h)
// through LAPACK getrf/getrs. getrf pivots with i?amax, which for complex
// input picks the first entry of largest |re| + |im|; the factors and 1-based
// int32 pivots are LAPACK's own, hence equal to SciPy's (which calls the same
// routine; 0-based there). A matrix holding a NaN factors as all-NaN LU with
// pivots 1..k (no row exchange) and info 0 (see kiln/linalg.h); lu_solve
// computes with what it is given.
#include <complex>
#include <utility>
#include <vector>

#include "core/linalg_layout.h"
#include "cpu/lapack.h"
#include "cpu/ops/linalg.h"
#include "cpu/ops/linalg_batch.h"
#include "cpu/ops/linalg_common.h"
#include "ops/registry/all.h"

namespace kiln::cpu {
namespace {

using namespace kiln::linalg::detail;

template <typename T>
void conj_inplace(Tensor& t) {
  if constexpr (lapack::is_cplx<T>) {
    T* p = t.data<T>();
    for (int64_t i = 0, n = t.numel(); i < n; ++i) p[i] = std::conj(p[i]);
  }
}

linalg::LUFactorEx lu_factor_kernel(const Tensor& A) {
  const char* op = "linalg.lu_factor";
  const Shape batch = batch_shape(A);
  const int64_t m = A.size(-2), n = A.size(-1), k = std::min(m, n), count = numel_of(batch);
  Tensor buf = colmajor_copy(A);
  Shape pshape = batch;
  pshape.push_back(k);
  Tensor pivots = empty(pshape, DType::Int32, A.device());
  Tensor info = zeros(batch, DType::Int32, A.device());
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
  return {colmajor_view(buf), pivots, info};
}

// P [*, m, m], L [*, m, k], U [*, k, n]: zero-filled.
void lu_kernel(const Tensor& A, const Tensor& P, const Tensor& L, const Tensor& U) {
  const char* op = "linalg.lu";
  const linalg::LUFactorEx f = lu_factor_kernel(A);
  const Shape batch = batch_shape(A);
  const int64_t m = A.size(-2), n = A.size(-1), k = std::min(m, n), count = numel_of(batch);
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
}

// Bl: the left-form right-hand sides (B, or B^T when !left), broadcastable
// to batch + [n, m]. Returns X (left) or X^T (right), batch + [n, m].
Tensor lu_solve_kernel(const Tensor& LU, const Tensor& pivots, const Tensor& Bl, const Shape& batch,
                       bool left, bool adjoint) {
  const char* op = "linalg.lu_solve";
  const int64_t n = LU.size(-1);
  // Left: op(A) X = B. Right: X op(A) = B <=> op(A)^T X^T = B^T, where
  // op(A)^T is A^T (trans 'T') or, for the adjoint, conj(A): solved as
  // A X^H = B^H (trans 'N') and conjugated back.
  const bool cplx = is_complex(LU.dtype());
  char trans = 'N';
  bool conj_b = false;
  if (left)
    trans = adjoint ? (cplx ? 'C' : 'T') : 'N';
  else if (!adjoint)
    trans = 'T';
  else
    conj_b = cplx;
  const int64_t m = Bl.size(-1), count = numel_of(batch);
  const Tensor a = colmajor_copy(LU, batch);
  Shape pfull = batch;
  pfull.push_back(n);
  const Tensor piv = pivots.expand(pfull).contiguous();
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
  return colmajor_view(x);
}

}  // namespace

void register_linalg_lu_kernels() {
  ops::linalg_lu_factor.set_kernel(DeviceKind::CPU, lu_factor_kernel);
  ops::linalg_lu.set_kernel(DeviceKind::CPU, lu_kernel);
  ops::linalg_lu_solve.set_kernel(DeviceKind::CPU, lu_solve_kernel);
}

}  // namespace kiln::cpu
