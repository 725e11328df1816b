// Shape ops with a kernel of their own: joining (cat, stack), reordering
// (flip, roll, repeat) and triangles (tril, triu). The split family
// (split, chunk, tensor_split, unbind, hsplit/vsplit/dsplit) are views built by
// the front-end and have no kernel.
#pragma once

#include <span>

#include "kiln/tensor.h"

namespace kiln::ops {

// xs: the inputs to copy, each [d0, .., n_i, .., dk] (the front-end skipped the
// legacy 1-D empty ones and, for stack, unsqueezed each at `dim`); out:
// [d0, .., sum n_i, .., dk] in the promoted dtype; dim already wrapped.
using Cat = void(std::span<const Tensor> xs, int dim, const Tensor& out);

// x: [*]; out: [*] contiguous, x's dtype. dims: wrapped, distinct.
using Flip = void(const Tensor& x, std::span<const int> dims, const Tensor& out);
// out[i] = x[i - shifts[k] along dims[k]] (cyclic); shifts in [0, size),
// one per dim; dims wrapped, distinct. x: [*]; out: [*] contiguous.
using Roll = void(const Tensor& x, std::span<const int64_t> shifts, std::span<const int> dims,
                  const Tensor& out);
// x: [d0, .., dk] (viewed by the front-end with out's ndim); out: [d0 * r0, ..,
// dk * rk] contiguous: out[i] = x[i mod d].
using Repeat = void(const Tensor& x, const Tensor& out);
// x, out: [*, m, n] (same shape and dtype; out may be x itself, for tril_/
// triu_): the lower (tril: j - i <= diagonal) or upper (triu: j - i >=
// diagonal) triangle of each matrix, zeros elsewhere.
using Triangle = void(const Tensor& x, int64_t diagonal, const Tensor& out);

#define KILN_OPS_SHAPE(X) \
  X(cat, Cat)             \
  X(stack, Cat)           \
  X(flip, Flip)           \
  X(roll, Roll)           \
  X(repeat, Repeat)       \
  X(tril, Triangle)       \
  X(triu, Triangle)

}  // namespace kiln::ops
