// Sliding-block ops (include/kiln/fold.h): im2col (F.unfold) and col2im
// (F.fold) over 4-d NCHW tensors. Each is the other's adjoint, so each one's
// derivative is the other.
#pragma once

#include <cstdint>

#include "kiln/tensor.h"

namespace kiln::ops {

// Kernel size, dilation, padding and stride (rows, cols), all checked; oh x ow
// block positions.
struct FoldGeom {
  int64_t kh, kw, dh, dw, ph, pw, sh, sw;
  int64_t oh, ow;
};
// x: [N, C, H, W] contiguous float; out: [N, C*kh*kw, oh*ow] contiguous, x's dtype.
using Im2col = void(const Tensor& x, const FoldGeom& g, const Tensor& out);
// cols: [N, C*kh*kw, oh*ow] contiguous float; out: [N, C, H, W] contiguous,
// cols' dtype (overwritten with the sums).
using Col2im = void(const Tensor& cols, const FoldGeom& g, const Tensor& out);

#define KILN_OPS_FOLD(X) \
  X(im2col, Im2col)      \
  X(col2im, Col2im)

}  // namespace kiln::ops
