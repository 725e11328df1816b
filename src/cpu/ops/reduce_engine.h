// The one reduction engine behind every CPU reduction kernel.
//
// A ReducePlan splits the input's dims into kept dims (the output, in order) and
// reduced dims, each group coalesced; the engine then computes, for each output
// element, a reducer State over the reduced elements and hands it to the
// reducer's write(). Work is spread two ways:
//   - many outputs: outputs are split across threads;
//   - few outputs with long reductions: the reduced range is split across
//     threads, and the partial States are combined in index order.
// Two inner loop shapes:
//   - row mode: each output reduces runs along the innermost reduced dim
//     (contiguous runs go to the reducer's run(), where the SIMD kernels live);
//   - column mode: when the innermost kept dim is contiguous and the reduced
//     dims are not (e.g. sum over dim 0 of a row-major matrix), a tile of
//     neighbouring outputs is updated per reduced index, so reads stay linear.
//
// A reducer R for storage type T provides:
//   using State = ...;
//   State init() const;
//   void step(State&, T v, int64_t idx) const;                 // idx: linear reduced index
//   void run(State&, const T* p, int64_t stride, int64_t n, int64_t idx0) const;
//   void combine(State& a, const State& b) const;             // b follows a in index order
//   void write(const State&, int64_t out_index) const;        // outputs are contiguous
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "kiln/tensor.h"
#include "kiln/thread_pool.h"

namespace kiln::cpu {

struct ReducePlan {
  int64_t n_out = 1;  // number of output elements
  int64_t n_red = 1;  // elements reduced into each
  // Kept dims (coalesced, outermost first), strides in elements of the input.
  int ondim = 1;
  int64_t oshape[kMaxDims] = {1};
  int64_t ostride[kMaxDims] = {0};
  // Reduced dims (coalesced, innermost last), strides in elements.
  int rndim = 1;
  int64_t rshape[kMaxDims] = {1};
  int64_t rstride[kMaxDims] = {0};
  const char* base = nullptr;  // element [0, ...] of the input
};

// mask[d]: dim d of x is reduced (x.dim() entries; see ops/reduce_dims.h).
// keep_order: reduced dims stay in row-major order so the linear reduced index
// is the index into x's flattened reduced dims (argmax/argmin, first
// occurrence); otherwise they are sorted by stride for locality.
ReducePlan make_reduce_plan(const Tensor& x, const std::vector<bool>& mask, bool keep_order);

// Element count of a plan's work below which one thread does it all.
inline constexpr int64_t kReduceGrain = 32768;

namespace detail {

// Element offset of the kept multi-index for output o.
inline int64_t out_offset(const ReducePlan& p, int64_t o) {
  int64_t off = 0;
  for (int d = p.ondim - 1; d >= 0; --d) {
    off += (o % p.oshape[d]) * p.ostride[d];
    o /= p.oshape[d];
  }
  return off;
}

// Iterates the reduced linear range [rb, re) as runs along the innermost
// reduced dim: fn(element offset, run length, linear index of the run start).
template <typename F>
inline void for_reduced_runs(const ReducePlan& p, int64_t rb, int64_t re, F&& fn) {
  const int last = p.rndim - 1;
  int64_t idx[kMaxDims];
  int64_t rem = rb;
  for (int d = last; d >= 0; --d) {
    idx[d] = rem % p.rshape[d];
    rem /= p.rshape[d];
  }
  int64_t pos = rb;
  while (pos < re) {
    int64_t off = 0;
    for (int d = 0; d <= last; ++d) off += idx[d] * p.rstride[d];
    const int64_t n = std::min(p.rshape[last] - idx[last], re - pos);
    fn(off, n, pos);
    pos += n;
    idx[last] += n;
    for (int d = last; d > 0 && idx[d] == p.rshape[d]; --d) {
      idx[d] = 0;
      ++idx[d - 1];
    }
  }
}

template <typename T, typename R>
void reduce_rows(const ReducePlan& p, const R& r, int64_t ob, int64_t oe, int64_t rb, int64_t re,
                 typename R::State* st) {
  const T* base = reinterpret_cast<const T*>(p.base);
  const int64_t rs = p.rstride[p.rndim - 1];
  for (int64_t o = ob; o < oe; ++o) {
    const T* x = base + out_offset(p, o);
    auto& s = st[o - ob];
    for_reduced_runs(p, rb, re, [&](int64_t off, int64_t n, int64_t i0) { r.run(s, x + off, rs, n, i0); });
  }
}

template <typename T, typename R>
void reduce_cols(const ReducePlan& p, const R& r, int64_t ob, int64_t oe, int64_t rb, int64_t re,
                 typename R::State* st) {
  // Wide tiles: long contiguous row segments per reduced index (few TLB misses,
  // prefetch-friendly) while the States stay in L1/L2.
  constexpr int64_t kTile = 4096;
  const T* base = reinterpret_cast<const T*>(p.base);
  const int64_t inner = p.oshape[p.ondim - 1];  // contiguous in the input
  for (int64_t o = ob; o < oe;) {
    const int64_t k = std::min({oe - o, inner - o % inner, kTile});
    const T* x = base + out_offset(p, o);
    auto* s = st + (o - ob);
    for_reduced_runs(p, rb, re, [&](int64_t off, int64_t n, int64_t i0) {
      const int64_t rs = p.rstride[p.rndim - 1];
      for (int64_t i = 0; i < n; ++i) {
        const T* row = x + off + i * rs;
        for (int64_t t = 0; t < k; ++t) r.step(s[t], row[t], i0 + i);
      }
    });
    o += k;
  }
}

}  // namespace detail

// Runs reducer r over the plan; r.write() is called once for every output.
template <typename T, typename R>
void run_reduce(const ReducePlan& p, const R& r) {
  using S = typename R::State;
  if (p.n_out == 0) return;
  if (p.n_red == 0) {
    const S s = r.init();
    for (int64_t o = 0; o < p.n_out; ++o) r.write(s, o);
    return;
  }
  const bool cols = p.ostride[p.ondim - 1] == 1 && p.oshape[p.ondim - 1] > 1 && p.rstride[p.rndim - 1] != 1;
  auto block = [&](int64_t ob, int64_t oe, int64_t rb, int64_t re, S* st) {
    if (cols) detail::reduce_cols<T>(p, r, ob, oe, rb, re, st);
    else detail::reduce_rows<T>(p, r, ob, oe, rb, re, st);
  };
  const int nt = num_threads();
  const int64_t total = p.n_out * p.n_red;
  const int64_t chunks = std::min<int64_t>(nt, total / kReduceGrain);
  if (p.n_out >= 4 * int64_t(nt) || chunks <= 1 || in_parallel_region()) {
    // Parallel over outputs; each chunk holds its States.
    const int64_t grain = std::max<int64_t>(1, kReduceGrain / p.n_red);
    parallel_for(0, p.n_out, grain, [&](int64_t ob, int64_t oe) {
      std::unique_ptr<S[]> st(new S[size_t(oe - ob)]);
      std::fill(st.get(), st.get() + (oe - ob), r.init());
      block(ob, oe, 0, p.n_red, st.get());
      for (int64_t o = ob; o < oe; ++o) r.write(st[size_t(o - ob)], o);
    });
    return;
  }
  // Few outputs, long reductions: split the reduced range into `chunks` parts.
  // part[c * n_out + o]: chunk c's State for output o.
  std::unique_ptr<S[]> part(new S[size_t(chunks * p.n_out)]);
  std::fill(part.get(), part.get() + chunks * p.n_out, r.init());
  parallel_for(0, chunks, 1, [&](int64_t cb, int64_t ce) {
    for (int64_t c = cb; c < ce; ++c)
      block(0, p.n_out, p.n_red * c / chunks, p.n_red * (c + 1) / chunks, part.get() + c * p.n_out);
  });
  for (int64_t o = 0; o < p.n_out; ++o) {
    S s = part[size_t(o)];
    for (int64_t c = 1; c < chunks; ++c) r.combine(s, part[size_t(c * p.n_out + o)]);
    r.write(s, o);
  }
}

// Default run(): step over a strided run.
template <typename T, typename R, typename S>
inline void step_run(const R& r, S& s, const T* x, int64_t stride, int64_t n, int64_t i0) {
  if (stride == 1) {
    for (int64_t i = 0; i < n; ++i) r.step(s, x[i], i0 + i);
  } else {
    for (int64_t i = 0; i < n; ++i) r.step(s, x[i * stride], i0 + i);
  }
}

}  // namespace kiln::cpu
