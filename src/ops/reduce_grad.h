// Autograd helpers shared by the reduction, scan, softmax and sort front-ends:
// putting a reduced gradient back in the input's shape, and the formulas more
// than one front-end uses. Everything here is written with kiln's public ops so
// a formula built from it differentiates again (create_graph=true).
#pragma once

#include <vector>

#include "core/autograd_record.h"
#include "kiln/reduce.h"
#include "kiln/tensor.h"

namespace kiln::rgrad {

// g (the shape of a reduction over mask, keepdim or not) with the reduced dims
// back as size 1: keepdim=false lost them, so unsqueeze at each one.
Tensor unreduce(const Tensor& g, const std::vector<bool>& mask, bool keepdim);
// unreduce(g), expanded to `shape` (the input's).
Tensor expand_reduced(const Tensor& g, const std::vector<bool>& mask, bool keepdim, const Shape& shape);
// The mask as a DimList (the reduced dims, ascending).
DimList dims_of(const std::vector<bool>& mask);
// Number of elements each output element reduces over.
int64_t group_size(const Shape& shape, const std::vector<bool>& mask);
// exp(x - logsumexp(x over mask)), computed as a softmax over the reduced dims
// so that it differentiates again with the softmax derivative.
Tensor group_softmax(const Tensor& x, const std::vector<bool>& mask);
// The reverse cumulative sum along dim: out[i] = sum_{j >= i} t[j].
Tensor reverse_cumsum(const Tensor& t, int dim);
// The gradient of a selection of x's elements (amax, amin, whole max/min):
// g split evenly among the elements equal to the selected value (NaN-equal
// when nan_equal), as torch.
Tensor evenly_distribute(const Tensor& g, const Tensor& x, const Tensor& value, const std::vector<bool>& mask,
                         bool keepdim, bool nan_equal);
// The gradient of values picked along dim at `indices` (max/min with dim,
// sort, topk): g scattered back to those positions of a zero tensor of
// x_sizes; keepdim=false: g and indices lost dim. A 0-dim x takes g as is.
Tensor select_backward(const Tensor& g, const Tensor& indices, int dim, bool keepdim, const Shape& x_sizes);
// NotImplementedError for a complex input whose formula would need a conjugate.
void reject_complex_grad(DType d, const char* op);

}  // namespace kiln::rgrad
