// The fused sampler on one host row of float32 logits (cpu/sampling.cc):
// behind the sample and sample_row ops (cpu/ops/sampling.cc).
#pragma once

#include <cstdint>

#include "kiln/random.h"
#include "kiln/sampling.h"

namespace kiln::cpu {

// logits [V] (V > 0; the penalties modify it), prev [nprev]; params already
// checked. Returns the token. IndexError for a previous token outside [0, V),
// ValueError for a NaN / +inf / all -inf row.
int64_t sample_row(float* logits, int64_t V, const SamplingParams& params, const int64_t* prev, int64_t nprev,
                   Generator& gen);

}  // namespace kiln::cpu
