// CPU kernel of linear (ops/registry/matmul.h): up to kLinearGemvMaxRows rows
// take the matrix-vector kernel, more the blocked GEMM; narrow activations and
// bias are widened into thread-local scratch, so the decode path allocates
// nothing once it has grown.
#include "kiln/linear.h"

#include <algorithm>
#include <vector>

#include "core/convert.h"
#include "cpu/gemm.h"
#include "cpu/gemv.h"
#include "cpu/ops/matmul_family.h"
#include "ops/registry/all.h"

namespace kiln::cpu {
namespace {

// Scratch for widened activations and bias that lives as long as the thread:
// the decode path allocates nothing once it has grown.
float* scratch(std::vector<float>& v, size_t n) {
  if (v.size() < n) v.resize(n);
  return v.data();
}

void linear_kernel(const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& scale,
                   ops::ScaleLayout layout, const Tensor& out, Fp8Codes codes,
                   const Fp8Subnormals* subnormals) {
  thread_local std::vector<float> xbuf, bbuf;
  const int64_t K = x.size(-1), N = w.size(0);
  int64_t M = 1;  // rows of x: every dim but the last
  for (int i = 0; i + 1 < x.dim(); ++i) M *= x.size(i);
  Tensor w2 = w;
  if (w.stride(1) != 1 || (w.size(0) > 1 && w.stride(0) < w.size(1))) w2 = w.contiguous();
  GemvArgs a;
  a.w = w2.data_ptr();
  a.ldw = w2.size(0) > 1 ? w2.stride(0) : w2.size(1);
  a.N = N;
  a.K = K;
  a.M = M;
  a.scale_kind = scale_kind(layout);
  a.scale = scale.defined() ? scale.data<float>() : nullptr;
  a.scale_ld = layout == ops::ScaleLayout::Block ? (K + kScaleBlock - 1) / kScaleBlock : 0;
  a.w_no_nan = codes == Fp8Codes::NoNan;
  if (subnormals && w.dtype() == DType::Float8_e4m3fn) {
    a.sub_row_start = subnormals->row_start.data();
    a.sub_col = subnormals->col.data();
    a.sub_row = subnormals->row.data();
    a.sub_code = subnormals->code.data();
  }
  if (M == 0 || N == 0) return;
  if (K == 0) {
    // An empty sum: the bias, or zeros.
    Tensor o = out;
    o.fill_(Scalar(0.0));
    if (bias.defined()) o.copy_(bias.reshape({N}));
    return;
  }

  // x as float32 rows [M, K]; bf16 rows as they are where the AVX512-BF16
  // GEMM takes the product (it would round float32 x to bf16 anyway).
  const bool bf16_gemm = M > kLinearGemvMaxRows && bf16_gemm_covers(w2.dtype(), a.scale_kind);
  Tensor xf;
  if (bf16_gemm && x.dtype() == DType::BFloat16 && x.is_contiguous()) {
    a.x_bf16 = static_cast<const uint16_t*>(x.data_ptr());
  } else if (x.dtype() == DType::Float32 && x.is_contiguous()) {
    a.x = x.data<float>();
  } else if (x.is_contiguous() && M <= kLinearGemvMaxRows) {
    float* buf = scratch(xbuf, size_t(M * K));
    convert_contiguous(x.data_ptr(), x.dtype(), buf, DType::Float32, M * K);
    a.x = buf;
  } else {
    xf = f32_contiguous(x);
    a.x = xf.data<float>();
  }
  a.ldx = K;

  Tensor bf;
  if (bias.defined()) {
    if (bias.dtype() == DType::Float32 && bias.is_contiguous()) {
      a.bias = bias.data<float>();
    } else if (bias.is_contiguous()) {
      float* buf = scratch(bbuf, size_t(N));
      convert_contiguous(bias.data_ptr(), bias.dtype(), buf, DType::Float32, N);
      a.bias = buf;
    } else {
      bf = f32_contiguous(bias);
      a.bias = bf.data<float>();
    }
  }

  if (M <= kLinearGemvMaxRows) {
    a.y = out.data_ptr();
    a.ldy = N;
    a.y_dtype = out.dtype();
    gemv(w2.dtype(), a);
    return;
  }
  if (bf16_gemm && (out.dtype() == DType::BFloat16 || out.dtype() == DType::Float16)) {
    a.y = out.data_ptr();  // rounded once, from the float32 sums
    a.ldy = N;
    a.y_dtype = out.dtype();
    gemm(w2.dtype(), a);
    return;
  }
  Tensor yf = out.dtype() == DType::Float32 ? out : empty({M, N}, DType::Float32);
  a.y = yf.data_ptr();
  a.ldy = N;
  a.y_dtype = DType::Float32;
  gemm(w2.dtype(), a);
  if (out.dtype() != DType::Float32)
    convert_contiguous(yf.data_ptr(), DType::Float32, out.data_ptr(), out.dtype(), M * N);
}

}  // namespace

void register_linear_kernels() { ops::linear.set_kernel(DeviceKind::CPU, linear_kernel); }

}  // namespace kiln::cpu
