// Front-end helpers shared by the reductions: dim lists to a reduced-dim mask,
// the output shape, and the checks whose messages every reduction shares.
// The mask is what the reduction kernels take (ops/registry/reduce.h).
#pragma once

#include <span>
#include <vector>

#include "kiln/reduce.h"
#include "kiln/tensor.h"

namespace kiln {

// Reduced-dim mask from a DimList: nullopt or {} = all; wraps negatives; throws
// IndexError (out of range) or ValueError (repeated dim). A 0-dim tensor
// accepts dims 0 and -1 (and gets an empty mask).
std::vector<bool> reduce_mask(const DimList& dim, int ndim, const char* op);
// The output shape for a mask.
Shape reduced_shape(std::span<const int64_t> shape, const std::vector<bool>& mask, bool keepdim);

// FP8 inputs: TypeError naming op.
void reject_fp8(const Tensor& x, const char* op);
// For the ops that order values (max, cummax, ...): FP8 or complex inputs: TypeError.
void check_ordered(const Tensor& x, const char* op);
// For ops without an identity (max, argmax, ...): throws when a reduced dim has
// size zero (IndexError) or a whole-tensor reduction sees no elements (ValueError).
void require_nonempty(const Tensor& x, const std::vector<bool>& mask, bool whole, const char* op);

}  // namespace kiln
