// Linear layers: y = x @ (W * scale)^T + bias, with weights in float32,
// bfloat16, float16 or FP8 (float8_e4m3fn / float8_e5m2) and a weight scale per
// tensor, per output row or per 128x128 block (Hugging Face FP8 checkpoints).
//
// One-token inputs (a few rows in all) run a
// matrix-vector kernel that reads each weight once with the bias fused; more
// rows run a packed GEMM with a SIMD micro-kernel that widens the weights into
// cache-sized float32 panels as it goes (OpenBLAS sgemm for plain float32
// weights once x outgrows L2).
#pragma once

#include "kiln/quantize.h"
#include "kiln/tensor.h"

namespace kiln {

// torch.nn.functional.linear. x: [..., K] (float32, bfloat16 or float16);
// weight: [N, K] (or [K]: y = x @ w, [...]); bias: [N], undefined, or any
// shape that broadcasts to y (added after the kernel); weight_scale: undefined,
// one element (per tensor), [N] or [N, 1] (per row), or [ceil(N/128),
// ceil(K/128)] (per 128x128 block), float32. Returns [..., N] in x's dtype.
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor(),
              const Tensor& weight_scale = Tensor());

// The same into `out` ([..., N], x's dtype or float32, contiguous). With
// float32 x, contiguous inputs and a float32 bias it allocates nothing for
// the few rows of a decode step: the call a decode loop makes once per layer
// per token. codes and subnormals: what the caller knows of an FP8 weight
// (kiln/quantize.h); subnormals, when given, must list this weight's
// (ValueError if its shape differs).
void linear_out(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& weight_scale,
                const Tensor& out, Fp8Codes codes = Fp8Codes::Unchecked,
                const Fp8Subnormals* subnormals = nullptr);

}  // namespace kiln
