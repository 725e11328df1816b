// Reduction plans: a reduced-dim mask -> coalesced kept/reduced geometry.
#include "cpu/ops/reduce_engine.h"

#include <algorithm>

#include "cpu/ops/register.h"
#include "cpu/ops/reduce_register.h"

namespace kiln::cpu {

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

void register_reduce_kernels() {
  register_reduce_sum_kernels();
  register_reduce_minmax_kernels();
  register_reduce_moments_kernels();
  register_reduce_norm_kernels();
  register_reduce_scan_kernels();
}

}  // namespace kiln::cpu
