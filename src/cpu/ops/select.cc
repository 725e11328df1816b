// CPU kernels of the order statistics (ops/registry/sort.h), on the radix
// images of a line's keys (cpu/radix_sort.h). kthvalue, median and nanmedian
// select by radix (about two passes over the line, where sorting it costs
// n log n), then scan for the index a stable sort would put at that rank.
// mode sorts the non-NaN images and counts runs. Lines run in parallel, each on its own, so the results do
// not depend on the thread count; values are copied from x by index and keep
// their exact bits.
#include <algorithm>
#include <array>
#include <type_traits>
#include <vector>

#include "core/cast.h"
#include "core/scratch.h"
#include "cpu/ops/reduce_register.h"
#include "cpu/ops/row_offsets.h"
#include "cpu/radix_sort.h"
#include "kiln/thread_pool.h"
#include "ops/registry/all.h"

namespace kiln::cpu {
namespace {

enum class Rank { Kth, Median, NanMedian };

// Calls line(src, stride, n, value, index, buf) for every line of x along
// dim, lines in parallel; src: the line's first element, value / index:
// where its results go; buf: scratch of `scratch` * n images (from the
// caching allocator: a long line's scratch is not faulted in again each call).
template <typename T, typename U, typename Line>
void for_lines(const Tensor& x, int dim, const Tensor& values, const Tensor& indices, int scratch,
               Line line) {
  const int64_t n = x.size(dim);
  const int64_t rows = n == 0 ? 0 : x.numel() / n;
  if (rows == 0) return;
  RowOffsets ro;
  ro.build(x, values, dim);
  const int64_t xs = x.stride(dim);
  const T* xp = static_cast<const T*>(x.data_ptr());
  T* vp = static_cast<T*>(values.data_ptr());
  int64_t* ip = static_cast<int64_t*>(indices.data_ptr());
  parallel_for(0, rows, std::max<int64_t>(1, 16384 / n), [&](int64_t rb, int64_t re) {
    const ScratchBlock buf(size_t(scratch) * size_t(n) * sizeof(U));
    for (int64_t row = rb; row < re; ++row) {
      int64_t xo, oo;
      ro.offsets(row, &xo, &oo);
      line(xp + xo, xs, n, vp + oo, ip + oo, buf.as<U>());
    }
  });
}

template <typename Key, typename T>
inline Key key_of(T v) {
  return Key(cast<Key>(v));
}

// The rank the selection picks in a line of n holding `nans` NaNs.
int64_t rank_of(Rank rank, int64_t k, int64_t n, int64_t nans) {
  const int64_t m = n - nans;
  if (rank == Rank::Median) return nans > 0 ? m : (n - 1) / 2;  // a NaN makes the median the first NaN
  if (rank == Rank::NanMedian) return m > 0 ? (m - 1) / 2 : 0;
  return k - 1;
}

// The `seen`-th position (0-based, in line order) whose key has image u.
template <typename Key, typename T, typename U>
int64_t nth_with_image(const T* src, int64_t xs, int64_t n, U u, int64_t seen) {
  for (int64_t i = 0; i < n; ++i)
    if (radix_image(key_of<Key>(src[i * xs])) == u && seen-- == 0) return i;
  return 0;  // not reached: u is the image of an entry
}

// The entry at `rank` of a line of n in the stable ascending, NaN-last order,
// selected on the keys' radix images (cpu/radix_sort.h), whose order is that
// one with all NaNs equal and -0.0 equal to 0.0.
template <typename T, typename Key, typename U>
void select_line(const T* src, int64_t xs, int64_t n, Rank rank, int64_t k, T* value, int64_t* index,
                 U* buf) {
  constexpr int kTop = 8 * int(sizeof(U) - 1);
  int64_t top_count[256] = {}, nans = 0;
  for (int64_t i = 0; i < n; ++i) {
    const Key key = key_of<Key>(src[i * xs]);
    nans += key_is_nan(key);
    const U u = radix_image(key);
    buf[i] = u;
    ++top_count[u >> kTop];
  }
  const int64_t pos = rank_of(rank, k, n, nans);
  int64_t below;
  const U v = radix_select_image(buf, n, pos, top_count, &below);
  // Equal entries keep line order, so the result is the (pos - below)-th of them.
  const int64_t found = nth_with_image<Key>(src, xs, n, v, pos - below);
  *value = src[found * xs];
  *index = found;
}

// A line this long, alone (a whole-tensor median), is split over the threads.
constexpr int64_t kSplitLine = int64_t(1) << 18;

// select_line for one long line, its passes split into `parts` ranges run in
// parallel: images and top-byte counts per part, then each part copies its
// entries of the bucket holding the rank to its place in `kept` (in line
// order), the radix selection finishes on those, and the parts count their
// entries equal to the result to find the one at that rank.
template <typename T, typename Key, typename U>
void select_long_line(const T* src, int64_t xs, int64_t n, Rank rank, int64_t k, T* value, int64_t* index) {
  constexpr int kTop = 8 * int(sizeof(U) - 1);
  const int64_t parts = std::max<int64_t>(1, num_threads());
  auto begin = [&](int64_t p) { return n * p / parts; };
  const ScratchBlock scratch(2 * size_t(n) * sizeof(U));
  U* images = scratch.as<U>();
  U* kept = images + n;
  std::vector<std::array<int64_t, 256>> counts(static_cast<size_t>(parts));
  std::vector<int64_t> nans(static_cast<size_t>(parts), 0), at(static_cast<size_t>(parts) + 1, 0);
  parallel_for(0, parts, 1, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      // Counted locally: the parts' totals share cache lines.
      std::array<int64_t, 256> c{};
      int64_t nan_count = 0;
      for (int64_t i = begin(p); i < begin(p + 1); ++i) {
        const Key key = key_of<Key>(src[i * xs]);
        nan_count += key_is_nan(key);
        const U u = radix_image(key);
        images[i] = u;
        ++c[u >> kTop];
      }
      counts[size_t(p)] = c;
      nans[size_t(p)] = nan_count;
    }
  });
  int64_t all_nans = 0, before = 0;
  for (int64_t p = 0; p < parts; ++p) all_nans += nans[size_t(p)];
  int64_t pos = rank_of(rank, k, n, all_nans);
  int b = 0;
  for (;; ++b) {
    int64_t in_b = 0;
    for (int64_t p = 0; p < parts; ++p) in_b += counts[size_t(p)][size_t(b)];
    if (pos < before + in_b) break;
    before += in_b;
  }
  for (int64_t p = 0; p < parts; ++p) at[size_t(p) + 1] = at[size_t(p)] + counts[size_t(p)][size_t(b)];
  parallel_for(0, parts, 1, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      U* out = kept + at[size_t(p)];
      for (int64_t i = begin(p); i < begin(p + 1); ++i)
        if (int(images[i] >> kTop) == b) *out++ = images[i];
    }
  });
  int64_t below;
  const U v = radix_select_image(kept, at[size_t(parts)], pos - before, nullptr, &below);
  int64_t nth = pos - before - below;  // among the entries equal to v, in line order
  std::vector<int64_t> equal(static_cast<size_t>(parts), 0);
  parallel_for(0, parts, 1, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      int64_t e = 0;
      for (int64_t i = begin(p); i < begin(p + 1); ++i) e += images[i] == v;
      equal[size_t(p)] = e;
    }
  });
  int64_t p = 0;
  while (nth >= equal[size_t(p)]) nth -= equal[size_t(p++)];
  int64_t found = begin(p);
  for (;; ++found)
    if (images[found] == v && nth-- == 0) break;
  *value = src[found * xs];
  *index = found;
}

template <Rank rank>
void select_rank(const Tensor& x, int64_t k, int dim, const Tensor& values, const Tensor& indices) {
  dispatch<kIntSet | kFloatSet>(x.dtype(), "kthvalue", [&]<typename T>() {
    using Key = compute_t<T>;
    using U = decltype(radix_image(Key{}));
    const int64_t n = x.size(dim);
    if (n >= kSplitLine && x.numel() == n && num_threads() > 1)
      return select_long_line<T, Key, U>(static_cast<const T*>(x.data_ptr()), x.stride(dim), n, rank, k,
                                         static_cast<T*>(values.data_ptr()),
                                         static_cast<int64_t*>(indices.data_ptr()));
    for_lines<T, U>(x, dim, values, indices, 1,
                    [&](const T* src, int64_t xs, int64_t n, T* v, int64_t* i, U* buf) {
                      select_line<T, Key, U>(src, xs, n, rank, k, v, i, buf);
                    });
  });
}

void kthvalue(const Tensor& x, int64_t k, int dim, const Tensor& values, const Tensor& indices) {
  select_rank<Rank::Kth>(x, k, dim, values, indices);
}

template <Rank rank>
void median(const Tensor& x, int dim, const Tensor& values, const Tensor& indices) {
  select_rank<rank>(x, 0, dim, values, indices);
}

// The longest run of equal non-NaN keys of the sorted line (the first, so
// the smallest value, among equally long ones) and the last index holding
// it; a line of NaNs gives its first.
template <typename T, typename Key, typename U>
void mode_line(const T* src, int64_t xs, int64_t n, T* value, int64_t* index, U* buf) {
  int64_t m = 0;
  for (int64_t i = 0; i < n; ++i) {
    const Key key = key_of<Key>(src[i * xs]);
    if (!key_is_nan(key)) buf[m++] = radix_image(key);
  }
  int64_t found = 0;
  if (m > 0) {
    if (m >= kRadixMinRow)
      radix_sort_images(buf, static_cast<int64_t*>(nullptr), buf + n, static_cast<int64_t*>(nullptr), m);
    else
      std::sort(buf, buf + m);
    U best = buf[0];
    int64_t best_len = 0;
    for (int64_t i = 0; i < m;) {
      int64_t j = i + 1;
      while (j < m && buf[j] == buf[i]) ++j;
      if (j - i > best_len) best_len = j - i, best = buf[i];
      i = j;
    }
    for (int64_t i = n; i-- > 0;)
      if (radix_image(key_of<Key>(src[i * xs])) == best) {
        found = i;
        break;
      }
  }
  *value = src[found * xs];
  *index = found;
}

void mode(const Tensor& x, int dim, const Tensor& values, const Tensor& indices) {
  dispatch<kBoolSet | kIntSet | kFloatSet>(x.dtype(), "mode", [&]<typename T>() {
    using Key = std::conditional_t<std::is_same_v<T, bool>, uint8_t, compute_t<T>>;
    using U = decltype(radix_image(Key{}));
    for_lines<T, U>(x, dim, values, indices, 2,
                    [&](const T* src, int64_t xs, int64_t n, T* v, int64_t* i, U* buf) {
                      mode_line<T, Key, U>(src, xs, n, v, i, buf);
                    });
  });
}

}  // namespace

void register_select_kernels() {
  constexpr DeviceKind kCpu = DeviceKind::CPU;
  ops::kthvalue.set_kernel(kCpu, kthvalue);
  ops::median.set_kernel(kCpu, median<Rank::Median>);
  ops::nanmedian.set_kernel(kCpu, median<Rank::NanMedian>);
  ops::mode.set_kernel(kCpu, mode);
}

}  // namespace kiln::cpu
