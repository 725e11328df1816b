// interpolate: torch's F.interpolate argument handling (size or scale_factor,
// recompute_scale_factor, align_corners only for the interpolating modes,
// antialias only for 4-d bilinear / bicubic), then the upsample_* op of the
// mode and rank.
#include <cmath>
#include <sstream>

#include "kiln/interpolate.h"

namespace kiln {
namespace {

std::string list_str(const std::vector<double>& v) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << v[i];
  os << "]";
  return os.str();
}

}  // namespace

Tensor interpolate(const Tensor& input, const std::vector<int64_t>& size,
                   const std::vector<double>& scale_factor, const std::string& mode,
                   std::optional<bool> align_corners, std::optional<bool> recompute_scale_factor,
                   bool antialias) {
  const int nd = input.dim() - 2;
  KILN_CHECK(nd >= 1 && nd <= 3, NotImplementedError,
             "[interpolate] only 3-D, 4-D and 5-D inputs are supported, got " << input.shape_str());
  KILN_CHECK(size.empty() || scale_factor.empty(), ValueError,
             "[interpolate] only one of size or scale_factor should be defined");
  KILN_CHECK(!size.empty() || !scale_factor.empty(), ValueError,
             "[interpolate] either size or scale_factor should be defined");
  const Shape in_shape = input.sizes();
  const Shape spatial(in_shape.begin() + 2, in_shape.end());
  KILN_CHECK(size.empty() || int(size.size()) == nd, ValueError,
             "[interpolate] input and output must have the same number of spatial dimensions, but got input "
                 << input.shape_str() << " and output size "
                 << shape_to_string(Shape(size.begin(), size.end())));
  KILN_CHECK(
      scale_factor.empty() || int(scale_factor.size()) == nd, ValueError,
      "[interpolate] input and scale_factor must have the same number of spatial dimensions, but got input "
          << input.shape_str() << " and scale_factor " << list_str(scale_factor));
  KILN_CHECK(!(recompute_scale_factor.value_or(false) && !size.empty()), ValueError,
             "[interpolate] recompute_scale_factor is not meaningful with an explicit size");
  bool recompute = recompute_scale_factor.value_or(false) || (mode == "area" && size.empty());
  Shape out(size.begin(), size.end());
  std::vector<double> scales = scale_factor;
  if (!scale_factor.empty()) {
    out.clear();
    for (int d = 0; d < nd; ++d) {
      const double o = std::floor(double(spatial[size_t(d)]) * scale_factor[size_t(d)]);
      KILN_CHECK(std::isfinite(o) && o < 9.2e18, ValueError,
                 "[interpolate] scale_factor " << list_str(scale_factor)
                                               << " gives an output size out of range for input "
                                               << input.shape_str());
      out.push_back(int64_t(o));
    }
    if (recompute) scales.clear();
  }
  KILN_CHECK(!antialias || ((mode == "bilinear" || mode == "bicubic") && nd == 2), ValueError,
             "[interpolate] anti-alias option is restricted to bilinear and bicubic modes and requires a 4-D "
             "tensor as input, got mode '"
                 << mode << "' and input " << input.shape_str());
  const bool interpolating =
      mode == "linear" || mode == "bilinear" || mode == "bicubic" || mode == "trilinear";
  KILN_CHECK(
      interpolating || !align_corners.has_value(), ValueError,
      "[interpolate] align_corners option can only be set with the interpolating modes: linear | bilinear | "
      "bicubic | trilinear, got mode '"
          << mode << "'");
  const bool ac = align_corners.value_or(false);
  if (mode == "nearest" || mode == "nearest-exact")
    return upsample_nearest(input, out, scales, mode != "nearest");
  if (mode == "area") return upsample_area(input, out);
  const int want = mode == "linear"                          ? 1
                   : mode == "bilinear" || mode == "bicubic" ? 2
                   : mode == "trilinear"                     ? 3
                                                             : 0;
  KILN_CHECK(want != 0, NotImplementedError,
             "[interpolate] unknown mode '"
                 << mode
                 << "': expected nearest | linear | bilinear | bicubic | trilinear | "
                    "area | nearest-exact");
  KILN_CHECK(want == nd, NotImplementedError,
             "[interpolate] got " << input.dim() << "-D input " << input.shape_str() << ", but " << mode
                                  << " mode needs " << want + 2 << "-D input");
  if (mode == "bicubic") return upsample_bicubic2d(input, out, ac, scales, antialias);
  return upsample_linear(input, out, ac, scales, antialias);
}

}  // namespace kiln
