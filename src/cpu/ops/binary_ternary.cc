// CPU kernels of where, clamp (clamp_min, clamp_max), lerp and addcmul
// (ops/registry/binary.h).
#include <cmath>

#include "cpu/ops/binary_loop.h"
#include "cpu/ops/register.h"
#include "ops/registry/all.h"

namespace kiln::cpu {
namespace {

void where(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& out) {
  dispatch<kAllSet>(out.dtype(), "where", [&]<typename T>() {
    // bool storage is 0/1, so both condition dtypes load as a byte.
    ternary_loop<T, uint8_t, T, T>(out, cond, a, b, [](uint8_t k, T u, T v) { return k ? u : v; });
  });
}

// Lower then upper bound; NaN in x or in a bound propagates; min > max gives max.
template <typename C>
inline C clamp_lo(C x, C lo) {
  if constexpr (std::is_floating_point_v<C>) {
    if (std::isnan(x)) return x;
    if (std::isnan(lo)) return lo;
  }
  return x < lo ? lo : x;
}
template <typename C>
inline C clamp_hi(C x, C hi) {
  if constexpr (std::is_floating_point_v<C>) {
    if (std::isnan(x)) return x;
    if (std::isnan(hi)) return hi;
  }
  return x > hi ? hi : x;
}

// Value bounds: x (a tensor or a value) against bounds read once in compute
// precision. Tensor bounds: elementwise over the expanded tensors.
void clamp(const Operand& x, const Operand& lo, const Operand& hi, const Tensor& out) {
  if (!lo.t.defined() && !hi.t.defined()) {
    Operand unused;
    unused.is_value = true;
    dispatch<kIntSet | kFloatSet>(out.dtype(), "clamp", [&]<typename T>() {
      using C = compute_t<T>;
      const bool has_lo = lo.is_value, has_hi = hi.is_value;
      const C l = has_lo ? lo.v.to<C>() : C{}, h = has_hi ? hi.v.to<C>() : C{};
      run<T, T, T>(out, x, unused, [=](C v, C) {
        if (has_lo) v = clamp_lo(v, l);
        if (has_hi) v = clamp_hi(v, h);
        return v;
      });
    });
    return;
  }
  dispatch<kIntSet | kFloatSet>(out.dtype(), "clamp", [&]<typename T>() {
    using C = compute_t<T>;
    auto load = [](T v) { return C(v); };
    if (lo.t.defined() && hi.t.defined()) {
      ternary_loop<T, T, T, T>(out, x.t, lo.t, hi.t, [&](T v, T l, T h) {
        return T(clamp_hi(clamp_lo(load(v), load(l)), load(h)));
      });
    } else if (lo.t.defined()) {
      binary_loop<T, T, T>(out, x.t, lo.t, [&](T v, T l) { return T(clamp_lo(load(v), load(l))); });
    } else {
      binary_loop<T, T, T>(out, x.t, hi.t, [&](T v, T h) { return T(clamp_hi(load(v), load(h))); });
    }
  });
}

template <typename C, typename W>
inline C lerp_value(C s, C e, W w) {
  using std::abs;
  // torch's formula: exact at both ends, symmetric in rounding.
  if (abs(w) < 0.5) return s + w * (e - s);
  return e - (e - s) * (W(1) - w);
}

void lerp(const Tensor& s, const Tensor& e, const Operand& weight, const Tensor& out) {
  dispatch<kFloatSet | kComplexSet>(out.dtype(), "lerp", [&]<typename T>() {
    using C = compute_t<T>;
    if (weight.is_value) {
      const C w = weight.v.to<C>();
      binary_loop<T, T, T>(out, s, e, [w](T a, T b) { return T(lerp_value(C(a), C(b), w)); });
    } else {
      ternary_loop<T, T, T, T>(out, s, e, weight.t,
                               [](T a, T b, T w) { return T(lerp_value(C(a), C(b), C(w))); });
    }
  });
}

void addcmul(const Tensor& a, const Tensor& b, const Tensor& c, const Scalar& value, const Tensor& out) {
  dispatch<kIntSet | kFloatSet | kComplexSet>(out.dtype(), "addcmul", [&]<typename T>() {
    using C = compute_t<T>;
    const C v = value.to<C>();
    ternary_loop<T, T, T, T>(out, a, b, c,
                             [v](T x, T y, T z) { return T(wadd(C(x), wmul(wmul(v, C(y)), C(z)))); });
  });
}

}  // namespace

void register_binary_ternary_kernels() {
  constexpr DeviceKind kCpu = DeviceKind::CPU;
  ops::where.set_kernel(kCpu, where);
  ops::clamp.set_kernel(kCpu, clamp);
  ops::clamp_min.set_kernel(kCpu, clamp);
  ops::clamp_max.set_kernel(kCpu, clamp);
  ops::lerp.set_kernel(kCpu, lerp);
  ops::addcmul.set_kernel(kCpu, addcmul);
}

}  // namespace kiln::cpu
