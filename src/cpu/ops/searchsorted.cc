// CPU kernel of searchsorted (ops/registry/sort.h): one binary search per
// value, values split across threads. The predicate is torch's, so NaN lands
// where torch puts it.
#include <algorithm>

#include "cpu/ops/reduce_register.h"
#include "kiln/thread_pool.h"
#include "ops/registry/all.h"

namespace kiln::cpu {
namespace {

// Writes, for each of the k contiguous values, its position among the m
// contiguous entries of seq (read through `order` when it is given).
template <typename C, typename T, typename I>
void search_row(const T* seq, const int64_t* order, int64_t m, const T* vals, int64_t k, bool right, I* out) {
  auto entry = [&](int64_t i) { return C(seq[order ? order[i] : i]); };
  for (int64_t j = 0; j < k; ++j) {
    const C v = C(vals[j]);
    int64_t lo = 0, hi = m;
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo) / 2;
      const C e = entry(mid);
      if (right ? !(e > v) : !(e >= v))
        lo = mid + 1;
      else
        hi = mid;
    }
    out[j] = I(lo);
  }
}

void searchsorted(const Tensor& sorted, const Tensor& values, const Tensor& sorter, bool right,
                  const Tensor& out) {
  const int64_t k = values.dim() == 0 ? 1 : values.size(-1);
  const int64_t m = sorted.size(-1);
  const int64_t rows = k == 0 ? 0 : values.numel() / k;
  if (rows == 0) return;
  const bool shared = sorted.dim() == 1;  // one sequence for every row of values
  const Tensor seq = sorted.contiguous();
  const Tensor ord = sorter.defined() ? sorter.contiguous() : Tensor();
  const Tensor vals = values.contiguous();
  const bool i32 = out.dtype() == DType::Int32;
  dispatch<kIntSet | kFloatSet>(sorted.dtype(), "searchsorted", [&]<typename T>() {
    using C = compute_t<T>;
    const T* sp = seq.data<T>();
    const T* vp = vals.data<T>();
    const int64_t* op = ord.defined() ? ord.data<int64_t>() : nullptr;
    // Split rows, or the values of a single long row, into pieces.
    const int64_t piece = rows == 1 ? std::max<int64_t>(1024, k / 64) : k;
    const int64_t pieces_per_row = (k + piece - 1) / piece;
    parallel_for(0, rows * pieces_per_row, std::max<int64_t>(1, 4096 / piece), [&](int64_t b, int64_t e) {
      for (int64_t p = b; p < e; ++p) {
        const int64_t r = p / pieces_per_row, j0 = (p % pieces_per_row) * piece;
        const int64_t n = std::min(piece, k - j0);
        const int64_t srow = shared ? 0 : r * m;
        const int64_t* orow = op ? op + srow : nullptr;
        if (i32)
          search_row<C>(sp + srow, orow, m, vp + r * k + j0, n, right, out.data<int32_t>() + r * k + j0);
        else
          search_row<C>(sp + srow, orow, m, vp + r * k + j0, n, right, out.data<int64_t>() + r * k + j0);
      }
    });
  });
}

}  // namespace

void register_searchsorted_kernel() { ops::searchsorted.set_kernel(DeviceKind::CPU, searchsorted); }

}  // namespace kiln::cpu
