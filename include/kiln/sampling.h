// Next-token sampling from logits: penalties, temperature, top-k, top-p,
// min-p, seeded and reproducible (Philox: one counter per draw from the
// generator, so a seed fixes the token sequence whatever the thread count).
//
// Order of the transforms, as Hugging Face's generate: repetition penalty
// (positive logits divided, negative multiplied), presence / frequency
// penalties (OpenAI: minus presence for each seen token, minus frequency * its
// count), temperature, top-k, top-p (nucleus of the renormalized top-k mass),
// min-p (keep p >= min_p * p_max). temperature == 0 or top_k == 1 is greedy
// (argmax; the first maximal index).
//
// The softmax is fused into the sampler: logits are read once for the max,
// once for the sum of exponentials (or a top-k heap), and a third time only
// over the candidates or up to the drawn token; no probability row is written.
#pragma once

#include <cstdint>

#include "kiln/random.h"
#include "kiln/tensor.h"

namespace kiln {

struct SamplingParams {
  double temperature = 1.0;
  int64_t top_k = 0;   // 0: off
  double top_p = 1.0;  // 1: off
  double min_p = 0.0;  // 0: off
  double repetition_penalty = 1.0;
  double presence_penalty = 0.0;
  double frequency_penalty = 0.0;
};

// logits [V] or [B, V] (float32, bfloat16, float16; not modified) -> int64 [] or
// [B]. prev_tokens: [n] (shared by every row) or [B, n] integer tensor, or
// undefined (none).
Tensor sample(const Tensor& logits, const SamplingParams& params = {}, const Tensor& prev_tokens = Tensor(),
              Generator* gen = nullptr);

}  // namespace kiln
