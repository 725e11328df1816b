// The sampler's front-ends: parameter and shape checks, the private float32
// copy of the logits the penalties write into, then the ops (ops/registry/nn.h)
// whose kernels run the fused sampler row by row.
#include "kiln/sampling.h"
#include "nn/sampling.h"

#include <cmath>

#include "kiln/error.h"
#include "ops/registry/all.h"

namespace kiln {
namespace {

void check_params(const SamplingParams& p) {
  KILN_CHECK(p.temperature >= 0 && std::isfinite(p.temperature), ValueError,
             "[sample] temperature must be >= 0, got " << p.temperature);
  KILN_CHECK(p.top_k >= 0, ValueError, "[sample] top_k must be >= 0, got " << p.top_k);
  KILN_CHECK(p.top_p > 0 && p.top_p <= 1, ValueError, "[sample] top_p must be in (0, 1], got " << p.top_p);
  KILN_CHECK(p.min_p >= 0 && p.min_p <= 1, ValueError, "[sample] min_p must be in [0, 1], got " << p.min_p);
  KILN_CHECK(p.repetition_penalty > 0, ValueError,
             "[sample] repetition_penalty must be > 0, got " << p.repetition_penalty);
}

}  // namespace

int64_t sample_row_(float* x, int64_t V, const SamplingParams& p, const int64_t* prev, int64_t nprev,
                    Generator& gen) {
  check_params(p);
  KILN_CHECK(V > 0, ValueError, "[sample] empty logits row");
  // Host memory: the row form runs on the CPU.
  return ops::sample_row(Device{}, x, V, p, prev, nprev, gen);
}

float logits_max_(const float* x, int64_t V) {
  // Host memory: the row form runs on the CPU.
  return ops::logits_max(Device{}, x, V);
}

Tensor sample(const Tensor& logits, const SamplingParams& params, const Tensor& prev_tokens, Generator* gen) {
  check_params(params);
  KILN_CHECK(logits.dim() == 1 || logits.dim() == 2, ValueError,
             "[sample] logits must be [V] or [B, V], got " << logits.shape_str());
  KILN_CHECK(logits.dtype() == DType::Float32 || logits.dtype() == DType::BFloat16 ||
                 logits.dtype() == DType::Float16,
             TypeError, "[sample] logits must be float32, bfloat16 or float16, got " << name(logits.dtype()));
  const int64_t B = logits.dim() == 2 ? logits.size(0) : 1, V = logits.size(-1);
  KILN_CHECK(V > 0, ValueError, "[sample] logits " << logits.shape_str() << " have no vocabulary");
  // A private float32 copy: the penalties write into it.
  Tensor x = logits.to(DType::Float32).contiguous();
  if (x.data_ptr() == logits.data_ptr()) x = x.clone();
  Tensor prev;
  if (prev_tokens.defined()) {
    KILN_CHECK(is_integral(prev_tokens.dtype(), false) &&
                   (prev_tokens.dim() == 1 || (prev_tokens.dim() == 2 && prev_tokens.size(0) == B)),
               ValueError,
               "[sample] prev_tokens must be an integer [n] or [" << B << ", n] tensor, got "
                                                                  << prev_tokens.shape_str());
    prev = prev_tokens.to(DType::Int64).contiguous();
  }
  Generator& g = gen ? *gen : default_generator();
  Tensor out = empty(logits.dim() == 2 ? Shape{B} : Shape{}, DType::Int64, logits.device());
  ops::sample(common_device("sample", {&logits, &prev_tokens}), x, params, prev, g, out);
  return out;
}

}  // namespace kiln
