// im2col / col2im loops (cpu/im2col.h): row (c, ki, kj) of the columns holds,
// for each block position (oy, ox), pixel (oy*sh - ph + ki*dh, ox*sw - pw + kj*dw)
// of plane c. col2im walks the same rows in the same order, so its sums are
// reproducible.
#include "cpu/im2col.h"

#include <algorithm>

namespace kiln::cpu {
namespace {

template <typename T>
void im2col_impl(const T* x, const Im2colGeom& g, T* cols) {
  const int64_t L = g.oh * g.ow;
  for (int64_t c = 0; c < g.C; ++c) {
    const T* plane = x + c * g.H * g.W;
    for (int64_t ki = 0; ki < g.kh; ++ki)
      for (int64_t kj = 0; kj < g.kw; ++kj) {
        T* row = cols + ((c * g.kh + ki) * g.kw + kj) * L;
        for (int64_t oy = 0; oy < g.oh; ++oy) {
          const int64_t iy = oy * g.sh - g.ph + ki * g.dh;
          T* dst = row + oy * g.ow;
          if (iy < 0 || iy >= g.H) {
            std::fill(dst, dst + g.ow, T(0));
            continue;
          }
          const T* src = plane + iy * g.W;
          for (int64_t ox = 0; ox < g.ow; ++ox) {
            const int64_t ix = ox * g.sw - g.pw + kj * g.dw;
            dst[ox] = ix >= 0 && ix < g.W ? src[ix] : T(0);
          }
        }
      }
  }
}

template <typename T>
void col2im_impl(const T* cols, const Im2colGeom& g, T* x) {
  const int64_t L = g.oh * g.ow;
  std::fill(x, x + g.C * g.H * g.W, T(0));
  for (int64_t c = 0; c < g.C; ++c) {
    T* plane = x + c * g.H * g.W;
    for (int64_t ki = 0; ki < g.kh; ++ki)
      for (int64_t kj = 0; kj < g.kw; ++kj) {
        const T* row = cols + ((c * g.kh + ki) * g.kw + kj) * L;
        for (int64_t oy = 0; oy < g.oh; ++oy) {
          const int64_t iy = oy * g.sh - g.ph + ki * g.dh;
          if (iy < 0 || iy >= g.H) continue;
          const T* src = row + oy * g.ow;
          T* dst = plane + iy * g.W;
          for (int64_t ox = 0; ox < g.ow; ++ox) {
            const int64_t ix = ox * g.sw - g.pw + kj * g.dw;
            if (ix >= 0 && ix < g.W) dst[ix] += src[ox];
          }
        }
      }
  }
}

}  // namespace

void im2col(const float* x, const Im2colGeom& g, float* cols) { im2col_impl(x, g, cols); }
void im2col(const double* x, const Im2colGeom& g, double* cols) { im2col_impl(x, g, cols); }
void col2im(const float* cols, const Im2colGeom& g, float* x) { col2im_impl(cols, g, x); }
void col2im(const double* cols, const Im2colGeom& g, double* x) { col2im_impl(cols, g, x); }

}  // namespace kiln::cpu
