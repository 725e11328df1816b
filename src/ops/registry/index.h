// Indexing ops (include/kiln/index.h). Front-ends (src/ops/index_*.cc) check
// dtypes and shapes, wrap dims, validate gather/scatter/index_select/index_add
// indices, allocate outputs and clone operands that alias the destination.
// Kernels take int64 index tensors. Where a kernel turns indices into offsets
// (take, put, index, index_put) it checks their range in that same pass and
// throws the op's IndexError before writing anything the caller sees.
#pragma once

#include <span>

#include "kiln/scalar.h"
#include "kiln/tensor.h"

namespace kiln::ops {

// take: x: [*] any layout; index: int64 [*I] (negative wraps; range checked by
// the kernel); out: [*I] x's dtype, non-empty.
using Take = void(const Tensor& x, const Tensor& index, const Tensor& out);
// put: x: [*] written; index: int64 [*I] non-empty (negative wraps; range
// checked by the kernel before any write); source: [numel(I)] x's dtype, not
// aliasing x. accumulate: duplicates sum, else the last one wins.
using Put = void(const Tensor& x, const Tensor& index, const Tensor& source, bool accumulate);
// gather / index_select: x: [*] (dim >= 1); dim wrapped; index: int64, values
// in [0, x.size(dim)); out: allocated, non-empty.
//   gather:       index [*] of x's rank, out: index's shape.
//   index_select: index [K], out: x's shape with size(dim) = K.
using Gather = void(const Tensor& x, int dim, const Tensor& index, const Tensor& out);
// scatter / scatter_add: x: [*] written (dim >= 1); index: int64 non-empty, of
// x's rank, values in [0, x.size(dim)), not aliasing x; src: x's dtype and
// rank, index.size(d) <= src.size(d), not aliasing x.
using Scatter = void(const Tensor& x, int dim, const Tensor& index, const Tensor& src);
// index_add: x: [*] written (dim >= 1), non-empty; index: int64 [K], K > 0,
// values in [0, x.size(dim)); source: x's shape with size(dim) = K and x's
// dtype; index and source do not alias x. x.select(dim, index[k]) += alpha * source.select(dim, k).
using IndexAdd = void(const Tensor& x, int dim, const Tensor& index, const Tensor& source,
                      const Scalar& alpha);
// masked_fill: x: [*] written, non-empty; mask: bool, expanded to x's shape,
// not aliasing x; value: representable in x's dtype (complex only for complex x).
using MaskedFill = void(const Tensor& x, const Tensor& mask, const Scalar& value);
// masked_select: x and mask (bool) expanded to one shape, non-empty; returns
// the selected elements, [N] in x's dtype (N known only after the scan).
using MaskedSelect = Tensor(const Tensor& x, const Tensor& mask);
// nonzero: x: [*] non-empty; returns int64 [N, x.dim()], row-major order.
using Nonzero = Tensor(const Tensor& x);

// One advanced index of x[idx]: an int64 tensor (negative wraps) applied to
// dim `dim` of the basic-indexed view, expanded to the broadcast index shape B.
struct AdvancedIndex {
  int dim;
  Tensor index;
};
// index: view: [*] x after its basic indices; adv: non-empty, increasing dims;
// out: [rest[:b_pos], B, rest[b_pos:]], rest = view's non-indexed dims. The
// range of every index is checked (IndexError) even when out is empty.
using Index = void(const Tensor& view, std::span<const AdvancedIndex> adv, int b_pos, const Tensor& out);
// index_put: view written as for index. With adv empty: value has view's shape
// and accumulate is true (plain assignment is a copy). Else B is non-empty and
// value is [rest[:b_pos], B, rest[b_pos:]] in x's dtype, not aliasing x;
// indices are range checked before any write. accumulate: duplicates sum, else
// the last in B's row-major order wins.
using IndexPut = void(const Tensor& view, std::span<const AdvancedIndex> adv, int b_pos, const Tensor& value,
                      bool accumulate);

#define KILN_OPS_INDEX(X)        \
  X(take, Take)                  \
  X(put, Put)                    \
  X(gather, Gather)              \
  X(scatter, Scatter)            \
  X(scatter_add, Scatter)        \
  X(index_select, Gather)        \
  X(index_add, IndexAdd)         \
  X(masked_fill, MaskedFill)     \
  X(masked_select, MaskedSelect) \
  X(nonzero, Nonzero)            \
  X(index, Index)                \
  X(index_put, IndexPut)

}  // namespace kiln::ops
