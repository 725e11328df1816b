// CPU kernels of linalg.inv, linalg.solve and linalg.solve_triangular
// (ops/registry/linalg.h). inv / solve: the batched register-resident kernel
// (cpu/linalg_small.h) for real matrices up to 16x16, LAPACK getrf + getri /
// getrs for the rest. A matrix A holding a NaN gets an all-NaN inverse /
// solution and info 0 on every path (OpenBLAS 0.3.21's sscal turns x * NaN
// into 0, so its LU of such a matrix is not even NaN); inf in A, and NaN or
// inf in B, go through the arithmetic as in torch and NumPy.
// solve_triangular: batches of float32 systems up to 64x64 with >= 8
// right-hand sides (the chunked Gated DeltaNet case) run kiln's substitution
// kernel, vectorized along the right-hand sides and threaded across the batch;
// everything else goes to BLAS trsm (OpenBLAS: blocked, GEMM trailing updates).
#include <vector>

#include "core/linalg_layout.h"
#include "cpu/lapack.h"
#include "cpu/linalg_small.h"
#include "cpu/ops/linalg.h"
#include "cpu/ops/linalg_batch.h"
#include "cpu/ops/linalg_common.h"
#include "ops/registry/all.h"

namespace kiln::cpu {
namespace {

using namespace kiln::linalg::detail;

bool small_path(DType d, int64_t n, int64_t m) {
  return (d == DType::Float32 || d == DType::Float64) && n >= 1 && n <= kSmallMaxN && m <= kSmallMaxRhs;
}

linalg::InvEx inv_kernel(const Tensor& A) {
  const Shape batch = batch_shape(A);
  const int64_t n = A.size(-1), count = numel_of(batch);
  const bool small = small_path(A.dtype(), n, n) && count > 0;
  Tensor info =
      small ? empty(batch, DType::Int32, A.device()) : zeros(batch, DType::Int32, A.device());  // the kernel writes every entry
  Tensor out;
  if (small) {
    Tensor a = A.contiguous();
    out = empty(A.sizes(), A.dtype(), A.device());
    dispatch<bit(DType::Float32) | bit(DType::Float64)>(A.dtype(), "linalg.inv", [&]<typename T>() {
      small_gauss_jordan(a.data<T>(), out.data<T>(), info.data<int32_t>(), count, int(n), int(n), true);
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
  return {out, info};
}

// X = A^-1 B; X is row-major on the small path, a column-major view otherwise.
linalg::SolveEx solve_kernel(const Tensor& A, const Tensor& B, const Shape& batch) {
  const int64_t n = A.size(-1), m = B.size(-1), count = numel_of(batch);
  Tensor info = zeros(batch, DType::Int32, A.device());
  if (small_path(A.dtype(), n, m) && count > 0) {
    Tensor a = A.expand(with_matrix(batch, n, n)).contiguous();
    Tensor x = empty(with_matrix(batch, n, m), A.dtype(), A.device());
    x.copy_(B.expand(with_matrix(batch, n, m)));
    dispatch<bit(DType::Float32) | bit(DType::Float64)>(A.dtype(), "linalg.solve", [&]<typename T>() {
      small_gauss_jordan(a.data<T>(), x.data<T>(), info.data<int32_t>(), count, int(n), int(m), false);
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

Tensor solve_triangular_kernel(const Tensor& A, const Tensor& B, const Shape& batch, bool up, bool unit) {
  const int64_t n = A.size(-1), m = B.size(-1), count = numel_of(batch);
  if (A.dtype() == DType::Float32 && n >= 1 && n <= 64 && m >= 8 && count > 0) {
    const Tensor a = A.expand(with_matrix(batch, n, n)).contiguous();
    const Tensor b =
        B.expand(with_matrix(batch, n, m)).contiguous();  // read once, not copied when contiguous
    Tensor X = empty(with_matrix(batch, n, m), A.dtype(), A.device());
    batched_trsm_left_f32(a.data<float>(), b.data<float>(), X.data<float>(), count, int(n), int(m), up, unit);
    return X;
  }
  const Tensor a = colmajor_copy(A, batch);
  Tensor x = colmajor_copy(B, batch);
  if (count > 0 && n > 0 && m > 0) {
    dispatch<kLinalgSet>(A.dtype(), "linalg.solve_triangular", [&]<typename T>() {
      const T* ap = a.data<T>();
      T* xp = x.data<T>();
      for_each_matrix(count, n, [&](int64_t b) {
        lapack::trsm<T>('L', up ? 'U' : 'L', 'N', unit ? 'U' : 'N', n, m, T(1), ap + b * n * n, n,
                        xp + b * n * m, n);
      });
    });
  }
  return colmajor_view(x);
}

}  // namespace

void register_linalg_solve_kernels() {
  ops::linalg_inv.set_kernel(DeviceKind::CPU, inv_kernel);
  ops::linalg_solve.set_kernel(DeviceKind::CPU, solve_kernel);
  ops::linalg_solve_triangular.set_kernel(DeviceKind::CPU, solve_triangular_kernel);
}

}  // namespace kiln::cpu
