// Resampling of [N, C, *spatial] tensors (1 to 3 spatial dims) as torch's
// F.interpolate and its upsample_* ops. output_size / scales name the spatial
// dims only; input_size of a backward is the forward input's full shape.
// scales: torch's scale_factor per dim, used for the source index when given
// (empty: the sizes' ratio). float16/bfloat16/float32/float64, any layout.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kiln/tensor.h"

namespace kiln {

// mode: "nearest", "nearest-exact", "linear" (3-d), "bilinear" (4-d),
// "bicubic" (4-d), "trilinear" (5-d) or "area". Exactly one of size and
// scale_factor (one value for every spatial dim, or one per dim) is given.
Tensor interpolate(const Tensor& input, const std::vector<int64_t>& size,
                   const std::vector<double>& scale_factor, const std::string& mode = "nearest",
                   std::optional<bool> align_corners = std::nullopt,
                   std::optional<bool> recompute_scale_factor = std::nullopt, bool antialias = false);

// nearest (exact: nearest-exact, torch's _upsample_nearest_exact*d).
Tensor upsample_nearest(const Tensor& x, const Shape& output_size, const std::vector<double>& scales = {},
                        bool exact = false);
Tensor upsample_nearest_backward(const Tensor& grad, const Shape& input_size,
                                 const std::vector<double>& scales = {}, bool exact = false);
// linear / bilinear / trilinear by the number of spatial dims; antialias: 2
// spatial dims only.
Tensor upsample_linear(const Tensor& x, const Shape& output_size, bool align_corners,
                       const std::vector<double>& scales = {}, bool antialias = false);
Tensor upsample_linear_backward(const Tensor& grad, const Shape& input_size, bool align_corners,
                                const std::vector<double>& scales = {}, bool antialias = false);
// Bicubic (A = -0.75; antialias: Keys' a = -0.5, as torch), 2 spatial dims.
Tensor upsample_bicubic2d(const Tensor& x, const Shape& output_size, bool align_corners,
                          const std::vector<double>& scales = {}, bool antialias = false);
Tensor upsample_bicubic2d_backward(const Tensor& grad, const Shape& input_size, bool align_corners,
                                   const std::vector<double>& scales = {}, bool antialias = false);
// Area: adaptive average pooling to output_size.
Tensor upsample_area(const Tensor& x, const Shape& output_size);
Tensor upsample_area_backward(const Tensor& grad, const Shape& input_size);

// torch's F.grid_sample: input [N, C, H, W] read at grid [N, Ho, Wo, 2] of
// (x, y) in [-1, 1] -> [N, C, Ho, Wo]; or input [N, C, D, H, W] at grid
// [N, Do, Ho, Wo, 3] of (x, y, z). mode: "bilinear" (trilinear for 5-d),
// "nearest" or "bicubic" (4-d only); padding_mode: "zeros", "border" or
// "reflection". Differentiable in input and grid.
Tensor grid_sample(const Tensor& input, const Tensor& grid, const std::string& mode = "bilinear",
                   const std::string& padding_mode = "zeros", bool align_corners = false);
// Its gradients for input and grid (those output_mask asks for; the other is
// undefined), from the output's gradient.
std::pair<Tensor, Tensor> grid_sample_backward(const Tensor& grad_output, const Tensor& input,
                                               const Tensor& grid, const std::string& mode,
                                               const std::string& padding_mode, bool align_corners,
                                               std::array<bool, 2> output_mask = {true, true});

}  // namespace kiln
