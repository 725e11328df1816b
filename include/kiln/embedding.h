// F.embedding with padding_idx (the form training needs; kiln/nn.h has the
// inference forms).
#pragma once

#include <cstdint>
#include <optional>

#include "kiln/tensor.h"

namespace kiln {

// F.embedding(indices, weight, padding_idx) (kiln/nn.h's embedding for other
// tables): the padding_idx row (negative counts from the end) gets no gradient.
Tensor embedding(const Tensor& indices, const Tensor& weight, int64_t padding_idx,
                 const Tensor& row_scale = Tensor(), std::optional<DType> out_dtype = std::nullopt);

}  // namespace kiln
