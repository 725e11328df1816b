// Reduction plans: dim lists -> masks -> coalesced kept/reduced geometry.
#include "ops/reduce_engine.h"

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

namespace {

struct DimStride {
  int64_t size, stride;
};

// Merges neighbours (outer a, inner b) that walk memory as one dim, which keeps
// the row-major linear index unchanged; empty -> one dim of size 1.
int coalesce(std::vector<DimStride>& v, int64_t* shape, int64_t* stride) {
  std::vector<DimStride> out;
  for (const DimStride& ds : v) {
    if (!out.empty() && out.back().stride == ds.stride * ds.size) {
      out.back().size *= ds.size;
      out.back().stride = ds.stride;
    } else {
      out.push_back(ds);
    }
  }
  if (out.empty()) out.push_back({1, 0});
  for (size_t i = 0; i < out.size(); ++i) {
    shape[i] = out[i].size;
    stride[i] = out[i].stride;
  }
  return int(out.size());
}

}  // namespace

ReducePlan make_reduce_plan(const Tensor& x, const std::vector<bool>& mask, bool keep_order) {
  ReducePlan p;
  std::vector<DimStride> kept, red;
  p.n_out = 1;
  p.n_red = 1;
  for (int d = 0; d < x.dim(); ++d) {
    const int64_t n = x.shape()[d];
    (mask[size_t(d)] ? p.n_red : p.n_out) *= n;
    if (n == 1) continue;
    (mask[size_t(d)] ? red : kept).push_back({n, x.strides()[d]});
  }
  if (!keep_order)
    std::stable_sort(red.begin(), red.end(), [](const DimStride& a, const DimStride& b) { return a.stride > b.stride; });
  p.ondim = coalesce(kept, p.oshape, p.ostride);
  p.rndim = coalesce(red, p.rshape, p.rstride);
  p.base = static_cast<const char*>(x.data_ptr());
  return p;
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

}  // namespace kiln
