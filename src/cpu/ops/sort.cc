// CPU kernels of sort, argsort and topk (ops/registry/sort.h): one row (a line
// along dim) at a time, rows in parallel; whole rows of 64 or more by a stable
// radix sort of order-preserving key images, the rest by comparison. Keys are widened to compute_t
// (narrow floats to float); NaN orders above every number, as in torch; values
// are copied from x by the sorted indices, so they keep their exact bits.
#include <algorithm>
#include <vector>

#include "core/cast.h"
#include "cpu/ops/reduce_register.h"
#include "cpu/ops/register.h"
#include "cpu/ops/row_offsets.h"
#include "cpu/radix_sort.h"
#include "kiln/thread_pool.h"
#include "ops/registry/all.h"

namespace kiln::cpu {
namespace {

// Strict "a before b" for ascending (NaN largest) and descending (NaN first).
template <typename K>
struct Ascending {
  bool operator()(K a, K b) const { return a < b || (!key_is_nan(a) && key_is_nan(b)); }
};
template <typename K>
struct Descending {
  bool operator()(K a, K b) const { return a > b || (key_is_nan(a) && !key_is_nan(b)); }
};

// Sorts (k < 0) or selects the top k of every row along dim into indices and,
// when defined, values (both contiguous, x's shape with size(dim) = k or n).
void sort_rows(const Tensor& x, int dim, bool descending, int64_t k, bool sorted, const Tensor& values,
               const Tensor& indices) {
  const int64_t n = x.size(dim);
  const bool topk = k >= 0;
  const int64_t m = topk ? k : n;
  const int64_t rows = n == 0 ? 0 : x.numel() / n;
  if (m == 0 || rows == 0) return;
  RowOffsets ro;
  ro.build(x, indices, dim);
  const int64_t xs = x.stride(dim), os = indices.stride(dim);
  dispatch<kBoolSet | kIntSet | kFloatSet | kFp8Set>(x.dtype(), topk ? "topk" : "sort", [&]<typename T>() {
    using Key = std::conditional_t<std::is_same_v<T, bool>, uint8_t, compute_t<T>>;
    const T* xp = static_cast<const T*>(x.data_ptr());
    T* vp = values.defined() ? static_cast<T*>(values.data_ptr()) : nullptr;
    int64_t* ip = static_cast<int64_t*>(indices.data_ptr());
    // Whole rows of 64 or more: the stable radix sort (linear in n; the
    // comparison sort below costs ~log2(n) passes).
    if (!topk && n >= kRadixMinRow) {
      using U = decltype(radix_image(Key{}));
      const int64_t grain = std::max<int64_t>(1, 16384 / n);
      parallel_for(0, rows, grain, [&](int64_t rb, int64_t re) {
        std::vector<U> img(static_cast<size_t>(n)), tmp_img(static_cast<size_t>(n));
        std::vector<int64_t> order(static_cast<size_t>(n)), tmp_order(static_cast<size_t>(n));
        for (int64_t row = rb; row < re; ++row) {
          int64_t xo, oo;
          ro.offsets(row, &xo, &oo);
          const T* src = xp + xo;
          for (int64_t i = 0; i < n; ++i) {
            const U u = radix_image(Key(cast<Key>(src[i * xs])));
            img[size_t(i)] = descending ? U(~u) : u;
            order[size_t(i)] = i;
          }
          radix_sort_images(img.data(), order.data(), tmp_img.data(), tmp_order.data(), n);
          for (int64_t i = 0; i < n; ++i) {
            const int64_t j = order[size_t(i)];
            if (vp) vp[oo + i * os] = src[j * xs];
            ip[oo + i * os] = j;
          }
        }
      });
      return;
    }
    using Item = std::pair<Key, int64_t>;
    auto run = [&](auto before) {
      const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(n, 1));
      parallel_for(0, rows, grain, [&](int64_t rb, int64_t re) {
        std::vector<Item> buf(static_cast<size_t>(n));
        for (int64_t row = rb; row < re; ++row) {
          int64_t xo, oo;
          ro.offsets(row, &xo, &oo);
          const T* src = xp + xo;
          // Ties resolved by index: a strict total order, so the selection is deterministic.
          auto cmp = [&](const Item& a, const Item& b) {
            return before(a.first, b.first) || (!before(b.first, a.first) && a.second < b.second);
          };
          if (topk && k * 8 <= n) {
            // Few of many: a heap of the best k so far (its top the worst of
            // them); most entries lose to the top in one comparison.
            Item* h = buf.data();
            int64_t size = 0;
            for (int64_t i = 0; i < n; ++i) {
              const Item it{Key(cast<Key>(src[i * xs])), i};
              if (size < k) {
                h[size++] = it;
                std::push_heap(h, h + size, cmp);
              } else if (cmp(it, h[0])) {
                std::pop_heap(h, h + k, cmp);
                h[k - 1] = it;
                std::push_heap(h, h + k, cmp);
              }
            }
            if (sorted) std::sort_heap(h, h + k, cmp);
          } else {
            for (int64_t i = 0; i < n; ++i) buf[size_t(i)] = {Key(cast<Key>(src[i * xs])), i};
            if (!topk)
              std::stable_sort(buf.begin(), buf.end(),
                               [&](const Item& a, const Item& b) { return before(a.first, b.first); });
            else if (sorted)
              std::partial_sort(buf.begin(), buf.begin() + k, buf.end(), cmp);
            else if (k < n)
              std::nth_element(buf.begin(), buf.begin() + k, buf.end(), cmp);
          }
          if (vp) {
            for (int64_t i = 0; i < m; ++i) {
              const int64_t j = buf[size_t(i)].second;
              vp[oo + i * os] = src[j * xs];
              ip[oo + i * os] = j;
            }
          } else {
            for (int64_t i = 0; i < m; ++i) ip[oo + i * os] = buf[size_t(i)].second;
          }
        }
      });
    };
    if (descending)
      run(Descending<Key>{});
    else
      run(Ascending<Key>{});
  });
}

void sort(const Tensor& x, int dim, bool descending, const Tensor& values, const Tensor& indices) {
  sort_rows(x, dim, descending, -1, true, values, indices);
}

void topk(const Tensor& x, int64_t k, int dim, bool largest, bool sorted, const Tensor& values,
          const Tensor& indices) {
  sort_rows(x, dim, largest, k, sorted, values, indices);
}

}  // namespace

void register_sort_kernels() {
  constexpr DeviceKind kCpu = DeviceKind::CPU;
  ops::sort.set_kernel(kCpu, sort);
  ops::argsort.set_kernel(kCpu, sort);
  ops::topk.set_kernel(kCpu, topk);
  register_bincount_kernel();
  register_searchsorted_kernel();
  register_unique_kernel();
  register_select_kernels();
}

}  // namespace kiln::cpu
