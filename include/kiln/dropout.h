// Dropout with torch.nn.functional's names, defaults and semantics: one fused
// pass that draws the keep mask from kiln's Philox stream (kiln/random.h) and
// writes the result; the backward regenerates the mask from (seed, offset)
// instead of storing it. The mask depends on (seed, offset) and the element's
// index alone, so it is the same whatever the thread count.
#pragma once

#include <cstdint>

#include "kiln/random.h"
#include "kiln/tensor.h"

namespace kiln {

// One mask: which elements are kept is a function of (seed, offset) alone.
// Draw j covers the `group` consecutive row-major elements [j * group,
// (j + 1) * group) (1: elementwise; a feature map's size: feature dropout)
// and keeps them when word j % 4 of philox(offset + j / 4, seed) is at least
// ceil(p * 2^32), so a mask of n draws uses (n + 3) / 4 counters.
struct DropoutMask {
  double p = 0.5;       // drop probability in [0, 1]; 1 drops every element
  bool alpha = false;   // alpha dropout (keeps SELU's mean and variance) instead of 1 / (1 - p)
  int64_t group = 1;    // elements per draw (>= 1, divides the element count)
  uint64_t seed = 0;    // Philox key
  uint64_t offset = 0;  // first Philox counter
};

// Counters that a mask of `draws` draws uses.
inline uint64_t dropout_counters(int64_t draws) { return (uint64_t(draws) + 3) / 4; }

// The fused op on an explicit mask (the functions below draw it from a
// generator). Kept elements: x * T(1 / (1 - p)); dropped: x * 0 (NaN stays
// NaN, as torch). alpha: a * x + alpha * a * p where kept and
// -alpha * a * (1 - p) where dropped, with alpha = 1.7580993408473766 and
// a = 1 / sqrt((alpha^2 p + 1)(1 - p)). p == 1: x * 0 for both. The
// gradient is dropout_backward(grad, m). x: [*] float16/bfloat16/float32/float64.
Tensor dropout_masked(const Tensor& x, const DropoutMask& m);
// In place into x (returned); a leaf that requires grad raises, as torch.
Tensor dropout_masked_(const Tensor& x, const DropoutMask& m);
// grad * noise, noise the forward's multiplier of x (T(1 / (1 - p)), alpha:
// T(a), where kept; 0 where dropped). Linear in grad: its own derivative.
Tensor dropout_backward(const Tensor& grad, const DropoutMask& m);

// F.dropout: zeroes each element with probability p and scales the rest by
// 1 / (1 - p). Not training, p == 0 or no elements: returns x itself. p
// outside [0, 1] raises ValueError. inplace writes x and returns it. gen: the
// default generator when null (kiln::manual_seed makes the mask reproducible).
Tensor dropout(const Tensor& x, double p = 0.5, bool training = true, bool inplace = false,
               Generator* gen = nullptr);
// F.dropout1d: whole channels of x [N, C, L] or [C, L] (other ranks raise).
Tensor dropout1d(const Tensor& x, double p = 0.5, bool training = true, bool inplace = false,
                 Generator* gen = nullptr);
// F.dropout2d: whole channels of x [N, C, *] (torch's rule: a 3-d input is
// [N, C, L], not an unbatched [C, H, W]; fewer than 2 dims raise).
Tensor dropout2d(const Tensor& x, double p = 0.5, bool training = true, bool inplace = false,
                 Generator* gen = nullptr);
// F.dropout3d: whole channels of x [N, C, D, H, W]; any other rank is taken
// as unbatched [C, *] (torch's rule; a 0-d input raises).
Tensor dropout3d(const Tensor& x, double p = 0.5, bool training = true, bool inplace = false,
                 Generator* gen = nullptr);
// F.alpha_dropout (training defaults to false, as torch).
Tensor alpha_dropout(const Tensor& x, double p = 0.5, bool training = false, bool inplace = false,
                     Generator* gen = nullptr);
// F.feature_alpha_dropout: alpha dropout of whole channels of x [N, C, *].
Tensor feature_alpha_dropout(const Tensor& x, double p = 0.5, bool training = false, bool inplace = false,
                             Generator* gen = nullptr);

}  // namespace kiln
