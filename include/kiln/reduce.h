// Reductions and scans with PyTorch names and semantics.
//
// Dims: `DimList dim` is std::nullopt or an empty list for "all dims" (as torch
// treats dim=None); negative dims wrap; a repeated dim throws ValueError, an
// out-of-range one IndexError. A 0-dim tensor accepts dim 0 / -1.
//
// Result dtypes (as torch):
//   sum, prod, cumsum, cumprod: bool and integer inputs accumulate in int64 and
//     return int64; floats return their own dtype (f16/bf16 accumulate in f32 or
//     wider, f32 in f64); `dtype` casts the input first and sets the result dtype.
//   mean: floating or complex input (or a floating/complex `dtype`), else TypeError.
//   var, std (and *_mean): floating or complex input; complex gives a real result.
//   norm: floating or complex input; complex gives a real result.
//   logsumexp: bool/integer inputs compute in (and return) float32.
//   max, min, amax, amin: the input dtype; complex throws TypeError.
//   argmax, argmin: int64.  all, any: bool (uint8 input gives uint8, as torch).
//   count_nonzero: int64.
// FP8 inputs throw TypeError (convert them explicitly with .to()).
//
// Empty reductions: sum -> 0, prod -> 1, mean -> NaN, var -> NaN, norm -> 0
// (p > 0), all -> true, any -> false; max/min/amax/amin/argmax/argmin over a
// zero-size dim throw IndexError (ValueError for a whole-tensor reduction).
// NaN propagates through max/min/amax/amin and argmax/argmin return the index of
// the first NaN; otherwise argmax/argmin return the first occurrence.
#pragma once

#include <optional>
#include <utility>
#include <vector>

#include "kiln/tensor.h"

namespace kiln {

// The dims to reduce: nullopt or {} = all dims.
using DimList = std::optional<std::vector<int>>;

// torch.return_types.max / min.
struct ValuesIndices {
  Tensor values;
  Tensor indices;  // int64
};

// ---- sums and products ----
Tensor sum(const Tensor& x, const DimList& dim = std::nullopt, bool keepdim = false,
           std::optional<DType> dtype = std::nullopt);
Tensor mean(const Tensor& x, const DimList& dim = std::nullopt, bool keepdim = false,
            std::optional<DType> dtype = std::nullopt);
// The sum / mean of the non-NaN entries (nanmean of none: NaN). Integer x:
// nansum is sum; nanmean needs a floating x or dtype.
Tensor nansum(const Tensor& x, const DimList& dim = std::nullopt, bool keepdim = false,
              std::optional<DType> dtype = std::nullopt);
Tensor nanmean(const Tensor& x, const DimList& dim = std::nullopt, bool keepdim = false,
               std::optional<DType> dtype = std::nullopt);
// torch.prod takes one dim; kiln accepts any set of dims.
Tensor prod(const Tensor& x, const DimList& dim = std::nullopt, bool keepdim = false,
            std::optional<DType> dtype = std::nullopt);

// ---- extrema ----
// Whole-tensor max/min: a 0-dim tensor of x's dtype.
Tensor max(const Tensor& x);
Tensor min(const Tensor& x);
// Along one dim: the values and the (first, or first-NaN) indices.
ValuesIndices max(const Tensor& x, int dim, bool keepdim = false);
ValuesIndices min(const Tensor& x, int dim, bool keepdim = false);
Tensor amax(const Tensor& x, const DimList& dim = std::nullopt, bool keepdim = false);
Tensor amin(const Tensor& x, const DimList& dim = std::nullopt, bool keepdim = false);
// dim = nullopt: the index into the flattened tensor (keepdim then keeps all
// dims as size 1).
Tensor argmax(const Tensor& x, std::optional<int> dim = std::nullopt, bool keepdim = false);
Tensor argmin(const Tensor& x, std::optional<int> dim = std::nullopt, bool keepdim = false);

// ---- moments ----
// var = sum((x - mean)^2) / max(0, N - correction); N - correction <= 0 gives
// inf (or NaN when the sum of squares is 0), as torch.
Tensor var(const Tensor& x, const DimList& dim = std::nullopt, double correction = 1.0,
           bool keepdim = false);
Tensor std(const Tensor& x, const DimList& dim = std::nullopt, double correction = 1.0,
           bool keepdim = false);
// Returns (var, mean) / (std, mean), as torch.var_mean / torch.std_mean.
std::pair<Tensor, Tensor> var_mean(const Tensor& x, const DimList& dim = std::nullopt,
                                   double correction = 1.0, bool keepdim = false);
std::pair<Tensor, Tensor> std_mean(const Tensor& x, const DimList& dim = std::nullopt,
                                   double correction = 1.0, bool keepdim = false);

// ---- log-sum-exp and norms ----
// log(sum(exp(x))) computed stably; all -inf gives -inf, any +inf gives +inf.
Tensor logsumexp(const Tensor& x, const DimList& dim = std::nullopt, bool keepdim = false);
// Vector p-norm over dims (torch.norm / torch.linalg.vector_norm): p = 2, 1,
// +-inf (max/min |x|), 0 (count of non-zeros) or any other real p.
Tensor norm(const Tensor& x, double p = 2.0, const DimList& dim = std::nullopt, bool keepdim = false,
            std::optional<DType> dtype = std::nullopt);

// ---- scans (output has x's shape) ----
Tensor cumsum(const Tensor& x, int dim, std::optional<DType> dtype = std::nullopt);
Tensor cumprod(const Tensor& x, int dim, std::optional<DType> dtype = std::nullopt);
// log(cumsum(exp(x))) without overflow; x floating.
Tensor logcumsumexp(const Tensor& x, int dim);
// Running max / min along dim and the index each came from: ties take the
// later index; a NaN sticks (its index moves on to each later NaN), as torch.
ValuesIndices cummax(const Tensor& x, int dim);
ValuesIndices cummin(const Tensor& x, int dim);

// ---- logical ----
Tensor all(const Tensor& x, const DimList& dim = std::nullopt, bool keepdim = false);
Tensor any(const Tensor& x, const DimList& dim = std::nullopt, bool keepdim = false);
// Number of non-zero elements over dims (no keepdim, as torch); int64.
Tensor count_nonzero(const Tensor& x, const DimList& dim = std::nullopt);

}  // namespace kiln
