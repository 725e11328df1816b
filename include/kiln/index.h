// Indexing ops with PyTorch names and semantics: take/put_, gather/scatter,
// index_select/index_add, masked_fill/masked_select, nonzero, and general
// Python-style indexing (x[idx] and x[idx] = v) through TensorIndex.
//
// Conventions for every op here:
//   - index tensors are int64 (int32 is accepted too); any other dtype throws
//     TypeError. Bool masks are bool.
//   - every index is validated before anything is written: an out-of-range
//     index throws IndexError naming the offending value and the size, and the
//     destination is left untouched.
//   - negative indices wrap where torch wraps them (take, put_, Python-style
//     indexing, index_put_); gather, scatter*, index_select and index_add
//     reject them as torch does.
//   - shape mismatches throw ValueError.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "kiln/scalar.h"
#include "kiln/tensor.h"

namespace kiln {

// ---- flat take / put ------------------------------------------------------

// x viewed as 1-D (row-major order) indexed by `index`; result has index's shape.
Tensor take(const Tensor& x, const Tensor& index);
// x.flatten()[index] = source (or += source with accumulate, duplicates
// summing). source must have as many elements as index. Returns x.
Tensor& put_(Tensor& x, const Tensor& index, const Tensor& source, bool accumulate = false);
Tensor put(const Tensor& x, const Tensor& index, const Tensor& source, bool accumulate = false);

// ---- gather / scatter -----------------------------------------------------

// out[i][j][k] = x[i][index[i][j][k]][k] (dim = 1). index has x's number of
// dims and index.size(d) <= x.size(d) for d != dim; out has index's shape.
Tensor gather(const Tensor& x, int dim, const Tensor& index);

// self[i][index[i][j][k]][k] = src[i][j][k] (dim = 1), for every position of
// index (index.size(d) <= src.size(d) for all d, <= x.size(d) for d != dim).
// With duplicate indices the last write wins.
Tensor& scatter_(Tensor& x, int dim, const Tensor& index, const Tensor& src);
Tensor& scatter_(Tensor& x, int dim, const Tensor& index, const Scalar& value);
Tensor scatter(const Tensor& x, int dim, const Tensor& index, const Tensor& src);
Tensor scatter(const Tensor& x, int dim, const Tensor& index, const Scalar& value);
// As scatter_, adding: duplicate indices sum.
Tensor& scatter_add_(Tensor& x, int dim, const Tensor& index, const Tensor& src);
Tensor scatter_add(const Tensor& x, int dim, const Tensor& index, const Tensor& src);

// ---- index_select / index_add ---------------------------------------------

// Picks entries of x along dim; index is 1-D (or 0-D). out.size(dim) = index.numel().
Tensor index_select(const Tensor& x, int dim, const Tensor& index);
// x.select(dim, index[i]) += alpha * source.select(dim, i); duplicates sum.
// source has x's shape except source.size(dim) == index.numel().
Tensor& index_add_(Tensor& x, int dim, const Tensor& index, const Tensor& source,
                   const Scalar& alpha = Scalar(int64_t(1)));
Tensor index_add(const Tensor& x, int dim, const Tensor& index, const Tensor& source,
                 const Scalar& alpha = Scalar(int64_t(1)));

// ---- masks ------------------------------------------------------------------

// x[mask] = value, mask (bool) broadcast to x's shape. A Tensor value must be 0-dim.
Tensor& masked_fill_(Tensor& x, const Tensor& mask, const Scalar& value);
Tensor& masked_fill_(Tensor& x, const Tensor& mask, const Tensor& value);
Tensor masked_fill(const Tensor& x, const Tensor& mask, const Scalar& value);
Tensor masked_fill(const Tensor& x, const Tensor& mask, const Tensor& value);
// The elements of x where mask (broadcast with x) is true, as a 1-D tensor.
Tensor masked_select(const Tensor& x, const Tensor& mask);
// Coordinates of the non-zero elements of x: int64 [N, x.dim()], row-major order.
Tensor nonzero(const Tensor& x);

// ---- Python-style indexing ------------------------------------------------

// start:stop:step with Python's defaults for what is left out; step > 0.
struct Slice {
  std::optional<int64_t> start = std::nullopt;
  std::optional<int64_t> stop = std::nullopt;
  std::optional<int64_t> step = std::nullopt;
};
struct NoneIndex {};      // None / newaxis: inserts a dim of size 1
struct EllipsisIndex {};  // ...: as many full slices as needed

namespace indexing {
inline constexpr NoneIndex None{};
inline constexpr EllipsisIndex Ellipsis{};
using kiln::Slice;
}  // namespace indexing

// One entry of a Python index tuple.
struct TensorIndex {
  enum class Kind : uint8_t { Integer, Slice, None, Ellipsis, Boolean, Tensor };

  TensorIndex(NoneIndex) : kind(Kind::None) {}
  TensorIndex(EllipsisIndex) : kind(Kind::Ellipsis) {}
  TensorIndex(kiln::Slice s) : kind(Kind::Slice), slice(s) {}
  TensorIndex(bool b) : kind(Kind::Boolean), boolean(b) {}
  template <typename T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
  TensorIndex(T i) : kind(Kind::Integer), integer(int64_t(i)) {}
  // An integer tensor (advanced index) or a bool tensor (mask).
  TensorIndex(kiln::Tensor t) : kind(Kind::Tensor), tensor(std::move(t)) {}

  Kind kind;
  int64_t integer = 0;   // Kind::Integer (negative wraps)
  kiln::Slice slice;     // Kind::Slice
  bool boolean = false;  // Kind::Boolean: x[True] adds a dim of 1, x[False] of 0
  kiln::Tensor tensor;   // Kind::Tensor
};

// x[idx]. Only ints, slices, None and Ellipsis (basic indexing): a view of x.
// With integer/bool tensors (advanced indexing): a copy. Integer tensors
// broadcast together; a bool tensor of k dims stands for the k integer tensors
// of its nonzero(); a bool scalar (or 0-dim bool tensor) adds a dim of size 1
// (true) or 0 (false). The broadcast index dims replace the indexed dims in
// place when all advanced indices are adjacent, else they go first (NumPy).
Tensor index(const Tensor& x, const std::vector<TensorIndex>& idx);

// x[idx] = value (or += with accumulate, duplicates summing), value broadcast
// to the shape of x[idx] and converted to x's dtype. With basic indices only it
// writes through the view. Returns x.
Tensor& index_put_(Tensor& x, const std::vector<TensorIndex>& idx, const Tensor& value,
                   bool accumulate = false);
Tensor& index_put_(Tensor& x, const std::vector<TensorIndex>& idx, const Scalar& value,
                   bool accumulate = false);
Tensor index_put(const Tensor& x, const std::vector<TensorIndex>& idx, const Tensor& value,
                 bool accumulate = false);

}  // namespace kiln
