#include "ops/reduce_grad.h"

#include <string>

#include "kiln/binary.h"
#include "kiln/error.h"
#include "kiln/index.h"
#include "kiln/shape.h"
#include "kiln/softmax.h"
#include "kiln/unary.h"

namespace kiln::rgrad {

Tensor unreduce(const Tensor& g, const std::vector<bool>& mask, bool keepdim) {
  if (keepdim) return g;
  Tensor r = g;
  for (size_t d = 0; d < mask.size(); ++d)
    if (mask[d]) r = r.unsqueeze(int(d));
  return r;
}

Tensor expand_reduced(const Tensor& g, const std::vector<bool>& mask, bool keepdim, const Shape& shape) {
  return unreduce(g, mask, keepdim).expand(shape);
}

DimList dims_of(const std::vector<bool>& mask) {
  std::vector<int> dims;
  for (size_t d = 0; d < mask.size(); ++d)
    if (mask[d]) dims.push_back(int(d));
  return dims;
}

int64_t group_size(const Shape& shape, const std::vector<bool>& mask) {
  int64_t n = 1;
  for (size_t d = 0; d < mask.size(); ++d)
    if (mask[d]) n *= shape[d];
  return n;
}

Tensor group_softmax(const Tensor& x, const std::vector<bool>& mask) {
  std::vector<int> kept, reduced;
  for (size_t d = 0; d < mask.size(); ++d) (mask[d] ? reduced : kept).push_back(int(d));
  if (reduced.empty()) return softmax(x, 0);  // a 0-dim x (or no reduced dim): one element per group
  if (reduced.size() == 1) return softmax(x, reduced[0]);
  // [kept..., reduced...] -> [kept..., K]: one softmax over the flattened group.
  std::vector<int> perm = kept;
  perm.insert(perm.end(), reduced.begin(), reduced.end());
  const Tensor xp = x.permute(perm);  // [kept..., reduced...]
  Shape flat;
  for (int d : kept) flat.push_back(x.size(d));
  flat.push_back(group_size(x.sizes(), mask));
  const Tensor s = softmax(xp.reshape(flat), -1).reshape(xp.sizes());  // [kept..., reduced...]
  std::vector<int> inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inverse[size_t(perm[i])] = int(i);
  return s.permute(inverse);
}

Tensor reverse_cumsum(const Tensor& t, int dim) {
  if (t.dim() == 0) return t;
  const int dims[1] = {dim};
  return flip(cumsum(flip(t, dims), dim), dims);
}

Tensor evenly_distribute(const Tensor& g, const Tensor& x, const Tensor& value, const std::vector<bool>& mask,
                         bool keepdim, bool nan_equal) {
  const Tensor v = unreduce(value, mask, keepdim);
  Tensor hit = eq(x, v);
  if (nan_equal) hit = logical_or(hit, logical_and(isnan(x), isnan(v)));
  const Tensor w = hit.to(g.dtype());                            // x's shape
  const Tensor count = sum(w, dims_of(mask), /*keepdim=*/true);  // reduced dims kept as 1
  return div(mul(unreduce(g, mask, keepdim), w), count);
}

Tensor select_backward(const Tensor& g, const Tensor& indices, int dim, bool keepdim, const Shape& x_sizes) {
  if (x_sizes.empty()) return g.reshape({});
  const Tensor gi = keepdim ? g : g.unsqueeze(dim);
  const Tensor ii = keepdim ? indices : indices.unsqueeze(dim);
  return scatter(zeros(x_sizes, g.dtype(), g.device()), dim, ii, gi);
}

void reject_complex_grad(DType d, const char* op) {
  if (is_complex(d))
    throw NotImplementedError(std::string("[") + op + "] complex gradients are not implemented in kiln yet");
}

}  // namespace kiln::rgrad
