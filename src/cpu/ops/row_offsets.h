// The lines of a tensor along one dim, for kernels that work a line at a time
// (sort, topk, the order statistics): row r enumerates every other dim in
// row-major order, and offsets() gives where row r starts in x and in out.
#pragma once

#include <cstdint>

#include "kiln/tensor.h"

namespace kiln::cpu {

// Element offset of row r, rows enumerating every dim but `dim` in row-major order.
struct RowOffsets {
  Shape shape, x_strides, out_strides;
  void build(const Tensor& x, const Tensor& out, int dim) {
    for (int d = 0; d < x.dim(); ++d) {
      if (d == dim) continue;
      shape.push_back(x.size(d));
      x_strides.push_back(x.stride(d));
      out_strides.push_back(out.stride(d));
    }
  }
  void offsets(int64_t r, int64_t* xo, int64_t* oo) const {
    *xo = 0;
    *oo = 0;
    for (size_t d = shape.size(); d-- > 0;) {
      const int64_t c = r % shape[d];
      r /= shape[d];
      *xo += c * x_strides[d];
      *oo += c * out_strides[d];
    }
  }
};

}  // namespace kiln::cpu
