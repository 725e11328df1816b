// CPU kernels of eq, ne, lt, le, gt, ge (ops/registry/binary.h): bool results.
// Integer operands compare exactly whatever their signedness and width (the
// front-end passes int64 with uint64 unconverted); floats and complex compare
// in their compute type.
#include <utility>

#include "cpu/ops/binary_loop.h"
#include "cpu/ops/register.h"
#include "ops/registry/all.h"

namespace kiln::cpu {
namespace {

enum class Cmp { Eq, Ne, Lt, Le, Gt, Ge };

template <typename X, typename Y>
inline constexpr bool kMixedInt = std::is_integral_v<X>&& std::is_integral_v<Y> && !std::is_same_v<X, bool> &&
                                  !std::is_same_v<Y, bool> && !std::is_same_v<X, Y>;

template <Cmp K, typename X, typename Y>
inline bool compare(X x, Y y) {
  if constexpr (kMixedInt<X, Y>) {
    if constexpr (K == Cmp::Eq)
      return std::cmp_equal(x, y);
    else if constexpr (K == Cmp::Ne)
      return std::cmp_not_equal(x, y);
    else if constexpr (K == Cmp::Lt)
      return std::cmp_less(x, y);
    else if constexpr (K == Cmp::Le)
      return std::cmp_less_equal(x, y);
    else if constexpr (K == Cmp::Gt)
      return std::cmp_greater(x, y);
    else
      return std::cmp_greater_equal(x, y);
  } else {
    if constexpr (K == Cmp::Eq)
      return x == y;
    else if constexpr (K == Cmp::Ne)
      return x != y;
    else if constexpr (is_complex_v<X> || is_complex_v<Y>)
      return false;  // rejected by the front-end
    else if constexpr (K == Cmp::Lt)
      return x < y;
    else if constexpr (K == Cmp::Le)
      return x <= y;
    else if constexpr (K == Cmp::Gt)
      return x > y;
    else
      return x >= y;
  }
}

// out = a K b; out is bool.
template <Cmp K>
void cmp(const Operand& a, const Operand& b, const Tensor& out) {
  const DType da = a.dtype, db = b.dtype;
  if (is_integral(da, true) && is_integral(db, true)) {
    dispatch<kBoolSet | kIntSet>(da, "compare", [&]<typename A>() {
      if (da == db) {
        run<bool, A, A>(out, a, b, [](A x, A y) { return compare<K>(x, y); });
      } else if constexpr (std::is_same_v<A, uint64_t> || std::is_same_v<A, int64_t>) {
        using B = std::conditional_t<std::is_same_v<A, uint64_t>, int64_t, uint64_t>;
        run<bool, A, B>(out, a, b, [](A x, B y) { return compare<K>(x, y); });
      }
    });
    return;
  }
  dispatch<kFloatSet | kComplexSet>(da, "compare", [&]<typename T>() {
    using C = compute_t<T>;
    run<bool, T, T>(out, a, b, [](C x, C y) { return compare<K>(x, y); });
  });
}

}  // namespace

void register_binary_compare_kernels() {
  ops::eq.set_kernel(DeviceKind::CPU, cmp<Cmp::Eq>);
  ops::ne.set_kernel(DeviceKind::CPU, cmp<Cmp::Ne>);
  ops::lt.set_kernel(DeviceKind::CPU, cmp<Cmp::Lt>);
  ops::le.set_kernel(DeviceKind::CPU, cmp<Cmp::Le>);
  ops::gt.set_kernel(DeviceKind::CPU, cmp<Cmp::Gt>);
  ops::ge.set_kernel(DeviceKind::CPU, cmp<Cmp::Ge>);
}

}  // namespace kiln::cpu
