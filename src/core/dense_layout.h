// Dense layouts that follow other tensors' dims order: what torch's
// preserve_format and TensorIterator give an output (a channels-last input
// gives a channels-last result, a transposed one a transposed result).
#pragma once

#include <initializer_list>
#include <span>

#include "kiln/tensor.h"

namespace kiln {

// True when t's elements fill exactly numel() consecutive slots in some order
// of its dims (torch's is_non_overlapping_and_dense).
bool is_non_overlapping_and_dense(const Tensor& t);

// True when a and b have one shape and hold their elements as one dense run in
// the same order: both contiguous, or dense with equal strides in every dim of
// size > 1 (two channels-last tensors, or a channels-last video and a slab of
// frames of another). An elementwise kernel may then treat both as flat arrays.
bool same_dense_layout(const Tensor& a, const Tensor& b);

// Dense strides for `shape` whose dims are ordered in memory as the inputs'
// strides order them: the inputs (broadcast to `shape`, stride 0 where they
// broadcast) are asked in turn, the first with a strict answer for a pair of
// dims decides, and ties keep row-major order. Undefined and 0-dim inputs are
// skipped.
Shape dense_strides_following(std::span<const int64_t> shape, std::initializer_list<const Tensor*> inputs);

// The output of an elementwise op over `inputs`: contiguous when every input
// is (the unchanged fast path), else dense in the inputs' dims order.
Tensor empty_following(const Shape& shape, DType dtype, Device device,
                       std::initializer_list<const Tensor*> inputs);

}  // namespace kiln
