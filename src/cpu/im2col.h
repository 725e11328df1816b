// Pointer-level im2col / col2im over one contiguous [C, H, W] plane stack
// (F.unfold / F.fold, and the lowering of 2-d convolutions). col2im is the
// adjoint of im2col: it sums each column entry back into the input pixel it
// was read from; it writes only its own plane, so callers split work by plane
// and the result does not depend on the thread count.
#pragma once

#include <cstdint>

namespace kiln::cpu {

// A sliding-block geometry: C planes of H x W, kernel kh x kw, dilation,
// zero padding, stride; oh x ow block positions (computed by the caller).
struct Im2colGeom {
  int64_t C, H, W;
  int64_t kh, kw, dh, dw, ph, pw, sh, sw;
  int64_t oh, ow;
};

// x: [C, H, W] contiguous -> cols: [C * kh * kw, oh * ow] contiguous (zeros
// where a block reads padding).
void im2col(const float* x, const Im2colGeom& g, float* cols);
void im2col(const double* x, const Im2colGeom& g, double* cols);
// cols: [C * kh * kw, oh * ow] contiguous -> x: [C, H, W] contiguous,
// overwritten with the sums (entries that fall on padding are dropped).
void col2im(const float* cols, const Im2colGeom& g, float* x);
void col2im(const double* cols, const Im2colGeom& g, double* x);

}  // namespace kiln::cpu
