// CPU kernels of the pooling ops (ops/registry/pool.h). Every kernel walks
// [planes, D, H, W] (1-d and 2-d pools have leading spatial dims of 1) in the
// compute type (float32, or float64 for float64 tensors; int64 for integer
// tensors in max pooling), one plane per task
// of the thread pool. The backward kernels scatter serially within a plane,
// and planes are disjoint, so results are the same whatever the thread count.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kiln/thread_pool.h"
#include "ops/registry/all.h"

namespace kiln::cpu {
namespace {

using ops::PoolGeom;

// kInts: integer inputs compute in int64 (max pooling only: exact, as torch).
template <bool kInts = false>
DType compute_type(DType d) {
  if (kInts && is_integral(d, false)) return DType::Int64;
  return d == DType::Float64 ? DType::Float64 : DType::Float32;
}

int64_t numel3(const int64_t* s) { return s[0] * s[1] * s[2]; }

// Runs body<T>(src, dst, plane0, plane1) over the planes with src = t in the
// compute type (contiguous) and dst a compute-type buffer for `out`, copied
// into out afterwards when out has another dtype.
template <bool kInts = false, typename Body>
void over_planes(const Tensor& t, const Tensor& out, int64_t planes, int64_t work_per_plane, Body&& body) {
  const DType acc = compute_type<kInts>(t.dtype());
  const Tensor src = t.to(acc).contiguous();
  const bool direct = out.dtype() == acc;
  const Tensor dst = direct ? out : empty(out.sizes(), acc, out.device());
  const int64_t grain = std::max<int64_t>(1, 32768 / std::max<int64_t>(work_per_plane, 1));
  auto run = [&](auto tag) {
    using T = decltype(tag);
    const T* s = src.data<T>();
    T* d = dst.data<T>();
    parallel_for(0, planes, grain, [&](int64_t p0, int64_t p1) { body(s, d, p0, p1); });
  };
  bool ran = false;
  if constexpr (kInts) {
    if (acc == DType::Int64) {
      run(int64_t{});
      ran = true;
    }
  }
  if (!ran && acc == DType::Float64)
    run(double{});
  else if (!ran)
    run(float{});
  if (!direct) Tensor(out).copy_(dst);
}

// Calls f(o, st, en, pool) for each output cell o of a plane (row-major over
// g.out), where window(i, x, st, en, pool) sets dim i's [st, en) for output
// index x and multiplies its size into pool.
template <typename W, typename F>
void for_windows(const PoolGeom& g, W&& window, F&& f) {
  int64_t o = 0;
  for (int64_t a = 0; a < g.out[0]; ++a)
    for (int64_t b = 0; b < g.out[1]; ++b)
      for (int64_t c = 0; c < g.out[2]; ++c, ++o) {
        const int64_t idx[3] = {a, b, c};
        int64_t st[3], en[3], pool = 1;
        for (int i = 0; i < 3; ++i) window(i, idx[i], st[i], en[i], pool);
        f(o, st, en, pool);
      }
}

// The windows clipped to the input, pool their size with padding (avg_pool's
// count_include_pad count).
template <typename F>
void avg_windows(const PoolGeom& g, F&& f) {
  for_windows(
      g,
      [&g](int i, int64_t x, int64_t& st, int64_t& en, int64_t& pool) {
        st = x * g.s[i] - g.p[i];
        en = std::min(st + g.k[i], g.in[i] + g.p[i]);
        pool *= en - st;
        st = std::max<int64_t>(st, 0);
        en = std::min(en, g.in[i]);
      },
      f);
}

// The adaptive windows [floor(o*in/out), ceil((o+1)*in/out)).
template <typename F>
void adaptive_windows(const PoolGeom& g, F&& f) {
  for_windows(
      g,
      [&g](int i, int64_t x, int64_t& st, int64_t& en, int64_t& pool) {
        st = x * g.in[i] / g.out[i];
        en = ((x + 1) * g.in[i] + g.out[i] - 1) / g.out[i];
        pool *= en - st;
      },
      f);
}

// Calls f(pos) for each flat in-plane position of the box [st, en).
template <typename F>
void for_box(const PoolGeom& g, const int64_t* st, const int64_t* en, F&& f) {
  for (int64_t a = st[0]; a < en[0]; ++a)
    for (int64_t b = st[1]; b < en[1]; ++b)
      for (int64_t c = st[2]; c < en[2]; ++c) f((a * g.in[1] + b) * g.in[2] + c);
}

// The max of a window as torch takes it: the first valid position, replaced
// by any larger value or any NaN (so the last NaN wins); -inf (the lowest
// integer) when empty.
template <typename T>
struct Best {
  T v = std::is_integral_v<T> ? std::numeric_limits<T>::lowest() : -std::numeric_limits<T>::infinity();
  int64_t at = -1;
  void see(T x, int64_t pos) {
    if (at < 0) at = pos;
    if (x > v || (!std::is_integral_v<T> && x != x)) {
      v = x;
      at = pos;
    }
  }
};

void max_pool(const Tensor& x, const PoolGeom& g, const Tensor& out, const Tensor& indices) {
  const int64_t in_plane = numel3(g.in), out_plane = numel3(g.out);
  int64_t* ind = indices.data<int64_t>();
  over_planes<true>(x, out, g.planes, out_plane * numel3(g.k),
                    [&](const auto* xs, auto* ys, int64_t p0, int64_t p1) {
                      using T = std::remove_cv_t<std::remove_pointer_t<decltype(xs)>>;
                      for (int64_t pl = p0; pl < p1; ++pl) {
                        const T* xp = xs + pl * in_plane;
                        int64_t o = pl * out_plane;
                        for (int64_t a = 0; a < g.out[0]; ++a)
                          for (int64_t b = 0; b < g.out[1]; ++b)
                            for (int64_t c = 0; c < g.out[2]; ++c, ++o) {
                              Best<T> best;
                              for (int64_t ka = 0; ka < g.k[0]; ++ka) {
                                const int64_t ia = a * g.s[0] - g.p[0] + ka * g.d[0];
                                if (ia < 0 || ia >= g.in[0]) continue;
                                for (int64_t kb = 0; kb < g.k[1]; ++kb) {
                                  const int64_t ib = b * g.s[1] - g.p[1] + kb * g.d[1];
                                  if (ib < 0 || ib >= g.in[1]) continue;
                                  for (int64_t kc = 0; kc < g.k[2]; ++kc) {
                                    const int64_t ic = c * g.s[2] - g.p[2] + kc * g.d[2];
                                    if (ic < 0 || ic >= g.in[2]) continue;
                                    const int64_t pos = (ia * g.in[1] + ib) * g.in[2] + ic;
                                    best.see(xp[pos], pos);
                                  }
                                }
                              }
                              ys[o] = best.v;
                              ind[o] = best.at;
                            }
                      }
                    });
}

void adaptive_max_pool(const Tensor& x, const PoolGeom& g, const Tensor& out, const Tensor& indices) {
  const int64_t in_plane = numel3(g.in), out_plane = numel3(g.out);
  int64_t* ind = indices.data<int64_t>();
  over_planes<true>(x, out, g.planes, in_plane + out_plane,
                    [&](const auto* xs, auto* ys, int64_t p0, int64_t p1) {
                      using T = std::remove_cv_t<std::remove_pointer_t<decltype(xs)>>;
                      for (int64_t pl = p0; pl < p1; ++pl) {
                        const T* xp = xs + pl * in_plane;
                        adaptive_windows(g, [&](int64_t o, const int64_t* st, const int64_t* en, int64_t) {
                          Best<T> best;
                          for_box(g, st, en, [&](int64_t pos) { best.see(xp[pos], pos); });
                          ys[pl * out_plane + o] = best.v;
                          ind[pl * out_plane + o] = best.at;
                        });
                      }
                    });
}

// The window starts of one dim of fractional max pooling, in T as torch's
// generate_intervals: int((i + u) * alpha) - int(u * alpha) with alpha =
// (in - k) / (out - 1), the last window ending at the input's end.
template <typename T>
void fractional_starts(T u, int64_t in, int64_t out, int64_t k, int64_t* st) {
  if (out > 1) {
    const T alpha = T(in - k) / T(out - 1);
    for (int64_t i = 0; i + 1 < out; ++i) st[i] = int64_t(int((T(i) + u) * alpha)) - int64_t(int(u * alpha));
  }
  if (out > 0) st[out - 1] = in - k;
}

void fractional_max_pool(const Tensor& x, const Tensor& samples, const PoolGeom& g, int nd, const Tensor& out,
                         const Tensor& indices) {
  const int64_t in_plane = numel3(g.in), out_plane = numel3(g.out);
  int64_t* ind = indices.data<int64_t>();
  over_planes(x, out, g.planes, out_plane * numel3(g.k),
              [&](const auto* xs, auto* ys, int64_t p0, int64_t p1) {
                using T = std::remove_cv_t<std::remove_pointer_t<decltype(xs)>>;
                const T* u = samples.data<T>();
                std::vector<int64_t> starts[3];
                for (int i = 0; i < 3; ++i) starts[i].assign(size_t(g.out[i]), 0);
                for (int64_t pl = p0; pl < p1; ++pl) {
                  for (int i = 3 - nd; i < 3; ++i) {
                    const int j = nd == 2 ? 2 - i : i;  // 2 dims: samples are (W, H)
                    fractional_starts(u[pl * nd + j], g.in[i], g.out[i], g.k[i], starts[i].data());
                  }
                  const T* xp = xs + pl * in_plane;
                  for_windows(
                      g,
                      [&](int i, int64_t o, int64_t& st, int64_t& en, int64_t&) {
                        st = starts[i][size_t(o)];
                        en = st + g.k[i];
                      },
                      [&](int64_t o, const int64_t* st, const int64_t* en, int64_t) {
                        Best<T> best;
                        for_box(g, st, en, [&](int64_t pos) { best.see(xp[pos], pos); });
                        ys[pl * out_plane + o] = best.v;
                        ind[pl * out_plane + o] = best.at;
                      });
                }
              });
}

// The divisor of an average window (0: the window is empty, the output is 0).
int64_t avg_divisor(const int64_t* st, const int64_t* en, int64_t pool, bool count_include_pad,
                    int64_t divisor) {
  int64_t valid = 1;
  for (int i = 0; i < 3; ++i) valid *= std::max<int64_t>(en[i] - st[i], 0);
  if (valid == 0) return 0;
  return divisor != 0 ? divisor : count_include_pad ? pool : valid;
}

void avg_pool(const Tensor& x, const PoolGeom& g, bool count_include_pad, int64_t divisor,
              const Tensor& out) {
  const int64_t in_plane = numel3(g.in), out_plane = numel3(g.out);
  over_planes(x, out, g.planes, out_plane * numel3(g.k),
              [&](const auto* xs, auto* ys, int64_t p0, int64_t p1) {
                using T = std::remove_cv_t<std::remove_pointer_t<decltype(xs)>>;
                for (int64_t pl = p0; pl < p1; ++pl) {
                  const T* xp = xs + pl * in_plane;
                  avg_windows(g, [&](int64_t o, const int64_t* st, const int64_t* en, int64_t pool) {
                    const int64_t div = avg_divisor(st, en, pool, count_include_pad, divisor);
                    T s = 0;
                    if (div != 0) for_box(g, st, en, [&](int64_t pos) { s += xp[pos]; });
                    ys[pl * out_plane + o] = div == 0 ? T(0) : s / T(div);
                  });
                }
              });
}

void adaptive_avg_pool(const Tensor& x, const PoolGeom& g, const Tensor& out) {
  const int64_t in_plane = numel3(g.in), out_plane = numel3(g.out);
  over_planes(x, out, g.planes, in_plane + out_plane, [&](const auto* xs, auto* ys, int64_t p0, int64_t p1) {
    using T = std::remove_cv_t<std::remove_pointer_t<decltype(xs)>>;
    for (int64_t pl = p0; pl < p1; ++pl) {
      const T* xp = xs + pl * in_plane;
      adaptive_windows(g, [&](int64_t o, const int64_t* st, const int64_t* en, int64_t pool) {
        T s = 0;
        for_box(g, st, en, [&](int64_t pos) { s += xp[pos]; });
        ys[pl * out_plane + o] = s / T(pool);
      });
    }
  });
}

// ---- backward: per-plane serial scatter into a zeroed plane ----------------

void max_pool_backward(const Tensor& grad, const Tensor& indices, const PoolGeom& g, const Tensor& grad_in) {
  const int64_t in_plane = numel3(g.in), out_plane = numel3(g.out);
  const Tensor ic = indices.contiguous();
  const int64_t* ind = ic.data<int64_t>();
  over_planes(grad, grad_in, g.planes, in_plane + out_plane,
              [&](const auto* gs, auto* gi, int64_t p0, int64_t p1) {
                for (int64_t pl = p0; pl < p1; ++pl) {
                  auto* dst = gi + pl * in_plane;
                  std::fill(dst, dst + in_plane, 0);
                  for (int64_t o = pl * out_plane; o < (pl + 1) * out_plane; ++o)
                    if (ind[o] >= 0 && ind[o] < in_plane) dst[ind[o]] += gs[o];
                }
              });
}

void avg_pool_backward(const Tensor& grad, const PoolGeom& g, bool count_include_pad, int64_t divisor,
                       const Tensor& grad_in) {
  const int64_t in_plane = numel3(g.in), out_plane = numel3(g.out);
  over_planes(grad, grad_in, g.planes, in_plane + out_plane * numel3(g.k),
              [&](const auto* gs, auto* gi, int64_t p0, int64_t p1) {
                using T = std::remove_cv_t<std::remove_pointer_t<decltype(gs)>>;
                for (int64_t pl = p0; pl < p1; ++pl) {
                  T* dst = gi + pl * in_plane;
                  std::fill(dst, dst + in_plane, T(0));
                  avg_windows(g, [&](int64_t o, const int64_t* st, const int64_t* en, int64_t pool) {
                    const int64_t div = avg_divisor(st, en, pool, count_include_pad, divisor);
                    if (div == 0) return;
                    const T v = gs[pl * out_plane + o] / T(div);
                    for_box(g, st, en, [&](int64_t pos) { dst[pos] += v; });
                  });
                }
              });
}

void adaptive_avg_pool_backward(const Tensor& grad, const PoolGeom& g, const Tensor& grad_in) {
  const int64_t in_plane = numel3(g.in), out_plane = numel3(g.out);
  over_planes(grad, grad_in, g.planes, in_plane + out_plane,
              [&](const auto* gs, auto* gi, int64_t p0, int64_t p1) {
                using T = std::remove_cv_t<std::remove_pointer_t<decltype(gs)>>;
                for (int64_t pl = p0; pl < p1; ++pl) {
                  T* dst = gi + pl * in_plane;
                  std::fill(dst, dst + in_plane, T(0));
                  adaptive_windows(g, [&](int64_t o, const int64_t* st, const int64_t* en, int64_t pool) {
                    const T v = gs[pl * out_plane + o] / T(pool);
                    for_box(g, st, en, [&](int64_t pos) { dst[pos] += v; });
                  });
                }
              });
}

}  // namespace

void register_pool_kernels() {
  ops::max_pool.set_kernel(DeviceKind::CPU, max_pool);
  ops::avg_pool.set_kernel(DeviceKind::CPU, avg_pool);
  ops::adaptive_avg_pool.set_kernel(DeviceKind::CPU, adaptive_avg_pool);
  ops::adaptive_max_pool.set_kernel(DeviceKind::CPU, adaptive_max_pool);
  ops::fractional_max_pool.set_kernel(DeviceKind::CPU, fractional_max_pool);
  ops::max_pool_backward.set_kernel(DeviceKind::CPU, max_pool_backward);
  ops::avg_pool_backward.set_kernel(DeviceKind::CPU, avg_pool_backward);
  ops::adaptive_avg_pool_backward.set_kernel(DeviceKind::CPU, adaptive_avg_pool_backward);
}

}  // namespace kiln::cpu
