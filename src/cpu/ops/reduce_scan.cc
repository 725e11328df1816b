// CPU kernels of the scans along one dim (ops/registry/reduce.h): cumsum and
// cumprod, accumulated in int64 / float64 / complex128 and stored in the
// result dtype (int64 for bool and integer inputs, as torch); logcumsumexp,
// a running log-sum-exp in float64; cummax / cummin with their indices.
#include <algorithm>
#include <cmath>

#include "cpu/ops/reduce_acc.h"
#include "cpu/ops/reduce_engine.h"
#include "cpu/ops/reduce_register.h"
#include "cpu/stream_store.h"
#include "ops/registry/all.h"

namespace kiln::cpu {
namespace {

// The lines along `dim` of x and of its scan outputs, in the same (row-major)
// order, and the loop over them.
struct Lines {
  ReducePlan in, out;
  int64_t len = 0, count = 0, sin = 0, sout = 0;
  Lines(const Tensor& x, int dim, const Tensor& o) {
    std::vector<bool> mask(size_t(x.dim()), false);
    if (x.dim() > 0) mask[size_t(dim)] = true;
    in = make_reduce_plan(x, mask, true);
    out = make_reduce_plan(o, mask, true);
    len = in.n_red;
    count = in.n_out;
    sin = in.rstride[0];
    sout = out.rstride[0];
  }
  // f(l, input offset, output offset) for every line l, split across threads.
  template <typename F>
  void for_each(F&& f) const {
    parallel_for(0, count, std::max<int64_t>(1, kReduceGrain / std::max<int64_t>(len, 1)),
                 [&](int64_t lb, int64_t le) {
                   for (int64_t l = lb; l < le; ++l) f(detail::out_offset(in, l), detail::out_offset(out, l));
                 });
  }
  // f(xo, oo, n): the lines in groups of up to kLineGroup (their input and output
  // offsets xo[g], oo[g], g < n), so a kernel can carry kLineGroup independent
  // running values: one line's scan is a chain of dependent adds (or products,
  // or compares), bound by their latency, not by memory.
  static constexpr int kLineGroup = 8;
  template <typename F>
  void for_each_group(F&& f) const {
    parallel_for(0, count, std::max<int64_t>(kLineGroup, kReduceGrain / std::max<int64_t>(len, 1)),
                 [&](int64_t lb, int64_t le) {
                   int64_t xo[kLineGroup], oo[kLineGroup];
                   for (int64_t l = lb; l < le; l += kLineGroup) {
                     const int n = int(std::min<int64_t>(kLineGroup, le - l));
                     for (int g = 0; g < n; ++g) {
                       xo[g] = detail::out_offset(in, l + g);
                       oo[g] = detail::out_offset(out, l + g);
                     }
                     f(xo, oo, n);
                   }
                 });
  }
  // Runs body<G, kUnit>(xo, oo) with G = kLineGroup for a full group, else once
  // per line; kUnit when both strides along the lines are 1 (no multiplies).
  template <typename Body>
  void for_each_group_of(Body&& body) const {
    if (sin == 1 && sout == 1) return for_each_group_of<true>(body);
    for_each_group_of<false>(body);
  }
  template <bool kUnit, typename Body>
  void for_each_group_of(Body& body) const {
    for_each_group([&](const int64_t* xo, const int64_t* oo, int n) {
      if (n == kLineGroup) return body.template operator()<kLineGroup, kUnit>(xo, oo);
      for (int g = 0; g < n; ++g) body.template operator()<1, kUnit>(xo + g, oo + g);
    });
  }
};

// step(g, i) for i in [0, len) of each of G lines, in order within each line,
// with line g kLag * g elements behind line 0: lines a multiple of 4 KiB apart
// (the rows of a [n, 1024k] float tensor) would otherwise touch the same L1
// set at every step, and 8 lines' inputs and outputs overflow its ways.
template <int G, typename Step>
inline void staggered_steps(int64_t len, Step&& step) {
  constexpr int64_t kLag = 16;
  const int64_t total = len + kLag * (G - 1);
  auto checked = [&](int64_t i) {
    for (int g = 0; g < G; ++g) {
      const int64_t j = i - kLag * g;
      if (j >= 0 && j < len) step(g, j);
    }
  };
  int64_t i = 0;
  for (; i < std::min<int64_t>(kLag * (G - 1), len); ++i) checked(i);
  for (; i < len; ++i) {
#pragma GCC unroll 8
    for (int g = 0; g < G; ++g) step(g, i - kLag * g);
  }
  for (; i < total; ++i) checked(i);
}

// Columns of accumulators per work item of the scan across rows below.
constexpr int64_t kScanColumns = 1024;

// cumsum / cumprod of a contiguous x along a dim that is not the innermost:
// x as [outer, len, inner], each step adds a whole row of `inner` values to
// a row of accumulators, so the loads stream and vectorize (scanning each
// column on its own would stride through memory).
// stream: a large output; each row of results is staged in L1 and streamed
// out (cpu/stream_store.h), so its lines are not read before being written.
template <bool kProd, typename T>
void scan_rows(const T* x, sum_out_t<T>* out, int64_t outer, int64_t len, int64_t inner, bool stream) {
  using A = acc_t<T>;
  using Out = sum_out_t<T>;
  const int64_t blocks = (inner + kScanColumns - 1) / kScanColumns;
  parallel_for(0, outer * blocks, std::max<int64_t>(1, kReduceGrain / (len * std::min(inner, kScanColumns))),
               [&](int64_t b, int64_t e) {
                 A acc[kScanColumns];
                 alignas(64) Out stage[kScanColumns];
                 for (int64_t w = b; w < e; ++w) {
                   const int64_t o = w / blocks, c0 = (w % blocks) * kScanColumns;
                   const int64_t m = std::min(kScanColumns, inner - c0);
                   std::fill(acc, acc + m, A(kProd ? 1 : 0));
                   for (int64_t i = 0; i < len; ++i) {
                     const T* xr = x + (o * len + i) * inner + c0;
                     Out* orow = out + (o * len + i) * inner + c0;
                     Out* dst = stream ? stage : orow;
                     // The next row's piece: each piece of a wide row is a fresh 4 KiB
                     // page, where the hardware prefetchers start cold. Fetching it one
                     // row ahead took [16384, 4096] float32 along dim 0 from 9-11 to
                     // 14-15 GB/s on 2 Zen 3 cores (memcpy ran at 20-25 beside it).
                     if (i + 1 < len)
                       for (int64_t j = 0; j < m; j += 64 / int64_t(sizeof(T)))
                         __builtin_prefetch(xr + inner + j);
                     for (int64_t j = 0; j < m; ++j) {
                       if constexpr (kProd)
                         acc[j] *= to_acc(xr[j]);
                       else
                         acc[j] += to_acc(xr[j]);
                       dst[j] = from_acc<Out>(acc[j]);
                     }
                     if (stream) stream_copy(orow, stage, size_t(m) * sizeof(Out));
                   }
                 }
                 if (stream) stream_fence();
               });
}

// cumsum / cumprod of float32 lines that are contiguous, into a large float32
// output: eight lines at a time (as staggered_steps, without the lag: the
// results go to an L1 stage, [8, kChunk], and stream out a chunk per line, so
// only the eight input lines share the L1 sets).
template <bool kProd>
void scan_lines_streamed(const Lines& L, const float* xb, float* ob) {
  constexpr int G = Lines::kLineGroup;
  constexpr int64_t kChunk = 256;  // 1 KiB of results per line
  L.for_each_group([&](const int64_t* xo, const int64_t* oo, int n) {
    alignas(64) float stage[G][kChunk];
    double acc[G];
    for (int g = 0; g < G; ++g) acc[g] = kProd ? 1.0 : 0.0;
    for (int64_t c0 = 0; c0 < L.len; c0 += kChunk) {
      const int64_t m = std::min(kChunk, L.len - c0);
      auto step = [&](int g, int64_t i) {
        const double v = double(xb[xo[g] + c0 + i]);
        acc[g] = kProd ? acc[g] * v : acc[g] + v;
        stage[g][i] = float(acc[g]);
      };
      if (n == G) {
        for (int64_t i = 0; i < m; ++i) {
#pragma GCC unroll 8
          for (int g = 0; g < G; ++g) step(g, i);
        }
      } else {
        for (int g = 0; g < n; ++g)
          for (int64_t i = 0; i < m; ++i) step(g, i);
      }
      for (int g = 0; g < n; ++g) stream_copy(ob + oo[g] + c0, stage[g], size_t(m) * sizeof(float));
    }
    stream_fence();
  });
}

template <bool kProd>
void scan(const Tensor& x, int dim, const Tensor& out) {
  if (x.numel() == 0) return;
  const Lines L(x, dim, out);
  dispatch<kNoFp8>(x.dtype(), kProd ? "cumprod" : "cumsum", [&]<typename T>() {
    using Out = sum_out_t<T>;
    using A = acc_t<T>;
    if (x.dim() > 1 && dim < x.dim() - 1 && x.is_contiguous() && out.is_contiguous()) {
      int64_t inner = 1;
      for (int d = dim + 1; d < x.dim(); ++d) inner *= x.size(d);
      const int64_t len = x.size(dim);
      return scan_rows<kProd>(x.data<T>(), out.data<Out>(), x.numel() / (len * inner), len, inner,
                              int64_t(out.nbytes()) >= kStreamMinBytes);
    }
    if constexpr (std::is_same_v<T, float>)
      if (L.sin == 1 && L.sout == 1 && L.len * int64_t(sizeof(float)) >= kStreamMinRun &&
          int64_t(out.nbytes()) >= kStreamMinBytes)
        return scan_lines_streamed<kProd>(L, reinterpret_cast<const float*>(L.in.base), out.data<float>());
    const T* xb = reinterpret_cast<const T*>(L.in.base);
    Out* ob = out.data<Out>();
    L.for_each_group_of([&]<int G, bool kUnit>(const int64_t* xo, const int64_t* oo) {
      const int64_t sin = kUnit ? 1 : L.sin, sout = kUnit ? 1 : L.sout;
      A acc[G];
      for (int g = 0; g < G; ++g) acc[g] = A(kProd ? 1 : 0);
      staggered_steps<G>(L.len, [&](int g, int64_t i) {
        if constexpr (kProd)
          acc[g] *= to_acc(xb[xo[g] + i * sin]);
        else
          acc[g] += to_acc(xb[xo[g] + i * sin]);
        ob[oo[g] + i * sout] = from_acc<Out>(acc[g]);
      });
    });
  });
}

// log(exp(a) + exp(b)) without overflow; -inf + -inf stays -inf, and a NaN
// or an inf of each sign give what torch gives (NaN, +inf).
inline double log_add_exp(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return a + b;
  const double hi = std::max(a, b), lo = std::min(a, b);
  if (std::isinf(hi)) return hi;  // +inf, or both -inf
  return hi + std::log1p(std::exp(lo - hi));
}

// out: x's dtype (floating).
void logcumsumexp(const Tensor& x, int dim, const Tensor& out) {
  if (x.numel() == 0) return;
  const Lines L(x, dim, out);
  dispatch<kFloatSet>(x.dtype(), "logcumsumexp", [&]<typename T>() {
    const T* xb = reinterpret_cast<const T*>(L.in.base);
    T* ob = out.data<T>();
    L.for_each([&](int64_t xo, int64_t oo) {
      const T* xi = xb + xo;
      T* oi = ob + oo;
      double acc = -INFINITY;
      for (int64_t i = 0; i < L.len; ++i) {
        acc = log_add_exp(acc, double(compute_t<T>(xi[i * L.sin])));
        oi[i * L.sout] = cast<T>(acc);
      }
    });
  });
}

// cummax (kMax) / cummin. Takes v at i when v is NaN, or when the running
// value is not NaN and v >= it (<= for cummin): later ties win, a NaN sticks.
template <bool kMax>
void cum_extreme(const Tensor& x, int dim, const Tensor& values, const Tensor& indices) {
  if (x.numel() == 0) return;
  const Lines L(x, dim, values);  // values and indices: the same contiguous shape
  dispatch<kBoolSet | kIntSet | kFloatSet>(x.dtype(), kMax ? "cummax" : "cummin", [&]<typename T>() {
    using C = compute_t<T>;
    const T* xb = reinterpret_cast<const T*>(L.in.base);
    T* vb = values.data<T>();
    int64_t* ib = indices.data<int64_t>();
    L.for_each_group_of([&]<int G, bool kUnit>(const int64_t* xo, const int64_t* oo) {
      const int64_t sin = kUnit ? 1 : L.sin, sout = kUnit ? 1 : L.sout;
      C best[G];
      int64_t at[G];
      for (int g = 0; g < G; ++g) {
        best[g] = C(xb[xo[g]]);
        at[g] = 0;
      }
      staggered_steps<G>(L.len, [&](int g, int64_t i) {
        const C v = C(xb[xo[g] + i * sin]);
        bool take;
        if constexpr (is_float_v<T>)
          take = v != v || (best[g] == best[g] && (kMax ? v >= best[g] : v <= best[g]));
        else
          take = kMax ? v >= best[g] : v <= best[g];
        best[g] = take ? v : best[g];
        at[g] = take ? i : at[g];
        vb[oo[g] + i * sout] = cast<T>(best[g]);
        ib[oo[g] + i * sout] = at[g];
      });
    });
  });
}

}  // namespace

void register_reduce_scan_kernels() {
  constexpr DeviceKind kCpu = DeviceKind::CPU;
  ops::cumsum.set_kernel(kCpu, scan<false>);
  ops::cumprod.set_kernel(kCpu, scan<true>);
  ops::logcumsumexp.set_kernel(kCpu, logcumsumexp);
  ops::cummax.set_kernel(kCpu, cum_extreme<true>);
  ops::cummin.set_kernel(kCpu, cum_extreme<false>);
}

}  // namespace kiln::cpu
