// Resampling ops (include/kiln/interpolate.h): torch's upsample_* family,
// area resampling (adaptive average pooling) and sampling at grid points
// (grid_sample), each with its backward.
#pragma once

#include <array>

#include "kiln/tensor.h"

namespace kiln::ops {

// How one call resamples. scales: torch's per-dim scale_factor (output /
// input) used for the source index when > 0, else the sizes' ratio.
struct ResampleOptions {
  bool align_corners = false;
  bool exact = false;      // nearest-exact
  bool antialias = false;  // linear / cubic: torch's widened filter when downsampling
  std::array<double, 3> scales{0.0, 0.0, 0.0};
};

// Forward: src [N, C, *in], dst [N, C, *out] (1 to 3 spatial dims; any
// layout, same float dtype). Backward: src is the output's gradient [N, C,
// *out] and dst the input's gradient [N, C, *in], every element written.
using Resample = void(const Tensor& src, const Tensor& dst, const ResampleOptions& opts);

// grid_sample: how a point between pixels reads them, and what a point
// outside the input reads.
enum class GridMode { Bilinear, Nearest, Bicubic };
enum class GridPadding { Zeros, Border, Reflection };
struct GridSampleOptions {
  GridMode mode = GridMode::Bilinear;
  GridPadding padding = GridPadding::Zeros;
  bool align_corners = false;
};
// input [N, C, *in] (2 or 3 spatial dims; bicubic: 2), grid [N, *out, nd]
// with (x, y[, z]) in [-1, 1] naming the last spatial dim first; out
// [N, C, *out]. All contiguous, one dtype, float32 or float64.
using GridSample = void(const Tensor& input, const Tensor& grid, const Tensor& out,
                        const GridSampleOptions& opts);
// grad_out [N, C, *out] contiguous; grad_input ([N, C, *in]) and grad_grid
// ([N, *out, nd]), each contiguous or undefined (not wanted), overwritten.
using GridSampleBackward = void(const Tensor& grad_out, const Tensor& input, const Tensor& grid,
                                const Tensor& grad_input, const Tensor& grad_grid,
                                const GridSampleOptions& opts);

}  // namespace kiln::ops

#define KILN_OPS_INTERPOLATE(X)            \
  X(upsample_nearest, Resample)            \
  X(upsample_nearest_backward, Resample)   \
  X(upsample_linear, Resample)             \
  X(upsample_linear_backward, Resample)    \
  X(upsample_bicubic2d, Resample)          \
  X(upsample_bicubic2d_backward, Resample) \
  X(upsample_area, Resample)               \
  X(upsample_area_backward, Resample)      \
  X(grid_sampler, GridSample)              \
  X(grid_sampler_backward, GridSampleBackward)
