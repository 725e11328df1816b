// floor, ceil, round (half to even, optional decimals), trunc. Integer inputs
// are returned as copies, as torch; bool, complex and FP8 are TypeErrors.
#include <cmath>

#include "kiln/unary.h"
#include "ops/unary_common.h"

namespace kiln {
namespace {

using unary_detail::check_inplace;
using unary_detail::unsupported;

enum class RoundKind { Floor, Ceil, Round, Trunc };

template <RoundKind K, typename C>
C round_one(C v) {
  if constexpr (K == RoundKind::Floor) return std::floor(v);
  else if constexpr (K == RoundKind::Ceil) return std::ceil(v);
  else if constexpr (K == RoundKind::Round) return std::nearbyint(v);  // default mode: ties to even
  else return std::trunc(v);
}

void check_dtype(const char* op, DType d) {
  if (d == DType::Bool || is_complex(d) || is_fp8(d)) unsupported(op, d);
}

// out = K(x) for a floating x (out may be x).
template <RoundKind K>
void run(const Tensor& x, const Tensor& out, const char* op) {
  dispatch<kFloatSet>(x.dtype(), op, [&]<typename T>() {
    using C = compute_t<T>;
    unary_loop<T, T>(out, x, [](T v) { return T(round_one<K, C>(C(v))); });
  });
}

template <RoundKind K>
Tensor rounding(const Tensor& x, const char* op) {
  check_dtype(op, x.dtype());
  if (is_integral(x.dtype(), false)) return x.clone();
  Tensor out = empty(x.sizes(), x.dtype());
  run<K>(x, out, op);
  return out;
}

template <RoundKind K>
Tensor& rounding_(Tensor& x, const char* op) {
  check_dtype(op, x.dtype());
  check_inplace(op, x.dtype(), x);
  if (!is_integral(x.dtype(), false)) run<K>(x, x, op);
  return x;
}

// torch's round(decimals): scale by 10^|d| in the compute type (float for
// f16/bf16/f32), round half to even, scale back.
void round_decimals(const Tensor& x, const Tensor& out, int decimals, const char* op) {
  if (is_integral(x.dtype(), false))
    throw TypeError(std::string("[") + op + "] decimals != 0 is not supported for integer dtype " + name(x.dtype()));
  dispatch<kFloatSet>(x.dtype(), op, [&]<typename T>() {
    using C = compute_t<T>;
    const bool neg = decimals < 0;
    const C scale = C(std::pow(10.0, double(neg ? -double(decimals) : double(decimals))));
    unary_loop<T, T>(out, x, [scale, neg](T v) {
      const C c = C(v);
      return T(neg ? std::nearbyint(c / scale) * scale : std::nearbyint(c * scale) / scale);
    });
  });
}

}  // namespace

Tensor floor(const Tensor& x) { return rounding<RoundKind::Floor>(x, "floor"); }
Tensor ceil(const Tensor& x) { return rounding<RoundKind::Ceil>(x, "ceil"); }
Tensor trunc(const Tensor& x) { return rounding<RoundKind::Trunc>(x, "trunc"); }
Tensor& floor_(Tensor& x) { return rounding_<RoundKind::Floor>(x, "floor_"); }
Tensor& ceil_(Tensor& x) { return rounding_<RoundKind::Ceil>(x, "ceil_"); }
Tensor& trunc_(Tensor& x) { return rounding_<RoundKind::Trunc>(x, "trunc_"); }

Tensor round(const Tensor& x, int decimals) {
  if (decimals == 0) return rounding<RoundKind::Round>(x, "round");
  check_dtype("round", x.dtype());
  Tensor out = empty(x.sizes(), x.dtype());
  round_decimals(x, out, decimals, "round");
  return out;
}

Tensor& round_(Tensor& x, int decimals) {
  if (decimals == 0) return rounding_<RoundKind::Round>(x, "round_");
  check_dtype("round_", x.dtype());
  check_inplace("round_", x.dtype(), x);
  round_decimals(x, x, decimals, "round_");
  return x;
}

}  // namespace kiln
