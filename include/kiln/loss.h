// Classification losses with torch.nn.functional names and semantics
// (mse_loss is in kiln/nn.h).
#pragma once

#include <cstdint>
#include <string>

#include "kiln/tensor.h"

namespace kiln {

// F.nll_loss on log-probabilities input [N, C, *] (or [C]) with class indices
// target [N, *] (or []): elements whose target is ignore_index count for
// nothing; weight: a [C] per-class weight or undefined.
Tensor nll_loss(const Tensor& input, const Tensor& target, const Tensor& weight = Tensor(),
                int64_t ignore_index = -100, const std::string& reduction = "mean");

// F.cross_entropy on logits input [N, C, *] (or [C]): target holds class
// indices (an integer tensor, with ignore_index) or class probabilities (a
// float tensor of input's shape); label_smoothing mixes the target with the
// uniform distribution. Computed in float32 (float64 for float64 input).
Tensor cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight = Tensor(),
                     int64_t ignore_index = -100, const std::string& reduction = "mean",
                     double label_smoothing = 0.0);

}  // namespace kiln
