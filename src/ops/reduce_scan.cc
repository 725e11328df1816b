// cumsum and cumprod: inclusive scans along one dim, accumulated in int64 /
// float64 / complex128 and stored in the result dtype (int64 for bool and
// integer inputs, as torch).
#include <string>

#include "ops/reduce_acc.h"
#include "ops/reduce_engine.h"

namespace kiln {
namespace {

template <bool kProd>
Tensor scan(const char* op, const Tensor& x_in, int dim, std::optional<DType> dtype) {
  reject_fp8(x_in, op);
  if (dtype && is_fp8(*dtype)) throw TypeError(std::string("[") + op + "] unsupported dtype " + name(*dtype));
  const Tensor x = dtype ? x_in.to(*dtype) : x_in;
  const std::vector<bool> mask = reduce_mask(std::vector<int>{dim}, x.dim(), op);
  Tensor out = empty(x.sizes(), is_integral(x.dtype(), true) ? DType::Int64 : x.dtype());
  if (x.numel() > 0) {
    // Lines along `dim`: both plans list them in the same (row-major) order.
    const ReducePlan pin = make_reduce_plan(x, mask, true);
    const ReducePlan pout = make_reduce_plan(out, mask, true);
    const int64_t len = pin.n_red, n_lines = pin.n_out;
    const int64_t sin = pin.rstride[0], sout = pout.rstride[0];
    dispatch<kNoFp8>(x.dtype(), op, [&]<typename T>() {
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
            if constexpr (kProd) acc *= to_acc(xi[i * sin]);
            else acc += to_acc(xi[i * sin]);
            oi[i * sout] = from_acc<Out>(acc);
          }
        }
      });
    });
  }
  if (dtype && out.dtype() != *dtype) out = out.to(*dtype);
  return out;
}

}  // namespace

Tensor cumsum(const Tensor& x, int dim, std::optional<DType> dtype) { return scan<false>("cumsum", x, dim, dtype); }
Tensor cumprod(const Tensor& x, int dim, std::optional<DType> dtype) { return scan<true>("cumprod", x, dim, dtype); }

}  // namespace kiln
