// CPU kernels of matmul / mm / bmm (ops/registry/matmul.h): float32 and
// float64 run OpenBLAS gemm per batch, the narrow floats compute in float32
// and round once (bf16 past the matrix-vector rows on the bf16 GEMM's units,
// which compute the same way), integers accumulate exactly in int64
// (wrapping like torch).
// Also register_matmul_kernels(), which registers the whole family.
#include <algorithm>
#include <type_traits>

#include "cpu/gemm.h"
#include "cpu/ops/matmul_family.h"
#include "cpu/ops/register.h"
#include "ops/registry/all.h"

namespace kiln::cpu {
namespace {

// A [M, K] operand as gemm wants it: row-major with unit inner stride
// (ld = row stride), or its transpose view (trans, ld = column stride).
struct MatView {
  Tensor t;  // keeps a copy alive
  bool trans = false;
  int64_t ld = 0;
};
MatView as_gemm_operand(const Tensor& m) {  // m: 2-D
  const int64_t r = m.size(0), c = m.size(1);
  if (m.stride(1) == 1 && (r <= 1 || m.stride(0) >= c))
    return {m, false, std::max<int64_t>(c, r <= 1 ? c : m.stride(0))};
  if (m.stride(0) == 1 && (c <= 1 || m.stride(1) >= r))
    return {m, true, std::max<int64_t>(r, c <= 1 ? r : m.stride(1))};
  const Tensor cm = m.contiguous();
  return {cm, false, c};
}

// out [M, N] (contiguous, float32/float64) = a [M, K] @ b [K, N].
template <typename T>
void gemm2d(const Tensor& a, const Tensor& b, T* out) {
  const int64_t M = a.size(0), K = a.size(1), N = b.size(1);
  if (M == 0 || N == 0) return;
  if (K == 0) {
    std::fill(out, out + M * N, T(0));
    return;
  }
  MatView va = as_gemm_operand(a);
  if (va.trans) va = {a.contiguous(), false, K};  // the helper takes A row-major only
  const MatView vb = as_gemm_operand(b);
  // b [K, N]: trans=false is row-major [K, N]; trans=true is a [N, K] row-major
  // buffer viewed transposed, which is what gemm's b_trans means.
  if constexpr (std::is_same_v<T, float>)
    sgemm(vb.trans, M, N, K, 1.0f, va.t.template data<float>(), va.ld, vb.t.template data<float>(), vb.ld,
          0.0f, out, N);
  else
    dgemm(vb.trans, M, N, K, 1.0, va.t.template data<double>(), va.ld, vb.t.template data<double>(), vb.ld,
          0.0, out, N);
}

// Exact integer product, accumulated in the storage type (wrapping like torch).
template <typename T>
void int_mm(const Tensor& a, const Tensor& b, T* out) {
  const int64_t M = a.size(0), K = a.size(1), N = b.size(1);
  const T* pa = a.data<T>();
  const T* pb = b.data<T>();
  const int64_t sa0 = a.stride(0), sa1 = a.stride(1), sb0 = b.stride(0), sb1 = b.stride(1);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      uint64_t acc = 0;
      for (int64_t k = 0; k < K; ++k)
        acc += uint64_t(int64_t(pa[m * sa0 + k * sa1])) * uint64_t(int64_t(pb[k * sb0 + n * sb1]));
      out[m * N + n] = T(acc);
    }
}

// out [M, N] (contiguous bf16) = a @ b for bf16 a and b on the bf16 GEMM
// (AMX tiles or AVX512-BF16; gemm.h), where it is active and M is past the
// matrix-vector rows: the product of two bf16 values is exact in float32 and
// the sums are float32, as the float32 path computes them (in another
// order), at ~4-5x its speed (`kiln bench linear --prefill-dtypes bf16-matmul`, AMX). B is read
// where it lies: row-major [K, N] as a k-major W (GemvArgs::w_kmajor), a
// transposed view (x @ w.t()) as W's rows; any other layout is copied
// row-major first. False: not taken.
bool bf16_mm(const Tensor& a, const Tensor& b, const Tensor& out) {
  const int64_t M = a.size(0), K = a.size(1), N = b.size(1);
  if (a.dtype() != DType::BFloat16 || b.dtype() != DType::BFloat16 || M <= kLinearGemvMaxRows || K == 0 ||
      N == 0 || !bf16_gemm_covers(DType::BFloat16, ScaleKind::None))
    return false;
  const Tensor x = a.stride(1) == 1 && a.stride(0) >= K ? a : a.contiguous();
  const bool w_rows = b.stride(0) == 1 && (N <= 1 || b.stride(1) >= K);  // b = W.t()
  const Tensor w = w_rows ? b.t() : b.stride(1) == 1 && (K <= 1 || b.stride(0) >= N) ? b : b.contiguous();
  GemvArgs g;
  g.w = w.data_ptr();
  g.w_kmajor = !w_rows;
  g.ldw = w_rows ? (N > 1 ? w.stride(0) : K) : (K > 1 ? w.stride(0) : N);
  g.N = N;
  g.K = K;
  g.x_bf16 = static_cast<const uint16_t*>(x.data_ptr());
  g.ldx = x.stride(0);
  g.M = M;
  g.y = out.data_ptr();
  g.ldy = N;
  g.y_dtype = DType::BFloat16;
  gemm(DType::BFloat16, g);
  return true;
}

// out [M, N] contiguous of a's dtype = a @ b (2-D each).
void mm_into(const Tensor& a, const Tensor& b, const Tensor& out) {
  const DType d = a.dtype();
  if (bf16_mm(a, b, out)) return;
  if (d == DType::Float32) return gemm2d<float>(a, b, out.data<float>());
  if (d == DType::Float64) return gemm2d<double>(a, b, out.data<double>());
  if (d == DType::BFloat16 || d == DType::Float16) {
    Tensor of = empty({a.size(0), b.size(1)}, DType::Float32);
    gemm2d<float>(a.to(DType::Float32), b.to(DType::Float32), of.data<float>());
    Tensor o = out;
    o.copy_(of);
    return;
  }
  dispatch<kIntSet>(d, "matmul", [&]<typename T>() { int_mm<T>(a, b, out.data<T>()); });
}

void matmul_kernel(const Tensor& a, const Tensor& b, const Tensor& out) {
  if (a.dim() == 2) return mm_into(a, b, out);
  for (int64_t i = 0; i < a.size(0); ++i) mm_into(a.select(0, i), b.select(0, i), out.select(0, i));
}

}  // namespace

void register_matmul_product_kernels() {
  ops::matmul.set_kernel(DeviceKind::CPU, matmul_kernel);
  ops::mm.set_kernel(DeviceKind::CPU, matmul_kernel);
  ops::bmm.set_kernel(DeviceKind::CPU, matmul_kernel);
}

void register_matmul_kernels() {
  register_linear_kernels();
  register_block_linear_kernels();
  register_matmul_product_kernels();
  register_scaled_mm_kernels();
  register_grouped_mm_kernels();
  register_quantize_kernels();
  register_moe_kernels();
}

}  // namespace kiln::cpu
