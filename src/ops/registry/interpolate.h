// Resampling ops (include/kiln/interpolate.h): torch's upsample_* family and
// area resampling (adaptive average pooling), each with its backward.
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

}  // namespace kiln::ops

#define KILN_OPS_INTERPOLATE(X)            \
  X(upsample_nearest, Resample)            \
  X(upsample_nearest_backward, Resample)   \
  X(upsample_linear, Resample)             \
  X(upsample_linear_backward, Resample)    \
  X(upsample_bicubic2d, Resample)          \
  X(upsample_bicubic2d_backward, Resample) \
  X(upsample_area, Resample)               \
  X(upsample_area_backward, Resample)
