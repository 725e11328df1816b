// kthvalue, median, nanmedian and mode front-ends: dtype, dim and k checks,
// the keepdim-shaped outputs, the op (ops/registry/sort.h), and the
// derivative: the gradient of a value picked along a dim goes to its index;
// a whole-tensor median shares it among the entries equal to the result, as
// torch's.
#include <functional>
#include <limits>
#include <string>

#include "core/autograd_record.h"
#include "kiln/sort.h"
#include "ops/reduce_dims.h"
#include "ops/reduce_grad.h"
#include "ops/registry/all.h"

namespace kiln {
namespace {

// Bool lines order, but torch counts them (mode) without ranking them.
void check_rankable(const Tensor& x, const char* op) {
  check_ordered(x, op);
  if (x.dtype() == DType::Bool)
    throw NotImplementedError(std::string("[") + op + "] is not implemented for bool tensors");
}

using LineOp =
    std::function<void(Device, const Tensor& x, int dim, const Tensor& values, const Tensor& indices)>;

// Runs a line op along dim: outputs [.., 1, ..] (squeezed unless keepdim);
// a 0-d x is one line of one.
ValuesIndices along(const char* op, const char* node, const Tensor& x, int dim_in, bool keepdim,
                    const LineOp& run) {
  const std::vector<bool> mask = reduce_mask(std::vector<int>{dim_in}, x.dim(), op);
  require_nonempty(x, mask, false, op);
  const int dim = x.dim() == 0 ? 0 : wrap_dim(dim_in, x.dim(), op);
  autograd::Record rec(op, {&x});
  const Tensor line = x.dim() == 0 ? x.view({1}) : x;
  Shape kept = line.sizes();
  kept[size_t(dim)] = 1;
  ValuesIndices r{empty(kept, x.dtype(), x.device()), empty(kept, DType::Int64, x.device())};
  if (r.values.numel() > 0)
    run(common_device(op, {&x, &r.values, &r.indices}), line, dim, r.values, r.indices);
  if (x.dim() == 0)
    r = {r.values.view({}), r.indices.view({})};
  else if (!keepdim)
    r = {r.values.squeeze(dim), r.indices.squeeze(dim)};
  if (rec)
    rec.finish(node, {&r.values, &r.indices}, {r.indices},
               [dim, keepdim, sizes = x.sizes()](autograd::FnNode& n, autograd::Grads& g) {
                 return autograd::Grads{rgrad::select_backward(g[0], n.saved(0), dim, keepdim, sizes)};
               });
  return r;
}

// The median of every entry: a 0-d tensor (NaN for an empty floating x).
Tensor whole_median(const char* op, const char* node, const Tensor& x, Op<ops::Median>& median_op) {
  check_rankable(x, op);
  if (x.numel() == 0) {
    if (!is_floating(x.dtype()))
      throw ValueError(std::string("[") + op + "] an empty " + name(x.dtype()) +
                       " tensor has no median (a floating tensor gives NaN)");
    return full({}, Scalar(std::numeric_limits<double>::quiet_NaN()), x.dtype(), x.device());
  }
  autograd::Record rec(op, {&x});
  const Tensor flat = x.reshape({x.numel()});
  Tensor value = empty({1}, x.dtype(), x.device()), index = empty({1}, DType::Int64, x.device());
  median_op(common_device(op, {&x, &value, &index}), flat, 0, value, index);
  value = value.view({});
  if (rec)
    rec.finish(node, {&value}, {x, value}, [nd = x.dim()](autograd::FnNode& n, autograd::Grads& g) {
      return autograd::Grads{rgrad::evenly_distribute(g[0], n.saved(0), n.saved(1),
                                                      std::vector<bool>(size_t(nd), true), false, true)};
    });
  return value;
}

LineOp median_line(Op<ops::Median>& op) {
  return [&op](Device d, const Tensor& x, int dim, const Tensor& v, const Tensor& i) { op(d, x, dim, v, i); };
}

}  // namespace

ValuesIndices kthvalue(const Tensor& x, int64_t k, int dim, bool keepdim) {
  check_rankable(x, "kthvalue");
  const int64_t n = x.dim() == 0 ? 1 : x.size(wrap_dim(dim, x.dim(), "kthvalue"));
  if (k < 1 || k > n)
    throw IndexError("[kthvalue] selected number k (" + std::to_string(k) + ") out of range for dimension " +
                     std::to_string(dim) + " of size " + std::to_string(n));
  return along("kthvalue", "KthvalueBackward0", x, dim, keepdim,
               [k](Device d, const Tensor& line, int ld, const Tensor& v, const Tensor& i) {
                 ops::kthvalue(d, line, k, ld, v, i);
               });
}

ValuesIndices median(const Tensor& x, int dim, bool keepdim) {
  check_rankable(x, "median");
  return along("median", "MedianBackward1", x, dim, keepdim, median_line(ops::median));
}

Tensor median(const Tensor& x) { return whole_median("median", "MedianBackward0", x, ops::median); }

ValuesIndices nanmedian(const Tensor& x, int dim, bool keepdim) {
  check_rankable(x, "nanmedian");
  return along("nanmedian", "NanmedianBackward1", x, dim, keepdim, median_line(ops::nanmedian));
}

Tensor nanmedian(const Tensor& x) {
  return whole_median("nanmedian", "NanmedianBackward0", x, ops::nanmedian);
}

ValuesIndices mode(const Tensor& x, int dim, bool keepdim) {
  check_ordered(x, "mode");
  return along("mode", "ModeBackward0", x, dim, keepdim,
               [](Device d, const Tensor& line, int ld, const Tensor& v, const Tensor& i) {
                 ops::mode(d, line, ld, v, i);
               });
}

}  // namespace kiln
