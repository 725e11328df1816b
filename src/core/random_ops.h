// The random factories' ops (rand, randn, randint): their front-ends are in
// core/random.cc, which draws (seed, offset) from the Generator; the kernels
// are a backend's (src/cpu/ops/random.cc). Listed in ops/registry/all.h.
#pragma once

#include <cstdint>

#include "core/op.h"
#include "kiln/tensor.h"

namespace kiln::ops {

// out: [*] contiguous, a float dtype (rand, randn). Element i is a function
// of philox(offset + i, seed) alone, so any split across threads gives the
// same bits: rand uniform in [0, 1), randn standard normal (Box-Muller).
using Rand = void(const Tensor& out, uint64_t seed, uint64_t offset);
// out: [*] contiguous, an integer or float dtype; low < high. Element i is
// low + (64 bits of philox(offset + i, seed)) mod (high - low).
using RandInt = void(const Tensor& out, uint64_t seed, uint64_t offset, int64_t low, int64_t high);

#define KILN_OPS_RANDOM(X) \
  X(rand, Rand)            \
  X(randn, Rand)           \
  X(randint, RandInt)

extern Op<Rand> rand;
extern Op<Rand> randn;
extern Op<RandInt> randint;

}  // namespace kiln::ops
