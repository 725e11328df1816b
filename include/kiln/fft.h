// kiln::fft: torch.fft's functions, with its signatures, defaults and rules.
//
//   - norm: "backward" (the default; an empty view means it too) scales the
//     inverse transforms by 1/n, "forward" the forward ones, "ortho" both by
//     1/sqrt(n), n the product of the signal sizes; anything else raises
//     ValueError.
//   - n / s: the signal size along each transformed dim; the input is cut or
//     zero-padded to it (s entries of -1 keep the input's size). Without dims,
//     s names the last len(s) dims; without both, every dim is transformed.
//   - Dtypes: complex64/complex128 and float32/float64 inputs; integers and
//     bool are taken as float32 (torch's default dtype); float16 and bfloat16
//     raise TypeError, as on torch's CPU backend. Complex results have the
//     input's precision (float64 -> complex128).
//   - rfft* take real input and keep the n/2 + 1 non-redundant entries of the
//     last transformed dim; irfft* and hfft* read such a half spectrum and give
//     a real signal of size n (default 2 * (m - 1), m the input's size there);
//     ihfft* is the inverse of hfft*.
//   - Every transform is differentiable (gradients follow torch's convention
//     for complex tensors, docs/autograd.md), also twice.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "kiln/tensor.h"

namespace kiln::fft {

using OptSize = std::optional<int64_t>;
using OptSizes = std::optional<std::vector<int64_t>>;
using OptDims = std::optional<std::vector<int>>;

// One dim: x [*] -> [*] with dim's size n (rfft / ihfft: n / 2 + 1; irfft /
// hfft: a real n).
Tensor fft(const Tensor& x, OptSize n = std::nullopt, int dim = -1, std::string_view norm = {});
Tensor ifft(const Tensor& x, OptSize n = std::nullopt, int dim = -1, std::string_view norm = {});
Tensor rfft(const Tensor& x, OptSize n = std::nullopt, int dim = -1, std::string_view norm = {});
Tensor irfft(const Tensor& x, OptSize n = std::nullopt, int dim = -1, std::string_view norm = {});
Tensor hfft(const Tensor& x, OptSize n = std::nullopt, int dim = -1, std::string_view norm = {});
Tensor ihfft(const Tensor& x, OptSize n = std::nullopt, int dim = -1, std::string_view norm = {});

// Two dims (default the last two) and n dims (default: as s says, else all).
Tensor fft2(const Tensor& x, OptSizes s = std::nullopt, std::vector<int> dim = {-2, -1},
            std::string_view norm = {});
Tensor ifft2(const Tensor& x, OptSizes s = std::nullopt, std::vector<int> dim = {-2, -1},
             std::string_view norm = {});
Tensor rfft2(const Tensor& x, OptSizes s = std::nullopt, std::vector<int> dim = {-2, -1},
             std::string_view norm = {});
Tensor irfft2(const Tensor& x, OptSizes s = std::nullopt, std::vector<int> dim = {-2, -1},
              std::string_view norm = {});
Tensor hfft2(const Tensor& x, OptSizes s = std::nullopt, std::vector<int> dim = {-2, -1},
             std::string_view norm = {});
Tensor ihfft2(const Tensor& x, OptSizes s = std::nullopt, std::vector<int> dim = {-2, -1},
              std::string_view norm = {});
Tensor fftn(const Tensor& x, OptSizes s = std::nullopt, OptDims dim = std::nullopt,
            std::string_view norm = {});
Tensor ifftn(const Tensor& x, OptSizes s = std::nullopt, OptDims dim = std::nullopt,
             std::string_view norm = {});
Tensor rfftn(const Tensor& x, OptSizes s = std::nullopt, OptDims dim = std::nullopt,
             std::string_view norm = {});
Tensor irfftn(const Tensor& x, OptSizes s = std::nullopt, OptDims dim = std::nullopt,
              std::string_view norm = {});
Tensor hfftn(const Tensor& x, OptSizes s = std::nullopt, OptDims dim = std::nullopt,
             std::string_view norm = {});
Tensor ihfftn(const Tensor& x, OptSizes s = std::nullopt, OptDims dim = std::nullopt,
              std::string_view norm = {});

// Sample frequencies, in cycles per unit of the spacing d: fftfreq [n] is
// [0, 1, ..., ceil(n/2) - 1, -floor(n/2), ..., -1] / (d n); rfftfreq [n/2 + 1]
// is [0, ..., n/2] / (d n). dtype: a float or complex dtype.
Tensor fftfreq(int64_t n, double d = 1.0, DType dtype = DType::Float32, Device device = Device{});
Tensor rfftfreq(int64_t n, double d = 1.0, DType dtype = DType::Float32, Device device = Device{});

// The zero frequency moved to the middle (fftshift: a roll by size / 2 along
// each dim, default all) and back (ifftshift: by -(size / 2)).
Tensor fftshift(const Tensor& x, OptDims dim = std::nullopt);
Tensor ifftshift(const Tensor& x, OptDims dim = std::nullopt);

}  // namespace kiln::fft
