// CPU kernels of kiln.special's Bessel, Airy, ndtri, zeta, polygamma and
// incomplete gamma ops (ops/registry/special.h): the scalar functions of
// cpu/special_functions.h over the strided loops, in double for every float
// dtype and rounded once on store.
#include "cpu/ops/loops.h"
#include "cpu/ops/register.h"
#include "cpu/special_functions.h"
#include "ops/registry/all.h"

namespace kiln::cpu {
namespace {

namespace S = special;

template <double (*F)(double)>
void unary(const Tensor& x, const Tensor& out) {
  dispatch<kFloatSet>(out.dtype(), "special", [&]<typename T>() {
    unary_loop<T, T>(out, x, [](T v) { return T(F(double(compute_t<T>(v)))); });
  });
}

template <double (*F)(double, double)>
void binary(const Tensor& a, const Tensor& b, const Tensor& out) {
  dispatch<kFloatSet>(out.dtype(), "special", [&]<typename T>() {
    binary_loop<T, T, T>(out, a, b,
                         [](T u, T v) { return T(F(double(compute_t<T>(u)), double(compute_t<T>(v)))); });
  });
}

void polygamma(const Tensor& x, int64_t n, const Tensor& out) {
  dispatch<kFloatSet>(out.dtype(), "special_polygamma", [&]<typename T>() {
    unary_loop<T, T>(out, x, [n](T v) { return T(S::polygamma(n, double(compute_t<T>(v)))); });
  });
}

double j0(double x) { return S::bessel_j(0, x); }
double j1(double x) { return S::bessel_j(1, x); }
double y0(double x) { return S::bessel_y(0, x); }
double y1(double x) { return S::bessel_y(1, x); }
double k0(double x) { return S::bessel_k(0, x, false); }
double k1(double x) { return S::bessel_k(1, x, false); }
double k0e(double x) { return S::bessel_k(0, x, true); }
double k1e(double x) { return S::bessel_k(1, x, true); }
double i0e(double x) { return S::bessel_ie(0, x); }
double i1e(double x) { return S::bessel_ie(1, x); }
double gammainc_p(double a, double x) { return S::gammainc(a, x, false); }
double gammainc_q(double a, double x) { return S::gammainc(a, x, true); }

}  // namespace

void register_special_kernels() {
  constexpr DeviceKind kCpu = DeviceKind::CPU;
  ops::special_bessel_j0.set_kernel(kCpu, unary<j0>);
  ops::special_bessel_j1.set_kernel(kCpu, unary<j1>);
  ops::special_bessel_y0.set_kernel(kCpu, unary<y0>);
  ops::special_bessel_y1.set_kernel(kCpu, unary<y1>);
  ops::special_modified_bessel_k0.set_kernel(kCpu, unary<k0>);
  ops::special_modified_bessel_k1.set_kernel(kCpu, unary<k1>);
  ops::special_scaled_modified_bessel_k0.set_kernel(kCpu, unary<k0e>);
  ops::special_scaled_modified_bessel_k1.set_kernel(kCpu, unary<k1e>);
  ops::special_i0e.set_kernel(kCpu, unary<i0e>);
  ops::special_i1.set_kernel(kCpu, unary<S::bessel_i1>);
  ops::special_i1e.set_kernel(kCpu, unary<i1e>);
  ops::special_airy_ai.set_kernel(kCpu, unary<S::airy_ai>);
  ops::special_ndtri.set_kernel(kCpu, unary<S::ndtri>);
  ops::special_zeta.set_kernel(kCpu, binary<S::zeta>);
  ops::special_gammainc.set_kernel(kCpu, binary<gammainc_p>);
  ops::special_gammaincc.set_kernel(kCpu, binary<gammainc_q>);
  ops::special_polygamma.set_kernel(kCpu, polygamma);
}

}  // namespace kiln::cpu
