// CPU kernels of flip, roll, repeat (a gather into a contiguous output whose
// source offset is a sum of one small table per outer dim, the innermost dim
// as forward or reversed runs) and tril/triu (a row
// copy and a zero fill per matrix row). Byte moves on the element size: no
// dtype dispatch.
#include <algorithm>
#include <cstring>
#include <vector>

#include "cpu/ops/register.h"
#include "cpu/stream_store.h"
#include "kiln/thread_pool.h"
#include "ops/registry/all.h"

namespace kiln::cpu {
namespace {

// table[d][i]: the byte offset in x of index i along out's dim d, for every
// dim but the innermost, which is described by runs.
using Tables = std::vector<std::vector<int64_t>>;

// A run of the innermost dim: out[j0, j0 + len) reads x at off, off + step,
// off + 2 step, ... with step = +item (forward) or -item (reversed: a flip).
struct Run {
  int64_t j0, off, len;
  bool reversed;
};

// The runs of the innermost dim's mapping j -> f(j) (byte offsets), found
// without a table of the whole dim (a repeat of a 1-d tensor would need one
// as long as its output).
template <typename F>
std::vector<Run> runs_of(int64_t n, int64_t item, F f) {
  std::vector<Run> r;
  for (int64_t j = 0; j < n; ++j) {
    const int64_t off = f(j);
    if (!r.empty()) {
      Run& last = r.back();
      const int64_t step = last.reversed ? -item : item;
      if (off == last.off + last.len * step) {
        ++last.len;
        continue;
      }
      if (last.len == 1 && off == last.off - item) {  // a second element, going backwards
        last.reversed = true;
        ++last.len;
        continue;
      }
    }
    r.push_back({j, off, 1, false});
  }
  return r;
}

// Copies len elements of N bytes from src backwards: dst[k] = src[-k].
template <size_t N>
void copy_reversed(char* dst, const char* src, int64_t len) {
  for (int64_t k = 0; k < len; ++k) std::memcpy(dst + k * int64_t(N), src - k * int64_t(N), N);
}

// Columns per work item: long inner dims (a 1-d output is one row) split
// across threads too.
constexpr int64_t kGatherBlock = int64_t(1) << 16;

template <size_t N>
void gather_rows(const Tensor& x, const Tables& table, const std::vector<Run>& runs, const Tensor& out) {
  const char* xp = static_cast<const char*>(x.data_ptr());
  char* op = static_cast<char*>(out.data_ptr());
  const int nd = out.dim();
  if (nd == 0) {
    std::memcpy(op, xp, N);
    return;
  }
  const int64_t inner = out.size(nd - 1);
  if (out.numel() == 0) return;
  const int64_t rows = out.numel() / inner;
  const int64_t blocks = (inner + kGatherBlock - 1) / kGatherBlock;
  const auto shape = out.shape();
  const int64_t per_block = std::min(inner, kGatherBlock);
  const bool stream = int64_t(out.nbytes()) >= kStreamMinBytes;
  parallel_for(0, rows * blocks, std::max<int64_t>(1, 32768 / per_block), [&](int64_t b, int64_t e) {
    for (int64_t w = b; w < e; ++w) {
      const int64_t r = w / blocks, c0 = (w % blocks) * kGatherBlock, c1 = std::min(inner, c0 + kGatherBlock);
      int64_t base = 0, rem = r;
      for (int d = nd - 2; d >= 0; --d) {
        base += table[size_t(d)][size_t(rem % shape[size_t(d)])];
        rem /= shape[size_t(d)];
      }
      char* o = op + r * inner * int64_t(N);
      // The first run that ends after c0.
      auto it = std::upper_bound(runs.begin(), runs.end(), c0,
                                 [](int64_t c, const Run& run) { return c < run.j0 + run.len; });
      for (; it != runs.end() && it->j0 < c1; ++it) {
        const int64_t j0 = std::max(it->j0, c0), j1 = std::min(it->j0 + it->len, c1);
        const int64_t skip = j0 - it->j0;
        const char* src = xp + base + it->off + (it->reversed ? -skip : skip) * int64_t(N);
        const int64_t bytes = (j1 - j0) * int64_t(N);
        if (it->reversed)
          copy_reversed<N>(o + j0 * int64_t(N), src, j1 - j0);
        else if (stream && bytes >= kStreamMinRun)
          stream_copy(o + j0 * int64_t(N), src, size_t(bytes));
        else
          std::memcpy(o + j0 * int64_t(N), src, size_t(bytes));
      }
    }
    if (stream) stream_fence();
  });
}

// out[i...] = x[f(0, i0), f(1, i1), ...]: f maps an index of out's dim d to
// an index of x's. inner: the innermost dim's runs in elements of x (off as an
// index), when the op knows them; used when x's innermost dim is unit-stride,
// else they are found from f.
template <typename F>
void gather(const Tensor& x, const Tensor& out, F f, const std::vector<Run>& inner = {}) {
  const int nd = out.dim();
  const int64_t item = int64_t(x.itemsize());
  Tables table(size_t(std::max(nd - 1, 0)));
  for (int d = 0; d + 1 < nd; ++d) {
    table[size_t(d)].resize(size_t(out.size(d)));
    for (int64_t i = 0; i < out.size(d); ++i) table[size_t(d)][size_t(i)] = f(d, i) * x.stride(d) * item;
  }
  std::vector<Run> runs;
  if (nd > 0 && !inner.empty() && x.stride(nd - 1) == 1) {
    runs = inner;
    for (Run& r : runs) r.off *= item;
  } else if (nd > 0) {
    runs = runs_of(out.size(nd - 1), item, [&](int64_t j) { return f(nd - 1, j) * x.stride(nd - 1) * item; });
  }
  switch (out.itemsize()) {
    case 1:
      return gather_rows<1>(x, table, runs, out);
    case 2:
      return gather_rows<2>(x, table, runs, out);
    case 4:
      return gather_rows<4>(x, table, runs, out);
    case 8:
      return gather_rows<8>(x, table, runs, out);
    default:
      return gather_rows<16>(x, table, runs, out);
  }
}

void flip(const Tensor& x, std::span<const int> dims, const Tensor& out) {
  std::vector<bool> flipped(size_t(x.dim()), false);
  for (int d : dims) flipped[size_t(d)] = true;
  const int64_t n = x.dim() > 0 ? x.size(-1) : 0;
  const std::vector<Run> inner = n == 0           ? std::vector<Run>{}
                                 : flipped.back() ? std::vector<Run>{{0, n - 1, n, true}}
                                                  : std::vector<Run>{{0, 0, n, false}};
  gather(
      x, out, [&](int d, int64_t i) { return flipped[size_t(d)] ? x.size(d) - 1 - i : i; }, inner);
}

void roll(const Tensor& x, std::span<const int64_t> shifts, std::span<const int> dims, const Tensor& out) {
  std::vector<int64_t> shift(size_t(x.dim()), 0);
  for (size_t k = 0; k < dims.size(); ++k) shift[size_t(dims[k])] = shifts[k];
  // The front-end wraps each shift into [0, size).
  const int64_t n = x.dim() > 0 ? x.size(-1) : 0, t = n > 0 ? shift.back() : 0;
  std::vector<Run> inner;
  if (t > 0) inner.push_back({0, n - t, t, false});  // out[0, t) = x[n - t, n)
  if (n - t > 0) inner.push_back({t, 0, n - t, false});
  gather(
      x, out,
      [&](int d, int64_t i) {
        const int64_t m = x.size(d), j = i - shift[size_t(d)];
        return j < 0 ? j + m : j;
      },
      inner);
}

void repeat(const Tensor& x, const Tensor& out) {
  std::vector<Run> inner;  // out's innermost dim: copies of x's
  const int64_t n = x.dim() > 0 ? x.size(-1) : 0;
  for (int64_t j0 = 0; n > 0 && j0 < out.size(-1); j0 += n) inner.push_back({j0, 0, n, false});
  gather(
      x, out, [&](int d, int64_t i) { return i % x.size(d); }, inner);
}

// Moves `n` elements of N bytes from strided src to strided dst (byte strides).
template <size_t N>
void move_run(char* dst, int64_t ds, const char* src, int64_t ss, int64_t n) {
  if (ds == int64_t(N) && ss == int64_t(N)) {
    std::memmove(dst, src, size_t(n) * N);
    return;
  }
  for (int64_t j = 0; j < n; ++j) std::memcpy(dst + j * ds, src + j * ss, N);
}
template <size_t N>
void zero_run(char* dst, int64_t ds, int64_t n) {
  if (ds == int64_t(N)) {
    std::memset(dst, 0, size_t(n) * N);
    return;
  }
  for (int64_t j = 0; j < n; ++j) std::memset(dst + j * ds, 0, N);
}

template <size_t N>
void triangle(const Tensor& x, int64_t k, const Tensor& out, bool upper) {
  const int nd = out.dim();
  const int64_t m = out.size(nd - 2), n = out.size(nd - 1);
  if (out.numel() == 0) return;
  const int64_t item = int64_t(N);
  const int64_t xr = x.stride(nd - 2) * item, xc = x.stride(nd - 1) * item;
  const int64_t orow = out.stride(nd - 2) * item, oc = out.stride(nd - 1) * item;
  const char* xp = static_cast<const char*>(x.data_ptr());
  char* op = static_cast<char*>(out.data_ptr());
  const bool in_place = xp == op && x.stride_vec() == out.stride_vec();
  const int64_t rows = out.numel() / n;
  // A large output streams (cpu/stream_store.h): it writes 2x what it reads.
  const bool stream = !in_place && oc == item && xc == item && int64_t(out.nbytes()) >= kStreamMinBytes;
  parallel_for(0, rows, std::max<int64_t>(1, 32768 / n), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      // Rows in folded order (0, m-1, 1, m-2, ...): a row keeps i + k columns
      // (tril) or the rest (triu), so contiguous blocks of rows would give one
      // thread three times the reads of the other.
      const int64_t f = r % m, i = f % 2 == 0 ? f / 2 : m - 1 - f / 2;
      int64_t xo = i * xr, oo = i * orow, rem = r / m;
      for (int d = nd - 3; d >= 0; --d) {
        const int64_t id = rem % out.size(d);
        rem /= out.size(d);
        xo += id * x.stride(d) * item;
        oo += id * out.stride(d) * item;
      }
      // Kept columns [lo, hi): tril j <= i + k, triu j >= i + k.
      const int64_t lo = upper ? std::clamp<int64_t>(i + k, 0, n) : 0;
      const int64_t hi = upper ? n : std::clamp<int64_t>(i + k + 1, 0, n);
      char* o = op + oo;
      if (stream) {
        stream_zero(o, size_t(lo) * N);
        stream_copy(o + lo * oc, xp + xo + lo * xc, size_t(hi - lo) * N);
        stream_zero(o + hi * oc, size_t(n - hi) * N);
        continue;
      }
      zero_run<N>(o, oc, lo);
      if (!in_place) move_run<N>(o + lo * oc, oc, xp + xo + lo * xc, xc, hi - lo);
      zero_run<N>(o + hi * oc, oc, n - hi);
    }
    if (stream) stream_fence();
  });
}

void triangle(const Tensor& x, int64_t k, const Tensor& out, bool upper) {
  switch (out.itemsize()) {
    case 1:
      return triangle<1>(x, k, out, upper);
    case 2:
      return triangle<2>(x, k, out, upper);
    case 4:
      return triangle<4>(x, k, out, upper);
    case 8:
      return triangle<8>(x, k, out, upper);
    default:
      return triangle<16>(x, k, out, upper);
  }
}

void tril(const Tensor& x, int64_t k, const Tensor& out) { triangle(x, k, out, false); }
void triu(const Tensor& x, int64_t k, const Tensor& out) { triangle(x, k, out, true); }

}  // namespace

void register_shape_reorder_kernels() {
  ops::flip.set_kernel(DeviceKind::CPU, flip);
  ops::roll.set_kernel(DeviceKind::CPU, roll);
  ops::repeat.set_kernel(DeviceKind::CPU, repeat);
  ops::tril.set_kernel(DeviceKind::CPU, tril);
  ops::triu.set_kernel(DeviceKind::CPU, triu);
}

}  // namespace kiln::cpu
