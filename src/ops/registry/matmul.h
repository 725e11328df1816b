// Matrix products and FP8 quantization: linear, matmul / mm / bmm, scaled_mm,
// grouped_mm, quantize_fp8 / dequantize and the FP8 code scans, and the MoE
// ops. The front-ends (src/ops/{linear,matmul,scaled_mm,grouped_mm,quantize}.cc,
// src/nn/moe.cc) have validated shapes, dtypes and scale layouts.
#pragma once

#include <cstdint>
#include <optional>

#include "kiln/block_quant.h"
#include "kiln/quantize.h"
#include "kiln/tensor.h"

namespace kiln::ops {

// How a weight scale for W [N, K] is laid out, read by the front-end from the
// scale's shape: one element; [N] or [N, 1]; [ceil(N/128), ceil(K/128)].
enum class ScaleLayout : uint8_t { None, Tensor, Row, Block };
inline constexpr int64_t kScaleBlock = 128;

// x: [..., K] float32/bfloat16/float16; w: [N, K] float32/bfloat16/float16/FP8;
// bias: undefined or N elements (any float dtype, [N] or [1]-like rank <= 1);
// scale: undefined, or float32 contiguous of `layout`; out: [..., N]
// contiguous, x's dtype or float32. codes, subnormals: what the caller knows
// of an FP8 w (kiln/quantize.h), subnormals checked against w's shape.
using Linear = void(const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& scale,
                    ScaleLayout layout, const Tensor& out, Fp8Codes codes, const Fp8Subnormals* subnormals);

// Weights as ggml blocks (kiln/block_quant.h). blocks: uint8 [N, row bytes],
// each row's bytes contiguous, for rows of K elements (whole blocks).
//   block_linear: x [M, K], out [M, N] float32 contiguous; bias undefined or
//     [N] float32 contiguous.
//   dequantize_blocks: out [N, K] float32 contiguous.
//   block_scales_finite: whether every block's scales are finite.
using BlockLinear = void(const Tensor& x, const Tensor& blocks, BlockType type, const Tensor& bias,
                         const Tensor& out);
using DequantizeBlocks = void(const Tensor& blocks, BlockType type, const Tensor& out);
using BlockScalesFinite = bool(const Tensor& blocks, BlockType type);

// a: [M, K] or [B, M, K]; b: [K, N] (shared by every batch) or [B, K, N];
// out: [M, N] / [B, M, N] contiguous; one dtype (float or integer) for all.
using Matmul = void(const Tensor& a, const Tensor& b, const Tensor& out);

// a [M, K], b [K, N] FP8; scale_a, scale_b float32 contiguous of `scheme`
// (Tensor: one element each; Row: [M, 1] and [1, N]; Block: [M, ceil(K/128)]
// and [ceil(K/128), ceil(N/128)]); bias: undefined or [N] bfloat16/float16;
// scale_result: undefined or one float32 element; out [M, N] contiguous.
using ScaledMm = void(const Tensor& a, const Tensor& b, const Tensor& scale_a, const Tensor& scale_b,
                      ScaleLayout scheme, const Tensor& bias, const Tensor& scale_result, const Tensor& out);

// offs [G] int32 contiguous, validated; out float32 contiguous, zero-filled.
//   2-D x 3-D: a [T, K] float32 contiguous, w [G, N, K] (b transposed: K
//     contiguous, rows and groups not overlapping) of a weight dtype, bias
//     undefined or [G, N] float32 contiguous, b_scale undefined or [G, N]
//     float32 contiguous; out [T, N].
//   3-D x 2-D: a [G, M, K], w [K, T] float32 contiguous; out [M, T].
//   2-D x 2-D: a [M, T], w [T, N] float32 contiguous; out [G, M, N].
using GroupedMm = void(const Tensor& a, const Tensor& w, const Tensor& offs, const Tensor& bias,
                       const Tensor& b_scale, const Tensor& out);

// w: [...] float (any layout); q: w's shape, contiguous FP8 (the format);
// scale: contiguous float32 of the granularity's shape (kiln/quantize.h).
// ValueError (naming w's shape) at the first NaN or inf of w.
using QuantizeFp8 = void(const Tensor& w, QuantGranularity granularity, const Tensor& q, const Tensor& scale);
// q: [...] float; scale: float32 contiguous of `layout` for q seen as
// [E, N, K] (Row: E * N elements; Block: [E, ceil(N/128), ceil(K/128)]);
// out: q's shape, float32 contiguous.
using Dequantize = void(const Tensor& q, const Tensor& scale, ScaleLayout layout, const Tensor& out);
// w: float8_e4m3fn, non-empty. True when a code is NaN (S.1111.111).
using Fp8HasNanCode = bool(const Tensor& w);
// w: float8_e4m3fn [E..., N, K], sides < 2^31; fills s (kiln/quantize.h).
using Fp8FindSubnormals = void(const Tensor& w, Fp8Subnormals& s);

// logits [T, E] float32 contiguous; weights [T, k] float32, ids [T, k] int32,
// contiguous: the k most probable experts per token.
using MoeRoute = void(const Tensor& logits, int64_t top_k, bool norm_topk_prob, const Tensor& weights,
                      const Tensor& ids);
// ids [R] int32 contiguous, in [0, E); perm [R], offs [E] int32 contiguous.
using MoePermute = void(const Tensor& ids, const Tensor& perm, const Tensor& offs);
// y_perm [T*k, H], weights [T, k] float32 contiguous; perm [T*k] int32
// contiguous, a permutation; out [T, H] float32 contiguous, zero-filled.
using MoeUnpermute = void(const Tensor& y_perm, const Tensor& perm, const Tensor& weights, const Tensor& out);

// Buffers of one MoE layer of T tokens (R = T * top_k), owned by the caller
// (the runtime allocates them once at load): p, order [T, E]; route_w
// [T, k]; route_ids, perm, inv [R]; counts [E + 1]; offs [E] (the expert
// groups' ends, left for the caller); xp, yp [R, H]; h [R, 2I]; act [R, I].
struct MoEScratch {
  float* p = nullptr;
  int32_t* order = nullptr;
  float* route_w = nullptr;
  int32_t* route_ids = nullptr;
  int32_t* perm = nullptr;
  int32_t* inv = nullptr;
  int64_t* counts = nullptr;
  int32_t* offs = nullptr;
  float *xp = nullptr, *h = nullptr, *act = nullptr, *yp = nullptr;
};
// What an MoE layer is run with besides its tensors.
struct MoEOptions {
  int64_t top_k = 0;
  bool norm_topk_prob = false;
  Fp8Codes codes = Fp8Codes::Unchecked;  // of both expert stacks (kiln/quantize.h)
  const Fp8Subnormals* gate_up_subnormals = nullptr;
  const Fp8Subnormals* down_subnormals = nullptr;
  // Set: the stack is ggml blocks of this type (kiln/block_quant.h), uint8
  // [E, N, row bytes] contiguous, without scales.
  std::optional<BlockType> gate_up_blocks, down_blocks;
};
// One SwiGLU MoE layer, nn.Linear layout: x [T, H], logits [T, E] float32
// contiguous; gate_up [E, 2I, H] (gate rows first), down [E, H, I] of a weight
// dtype, K contiguous, rows and experts not overlapping, or blocks (as
// MoEOptions says); gate_up_scale [E, 2I],
// down_scale [E, H]: undefined or float32 contiguous per-row scales;
// out [T, H] float32 contiguous, accumulated into:
// out[t] += sum_{e in topk(t)} w_te * down_e(silu(gate_e x_t) * up_e x_t).
using MoeFfn = void(const Tensor& x, const Tensor& logits, const Tensor& gate_up, const Tensor& gate_up_scale,
                    const Tensor& down, const Tensor& down_scale, const MoEOptions& options,
                    const MoEScratch& scratch, const Tensor& out);

#define KILN_OPS_MATMUL(X)                  \
  X(linear, Linear)                         \
  X(block_linear, BlockLinear)              \
  X(dequantize_blocks, DequantizeBlocks)    \
  X(block_scales_finite, BlockScalesFinite) \
  X(matmul, Matmul)                         \
  X(mm, Matmul)                             \
  X(bmm, Matmul)                            \
  X(scaled_mm, ScaledMm)                    \
  X(grouped_mm, GroupedMm)                  \
  X(quantize_fp8, QuantizeFp8)              \
  X(dequantize, Dequantize)                 \
  X(fp8_has_nan_code, Fp8HasNanCode)        \
  X(fp8_find_subnormals, Fp8FindSubnormals) \
  X(moe_route, MoeRoute)                    \
  X(moe_permute, MoePermute)                \
  X(moe_unpermute, MoeUnpermute)            \
  X(moe_ffn, MoeFfn)

}  // namespace kiln::ops
