// linalg.solve_triangular. Batches of float32 systems up to 64x64 with >= 8
// right-hand sides (the chunked Gated DeltaNet case) run kiln's substitution
// kernel, vectorized along the right-hand sides and threaded across the batch;
// everything else goes to BLAS trsm (OpenBLAS: blocked, GEMM trailing updates).
#include "cpu/linalg_small.h"
#include "kiln/linalg.h"
#include "linalg/common.h"
#include "linalg/lapack.h"

namespace kiln::linalg {
using namespace detail;

Tensor solve_triangular(const Tensor& A, const Tensor& B, bool upper, bool left, bool unitriangular) {
  const char* op = "linalg.solve_triangular";
  check_dtype(A, op);
  check_dtype(B, op);
  check_same_dtype(A, B, op);
  check_matrix(A, op, true);
  check_matrix(B, op, false);
  // X A = B  <=>  A^T X^T = B^T, and A^T has the other triangle.
  const Tensor Al = left ? A : A.transpose(-2, -1);
  const Tensor Bl = left ? B : B.transpose(-2, -1);
  const bool up = left ? upper : !upper;
  const int64_t n = Al.size(-1), m = Bl.size(-1);
  KILN_CHECK(Bl.size(-2) == n, ValueError,
             "[" << op << "] incompatible shapes of A " << A.shape_str() << " and B " << B.shape_str()
                 << " (left=" << (left ? "True" : "False") << ")");
  const Shape batch = broadcast_shapes(batch_shape(Al), batch_shape(Bl), op);
  const int64_t count = numel_of(batch);
  Tensor X;
  if (A.dtype() == DType::Float32 && n >= 1 && n <= 64 && m >= 8 && count > 0) {
    const Tensor a = Al.expand(with_matrix(batch, n, n)).contiguous();
    const Tensor b =
        Bl.expand(with_matrix(batch, n, m)).contiguous();  // read once, not copied when contiguous
    X = empty(with_matrix(batch, n, m), A.dtype());
    cpu::batched_trsm_left_f32(a.data<float>(), b.data<float>(), X.data<float>(), count, int(n), int(m), up,
                               unitriangular);
  } else {
    const Tensor a = colmajor_copy(Al, batch);
    Tensor x = colmajor_copy(Bl, batch);
    if (count > 0 && n > 0 && m > 0) {
      dispatch<kLinalgSet>(A.dtype(), op, [&]<typename T>() {
        const T* ap = a.data<T>();
        T* xp = x.data<T>();
        for_each_matrix(count, n, [&](int64_t b) {
          lapack::trsm<T>('L', up ? 'U' : 'L', 'N', unitriangular ? 'U' : 'N', n, m, T(1), ap + b * n * n, n,
                          xp + b * n * m, n);
        });
      });
    }
    X = colmajor_view(x);
  }
  return left ? X : X.transpose(-2, -1);
}

}  // namespace kiln::linalg
