// Transformer-layer pieces with torch.nn.functional names and semantics, plus
// the rotary-embedding helpers of Hugging Face models.
//
// Every op computes in float32 for float16/bfloat16/float32 inputs (float64 in
// float64) and returns the input's dtype. The *_out / trailing-underscore forms
// write into caller-provided tensors and allocate nothing for contiguous
// inputs: they are what the LLM runtime calls per token.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "kiln/tensor.h"

namespace kiln {

// ---- normalization ----

// F.rms_norm: x / sqrt(mean(x^2 over the trailing normalized_shape dims) + eps)
// * weight. eps = nullopt uses torch's default: finfo(x.dtype).eps, float32's
// for bf16/f16 inputs (torch computes those in float32).
Tensor rms_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight = Tensor(),
                std::optional<double> eps = std::nullopt);
// F.layer_norm: (x - mean) / sqrt(var_biased + eps) * weight + bias.
Tensor layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight = Tensor(),
                  const Tensor& bias = Tensor(), double eps = 1e-5);
// Over the last dim into out (x's shape; any floating dtype); weight/bias may be undefined.
void rms_norm_out(const Tensor& x, const Tensor& weight, double eps, const Tensor& out);
void layer_norm_out(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps, const Tensor& out);

// F.batch_norm on x [N, C, *]. training: normalize with the batch statistics
// (biased variance) and, when given, update running_mean/var in place with
// momentum (running_var gets the unbiased variance, as torch). Eval: use the
// running statistics, which are then required. Absent tensors are undefined.
Tensor batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var,
                  const Tensor& weight = Tensor(), const Tensor& bias = Tensor(), bool training = false,
                  double momentum = 0.1, double eps = 1e-5);

// ---- losses ----

// F.mse_loss: reduction "mean" | "sum" | "none"; input and target broadcast.
Tensor mse_loss(const Tensor& input, const Tensor& target, const std::string& reduction = "mean");

// ---- activations ----

// silu(gate) * up (the SwiGLU MLP's middle): same shapes, float dtypes.
Tensor swiglu(const Tensor& gate, const Tensor& up);
void swiglu_out(const Tensor& gate, const Tensor& up, const Tensor& out);

// ---- embeddings ----

// F.embedding(indices, weight): rows of weight [V, H] gathered at integer
// indices [...] -> [..., H]. FP8 tables (float8_e4m3fn / float8_e5m2) are
// widened, multiplied by row_scale[v] (a [V] or [V, 1] float tensor, or undefined),
// and returned as out_dtype (default float32; bfloat16/float16 allowed). Other
// tables return their own dtype unless out_dtype says otherwise.
// The overload with padding_idx (kiln/embedding.h) keeps that row's gradient
// zero. Out-of-range indices throw IndexError.
Tensor embedding(const Tensor& indices, const Tensor& weight, const Tensor& row_scale = Tensor(),
                 std::optional<DType> out_dtype = std::nullopt);
// out: [indices.numel(), H] or [..., H], contiguous.
void embedding_out(const Tensor& indices, const Tensor& weight, const Tensor& row_scale, const Tensor& out);

// ---- rotary position embeddings ----

// rope_scaling of a Hugging Face config: none / "linear" (positions divided by
// factor) / "llama3" (wavelength-dependent: low frequencies divided by factor,
// high kept, a smooth blend between).
struct RopeScaling {
  enum class Kind { None, Linear, Llama3 } kind = Kind::None;
  double factor = 1.0;
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  int64_t original_max_position_embeddings = 8192;
};

// inv_freq[i] = 1 / theta^(2i / rotary_dim), i < rotary_dim / 2, scaled: a
// float32 [rotary_dim / 2] tensor. rotary_dim must be even and positive.
Tensor rope_inv_freq(int64_t rotary_dim, double theta = 10000.0, const RopeScaling& scaling = {});

struct RopeTables {
  Tensor cos;  // [T, rotary_dim / 2] float32
  Tensor sin;
};
// cos/sin of positions[t] * inv_freq[i] (computed in float64, stored as float32);
// positions: an integer [T] tensor.
RopeTables rope_cos_sin(const Tensor& positions, const Tensor& inv_freq);
// The same for positions start, start + 1, ..., start + count - 1.
RopeTables rope_cos_sin(int64_t start, int64_t count, const Tensor& inv_freq);
// The same rows written into cos/sin, contiguous float32 [T, inv_freq.numel()],
// for positions start, ..., start + T - 1 (inv_freq: contiguous float32): the
// tables a decode step needs, computed when needed and without allocating.
void rope_cos_sin_out(int64_t start, const Tensor& inv_freq, const Tensor& cos, const Tensor& sin);

// Rotates the first rotary_dim = 2 * cos.size(-1) features of each head of
// x [..., T, H, D] (or [T, D] / any tensor whose dim -3 is T when it has >= 3 dims,
// dim -2 when it has 2); the remaining D - rotary_dim features pass through.
// interleaved = false: Hugging Face's rotate_half pairs (i, i + rotary_dim / 2);
// true: GPT-J / Meta pairs (2i, 2i + 1). cos/sin: [T, rotary_dim / 2].
Tensor apply_rotary_emb(const Tensor& x, const Tensor& cos, const Tensor& sin, bool interleaved = false);
// In place on a tensor of the same layout rules (writes x).
void apply_rotary_emb_(const Tensor& x, const Tensor& cos, const Tensor& sin, bool interleaved = false);

}  // namespace kiln
