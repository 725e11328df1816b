// The sampler's raw-pointer entry, for the runtime's token loop (src/llm)
// and the sampling benchmark; the API is sample() in kiln/sampling.h.
#pragma once

#include <cstdint>

#include "kiln/random.h"
#include "kiln/sampling.h"

namespace kiln {

// The runtime entry: one float32 row of V logits, which the penalties modify
// in place (pass a scratch row); prev: the nprev tokens generated so far.
int64_t sample_row_(float* logits, int64_t V, const SamplingParams& params, const int64_t* prev,
                    int64_t nprev, Generator& gen);

// The max of one float32 row of V logits (NaN if any is NaN): the runtime's
// check for NaN logits, with no allocation on the decode path.
float logits_max_(const float* logits, int64_t V);

}  // namespace kiln
