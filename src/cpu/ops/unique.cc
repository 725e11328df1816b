// CPU kernels of unique_runs and unique_rows (ops/registry/sort.h): one pass
// over the (sorted) values or rows, comparing neighbours in their compute type.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "cpu/ops/reduce_register.h"
#include "ops/registry/all.h"

namespace kiln::cpu {
namespace {

int64_t unique_runs(const Tensor& x, const Tensor& order, const Tensor& values, const Tensor& inverse,
                    const Tensor& counts) {
  const int64_t n = x.numel();
  if (n == 0) return 0;
  int64_t runs = 0;
  dispatch<kBoolSet | kIntSet | kFloatSet>(x.dtype(), "unique", [&]<typename T>() {
    using C = compute_t<T>;
    const T* xp = x.data<T>();
    T* vp = values.data<T>();
    const int64_t* op = order.defined() ? order.data<int64_t>() : nullptr;
    int64_t* ip = inverse.defined() ? inverse.data<int64_t>() : nullptr;
    int64_t* cp = counts.defined() ? counts.data<int64_t>() : nullptr;
    int64_t run = 0, start = 0;
    vp[0] = xp[0];
    for (int64_t i = 0; i < n; ++i) {
      if (i > 0 && !(C(xp[i]) == C(xp[i - 1]))) {  // NaN == NaN is false: each NaN its own run
        if (cp) cp[run] = i - start;
        ++run;
        start = i;
        vp[run] = xp[i];
      }
      if (ip) ip[op ? op[i] : i] = run;
    }
    if (cp) cp[run] = n - start;
    runs = run + 1;
  });
  return runs;
}

// Rows of k elements at p, compared as their compute type C.
template <typename T>
struct Rows {
  using C = compute_t<T>;
  const T* p;
  int64_t k;
  const T* row(int64_t i) const { return p + i * k; }
  // Lexicographic a < b; in a column NaN sorts after every number and ties with NaN.
  bool less(int64_t a, int64_t b) const {
    const T *u = row(a), *v = row(b);
    for (int64_t j = 0; j < k; ++j) {
      const C s = C(u[j]), t = C(v[j]);
      if constexpr (std::is_floating_point_v<C>) {
        const bool ns = std::isnan(s), nt = std::isnan(t);
        if (ns || nt) {
          if (ns && nt) continue;
          return nt;
        }
      }
      if (s < t) return true;
      if (t < s) return false;
    }
    return false;
  }
  // Every element equal (NaN equals nothing).
  bool equal(int64_t a, int64_t b) const {
    const T *u = row(a), *v = row(b);
    for (int64_t j = 0; j < k; ++j)
      if (!(C(u[j]) == C(v[j]))) return false;
    return true;
  }
};

int64_t unique_rows(const Tensor& x, bool sorted, const Tensor& first, const Tensor& inverse,
                    const Tensor& counts) {
  const int64_t m = x.size(0), k = x.size(1);
  if (m == 0) return 0;
  std::vector<int64_t> order(static_cast<size_t>(m));
  std::iota(order.begin(), order.end(), int64_t(0));
  int64_t runs = 0;
  dispatch<kBoolSet | kIntSet | kFloatSet>(x.dtype(), "unique", [&]<typename T>() {
    const Rows<T> rows{x.data<T>(), k};
    if (sorted)
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return rows.less(a, b); });
    int64_t* fp = first.data<int64_t>();
    int64_t* ip = inverse.defined() ? inverse.data<int64_t>() : nullptr;
    int64_t* cp = counts.defined() ? counts.data<int64_t>() : nullptr;
    int64_t run = 0, start = 0;
    fp[0] = order[0];
    for (int64_t i = 0; i < m; ++i) {
      if (i > 0 && !rows.equal(order[size_t(i)], order[size_t(i - 1)])) {
        if (cp) cp[run] = i - start;
        ++run;
        start = i;
        fp[run] = order[size_t(i)];
      }
      if (ip) ip[order[size_t(i)]] = run;
    }
    if (cp) cp[run] = m - start;
    runs = run + 1;
  });
  return runs;
}

}  // namespace

void register_unique_kernel() {
  ops::unique_runs.set_kernel(DeviceKind::CPU, unique_runs);
  ops::unique_rows.set_kernel(DeviceKind::CPU, unique_rows);
}

}  // namespace kiln::cpu
