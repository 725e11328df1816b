// CPU kernels of floor, ceil, round and trunc (ops/registry/unary.h) for
// floating x (integer inputs are copies the front-end makes): computed in
// compute_t (float for f16/bf16), narrowed on store; out may be x.
#include <cmath>

#include "cpu/ops/loops.h"
#include "cpu/ops/register.h"
#include "ops/registry/all.h"

namespace kiln::cpu {
namespace {

enum class RoundKind { Floor, Ceil, Round, Trunc };

template <RoundKind K, typename C>
C round_one(C v) {
  if constexpr (K == RoundKind::Floor) return std::floor(v);
  else if constexpr (K == RoundKind::Ceil) return std::ceil(v);
  else if constexpr (K == RoundKind::Round) return std::nearbyint(v);  // default mode: ties to even
  else return std::trunc(v);
}

// out = K(x) for a floating x (out may be x).
template <RoundKind K>
void run(const Tensor& x, const Tensor& out) {
  dispatch<kFloatSet>(x.dtype(), "round", [&]<typename T>() {
    using C = compute_t<T>;
    unary_loop<T, T>(out, x, [](T v) { return T(round_one<K, C>(C(v))); });
  });
}

// torch's round(decimals): scale by 10^|d| in the compute type (float for
// f16/bf16/f32), round half to even, scale back.
void round_decimals(const Tensor& x, const Tensor& out, int decimals) {
  dispatch<kFloatSet>(x.dtype(), "round", [&]<typename T>() {
    using C = compute_t<T>;
    const bool neg = decimals < 0;
    const C scale = C(std::pow(10.0, double(neg ? -double(decimals) : double(decimals))));
    unary_loop<T, T>(out, x, [scale, neg](T v) {
      const C c = C(v);
      return T(neg ? std::nearbyint(c / scale) * scale : std::nearbyint(c * scale) / scale);
    });
  });
}

void round(const Tensor& x, const Tensor& out, int decimals) {
  decimals == 0 ? run<RoundKind::Round>(x, out) : round_decimals(x, out, decimals);
}

}  // namespace

void register_unary_rounding_kernels() {
  constexpr DeviceKind kCpu = DeviceKind::CPU;
  ops::floor.set_kernel(kCpu, run<RoundKind::Floor>);
  ops::ceil.set_kernel(kCpu, run<RoundKind::Ceil>);
  ops::round.set_kernel(kCpu, round);
  ops::trunc.set_kernel(kCpu, run<RoundKind::Trunc>);
}

}  // namespace kiln::cpu
