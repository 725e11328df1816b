// sort, argsort, topk: one row (a line along dim) at a time, rows in parallel.
// Keys are widened to compute_t (narrow floats to float); NaN orders above
// every number, as in torch; values are copied from x by the sorted indices,
// so they keep their exact bits.
#include "kiln/sort.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/cast.h"
#include "kiln/thread_pool.h"

namespace kiln {
namespace {

template <typename K>
inline bool key_isnan(K v) {
  if constexpr (std::is_floating_point_v<K>)
    return std::isnan(v);
  else
    return false;
}
// Strict "a before b" for ascending (NaN largest) and descending (NaN first).
template <typename K>
struct Ascending {
  bool operator()(K a, K b) const { return a < b || (!key_isnan(a) && key_isnan(b)); }
};
template <typename K>
struct Descending {
  bool operator()(K a, K b) const { return a > b || (key_isnan(a) && !key_isnan(b)); }
};

// Element offset of row r, rows enumerating every dim but `dim` in row-major order.
struct RowOffsets {
  Shape shape, x_strides, out_strides;
  void build(const Tensor& x, const Tensor& out, int dim) {
    for (int d = 0; d < x.dim(); ++d) {
      if (d == dim) continue;
      shape.push_back(x.size(d));
      x_strides.push_back(x.stride(d));
      out_strides.push_back(out.stride(d));
    }
  }
  void offsets(int64_t r, int64_t* xo, int64_t* oo) const {
    *xo = 0;
    *oo = 0;
    for (size_t d = shape.size(); d-- > 0;) {
      const int64_t c = r % shape[d];
      r /= shape[d];
      *xo += c * x_strides[d];
      *oo += c * out_strides[d];
    }
  }
};

// Sorts (k < 0) or selects the top k of every row along dim. Outputs have x's
// shape with size(dim) = k (or n), contiguous.
SortResult sort_rows(const Tensor& x_in, int dim_in, bool descending, int64_t k, bool sorted,
                     const char* op) {
  if (is_complex(x_in.dtype()))
    throw TypeError(std::string("[") + op + "] complex tensors (" + name(x_in.dtype()) + ") are not ordered");
  const bool scalar = x_in.dim() == 0;
  const Tensor x = scalar ? x_in.view({1}) : x_in;
  const int dim = wrap_dim(dim_in, x.dim(), op);
  const int64_t n = x.size(dim);
  const bool topk = k >= 0;
  if (topk && k > n)
    throw ValueError(std::string("[") + op + "] k (" + std::to_string(k) +
                     ") is out of range for dimension " + std::to_string(dim) + " of size " +
                     std::to_string(n) + " in tensor of shape " + x_in.shape_str());
  const int64_t m = topk ? k : n;
  Shape out_shape = x.sizes();
  out_shape[dim] = m;
  SortResult r{empty(out_shape, x.dtype()), empty(out_shape, DType::Int64)};
  const int64_t rows = n == 0 ? 0 : x.numel() / n;
  if (m > 0 && rows > 0) {
    RowOffsets ro;
    ro.build(x, r.values, dim);
    const int64_t xs = x.stride(dim), os = r.values.stride(dim);
    dispatch<kBoolSet | kIntSet | kFloatSet | kFp8Set>(x.dtype(), op, [&]<typename T>() {
      using Key = std::conditional_t<std::is_same_v<T, bool>, uint8_t, compute_t<T>>;
      const T* xp = static_cast<const T*>(x.data_ptr());
      T* vp = static_cast<T*>(r.values.data_ptr());
      int64_t* ip = static_cast<int64_t*>(r.indices.data_ptr());
      using Item = std::pair<Key, int64_t>;
      auto run = [&](auto before) {
        const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(n, 1));
        parallel_for(0, rows, grain, [&](int64_t rb, int64_t re) {
          std::vector<Item> buf(static_cast<size_t>(n));
          for (int64_t row = rb; row < re; ++row) {
            int64_t xo, oo;
            ro.offsets(row, &xo, &oo);
            const T* src = xp + xo;
            for (int64_t i = 0; i < n; ++i) buf[size_t(i)] = {Key(cast<Key>(src[i * xs])), i};
            if (!topk) {
              std::stable_sort(buf.begin(), buf.end(),
                               [&](const Item& a, const Item& b) { return before(a.first, b.first); });
            } else {
              // Ties resolved by index: a strict total order, so the selection is deterministic.
              auto cmp = [&](const Item& a, const Item& b) {
                return before(a.first, b.first) || (!before(b.first, a.first) && a.second < b.second);
              };
              if (sorted) {
                std::partial_sort(buf.begin(), buf.begin() + k, buf.end(), cmp);
              } else if (k < n) {
                std::nth_element(buf.begin(), buf.begin() + k, buf.end(), cmp);
              }
            }
            for (int64_t i = 0; i < m; ++i) {
              const int64_t j = buf[size_t(i)].second;
              vp[oo + i * os] = src[j * xs];
              ip[oo + i * os] = j;
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
  if (scalar && m == 1) return {r.values.view({}), r.indices.view({})};
  return r;
}

}  // namespace

SortResult sort(const Tensor& x, int dim, bool descending, bool stable) {
  return sort_rows(x, dim, descending, -1, true, "sort");
}

Tensor argsort(const Tensor& x, int dim, bool descending, bool stable) {
  return sort_rows(x, dim, descending, -1, true, "argsort").indices;
}

SortResult topk(const Tensor& x, int64_t k, int dim, bool largest, bool sorted) {
  if (k < 0) throw ValueError("[topk] k (" + std::to_string(k) + ") must be non-negative");
  return sort_rows(x, dim, largest, k, sorted, "topk");
}

}  // namespace kiln
