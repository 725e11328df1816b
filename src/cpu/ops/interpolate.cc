// CPU kernels of the resampling ops (ops/registry/interpolate.h). Every mode
// is separable: along each spatial dim an output index reads a few input
// indices with weights (a gather table built from torch's source-index
// formulas), so the forward is one gather pass per dim that does more than
// copy (nearest: a single pass through all the dims' tables). The backward is the
// transposed table: each input-gradient element sums the output gradients
// that read it, in output order, so no two threads write one element and the
// bits do not depend on the thread count.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "cpu/ops/register.h"
#include "kiln/memory_format.h"
#include "kiln/thread_pool.h"
#include "ops/registry/all.h"

namespace kiln::cpu {
namespace {

enum class Mode { Nearest, Linear, Cubic, Area };

// Output index o reads taps [start[o], start[o + 1]) of (idx, w).
template <class T>
struct Table {
  std::vector<int64_t> start{0}, idx;
  std::vector<T> w;
  void add(int64_t i, T wt) {
    idx.push_back(i);
    w.push_back(wt);
  }
  void close() { start.push_back(int64_t(idx.size())); }
};

// torch's area_pixel_compute_scale: the step between source indices.
template <class T>
T pixel_scale(int64_t in, int64_t out, bool align_corners, double scale) {
  if (align_corners) return out > 1 ? T(in - 1) / T(out - 1) : T(0);
  return scale > 0 ? T(1.0 / scale) : T(in) / T(out);
}

// torch's area_pixel_compute_source_index.
template <class T>
T source_index(T scale, int64_t o, bool align_corners, bool cubic) {
  if (align_corners) return scale * T(o);
  const T s = scale * (T(o) + T(0.5)) - T(0.5);
  return (!cubic && s < T(0)) ? T(0) : s;
}

template <class T>
T cubic1(T x, T a) {  // |x| <= 1
  return ((a + 2) * x - (a + 3)) * x * x + 1;
}
template <class T>
T cubic2(T x, T a) {  // 1 < |x| < 2
  return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
}

// The antialiased filter (torch's _upsample_*_aa): the triangle or the Keys
// cubic (a = -0.5) stretched by the scale when downsampling, normalized.
template <class T>
void antialias_taps(Table<T>& t, Mode mode, int64_t in, int64_t out, const ops::ResampleOptions& o,
                    double sc) {
  const T scale = pixel_scale<T>(in, out, o.align_corners, sc);
  const T half = mode == Mode::Cubic ? T(2) : T(1);  // interp_size / 2
  const T support = scale >= T(1) ? half * scale : half;
  const T invscale = scale >= T(1) ? T(1) / scale : T(1);
  std::vector<T> ws;
  for (int64_t i = 0; i < out; ++i) {
    const T center = scale * (T(i) + T(0.5));
    const int64_t xmin = std::max<int64_t>(int64_t(center - support + T(0.5)), 0);
    const int64_t xsize = std::min<int64_t>(int64_t(center + support + T(0.5)), in) - xmin;
    ws.assign(size_t(std::max<int64_t>(xsize, 0)), T(0));
    T total = 0;
    for (int64_t j = 0; j < xsize; ++j) {
      T x = std::abs((T(j + xmin) - center + T(0.5)) * invscale);
      T w = 0;
      if (mode == Mode::Cubic)
        w = x < T(1) ? cubic1(x, T(-0.5)) : x < T(2) ? cubic2(x, T(-0.5)) : T(0);
      else
        w = x < T(1) ? T(1) - x : T(0);
      ws[size_t(j)] = w;
      total += w;
    }
    for (int64_t j = 0; j < xsize; ++j)
      t.add(xmin + j, total != T(0) ? ws[size_t(j)] / total : ws[size_t(j)]);
    t.close();
  }
}

// The gather table of one dim, from torch's index formulas in T (float for
// float32 and the 16-bit dtypes, as torch's opmath).
template <class T>
Table<T> make_table(Mode mode, int nd, int64_t in, int64_t out, const ops::ResampleOptions& o, double sc) {
  Table<T> t;
  if (o.antialias && (mode == Mode::Linear || mode == Mode::Cubic)) {
    antialias_taps(t, mode, in, out, o, sc);
    return t;
  }
  for (int64_t i = 0; i < out; ++i) {
    switch (mode) {
      case Mode::Nearest: {
        // torch's nearest_idx / nearest_exact_idx in float for 2 spatial
        // dims (same size: a copy; twice the size: i / 2), its generic
        // floor(scale * i) in T for 1 and 3 (no same-size shortcut).
        const float s = sc > 0 ? float(1.0 / sc) : float(in) / float(out);
        const T st = sc > 0 ? T(1.0 / sc) : T(in) / T(out);
        int64_t src;
        if (o.exact)
          src = std::min(int64_t(std::floor(float((double(i) + 0.5) * double(s)))), in - 1);
        else if (nd != 2)
          src = std::min(int64_t(std::floor(st * T(i))), in - 1);
        else if (out == in)
          src = i;
        else if (out == 2 * in)
          src = i >> 1;
        else
          src = std::min(int64_t(std::floor(float(i) * s)), in - 1);
        t.add(src, T(1));
        break;
      }
      case Mode::Linear: {
        if (out == in) {  // torch copies when the size is unchanged
          t.add(i, T(1));
          break;
        }
        const T real = source_index(pixel_scale<T>(in, out, o.align_corners, sc), i, o.align_corners, false);
        const int64_t i0 = std::min(int64_t(std::floor(real)), in - 1);
        const T l1 = std::min(std::max(real - T(i0), T(0)), T(1));
        t.add(i0, T(1) - l1);
        t.add(i0 + (i0 < in - 1 ? 1 : 0), l1);
        break;
      }
      case Mode::Cubic: {
        const T real = source_index(pixel_scale<T>(in, out, o.align_corners, sc), i, o.align_corners, true);
        const int64_t i0 = std::min(int64_t(std::floor(real)), in - 1);
        const T x = std::min(std::max(real - T(i0), T(0)), T(1));
        const T a = T(-0.75);
        const T c[4] = {cubic2(x + T(1), a), cubic1(x, a), cubic1(T(1) - x, a), cubic2(T(2) - x, a)};
        for (int k = 0; k < 4; ++k) t.add(std::clamp<int64_t>(i0 - 1 + k, 0, in - 1), c[k]);
        break;
      }
      case Mode::Area: {  // adaptive average pooling's window
        const int64_t s = (i / out) * in + ((i % out) * in) / out;
        const int64_t e = 1 + ((i + 1) * in - 1) / out;
        for (int64_t k = s; k < e; ++k) t.add(k, T(1) / T(e - s));
        break;
      }
    }
    t.close();
  }
  return t;
}

// The transposed table over `in` indices: input index k gathers the output
// indices that read it, in increasing order.
template <class T>
Table<T> transpose(const Table<T>& f, int64_t in) {
  const int64_t out = int64_t(f.start.size()) - 1;
  Table<T> t;
  std::vector<int64_t> count(size_t(in) + 1, 0);
  for (int64_t i : f.idx) ++count[size_t(i) + 1];
  t.start.assign(size_t(in) + 1, 0);
  for (int64_t k = 0; k < in; ++k) t.start[size_t(k) + 1] = t.start[size_t(k)] + count[size_t(k) + 1];
  t.idx.resize(f.idx.size());
  t.w.resize(f.w.size());
  std::vector<int64_t> fill(t.start.begin(), t.start.end() - 1);
  for (int64_t o = 0; o < out; ++o)
    for (int64_t j = f.start[size_t(o)]; j < f.start[size_t(o) + 1]; ++j) {
      const int64_t k = f.idx[size_t(j)];
      t.idx[size_t(fill[size_t(k)])] = o;
      t.w[size_t(fill[size_t(k)]++)] = f.w[size_t(j)];
    }
  return t;
}

// True when the table copies (one tap per output, idx == o, weight 1).
template <class T>
bool is_identity(const Table<T>& t, int64_t in) {
  const int64_t out = int64_t(t.start.size()) - 1;
  if (out != in || int64_t(t.idx.size()) != out) return false;
  for (int64_t o = 0; o < out; ++o)
    if (t.start[size_t(o) + 1] != o + 1 || t.idx[size_t(o)] != o || t.w[size_t(o)] != T(1)) return false;
  return true;
}

// K when every output of t has exactly K taps, else 0.
template <class T>
int64_t uniform_taps(const Table<T>& t) {
  const int64_t out = int64_t(t.start.size()) - 1;
  if (out == 0) return 0;
  const int64_t k = t.start[1] - t.start[0];
  for (int64_t o = 0; o < out; ++o)
    if (t.start[size_t(o) + 1] - t.start[size_t(o)] != k) return 0;
  return k;
}

// The last-dim pass with K taps per output: dst[a, o] = sum_k w[o K + k] *
// src[a, idx[o K + k]], summed from +0 in tap order.
template <int K, class T>
void gather_rows(const T* src, T* dst, int64_t outer, int64_t lin, int64_t lout, const int64_t* ix,
                 const T* wt, int64_t grain) {
  parallel_for(0, outer, grain, [&](int64_t a0, int64_t a1) {
    for (int64_t a = a0; a < a1; ++a) {
      const T* __restrict s = src + a * lin;
      T* __restrict d = dst + a * lout;
      for (int64_t o = 0; o < lout; ++o) {
        T acc = T(0);
        for (int k = 0; k < K; ++k) acc += wt[o * K + k] * s[ix[o * K + k]];
        d[o] = acc;
      }
    }
  });
}

// dst[a, o, b] = sum over taps of w * src[a, idx, b]; src [outer, lin, inner],
// dst [outer, lout, inner], both contiguous. Sums start from +0 in tap order.
template <class T>
void gather_pass(const T* src, T* dst, int64_t outer, int64_t lin, int64_t inner, const Table<T>& t) {
  const int64_t lout = int64_t(t.start.size()) - 1;
  const int64_t* st = t.start.data();
  const int64_t* ix = t.idx.data();
  const T* wt = t.w.data();
  const int64_t taps = std::max<int64_t>(1, int64_t(t.idx.size()) / std::max<int64_t>(lout, 1));
  if (inner == 1) {  // the last dim: a gather per output element, rows [outer]
    const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(lout * taps, 1));
    const int64_t k = uniform_taps(t);
    if (k == 1) return gather_rows<1>(src, dst, outer, lin, lout, ix, wt, grain);
    if (k == 2) return gather_rows<2>(src, dst, outer, lin, lout, ix, wt, grain);
    if (k == 4) return gather_rows<4>(src, dst, outer, lin, lout, ix, wt, grain);
    parallel_for(0, outer, grain, [&](int64_t a0, int64_t a1) {
      for (int64_t a = a0; a < a1; ++a) {
        const T* s = src + a * lin;
        T* d = dst + a * lout;
        for (int64_t o = 0; o < lout; ++o) {
          T acc = T(0);
          for (int64_t j = st[o]; j < st[o + 1]; ++j) acc += wt[j] * s[ix[j]];
          d[o] = acc;
        }
      }
    });
    return;
  }
  const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(inner * taps, 1));
  parallel_for(0, outer * lout, grain, [&](int64_t r0, int64_t r1) {
    int64_t a = r0 / lout, o = r0 % lout;
    for (int64_t r = r0; r < r1; ++r) {
      T* __restrict d = dst + r * inner;
      const int64_t j0 = st[o], j1 = st[o + 1];
      if (j0 == j1) {
        std::fill(d, d + inner, T(0));
      } else {
        const T w0 = wt[j0];
        const T* __restrict s0 = src + (a * lin + ix[j0]) * inner;
        for (int64_t b = 0; b < inner; ++b) d[b] = T(0) + w0 * s0[b];
        for (int64_t j = j0 + 1; j < j1; ++j) {
          const T w = wt[j];
          const T* __restrict s = src + (a * lin + ix[j]) * inner;
          for (int64_t b = 0; b < inner; ++b) d[b] += w * s[b];
        }
      }
      if (++o == lout) o = 0, ++a;
    }
  });
}

// Nearest forward in one pass over memory dims `in` -> `out` (row-major; tabs[d]
// the index table of dim d, null for a dim kept as is): each output row (the
// last memory dim) reads one source row, mapped through the other dims'
// tables; a row whose source is the previous row's is a copy of it. The last
// dim is W (gathered through its table) or, channels-last, C (copied).
template <class T>
void nearest_gather(const T* src, T* dst, const Shape& in, const Shape& out,
                    const std::vector<const Table<T>*>& tabs) {
  const int k = int(in.size());
  const int64_t win = in.back(), wout = out.back();
  int64_t rows = 1;
  for (int d = 0; d + 1 < k; ++d) rows *= out[size_t(d)];
  const int64_t* cx = tabs.back() ? tabs.back()->idx.data() : nullptr;
  parallel_for(0, rows, std::max<int64_t>(1, 16384 / std::max<int64_t>(wout, 1)),
               [&](int64_t r0, int64_t r1) {
                 int64_t prev = -1;
                 for (int64_t r = r0; r < r1; ++r) {
                   // Source row: the dims of r mapped through their tables.
                   int64_t rem = r, srow = 0, mul = 1;
                   for (int d = k - 2; d >= 0; --d) {
                     const int64_t od = out[size_t(d)], i = rem % od;
                     srow += (tabs[size_t(d)] ? tabs[size_t(d)]->idx[size_t(i)] : i) * mul;
                     mul *= in[size_t(d)];
                     rem /= od;
                   }
                   T* __restrict dr = dst + r * wout;
                   const T* __restrict s = src + srow * win;
                   if (srow == prev)
                     std::copy(dr - wout, dr, dr);
                   else if (!cx)
                     std::copy(s, s + wout, dr);
                   else
                     for (int64_t j = 0; j < wout; ++j) dr[j] = s[cx[j]];
                   prev = srow;
                 }
               });
}

// Resamples src [N, C, *from] into dst [N, C, *to]; the tables map the
// forward's input sizes to its output sizes (transposed when backward). A
// channels-last dst is computed in its own memory order [N, *to, C] (each
// pass then moves whole channel rows), anything else in [N*C, *to].
template <class T>
void resample(const Tensor& src, const Tensor& dst, Mode mode, const ops::ResampleOptions& o, bool backward) {
  if (dst.numel() == 0) return;
  const DType acc = src.dtype() == DType::Float64 ? DType::Float64 : DType::Float32;
  const int nd = src.dim() - 2;
  const MemoryFormat cl_format = nd == 2 ? MemoryFormat::ChannelsLast : MemoryFormat::ChannelsLast3d;
  const bool cl = nd >= 2 && !dst.is_contiguous() && is_contiguous(dst, cl_format);
  const MemoryFormat format = cl ? cl_format : MemoryFormat::Contiguous;
  const Tensor s = to(src, acc, format);
  // The result goes straight into dst when it is an acc tensor in that layout.
  const bool direct = dst.dtype() == acc && is_contiguous(dst, format);
  const Tensor res = direct ? dst : empty(dst.sizes(), acc, dst.device(), format);
  std::vector<Table<T>> tabs;
  for (int d = 0; d < nd; ++d) {
    const int64_t from = src.size(d + 2), to = dst.size(d + 2);
    const int64_t fin = backward ? to : from, fout = backward ? from : to;  // the forward's sizes
    tabs.push_back(make_table<T>(mode, nd, fin, fout, o, o.scales[size_t(d)]));
    if (backward) tabs.back() = transpose(tabs.back(), fin);
  }
  // Memory dims: [N*C, *spatial] or [N, *spatial, C]; spatial dim d is memory dim d + 1.
  Shape cur{cl ? src.size(0) : src.size(0) * src.size(1)}, to_sizes{cur[0]};
  std::vector<const Table<T>*> mem_tabs{nullptr};
  for (int d = 0; d < nd; ++d) {
    cur.push_back(src.size(d + 2));
    to_sizes.push_back(dst.size(d + 2));
    mem_tabs.push_back(&tabs[size_t(d)]);
  }
  if (cl) {
    cur.push_back(src.size(1));
    to_sizes.push_back(src.size(1));
    mem_tabs.push_back(nullptr);
  }
  if (mode == Mode::Nearest && !backward && s.numel() > 0) {
    nearest_gather(s.data<T>(), res.data<T>(), cur, to_sizes, mem_tabs);
  } else {
    // The dims that do more than copy. The last dim's pass is a gather, the
    // others' are contiguous row sums: when the last dim grows it goes first
    // (on the planes not yet resampled), else last (after the others shrank them).
    const bool last_first = dst.size(nd + 1) >= src.size(nd + 1);
    std::vector<int> order, todo;
    if (last_first) order.push_back(nd - 1);
    for (int d = 0; d + 1 < nd; ++d) order.push_back(d);
    if (!last_first) order.push_back(nd - 1);
    for (int d : order)
      if (!is_identity(tabs[size_t(d)], cur[size_t(d) + 1])) todo.push_back(d);
    const T* a = s.data<T>();
    std::vector<T> bufs[2];
    for (size_t k = 0; k < todo.size(); ++k) {
      const size_t m = size_t(todo[k]) + 1;  // its memory dim
      const int64_t from = cur[m], to = to_sizes[m];
      int64_t outer = 1, inner = 1;
      for (size_t q = 0; q < m; ++q) outer *= cur[q];
      for (size_t q = m + 1; q < cur.size(); ++q) inner *= cur[q];
      T* b = res.data<T>();
      if (k + 1 < todo.size()) {
        bufs[k % 2].resize(size_t(outer * to * inner));
        b = bufs[k % 2].data();
      }
      gather_pass(a, b, outer, from, inner, tabs[size_t(todo[k])]);
      cur[m] = to;
      a = b;
    }
    if (todo.empty()) Tensor(res).copy_(s);
  }
  if (!direct) Tensor(dst).copy_(res);
}

template <Mode mode, bool backward>
void kernel(const Tensor& src, const Tensor& dst, const ops::ResampleOptions& o) {
  if (src.dtype() == DType::Float64)
    resample<double>(src, dst, mode, o, backward);
  else
    resample<float>(src, dst, mode, o, backward);
}

}  // namespace

void register_interpolate_kernels() {
  constexpr auto cpu = DeviceKind::CPU;
  ops::upsample_nearest.set_kernel(cpu, kernel<Mode::Nearest, false>);
  ops::upsample_nearest_backward.set_kernel(cpu, kernel<Mode::Nearest, true>);
  ops::upsample_linear.set_kernel(cpu, kernel<Mode::Linear, false>);
  ops::upsample_linear_backward.set_kernel(cpu, kernel<Mode::Linear, true>);
  ops::upsample_bicubic2d.set_kernel(cpu, kernel<Mode::Cubic, false>);
  ops::upsample_bicubic2d_backward.set_kernel(cpu, kernel<Mode::Cubic, true>);
  ops::upsample_area.set_kernel(cpu, kernel<Mode::Area, false>);
  ops::upsample_area_backward.set_kernel(cpu, kernel<Mode::Area, true>);
}

}  // namespace kiln::cpu
