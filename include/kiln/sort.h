// Sorting, searching and counting with PyTorch names and semantics: sort,
// argsort, topk, searchsorted, bucketize, unique, bincount.
//
// Ordering is total and matches torch: NaN compares larger than every number
// (last ascending, first descending), -0.0 and 0.0 are equal; complex values
// are not ordered (TypeError). Indices are int64.
#pragma once

#include <cstdint>

#include "kiln/reduce.h"
#include "kiln/tensor.h"

namespace kiln {

struct SortResult {
  Tensor values;   // x's dtype and shape
  Tensor indices;  // int64, positions along dim in x
};

// Sorts along dim. The sort is always stable (equal elements keep their
// order), so `stable` only documents intent; indices of ties ascend.
SortResult sort(const Tensor& x, int dim = -1, bool descending = false, bool stable = true);
Tensor argsort(const Tensor& x, int dim = -1, bool descending = false, bool stable = true);

// The k largest (or smallest) entries along dim, 0 <= k <= x.size(dim). With
// sorted, in order (largest first when largest); ties keep the lower index first.
SortResult topk(const Tensor& x, int64_t k, int dim = -1, bool largest = true, bool sorted = true);

// Order statistics along dim, as torch's: values and the int64 index along dim
// where each was found, dim removed unless keepdim. A line is ranked in the
// order a stable ascending sort gives it (NaN after every number, ties by
// index), so the index of a tied value is deterministic: the one at that
// rank. FP8, complex and (but for mode) bool tensors are refused; an empty
// dim raises IndexError.
//   kthvalue: the k-th smallest, 1 <= k <= size(dim) (else IndexError).
//   median: the lower median, entry (n - 1) / 2, or NaN (the first) when the
//     line holds one; nanmedian: the lower median of the non-NaN entries.
//   mode: the most frequent value (the smallest among equally frequent ones;
//     NaNs are all distinct) and the last index holding it.
ValuesIndices kthvalue(const Tensor& x, int64_t k, int dim = -1, bool keepdim = false);
ValuesIndices median(const Tensor& x, int dim, bool keepdim = false);
ValuesIndices nanmedian(const Tensor& x, int dim, bool keepdim = false);
ValuesIndices mode(const Tensor& x, int dim = -1, bool keepdim = false);
// Over every entry: a 0-d tensor. Its gradient is shared evenly among the
// entries equal to the result, as torch's. Empty: NaN (a floating x) or
// ValueError (an integer one, where torch returns a NaN cast to the dtype).
Tensor median(const Tensor& x);
Tensor nanmedian(const Tensor& x);

// Counts of each value of the 1-D non-negative integer tensor x: result has
// max(max(x) + 1, minlength) entries. Without weights: int64 counts. With
// weights (same length as x): sums of weights per bin, float32 for float32
// weights and float64 for anything else (as torch).
Tensor bincount(const Tensor& x, const Tensor& weights = Tensor(), int64_t minlength = 0);

// For each value, its insertion position in the ascending last dim of
// `sorted` (1-d for every value, or the same leading dims as `values`): before
// equal entries, or after them when right. sorter: int64 indices that sort
// each row (argsort's), or undefined. int64 result (int32 with out_int32) of
// values' shape. Mixed dtypes are compared in their promoted dtype.
Tensor searchsorted(const Tensor& sorted, const Tensor& values, bool right = false, bool out_int32 = false,
                    const Tensor& sorter = Tensor());
// unique / unique_consecutive over the flattened x: the distinct values
// (ascending for unique; the first of each run of equal neighbours for
// unique_consecutive), and when asked the run of each element (inverse, x's
// shape) and each value's count. NaNs are all distinct, as in torch.
struct UniqueResult {
  Tensor values, inverse, counts;  // inverse and counts: int64, undefined unless asked
};
UniqueResult unique(const Tensor& x, bool return_inverse = false, bool return_counts = false);
UniqueResult unique_consecutive(const Tensor& x, bool return_inverse = false, bool return_counts = false);
// The same along dim: the distinct slices x.select(dim, i), compared element
// by element (unique: in lexicographic ascending order, NaN after every
// number of its position; unique_consecutive: the first of each run of equal
// neighbouring slices). values: x's shape with size(dim) the number of
// distinct slices; inverse and counts: [x.size(dim)] and [that number].
UniqueResult unique_dim(const Tensor& x, int64_t dim, bool return_inverse, bool return_counts);
UniqueResult unique_consecutive_dim(const Tensor& x, int64_t dim, bool return_inverse, bool return_counts);

// The bucket of each entry of x among 1-d ascending boundaries:
// searchsorted(boundaries, x, right).
Tensor bucketize(const Tensor& x, const Tensor& boundaries, bool right = false, bool out_int32 = false);

}  // namespace kiln
