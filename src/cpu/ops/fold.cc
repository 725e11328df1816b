// CPU kernels of im2col / col2im (ops/registry/fold.h): the loops of
// cpu/im2col.h, one (sample, channel) plane per task. float16/bfloat16 run in
// float32 (col2im sums), the result cast back.
#include "cpu/im2col.h"
#include "cpu/ops/register.h"
#include "kiln/thread_pool.h"
#include "ops/registry/all.h"

namespace kiln::cpu {
namespace {

// One plane's geometry (C = 1) of a [N, C, H, W] tensor.
Im2colGeom plane_geom(const ops::FoldGeom& g, int64_t H, int64_t W) {
  return {1, H, W, g.kh, g.kw, g.dh, g.dw, g.ph, g.pw, g.sh, g.sw, g.oh, g.ow};
}

bool native(DType d) { return d == DType::Float32 || d == DType::Float64; }

template <typename T>
void im2col_planes(const Tensor& x, const ops::FoldGeom& g, const Tensor& cols) {
  const int64_t NC = x.size(0) * x.size(1), H = x.size(2), W = x.size(3);
  const Im2colGeom pg = plane_geom(g, H, W);
  const int64_t rows = g.kh * g.kw * g.oh * g.ow;  // column entries per plane
  const T* xp = x.data<T>();
  T* cp = cols.data<T>();
  parallel_for(0, NC, 1, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) im2col(xp + p * H * W, pg, cp + p * rows);
  });
}

template <typename T>
void col2im_planes(const Tensor& cols, const ops::FoldGeom& g, const Tensor& x) {
  const int64_t NC = x.size(0) * x.size(1), H = x.size(2), W = x.size(3);
  const Im2colGeom pg = plane_geom(g, H, W);
  const int64_t rows = g.kh * g.kw * g.oh * g.ow;
  const T* cp = cols.data<T>();
  T* xp = x.data<T>();
  parallel_for(0, NC, 1, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) col2im(cp + p * rows, pg, xp + p * H * W);
  });
}

// x: [N, C, H, W] -> out: [N, C*kh*kw, L].
void im2col_kernel(const Tensor& x, const ops::FoldGeom& g, const Tensor& out) {
  if (!native(x.dtype())) {
    Tensor tmp = empty(out.sizes(), DType::Float32, out.device());
    im2col_planes<float>(x.to(DType::Float32).contiguous(), g, tmp);
    Tensor(out).copy_(tmp);
  } else if (x.dtype() == DType::Float64) {
    im2col_planes<double>(x, g, out);
  } else {
    im2col_planes<float>(x, g, out);
  }
}

// cols: [N, C*kh*kw, L] -> out: [N, C, H, W].
void col2im_kernel(const Tensor& cols, const ops::FoldGeom& g, const Tensor& out) {
  if (!native(cols.dtype())) {
    Tensor tmp = empty(out.sizes(), DType::Float32, out.device());
    col2im_planes<float>(cols.to(DType::Float32).contiguous(), g, tmp);
    Tensor(out).copy_(tmp);
  } else if (cols.dtype() == DType::Float64) {
    col2im_planes<double>(cols, g, out);
  } else {
    col2im_planes<float>(cols, g, out);
  }
}

}  // namespace

void register_fold_kernels() {
  ops::im2col.set_kernel(DeviceKind::CPU, im2col_kernel);
  ops::col2im.set_kernel(DeviceKind::CPU, col2im_kernel);
}

}  // namespace kiln::cpu
