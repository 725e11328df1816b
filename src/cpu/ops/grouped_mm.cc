// CPU kernel of grouped_mm (ops/registry/matmul.h): the 2-D x 3-D form runs
// the grouped linear work loop (cpu/ops/grouped_linear.h); the forms grouped
// along N or along the contraction run one OpenBLAS sgemm per group.
#include "cpu/gemm.h"
#include "cpu/ops/grouped_linear.h"
#include "cpu/ops/matmul_family.h"
#include "ops/registry/all.h"

namespace kiln::cpu {
namespace {

void grouped_mm_kernel(const Tensor& a, const Tensor& w, const Tensor& offs, const Tensor& bias,
                       const Tensor& b_scale, const Tensor& out) {
  const int32_t* ends = offs.data<int32_t>();
  if (a.dim() == 2 && w.dim() == 3) {
    // out[s:e] = a[s:e] @ W[g]^T, W [G, N, K] in the linear layout.
    grouped_linear(grouped_linear_args(a.data<float>(), w, b_scale, bias, ends, out.data<float>()));
    return;
  }
  if (a.dim() == 3) {
    // 3-D x 2-D: out[:, s:e] = a[g] @ b[:, s:e]; a [G, M, K], b [K, T].
    const int64_t G = a.size(0), M = a.size(1), K = a.size(2), T = w.size(1);
    for (int64_t g = 0; g < G; ++g) {
      const int64_t s = g == 0 ? 0 : ends[g - 1], e = ends[g];
      if (e > s && K > 0)
        sgemm(false, M, e - s, K, 1.0f, a.data<float>() + g * M * K, K, w.data<float>() + s, T, 0.0f,
              out.data<float>() + s, T);
    }
    return;
  }
  // 2-D x 2-D: out[g] = a[:, s:e] @ b[s:e]; a [M, T], b [T, N], groups along T.
  const int64_t M = a.size(0), T = a.size(1), N = w.size(1), G = offs.size(0);
  for (int64_t g = 0; g < G; ++g) {
    const int64_t s = g == 0 ? 0 : ends[g - 1], e = ends[g];
    if (e > s)
      sgemm(false, M, N, e - s, 1.0f, a.data<float>() + s, T, w.data<float>() + s * N, N, 0.0f,
            out.data<float>() + g * M * N, N);
  }
}

}  // namespace

void register_grouped_mm_kernels() { ops::grouped_mm.set_kernel(DeviceKind::CPU, grouped_mm_kernel); }

}  // namespace kiln::cpu
