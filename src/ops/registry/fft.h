// Discrete Fourier transforms (include/kiln/fft.h): the three transforms
// torch.fft's 22 functions are built from (cf. ATen's _fft_c2c, _fft_r2c,
// _fft_c2r). Each is unnormalized up to the `scale` it multiplies by; the
// front-ends pick it from norm= and do the zero-padding and trimming.
#pragma once

#include <cstdint>
#include <span>

#include "kiln/tensor.h"

namespace kiln::ops {

// x: [*] complex64/complex128, any layout; dims: distinct, each of size >= 1;
// out: x's shape and dtype, contiguous.
// out = scale * sum over the dims of x e^(-+2 pi i j k / n) (minus: forward).
using FftC2C = void(const Tensor& x, std::span<const int> dims, bool forward, double scale,
                    const Tensor& out);
// x: [*] float32/float64, any layout; out: x's shape with the last of dims at
// n / 2 + 1 (n its size in x), complex of x's precision, contiguous: the
// forward transform over dims, cut to its non-redundant half, times scale.
using FftR2C = void(const Tensor& x, std::span<const int> dims, double scale, const Tensor& out);
// x: [*] complex, the last of dims at n / 2 + 1; out: real of x's precision,
// x's shape with that dim at n, contiguous: the inverse of r2c (the backward
// transform over the other dims, then the Hermitian one over the last, whose
// first and, for even n, last entries count with their real parts only),
// times scale.
using FftC2R = void(const Tensor& x, std::span<const int> dims, double scale, const Tensor& out);

#define KILN_OPS_FFT(X) \
  X(fft_c2c, FftC2C)    \
  X(fft_r2c, FftR2C)    \
  X(fft_c2r, FftC2R)

}  // namespace kiln::ops
