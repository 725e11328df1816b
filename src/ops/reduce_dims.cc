// Dim lists -> reduced-dim masks and output shapes; the shared checks.
#include "ops/reduce_dims.h"

#include <algorithm>
#include <string>

namespace kiln {

std::vector<bool> reduce_mask(const DimList& dim, int ndim, const char* op) {
  std::vector<bool> mask(size_t(ndim), false);
  if (!dim || dim->empty()) {
    mask.assign(size_t(ndim), true);
    return mask;
  }
  std::vector<bool> seen(size_t(std::max(ndim, 1)), false);
  for (int d : *dim) {
    const int w = wrap_dim(d, std::max(ndim, 1), op);
    if (seen[size_t(w)])
      throw ValueError(std::string("[") + op + "] dim " + std::to_string(w) +
                       " appears multiple times in the list of dims");
    seen[size_t(w)] = true;
    if (ndim > 0) mask[size_t(w)] = true;
  }
  return mask;
}

Shape reduced_shape(std::span<const int64_t> shape, const std::vector<bool>& mask, bool keepdim) {
  Shape out;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (!mask[d]) out.push_back(shape[d]);
    else if (keepdim) out.push_back(1);
  }
  return out;
}

void reject_fp8(const Tensor& x, const char* op) {
  if (is_fp8(x.dtype()))
    throw TypeError(std::string("[") + op + "] unsupported dtype " + name(x.dtype()) +
                    " (convert FP8 tensors with .to() first)");
}

void require_nonempty(const Tensor& x, const std::vector<bool>& mask, bool whole, const char* op) {
  if (whole) {
    if (x.numel() == 0)
      throw ValueError(std::string("[") + op + "] cannot perform reduction function " + op +
                       " on a tensor with no elements because the operation does not have an identity; shape " +
                       x.shape_str());
    return;
  }
  for (int d = 0; d < x.dim(); ++d)
    if (mask[size_t(d)] && x.shape()[d] == 0)
      throw IndexError(std::string("[") + op + "] expected reduction dim " + std::to_string(d) +
                       " to have non-zero size; shape " + x.shape_str());
}

void check_ordered(const Tensor& x, const char* op) {
  reject_fp8(x, op);
  if (is_complex(x.dtype()))
    throw TypeError(std::string("[") + op + "] does not support complex input (dtype " + name(x.dtype()) +
                    ")");
}

}  // namespace kiln
