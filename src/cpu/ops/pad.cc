// CPU kernels of pad and pad_backward (ops/registry/pad.h). Each padded dim
// has an index map: output position o reads input position map[o] (-1: the
// constant fill). The forward writes each output element once from the
// strided input; the backward is partitioned by input-gradient element, each
// summing the output positions whose map points at it (per-dim preimage
// lists, in ascending order): deterministic, no atomics.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "cpu/ops/register.h"
#include "kiln/dtype.h"
#include "kiln/thread_pool.h"
#include "ops/registry/all.h"

namespace kiln::cpu {
namespace {

// The input position that output position o of a dim of size n padded by
// (l, r) reads, or -1 for the constant fill. Circular wraps within the
// cropped input [max(0, -l), n - max(0, -r)), as torch does.
int64_t source_index(int64_t o, int64_t n, int64_t l, int64_t r, PadMode mode) {
  const int64_t i = o - l;
  switch (mode) {
    case PadMode::Constant:
      return i >= 0 && i < n ? i : -1;
    case PadMode::Reflect:
      if (i < 0) return -i;
      return i >= n ? 2 * (n - 1) - i : i;
    case PadMode::Replicate:
      return std::clamp<int64_t>(i, 0, n - 1);
    case PadMode::Circular: {
      const int64_t start = std::max<int64_t>(0, -l);
      const int64_t len = n - start - std::max<int64_t>(0, -r);
      const int64_t k = (o - std::max<int64_t>(0, l)) % len;
      return start + (k < 0 ? k + len : k);
    }
  }
  return -1;
}

// The index maps of every dim of `in` (sizes n_d) padded to out (sizes m_d):
// identity for the leading unpadded dims.
std::vector<std::vector<int64_t>> index_maps(const Shape& in, const std::vector<int64_t>& pad, PadMode mode) {
  const int R = int(in.size()), K = int(pad.size() / 2);
  std::vector<std::vector<int64_t>> maps(static_cast<size_t>(R));
  for (int d = 0; d < R; ++d) {
    const int k = R - 1 - d;  // d's pair in pad (last dim first)
    const int64_t l = k < K ? pad[size_t(2 * k)] : 0, r = k < K ? pad[size_t(2 * k + 1)] : 0;
    const int64_t n = in[size_t(d)], m = n + l + r;
    auto& mp = maps[size_t(d)];
    mp.resize(size_t(m));
    for (int64_t o = 0; o < m; ++o) mp[size_t(o)] = k < K ? source_index(o, n, l, r, mode) : o;
  }
  return maps;
}

// An element of `size` bytes, moved as a whole.
template <size_t N>
struct Bytes {
  unsigned char b[N];
};

template <typename E>
void pad_rows(const Tensor& x, const std::vector<std::vector<int64_t>>& maps, const E fill,
              const Tensor& out) {
  const int R = x.dim();
  const auto xs = x.strides();
  const E* xp = static_cast<const E*>(x.data_ptr());
  E* op = static_cast<E*>(out.data_ptr());
  const int64_t m_last = out.size(-1), rows = out.numel() / m_last;
  const std::vector<int64_t>& last = maps[size_t(R - 1)];
  const int64_t s_last = xs[size_t(R - 1)];
  parallel_for(0, rows, std::max<int64_t>(1, 16384 / m_last), [&](int64_t r0, int64_t r1) {
    for (int64_t row = r0; row < r1; ++row) {
      // The row's input offset from its leading output indices.
      int64_t off = 0, rem = row;
      bool filled = false;
      for (int d = R - 2; d >= 0; --d) {
        const int64_t md = out.size(d), o = rem % md;
        rem /= md;
        const int64_t i = maps[size_t(d)][size_t(o)];
        if (i < 0) filled = true;
        off += i * xs[size_t(d)];
      }
      E* y = op + row * m_last;
      if (filled) {
        std::fill(y, y + m_last, fill);
        continue;
      }
      const E* src = xp + off;
      for (int64_t j = 0; j < m_last; ++j) {
        const int64_t i = last[size_t(j)];
        y[j] = i < 0 ? fill : src[i * s_last];
      }
    }
  });
}

// x: [*, n] any dtype and layout; out: [*, m] contiguous.
void pad(const Tensor& x, const std::vector<int64_t>& pad, PadMode mode, double value, const Tensor& out) {
  if (out.numel() == 0) return;
  const auto maps = index_maps(x.sizes(), pad, mode);
  // The fill in out's dtype, as bytes.
  const Tensor v = full({}, Scalar(value), out.dtype());
  auto run = [&]<size_t N>() {
    Bytes<N> fill;
    std::memcpy(fill.b, v.data_ptr(), N);
    pad_rows<Bytes<N>>(x, maps, fill, out);
  };
  switch (out.itemsize()) {
    case 1:
      return run.template operator()<1>();
    case 2:
      return run.template operator()<2>();
    case 4:
      return run.template operator()<4>();
    case 8:
      return run.template operator()<8>();
    case 16:
      return run.template operator()<16>();
    default:
      KILN_CHECK(false, TypeError, "[pad] unsupported dtype " << name(out.dtype()));
  }
}

// Per dim: for each input position i, the output positions o with map[o] == i,
// ascending (CSR: offsets n + 1, then positions).
struct Preimages {
  std::vector<int64_t> start, pos;
};
Preimages preimages(const std::vector<int64_t>& map, int64_t n) {
  Preimages p;
  p.start.assign(size_t(n + 1), 0);
  for (int64_t i : map)
    if (i >= 0) ++p.start[size_t(i + 1)];
  for (int64_t i = 0; i < n; ++i) p.start[size_t(i + 1)] += p.start[size_t(i)];
  p.pos.resize(size_t(p.start[size_t(n)]));
  std::vector<int64_t> fillp(p.start.begin(), p.start.end() - 1);
  for (int64_t o = 0; o < int64_t(map.size()); ++o)
    if (map[size_t(o)] >= 0) p.pos[size_t(fillp[size_t(map[size_t(o)])]++)] = o;
  return p;
}

// grad: [*, m] float or complex, any layout; out: [*, n] contiguous.
void pad_backward(const Tensor& grad, const std::vector<int64_t>& pad, PadMode mode, const Tensor& out) {
  if (out.numel() == 0) return;
  const int R = out.dim();
  const auto maps = index_maps(out.sizes(), pad, mode);
  std::vector<Preimages> pre(static_cast<size_t>(R));
  for (int d = 0; d < R; ++d) pre[size_t(d)] = preimages(maps[size_t(d)], out.size(d));
  const auto gs = grad.strides();
  const int64_t n_last = out.size(-1), rows = out.numel() / n_last, s_last = gs[size_t(R - 1)];
  const Preimages& pl = pre[size_t(R - 1)];
  dispatch<kFloatSet | kComplexSet>(out.dtype(), "pad_backward", [&]<typename T>() {
    using C = compute_t<T>;
    const T* gp = grad.data<T>();
    T* op = out.data<T>();
    parallel_for(0, rows, std::max<int64_t>(1, 4096 / n_last), [&](int64_t r0, int64_t r1) {
      // The grad offsets of the row's leading positions: every combination of
      // the preimages of its leading indices (odometer, last leading dim fastest).
      std::vector<int64_t> bases, next;
      for (int64_t row = r0; row < r1; ++row) {
        bases.assign(1, 0);
        int64_t rem = row;
        std::vector<int64_t> idx(size_t(std::max(R - 1, 0)));
        for (int d = R - 2; d >= 0; --d) {
          idx[size_t(d)] = rem % out.size(d);
          rem /= out.size(d);
        }
        for (int d = 0; d < R - 1 && !bases.empty(); ++d) {
          const Preimages& p = pre[size_t(d)];
          const int64_t i = idx[size_t(d)];
          next.clear();
          for (int64_t b : bases)
            for (int64_t k = p.start[size_t(i)]; k < p.start[size_t(i + 1)]; ++k)
              next.push_back(b + p.pos[size_t(k)] * gs[size_t(d)]);
          bases.swap(next);
        }
        T* y = op + row * n_last;
        for (int64_t i = 0; i < n_last; ++i) {
          C acc = C(0);
          for (int64_t b : bases)
            for (int64_t k = pl.start[size_t(i)]; k < pl.start[size_t(i + 1)]; ++k)
              acc += C(gp[b + pl.pos[size_t(k)] * s_last]);
          y[i] = T(acc);
        }
      }
    });
  });
}

}  // namespace

void register_pad_kernels() {
  ops::pad.set_kernel(DeviceKind::CPU, pad);
  ops::pad_backward.set_kernel(DeviceKind::CPU, pad_backward);
}

}  // namespace kiln::cpu
