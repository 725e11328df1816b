// CPU kernel of unique_runs (ops/registry/sort.h): one pass over the
// (sorted) values, comparing neighbours in their compute type.
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

}  // namespace

void register_unique_kernel() { ops::unique_runs.set_kernel(DeviceKind::CPU, unique_runs); }

}  // namespace kiln::cpu
