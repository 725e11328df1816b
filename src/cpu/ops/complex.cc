// CPU kernels of the complex-part ops (ops/registry/complex.h): conj, real,
// imag and angle over the strided loop, and the constructors complex and polar.
#include <cmath>
#include <complex>

#include "cpu/ops/loops.h"
#include "cpu/ops/register.h"
#include "ops/registry/all.h"

namespace kiln::cpu {
namespace {

constexpr DeviceKind kCpu = DeviceKind::CPU;

// Real x: a copy (conj is the identity); complex: the conjugate.
void conj(const Tensor& x, const Tensor& out) {
  dispatch<kBoolSet | kIntSet | kFloatSet | kComplexSet>(x.dtype(), "conj", [&]<typename T>() {
    if constexpr (is_complex_v<T>)
      unary_loop<T, T>(out, x, [](T z) { return std::conj(z); });
    else
      unary_loop<T, T>(out, x, [](T v) { return v; });
  });
}

// part 0: the real part, 1: the imaginary part (x complex, out its real dtype).
template <int Part>
void part(const Tensor& x, const Tensor& out) {
  dispatch<kComplexSet>(x.dtype(), Part ? "imag" : "real", [&]<typename T>() {
    using R = typename T::value_type;
    unary_loop<R, T>(out, x, [](T z) { return Part ? z.imag() : z.real(); });
  });
}

// Complex: atan2(imag, real); real: pi for negative x, else 0 (NaN stays NaN).
void angle(const Tensor& x, const Tensor& out) {
  dispatch<kFloatSet | kComplexSet>(x.dtype(), "angle", [&]<typename T>() {
    if constexpr (is_complex_v<T>) {
      using R = typename T::value_type;
      unary_loop<R, T>(out, x, [](T z) { return std::arg(z); });
    } else {
      using C = compute_t<T>;
      unary_loop<T, T>(out, x, [](T v) {
        const C c = cast<C>(v);
        return cast<T>(std::isnan(c) ? c : (c < C(0) ? C(3.14159265358979323846) : C(0)));
      });
    }
  });
}

// Polar: abs * (cos(angle) + i sin(angle)); else re + i im.
template <bool Polar>
void make(const Tensor& a, const Tensor& b, const Tensor& out) {
  dispatch<kComplexSet>(out.dtype(), Polar ? "polar" : "complex", [&]<typename T>() {
    using R = typename T::value_type;
    binary_loop<T, R, R>(out, a, b,
                         [](R x, R y) { return Polar ? T(x * std::cos(y), x * std::sin(y)) : T(x, y); });
  });
}

}  // namespace

void register_complex_kernels() {
  ops::conj.set_kernel(kCpu, conj);
  ops::real.set_kernel(kCpu, part<0>);
  ops::imag.set_kernel(kCpu, part<1>);
  ops::angle.set_kernel(kCpu, angle);
  ops::complex.set_kernel(kCpu, make<false>);
  ops::polar.set_kernel(kCpu, make<true>);
}

}  // namespace kiln::cpu
