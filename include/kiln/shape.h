// Joining and splitting tensors, with torch's names and semantics.
//
//   cat(xs, dim): xs joined along an existing dim. The result dtype is
//   torch.result_type over the inputs; 1-D empty inputs (shape [0]) are
//   skipped, as torch's legacy rule; the other inputs must have the same
//   number of dims and equal sizes outside `dim`. concat/concatenate are
//   Python aliases.
//   stack(xs, dim): xs (all one shape) joined along a new dim (-ndim-1..ndim).
//   hstack / vstack (row_stack) / dstack / column_stack: numpy's stacking
//   helpers, compositions of cat over atleast_1d/2d/3d views.
//   The *_out forms write into `out` (the result's shape; a dtype the result
//   can be cast to).
//
//   flip(x, dims), fliplr, flipud, roll(x, shifts, dims) (no dims: over the
//   flattened tensor), rot90(x, k, dims), repeat(x, repeats) (Tensor.repeat),
//   tile(x, dims), repeat_interleave(x, repeats, dim) (no dim: flattened),
//   tril/triu(x, diagonal) with out= and in-place forms: new tensors in x's
//   dtype (every dtype).
//
//   split / split_with_sizes / chunk / tensor_split / unbind / hsplit /
//   vsplit / dsplit return views of x (no copy).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "kiln/tensor.h"

namespace kiln {

Tensor cat(std::span<const Tensor> xs, int dim = 0);
void cat_out(std::span<const Tensor> xs, int dim, const Tensor& out);
Tensor stack(std::span<const Tensor> xs, int dim = 0);
void stack_out(std::span<const Tensor> xs, int dim, const Tensor& out);
Tensor hstack(std::span<const Tensor> xs);
Tensor vstack(std::span<const Tensor> xs);
Tensor dstack(std::span<const Tensor> xs);
Tensor column_stack(std::span<const Tensor> xs);

// x viewed with at least 1 / 2 / 3 dims (numpy's rules: a 1-D [n] becomes
// [1, n] and [1, n, 1]; a 2-D [m, n] becomes [m, n, 1]).
Tensor atleast_1d(const Tensor& x);
Tensor atleast_2d(const Tensor& x);
Tensor atleast_3d(const Tensor& x);

// Pieces of `split_size` along dim (the last one smaller).
std::vector<Tensor> split(const Tensor& x, int64_t split_size, int dim = 0);
// Pieces of the given sizes, which must sum to x.size(dim).
std::vector<Tensor> split_with_sizes(const Tensor& x, const std::vector<int64_t>& sizes, int dim = 0);
// At most `chunks` pieces of ceil(size / chunks).
std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int dim = 0);
// Exactly `sections` pieces, the first size % sections one longer (numpy's
// array_split); or the pieces between the given indices (clamped, Python
// slice rules).
std::vector<Tensor> tensor_split(const Tensor& x, int64_t sections, int dim = 0);
std::vector<Tensor> tensor_split(const Tensor& x, const std::vector<int64_t>& indices, int dim = 0);
std::vector<Tensor> unbind(const Tensor& x, int dim = 0);
// tensor_split along dim 1 (0 for 1-D) / 0 / 2; an int must divide that size.
std::vector<Tensor> hsplit(const Tensor& x, int64_t sections);
std::vector<Tensor> hsplit(const Tensor& x, const std::vector<int64_t>& indices);
std::vector<Tensor> vsplit(const Tensor& x, int64_t sections);
std::vector<Tensor> vsplit(const Tensor& x, const std::vector<int64_t>& indices);
std::vector<Tensor> dsplit(const Tensor& x, int64_t sections);
std::vector<Tensor> dsplit(const Tensor& x, const std::vector<int64_t>& indices);

Tensor flip(const Tensor& x, std::span<const int> dims);
Tensor fliplr(const Tensor& x);
Tensor flipud(const Tensor& x);
Tensor roll(const Tensor& x, std::span<const int64_t> shifts, std::span<const int> dims = {});
Tensor rot90(const Tensor& x, int64_t k, std::span<const int> dims);
Tensor repeat(const Tensor& x, std::span<const int64_t> repeats);
Tensor tile(const Tensor& x, std::span<const int64_t> dims);
Tensor repeat_interleave(const Tensor& x, int64_t repeats, std::optional<int> dim = std::nullopt);
Tensor repeat_interleave(const Tensor& x, const Tensor& repeats, std::optional<int> dim = std::nullopt);
// repeat_interleave(arange(repeats.numel()), repeats).
Tensor repeat_interleave(const Tensor& repeats);
Tensor tril(const Tensor& x, int64_t diagonal = 0);
Tensor triu(const Tensor& x, int64_t diagonal = 0);
void tril_out(const Tensor& x, int64_t diagonal, const Tensor& out);
void triu_out(const Tensor& x, int64_t diagonal, const Tensor& out);
Tensor& tril_(Tensor& x, int64_t diagonal = 0);
Tensor& triu_(Tensor& x, int64_t diagonal = 0);

// Views: the diagonal of dims (dim1, dim2) as a last dim (offset > 0 above
// the main diagonal); movedim (moveaxis); broadcast_to / broadcast_tensors
// (expand); unflatten (dim split into sizes, one may be -1).
Tensor diagonal(const Tensor& x, int64_t offset = 0, int dim1 = 0, int dim2 = 1);
Tensor movedim(const Tensor& x, std::span<const int> source, std::span<const int> destination);
Shape broadcast_shapes(std::span<const Shape> shapes);
Tensor broadcast_to(const Tensor& x, const Shape& shape);
std::vector<Tensor> broadcast_tensors(std::span<const Tensor> xs);
Tensor unflatten(const Tensor& x, int dim, const Shape& sizes);
// New tensors: diag (a vector's diagonal matrix, or a matrix's diagonal),
// diag_embed, diagflat, trace (the diagonal's sum, in sum's dtype).
Tensor diag(const Tensor& x, int64_t diagonal = 0);
Tensor diag_embed(const Tensor& x, int64_t offset = 0, int dim1 = -2, int dim2 = -1);
Tensor diagflat(const Tensor& x, int64_t offset = 0);
Tensor trace(const Tensor& x);

}  // namespace kiln
