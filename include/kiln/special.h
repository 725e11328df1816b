// kiln.special's Bessel and Airy functions, the normal quantile, the Hurwitz
// zeta, polygamma and the regularized incomplete gamma functions, with
// torch.special's names and dtype rules: float inputs keep their dtype, bool
// and integers compute in float32; complex and FP8 raise TypeError. Values at
// poles and infinities follow SciPy's (and torch's) conventions.
//
//   bessel_j0/j1/y0/y1: J_n, Y_n (Y: NaN for x < 0, -inf at 0).
//   modified_bessel_k0/k1: K_n; scaled_modified_bessel_k0/k1: e^x K_n(x).
//   i0e: e^-|x| I_0(x); i1: I_1; i1e: e^-|x| I_1(x).   airy_ai: Ai.
//   ndtri: the inverse of the standard normal CDF.
//   zeta(x, q): sum_k (q + k)^-x.   polygamma(n, x): the n-th derivative of digamma.
//   gammainc(a, x) = P(a, x), gammaincc(a, x) = Q(a, x) = 1 - P(a, x).
//
// Derivatives: i0e, i1, i1e and polygamma (in x) as torch's; the others have
// none in kiln yet (an input that requires grad raises).
#pragma once

#include <cstdint>

#include "kiln/scalar.h"
#include "kiln/tensor.h"

namespace kiln {

Tensor special_bessel_j0(const Tensor& x);
Tensor special_bessel_j1(const Tensor& x);
Tensor special_bessel_y0(const Tensor& x);
Tensor special_bessel_y1(const Tensor& x);
Tensor special_modified_bessel_k0(const Tensor& x);
Tensor special_modified_bessel_k1(const Tensor& x);
Tensor special_scaled_modified_bessel_k0(const Tensor& x);
Tensor special_scaled_modified_bessel_k1(const Tensor& x);
Tensor special_i0e(const Tensor& x);
Tensor special_i1(const Tensor& x);
Tensor special_i1e(const Tensor& x);
Tensor special_airy_ai(const Tensor& x);
Tensor special_ndtri(const Tensor& x);

// Two operands broadcast against each other, promoted as torch's binary ops.
Tensor special_zeta(const Tensor& x, const Tensor& q);
Tensor special_zeta(const Scalar& x, const Tensor& q);
Tensor special_zeta(const Tensor& x, const Scalar& q);
Tensor special_gammainc(const Tensor& a, const Tensor& x);
Tensor special_gammaincc(const Tensor& a, const Tensor& x);

// n >= 0 (ValueError otherwise).
Tensor special_polygamma(int64_t n, const Tensor& x);

}  // namespace kiln
