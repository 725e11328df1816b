// CPU kernels of grid_sample (ops/registry/interpolate.h), with torch's
// coordinate rules: a grid value g in [-1, 1] becomes the pixel coordinate
// ((g + 1) * size - 1) / 2 (align_corners: (g + 1) / 2 * (size - 1)), the
// padding mode clips or reflects it (bicubic: each tap's integer coordinate),
// and the taps outside the input read 0.
//
// Every output point is a weighted sum of at most 16 input pixels (its taps),
// the same for every channel, so each kernel computes a point's taps once and
// walks the channels. The input's gradient is the transposed sum: one task
// owns whole input planes (n, c) and visits the points in order, and the
// grid's gradient sums the channels in order per point, so no two threads
// write one element and the bits do not depend on the thread count.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>

#include "cpu/ops/register.h"
#include "kiln/thread_pool.h"
#include "ops/registry/all.h"

namespace kiln::cpu {
namespace {

using ops::GridMode;
using ops::GridPadding;
using ops::GridSampleOptions;

constexpr int kMaxTaps = 16;           // bicubic: 4 x 4
constexpr int64_t kChannelBlock = 16;  // channels summed side by side
constexpr double kCubicA = -0.75;      // torch's bicubic kernel constant

// A coordinate that is not finite or leaves int's range reads as far outside
// (torch's safe_downgrade_to_int_range), so floor and the casts stay defined.
template <class T>
T safe(T c) {
  return std::isfinite(c) && c > T(-2147483648.0) && c < T(2147483646.0) ? c : T(-100);
}

// c clipped to [0, size - 1]; grad: dc'/dc (0 at and beyond the ends, as torch).
template <class T>
T clip(T c, int64_t size, T& grad) {
  grad = T(0);
  if (c <= T(0)) return T(0);
  const T hi = T(size - 1);
  if (c >= hi) return hi;
  grad = T(1);
  return c;
}

// c reflected into [twice_lo / 2, twice_hi / 2]; grad: dc'/dc (+-1).
template <class T>
T reflect(T c, int64_t twice_lo, int64_t twice_hi, T& grad) {
  grad = T(0);
  if (twice_lo == twice_hi || !std::isfinite(c)) return twice_lo == twice_hi ? T(0) : c;
  const T lo = T(twice_lo) / 2, span = T(twice_hi - twice_lo) / 2;
  T sign = T(1);
  c -= lo;
  if (c < T(0)) sign = T(-1), c = -c;
  // Within two spans (nearly always) without fmod, which is slow: for c in
  // [0, span) fmod gives c and floor(c / span) is 0; in [span, 2 span),
  // c - span (exact) and 1.
  T extra;
  bool even;
  if (c < span) {
    extra = c, even = true;
  } else if (c < 2 * span) {
    extra = c - span, even = false;
  } else {
    extra = std::fmod(c, span);
    even = std::fmod(std::floor(c / span), T(2)) == T(0);
  }
  grad = even ? sign : -sign;
  return even ? extra + lo : span - extra + lo;
}

// The padding mode applied to a pixel coordinate; grad: dc'/dc.
template <class T>
T pad(T c, int64_t size, const GridSampleOptions& o, T& grad) {
  grad = T(1);
  if (o.padding == GridPadding::Border) {
    c = clip(c, size, grad);
  } else if (o.padding == GridPadding::Reflection) {
    T g_reflect, g_clip;
    c = o.align_corners ? reflect(c, 0, 2 * (size - 1), g_reflect) : reflect(c, -1, 2 * size - 1, g_reflect);
    c = clip(c, size, g_clip);
    grad = g_reflect * g_clip;
  }
  return safe(c);
}

// The Keys cubic's four weights at fraction t (taps -1, 0, 1, 2) and their
// derivatives in t.
template <class T>
void cubic_weights(T t, T* w, T* dw) {
  const T A = T(kCubicA);
  auto near = [A](T x) { return ((A + 2) * x - (A + 3)) * x * x + 1; };       // |x| <= 1
  auto far = [A](T x) { return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A; };  // 1 < |x| < 2
  auto dnear = [A](T x) { return (3 * (A + 2) * x - 2 * (A + 3)) * x; };
  auto dfar = [A](T x) { return (3 * A * x - 10 * A) * x + 8 * A; };
  w[0] = far(t + 1), w[1] = near(t), w[2] = near(1 - t), w[3] = far(2 - t);
  dw[0] = dfar(t + 1), dw[1] = dnear(t), dw[2] = -dnear(1 - t), dw[3] = -dfar(2 - t);
}

// One output point's taps: offsets into an input plane, weights, and each
// weight's derivative in the grid value of each spatial dim (ND dims in the
// input's order: [D,] H, W; the grid names them in reverse, x first).
template <class T, int ND>
struct Taps {
  int n = 0;
  std::array<int64_t, kMaxTaps> off;
  std::array<T, kMaxTaps> w;
  std::array<std::array<T, ND>, kMaxTaps> dw;
};

template <class T, int ND>
struct Geometry {
  std::array<int64_t, ND> size;    // input's spatial sizes
  std::array<int64_t, ND> stride;  // within a plane
  GridSampleOptions o;

  // Taps of the grid point g (g[0] = x names dim ND - 1); their weights'
  // derivatives (dw) only when kGrad.
  template <bool kGrad = true>
  void taps(const T* g, Taps<T, ND>& t) const {
    std::array<T, ND> c, mult;  // pixel coordinates and d(coordinate)/d(grid value)
    for (int d = 0; d < ND; ++d) {
      const int64_t n = size[size_t(d)];
      const T v = g[ND - 1 - d];
      c[size_t(d)] = o.align_corners ? (v + 1) / 2 * T(n - 1) : ((v + 1) * T(n) - 1) / 2;
      mult[size_t(d)] = o.align_corners ? T(n - 1) / 2 : T(n) / 2;
    }
    t.n = 0;
    if (o.mode == GridMode::Bicubic) {
      if constexpr (ND == 2) bicubic<kGrad>(c, mult, t);
      return;
    }
    for (int d = 0; d < ND; ++d) {
      T g_pad;
      c[size_t(d)] = pad(c[size_t(d)], size[size_t(d)], o, g_pad);
      mult[size_t(d)] *= g_pad;
    }
    if (o.mode == GridMode::Nearest) {
      int64_t off = 0;
      for (int d = 0; d < ND; ++d) {
        const int64_t i = int64_t(std::nearbyint(c[size_t(d)]));
        if (i < 0 || i >= size[size_t(d)]) return;
        off += i * stride[size_t(d)];
      }
      t.off[0] = off, t.w[0] = T(1), t.dw[0].fill(T(0)), t.n = 1;
      return;
    }
    // (bi/tri)linear: corner bits b pick i0 + b per dim, weight i0 + 1 - c or c - i0.
    std::array<int64_t, ND> i0;
    std::array<std::array<T, 2>, ND> wd;
    for (int d = 0; d < ND; ++d) {
      const T f = std::floor(c[size_t(d)]);
      i0[size_t(d)] = int64_t(f);
      wd[size_t(d)] = {f + 1 - c[size_t(d)], c[size_t(d)] - f};
    }
    for (int corner = 0; corner < (1 << ND); ++corner) {
      int64_t off = 0;
      bool inside = true;
      T w = T(1);
      for (int d = 0; d < ND; ++d) {
        const int b = (corner >> (ND - 1 - d)) & 1;
        const int64_t i = i0[size_t(d)] + b;
        inside = inside && i >= 0 && i < size[size_t(d)];
        off += i * stride[size_t(d)];
        w *= wd[size_t(d)][size_t(b)];
      }
      if (!inside) continue;
      const int k = t.n++;
      t.off[size_t(k)] = off, t.w[size_t(k)] = w;
      if constexpr (kGrad)
        for (int d = 0; d < ND; ++d) {
          const int b = (corner >> (ND - 1 - d)) & 1;
          T p = b ? T(1) : T(-1);
          for (int e = 0; e < ND; ++e)
            if (e != d) p *= wd[size_t(e)][size_t((corner >> (ND - 1 - e)) & 1)];
          t.dw[size_t(k)][size_t(d)] = p * mult[size_t(d)];
        }
    }
  }

  // 4 x 4 taps around the unpadded coordinate; each tap's integer coordinate
  // goes through the padding mode (its derivative does not: torch's rule).
  template <bool kGrad>
  void bicubic(const std::array<T, ND>& c, const std::array<T, ND>& mult, Taps<T, ND>& t) const {
    T w[2][4], dw[2][4];
    int64_t at[2][4];  // each tap's padded index along the dim, -1 outside
    for (int d = 0; d < 2; ++d) {
      const T cs = safe(c[size_t(d)]);
      const T f = std::floor(cs);
      cubic_weights(cs - f, w[d], dw[d]);
      for (int a = 0; a < 4; ++a) {
        T ignored;
        const int64_t i = int64_t(pad(f - 1 + T(a), size[size_t(d)], o, ignored));
        at[d][a] = i >= 0 && i < size[size_t(d)] ? i * stride[size_t(d)] : -1;
      }
    }
    for (int a = 0; a < 4; ++a) {
      if (at[0][a] < 0) continue;
      for (int b = 0; b < 4; ++b) {
        if (at[1][b] < 0) continue;
        const int k = t.n++;
        t.off[size_t(k)] = at[0][a] + at[1][b];
        t.w[size_t(k)] = w[0][a] * w[1][b];
        if constexpr (kGrad) {
          t.dw[size_t(k)][0] = dw[0][a] * w[1][b] * mult[0];
          t.dw[size_t(k)][1] = w[0][a] * dw[1][b] * mult[1];
        }
      }
    }
  }
};

// [N, C, *in] and grid [N, *out, ND] -> the sizes the kernels walk.
template <class T, int ND>
struct Problem {
  int64_t N, C, Q /* input plane */, P /* output points per batch */;
  Geometry<T, ND> geo;

  Problem(const Tensor& input, const Tensor& grid, const GridSampleOptions& o) {
    N = input.size(0), C = input.size(1), Q = 1, P = grid.numel() / std::max<int64_t>(N * ND, 1);
    for (int d = ND - 1; d >= 0; --d) {
      geo.size[size_t(d)] = input.size(d + 2);
      geo.stride[size_t(d)] = Q;
      Q *= input.size(d + 2);
    }
    geo.o = o;
  }
  // A parallel_for grain of about 16k multiply-adds for `work` per item.
  static int64_t grain(int64_t work) { return std::max<int64_t>(1, 16384 / std::max<int64_t>(work, 1)); }
};

// Points per forward work item; their taps are computed once. With at most 8
// taps a point (nearest, bilinear, trilinear) each channel then walks the
// points: its reads stay in one input plane, its writes run along one output
// row. Bicubic's 16 taps a point go the other way: each point walks the
// channels, a block of them side by side (their sums are independent
// chains; one channel's 16 taps in a row would wait on each add).
constexpr int64_t kPointBlock = 64;

template <class T, int ND>
void forward(const Tensor& input, const Tensor& grid, const Tensor& out, const GridSampleOptions& o) {
  const Problem<T, ND> pr(input, grid, o);
  const T* x = input.data<T>();
  const T* g = grid.data<T>();
  T* y = out.data<T>();
  const int64_t blocks = (pr.P + kPointBlock - 1) / kPointBlock;  // per batch entry
  parallel_for(0, pr.N * blocks, pr.grain(pr.C * 8 * kPointBlock), [&](int64_t r0, int64_t r1) {
    std::array<Taps<T, ND>, kPointBlock> taps;
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t n = r / blocks, p0 = (r % blocks) * kPointBlock, m = std::min(kPointBlock, pr.P - p0);
      for (int64_t i = 0; i < m; ++i)
        pr.geo.template taps<false>(g + (n * pr.P + p0 + i) * ND, taps[size_t(i)]);
      const T* src = x + n * pr.C * pr.Q;
      T* dst = y + n * pr.C * pr.P + p0;
      // Each sum: the taps in order from +0.
      if (o.mode != GridMode::Bicubic) {
        for (int64_t c = 0; c < pr.C; ++c) {
          const T* plane = src + c * pr.Q;
          T* row = dst + c * pr.P;
          for (int64_t i = 0; i < m; ++i) {
            const Taps<T, ND>& t = taps[size_t(i)];
            T acc = T(0);
            if (t.n == 4) {  // bilinear inside the input
              acc += t.w[0] * plane[t.off[0]];
              acc += t.w[1] * plane[t.off[1]];
              acc += t.w[2] * plane[t.off[2]];
              acc += t.w[3] * plane[t.off[3]];
            } else {
              for (int k = 0; k < t.n; ++k) acc += t.w[size_t(k)] * plane[t.off[size_t(k)]];
            }
            row[i] = acc;
          }
        }
        continue;
      }
      for (int64_t i = 0; i < m; ++i) {
        const Taps<T, ND>& t = taps[size_t(i)];
        for (int64_t c0 = 0; c0 < pr.C; c0 += kChannelBlock) {
          const int64_t cb = std::min(kChannelBlock, pr.C - c0);
          T acc[kChannelBlock] = {};
          for (int k = 0; k < t.n; ++k) {
            const T w = t.w[size_t(k)];
            const T* at = src + c0 * pr.Q + t.off[size_t(k)];
            for (int64_t j = 0; j < cb; ++j) acc[j] += w * at[j * pr.Q];
          }
          for (int64_t j = 0; j < cb; ++j) dst[(c0 + j) * pr.P + i] = acc[j];
        }
      }
    }
  });
}

template <class T, int ND>
void backward(const Tensor& grad_out, const Tensor& input, const Tensor& grid, const Tensor& grad_input,
              const Tensor& grad_grid, const GridSampleOptions& o) {
  const Problem<T, ND> pr(input, grid, o);
  const T* go = grad_out.data<T>();
  const T* x = input.data<T>();
  const T* g = grid.data<T>();
  if (grad_input.defined()) {
    T* gi = grad_input.data<T>();
    std::fill(gi, gi + grad_input.numel(), T(0));
    // Items are planes (n, c); a task's consecutive planes of one batch share
    // each point's taps.
    parallel_for(0, pr.N * pr.C, pr.grain(pr.P * 8), [&](int64_t r0, int64_t r1) {
      Taps<T, ND> t;
      for (int64_t r = r0; r < r1;) {
        const int64_t n = r / pr.C, c0 = r % pr.C, c1 = std::min(pr.C, c0 + (r1 - r));
        for (int64_t p = 0; p < pr.P; ++p) {
          pr.geo.taps(g + (n * pr.P + p) * ND, t);
          for (int64_t c = c0; c < c1; ++c) {
            const T v = go[(n * pr.C + c) * pr.P + p];
            T* plane = gi + (n * pr.C + c) * pr.Q;
            for (int k = 0; k < t.n; ++k) plane[t.off[size_t(k)]] += t.w[size_t(k)] * v;
          }
        }
        r += c1 - c0;
      }
    });
  }
  if (grad_grid.defined()) {
    T* gg = grad_grid.data<T>();
    parallel_for(0, pr.N * pr.P, pr.grain(pr.C * 8 * ND), [&](int64_t r0, int64_t r1) {
      Taps<T, ND> t;
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t n = r / pr.P, p = r % pr.P;
        pr.geo.taps(g + r * ND, t);
        // Per channel: sum_k dw[k] * x[off_k], a block of channels at a time
        // (independent chains), then weighted by the output's gradient.
        std::array<T, ND> acc{};
        for (int64_t c0 = 0; c0 < pr.C; c0 += kChannelBlock) {
          const int64_t m = std::min(kChannelBlock, pr.C - c0);
          T part[ND][kChannelBlock] = {};
          const T* src = x + (n * pr.C + c0) * pr.Q;
          for (int k = 0; k < t.n; ++k) {
            const T* at = src + t.off[size_t(k)];
            for (int d = 0; d < ND; ++d) {
              const T dw = t.dw[size_t(k)][size_t(d)];
              for (int64_t j = 0; j < m; ++j) part[d][j] += dw * at[j * pr.Q];
            }
          }
          for (int64_t j = 0; j < m; ++j) {
            const T v = go[(n * pr.C + c0 + j) * pr.P + p];
            for (int d = 0; d < ND; ++d) acc[size_t(d)] += part[d][j] * v;
          }
        }
        for (int d = 0; d < ND; ++d) gg[r * ND + (ND - 1 - d)] = acc[size_t(d)];
      }
    });
  }
}

void forward_kernel(const Tensor& input, const Tensor& grid, const Tensor& out, const GridSampleOptions& o) {
  const bool f64 = input.dtype() == DType::Float64;
  if (input.dim() == 4)
    f64 ? forward<double, 2>(input, grid, out, o) : forward<float, 2>(input, grid, out, o);
  else
    f64 ? forward<double, 3>(input, grid, out, o) : forward<float, 3>(input, grid, out, o);
}

void backward_kernel(const Tensor& grad_out, const Tensor& input, const Tensor& grid,
                     const Tensor& grad_input, const Tensor& grad_grid, const GridSampleOptions& o) {
  const bool f64 = input.dtype() == DType::Float64;
  if (input.dim() == 4)
    f64 ? backward<double, 2>(grad_out, input, grid, grad_input, grad_grid, o)
        : backward<float, 2>(grad_out, input, grid, grad_input, grad_grid, o);
  else
    f64 ? backward<double, 3>(grad_out, input, grid, grad_input, grad_grid, o)
        : backward<float, 3>(grad_out, input, grid, grad_input, grad_grid, o);
}

}  // namespace

void register_grid_sample_kernels() {
  ops::grid_sampler.set_kernel(DeviceKind::CPU, forward_kernel);
  ops::grid_sampler_backward.set_kernel(DeviceKind::CPU, backward_kernel);
}

}  // namespace kiln::cpu
