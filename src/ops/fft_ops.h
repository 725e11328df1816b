// The three transforms of torch.fft (ops/registry/fft.h) as differentiable
// front-ends: inputs already of the kernel's dtype, dims wrapped, distinct and
// of size >= 1. kiln::fft's functions (ops/fft_api.cc) are built from them.
#pragma once

#include <cstdint>
#include <vector>

#include "kiln/tensor.h"

namespace kiln::fft_detail {

// x: [*] complex -> [*] complex: scale * the transform over dims.
Tensor c2c(const Tensor& x, const std::vector<int>& dims, bool forward, double scale);
// x: [*] float32/float64 -> [*] complex with dims.back() at n / 2 + 1: scale *
// the forward transform's non-redundant half.
Tensor r2c(const Tensor& x, const std::vector<int>& dims, double scale);
// x: [*] complex with dims.back() at n / 2 + 1 -> [*] real with it at n: scale
// * the backward transform of the half spectrum.
Tensor c2r(const Tensor& x, const std::vector<int>& dims, int64_t n, double scale);

}  // namespace kiln::fft_detail
