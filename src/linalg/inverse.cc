// linalg.inv / inv_ex / solve / solve_ex: the batched register-resident kernel
// (cpu/linalg_small.h) for real matrices up to 16x16, LAPACK getrf + getri /
// getrs for the rest. A matrix A holding a NaN gets an all-NaN inverse /
// solution and info 0 on every path (OpenBLAS 0.3.21's sscal turns x * NaN
// into 0, so its LU of such a matrix is not even NaN); inf in A, and NaN or
// inf in B, go through the arithmetic as in torch and NumPy.
#include <algorithm>

#include "cpu/linalg_small.h"
#include "kiln/linalg.h"
#include "linalg/common.h"
#include "linalg/lapack.h"

namespace kiln::linalg {
using namespace detail;

namespace {

bool small_path(DType d, int64_t n, int64_t m) {
  return (d == DType::Float32 || d == DType::Float64) && n >= 1 && n <= cpu::kSmallMaxN &&
         m <= cpu::kSmallMaxRhs;
}

// X = A^-1 B for batches broadcast to `batch`; B: batch + {n, m}. Returns
// (X, info); X is row-major on the small path, a column-major view otherwise.
SolveEx solve_left(const Tensor& A, const Tensor& B, const Shape& batch) {
  const int64_t n = A.size(-1), m = B.size(-1), count = numel_of(batch);
  Tensor info = zeros(batch, DType::Int32);
  if (small_path(A.dtype(), n, m) && count > 0) {
    Tensor a = A.expand(with_matrix(batch, n, n)).contiguous();
    Tensor x = empty(with_matrix(batch, n, m), A.dtype());
    x.copy_(B.expand(with_matrix(batch, n, m)));
    dispatch<bit(DType::Float32) | bit(DType::Float64)>(A.dtype(), "linalg.solve", [&]<typename T>() {
      cpu::small_gauss_jordan(a.data<T>(), x.data<T>(), info.data<int32_t>(), count, int(n), int(m), false);
    });
    return {x, info};
  }
  Tensor a = colmajor_copy(A, batch), x = colmajor_copy(B, batch);
  if (count == 0 || n == 0 || m == 0) return {colmajor_view(x), info};
  dispatch<kLinalgSet>(A.dtype(), "linalg.solve", [&]<typename T>() {
    T* ap = a.data<T>();
    T* xp = x.data<T>();
    int32_t* ip = info.data<int32_t>();
    for_each_matrix(count, n, [&](int64_t b) {
      std::vector<lapack::lint> piv(n);
      T* ab = ap + b * n * n;
      if (any_nan(ab, n * n)) return fill_nan(xp + b * n * m, n * m);
      const lapack::lint r = lapack::getrf<T>(n, n, ab, n, piv.data());
      ip[b] = r;
      if (r == 0) lapack::getrs<T>('N', n, m, ab, n, piv.data(), xp + b * n * m, n);
    });
  });
  return {colmajor_view(x), info};
}

}  // namespace

InvEx inv_ex(const Tensor& A, bool check_errors) {
  check_dtype(A, "linalg.inv");
  check_matrix(A, "linalg.inv", true);
  const Shape batch = batch_shape(A);
  const int64_t n = A.size(-1), count = numel_of(batch);
  const bool small = small_path(A.dtype(), n, n) && count > 0;
  Tensor info =
      small ? empty(batch, DType::Int32) : zeros(batch, DType::Int32);  // the kernel writes every entry
  Tensor out;
  if (small) {
    Tensor a = A.contiguous();
    out = empty(A.sizes(), A.dtype());
    dispatch<bit(DType::Float32) | bit(DType::Float64)>(A.dtype(), "linalg.inv", [&]<typename T>() {
      cpu::small_gauss_jordan(a.data<T>(), out.data<T>(), info.data<int32_t>(), count, int(n), int(n), true);
    });
  } else {
    Tensor buf = colmajor_copy(A);
    if (count > 0 && n > 0) {
      dispatch<kLinalgSet>(A.dtype(), "linalg.inv", [&]<typename T>() {
        T* ap = buf.data<T>();
        int32_t* ip = info.data<int32_t>();
        for_each_matrix(count, n, [&](int64_t b) {
          std::vector<lapack::lint> piv(n);
          T* ab = ap + b * n * n;
          if (any_nan(ab, n * n)) return fill_nan(ab, n * n);
          const lapack::lint r = lapack::getrf<T>(n, n, ab, n, piv.data());
          ip[b] = r;
          if (r == 0) lapack::getri<T>(n, ab, n, piv.data());
        });
      });
    }
    out = colmajor_view(buf);
  }
  if (check_errors) check_infos(info, "linalg.inv", InfoKind::LU, A);
  return {out, info};
}

Tensor inv(const Tensor& A) { return inv_ex(A, true).inverse; }

SolveEx solve_ex(const Tensor& A, const Tensor& B, bool left, bool check_errors) {
  const char* op = "linalg.solve";
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
  SolveEx r = solve_left(Al, Bm, batch);
  if (check_errors) check_infos(r.info, op, InfoKind::LU, A);
  if (!left) r.result = r.result.transpose(-2, -1);
  if (vector_case) r.result = r.result.squeeze(-1);
  return r;
}

Tensor solve(const Tensor& A, const Tensor& B, bool left) { return solve_ex(A, B, left, true).result; }

}  // namespace kiln::linalg
