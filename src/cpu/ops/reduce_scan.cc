// CPU kernels of cumsum and cumprod (ops/registry/reduce.h): inclusive scans
// along one dim, accumulated in int64 / float64 / complex128 and stored in the
// result dtype (int64 for bool and integer inputs, as torch).
#include <algorithm>

#include "cpu/ops/reduce_acc.h"
#include "cpu/ops/reduce_engine.h"
#include "cpu/ops/reduce_register.h"
#include "ops/registry/all.h"

namespace kiln::cpu {
namespace {

template <bool kProd>
void scan(const Tensor& x, int dim, const Tensor& out) {
  if (x.numel() == 0) return;
  std::vector<bool> mask(size_t(x.dim()), false);
  if (x.dim() > 0) mask[size_t(dim)] = true;
  // Lines along `dim`: both plans list them in the same (row-major) order.
  const ReducePlan pin = make_reduce_plan(x, mask, true);
  const ReducePlan pout = make_reduce_plan(out, mask, true);
  const int64_t len = pin.n_red, n_lines = pin.n_out;
  const int64_t sin = pin.rstride[0], sout = pout.rstride[0];
  dispatch<kNoFp8>(x.dtype(), kProd ? "cumprod" : "cumsum", [&]<typename T>() {
    using Out = sum_out_t<T>;
    using A = acc_t<T>;
    const T* xb = reinterpret_cast<const T*>(pin.base);
    Out* ob = out.data<Out>();
    parallel_for(0, n_lines, std::max<int64_t>(1, kReduceGrain / len), [&](int64_t lb, int64_t le) {
      for (int64_t l = lb; l < le; ++l) {
        const T* xi = xb + detail::out_offset(pin, l);
        Out* oi = ob + detail::out_offset(pout, l);
        A acc = A(kProd ? 1 : 0);
        for (int64_t i = 0; i < len; ++i) {
          if constexpr (kProd)
            acc *= to_acc(xi[i * sin]);
          else
            acc += to_acc(xi[i * sin]);
          oi[i * sout] = from_acc<Out>(acc);
        }
      }
    });
  });
}

}  // namespace

void register_reduce_scan_kernels() {
  ops::cumsum.set_kernel(DeviceKind::CPU, scan<false>);
  ops::cumprod.set_kernel(DeviceKind::CPU, scan<true>);
}

}  // namespace kiln::cpu
