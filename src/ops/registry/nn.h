// Transformer-layer ops (include/kiln/nn.h, attention.h, sampling.h): norms,
// SwiGLU, embedding, rotary embeddings, batch_norm, attention, sampling.
// mse_loss is not here: it is composed of registered elementwise ops and
// reductions. KVCache::append writes through Tensor::copy_.
#pragma once

#include <cstdint>

#include "kiln/nn.h"
#include "kiln/random.h"
#include "kiln/sampling.h"
#include "kiln/tensor.h"

namespace kiln::ops {

// x: [*, n] (rows of the n trailing elements; any layout) float16/bfloat16/
// float32/float64; weight, bias: n elements of a float dtype, or undefined;
// out: x's shape, any of those float dtypes.
using RmsNorm = void(const Tensor& x, const Tensor& weight, int64_t n, double eps, const Tensor& out);
using LayerNorm = void(const Tensor& x, const Tensor& weight, const Tensor& bias, int64_t n, double eps,
                       const Tensor& out);

// x: [N, C, *] float; running_mean/var, weight, bias: C elements of a float
// dtype or undefined (running stats defined when !training); out: x's shape
// and dtype. training: batch statistics, and running_mean/var (when defined)
// updated in place.
using BatchNorm = void(const Tensor& x, const Tensor& running_mean, const Tensor& running_var,
                       const Tensor& weight, const Tensor& bias, bool training, double momentum, double eps,
                       const Tensor& out);

// gate, up: [*] one float dtype and shape (any layout); out: [*] any float dtype.
using Swiglu = void(const Tensor& gate, const Tensor& up, const Tensor& out);

// indices: [*] integer (values checked against V here: IndexError); weight:
// [V, H] float or FP8; row_scale: [V] float32 contiguous or undefined; out:
// contiguous [indices.numel() rows of H] float. With out empty, only checks.
using Embedding = void(const Tensor& indices, const Tensor& weight, const Tensor& row_scale,
                       const Tensor& out);

// out: float32 [rotary_dim / 2] contiguous.
using RopeInvFreq = void(int64_t rotary_dim, double theta, const RopeScaling& scaling, const Tensor& out);
// positions: int64 [T] contiguous, or undefined for start, start + 1, ...;
// inv_freq: float32 [h] contiguous; cos, sin: float32 [T, h] contiguous.
using RopeCosSin = void(const Tensor& positions, int64_t start, const Tensor& inv_freq, const Tensor& cos,
                        const Tensor& sin);
// Rotates x in place: x [..., T, H, D] (or [T, D]) float with a unit-stride
// last dim and no internal overlap; cos, sin: float32 [T, half] contiguous,
// 2 * half <= D.
using ApplyRotaryEmb = void(const Tensor& x, const Tensor& cos, const Tensor& sin, bool interleaved);

// Attention dropout as drawn by the front-end: drop probability, Philox key
// and the first counter of this call (one counter per 4 (row, key) draws).
struct AttentionDropout {
  float p = 0.0f;
  uint64_t seed = 0;
  uint64_t offset = 0;
};
// q: [*batch, Hq, L, E], k: [*batch, Hkv, S, E], v: [*batch, Hkv, S, Ev] float16/
// bfloat16/float32 views (batch dims expanded; unit-stride last dim when wider
// than 1); out: [*batch, Hout, L, Ev] float16/bfloat16/float32, unit-stride
// last dim. Hq is 1 or Hout; Hkv is 1 or divides Hout (output head h reads KV
// head h / (Hout / Hkv)). mask: bool (true = attend) or floating additive,
// broadcastable to [*batch, Hout, L, S] (checked), or undefined. causal: row i
// sees keys j <= i + causal_offset.
using Attention = void(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask, double scale,
                       bool causal, int64_t causal_offset, const AttentionDropout& dropout,
                       const Tensor& out);

// logits: float32 [B, V] contiguous, a private copy the penalties modify;
// prev: int64 [n] (every row) or [B, n] contiguous, or undefined; out: int64
// [B] contiguous. params checked.
using Sample = void(const Tensor& logits, const SamplingParams& params, const Tensor& prev, Generator& gen,
                    const Tensor& out);
// The runtime's row form on host memory: logits [V] float32 (modified), prev
// [nprev]; returns the token.
using SampleRow = int64_t(float* logits, int64_t V, const SamplingParams& params, const int64_t* prev,
                          int64_t nprev, Generator& gen);
// The runtime's NaN check before sampling, on host memory: the max of logits
// [V] float32 (NaN if any entry is NaN; -inf when V == 0).
using LogitsMax = float(const float* logits, int64_t V);

#define KILN_OPS_NN(X)                       \
  X(rms_norm, RmsNorm)                       \
  X(layer_norm, LayerNorm)                   \
  X(batch_norm, BatchNorm)                   \
  X(swiglu, Swiglu)                          \
  X(embedding, Embedding)                    \
  X(rope_inv_freq, RopeInvFreq)              \
  X(rope_cos_sin, RopeCosSin)                \
  X(apply_rotary_emb, ApplyRotaryEmb)        \
  X(scaled_dot_product_attention, Attention) \
  X(sample, Sample)                          \
  X(sample_row, SampleRow)                   \
  X(logits_max, LogitsMax)

}  // namespace kiln::ops
