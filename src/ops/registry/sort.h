// Sorting and counting (include/kiln/sort.h).
#pragma once

#include <cstdint>

#include "kiln/tensor.h"

namespace kiln::ops {

// x: [*] real (not complex), x.dim() >= 1, dim wrapped; values (x's dtype,
// may be undefined for argsort) and indices (int64): contiguous, x's shape.
// Stable: ties keep their order.
using Sort = void(const Tensor& x, int dim, bool descending, const Tensor& values, const Tensor& indices);
// As Sort with size(dim) = k <= x.size(dim) in values and indices: the k
// largest (or smallest) entries, ties by lower index; in order when sorted.
using TopK = void(const Tensor& x, int64_t k, int dim, bool largest, bool sorted, const Tensor& values,
                  const Tensor& indices);
// The order statistics of every line of x along dim (x: [*] real, not bool,
// dim wrapped, size(dim) >= 1; values (x's dtype) and indices (int64): x's
// shape with size(dim) = 1). Lines are ordered ascending with NaN last and
// ties by index (a stable sort's order); the entry picked is, for kthvalue,
// the k-th (1 <= k <= size(dim)); for median, the lower median ((n - 1) / 2)
// or the first NaN; for nanmedian, the lower median of the non-NaN values (the
// first NaN when all are NaN). Values keep x's exact bits.
using KthValue = void(const Tensor& x, int64_t k, int dim, const Tensor& values, const Tensor& indices);
using Median = void(const Tensor& x, int dim, const Tensor& values, const Tensor& indices);
// As Median (bool allowed): the most frequent value of each line (the
// smallest among equally frequent ones; NaN equals nothing) and the last
// index holding it.
using Mode = void(const Tensor& x, int dim, const Tensor& values, const Tensor& indices);

// x: [n] int64, contiguous, values in [0, out.size(0)); weights: [n] float64
// contiguous, or undefined; out: [nbins] zeros, int64 without weights, else
// float32 or float64.
using Bincount = void(const Tensor& x, const Tensor& weights, const Tensor& out);

// sorted: [*, m] (ascending along the last dim), or [m] for every row;
// values: [*, k] (the same leading dims, or any shape when sorted is 1-d, as
// [1, k]), sorted's dtype, real; sorter: undefined, or int64 [*, m] (sorted's
// shape) ordering each row. out: int64 or int32, values' shape, contiguous:
// per value, torch's binary search: the search moves right past an entry
// unless entry >= value (right: entry > value), so a NaN value lands at m.
using SearchSorted = void(const Tensor& sorted, const Tensor& values, const Tensor& sorter, bool right,
                          const Tensor& out);

// The runs of equal neighbours of x: [n] contiguous (sorted by the caller
// for unique; NaN equals nothing, so each NaN is a run of its own). Writes
// each run's value into values ([n], x's dtype) and length into counts
// ([n] int64, or undefined), and into inverse ([n] int64, or undefined) the
// run of each element: of x[i] at i, or, with order ([n] int64, where each
// element of x came from before sorting), at order[i]. Returns the number
// of runs.
using UniqueRuns = int64_t(const Tensor& x, const Tensor& order, const Tensor& values, const Tensor& inverse,
                           const Tensor& counts);

// The distinct rows of x: [m, k] contiguous, bool, integer or float (k may
// be 0: every row equal). sorted: the rows in lexicographic ascending order
// (stable; in each column NaN after every number, and NaNs tie for the
// order), else in x's order (unique_consecutive). Rows are equal when all k
// elements are (NaN equals nothing). Writes into first ([m] int64) the row of
// x that starts each run of equal neighbours, into inverse ([m] int64, or
// undefined) each row's run, into counts ([m] int64, or undefined) each run's
// length; returns the number of runs.
using UniqueRows = int64_t(const Tensor& x, bool sorted, const Tensor& first, const Tensor& inverse,
                           const Tensor& counts);

#define KILN_OPS_SORT(X)        \
  X(sort, Sort)                 \
  X(argsort, Sort)              \
  X(topk, TopK)                 \
  X(kthvalue, KthValue)         \
  X(median, Median)             \
  X(nanmedian, Median)          \
  X(mode, Mode)                 \
  X(bincount, Bincount)         \
  X(searchsorted, SearchSorted) \
  X(unique_runs, UniqueRuns)    \
  X(unique_rows, UniqueRows)

}  // namespace kiln::ops
