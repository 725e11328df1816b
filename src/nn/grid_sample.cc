// Front-end of grid_sample (ops/registry/interpolate.h): torch's checks, the
// compute dtype (float32 for the 16-bit dtypes, as torch's opmath), the op,
// and the derivative for input and grid, which is the backward op. The
// backward op records nothing, so a double backward raises (torch has no
// second derivative of grid_sample either).
#include <string>
#include <utility>

#include "core/autograd_record.h"
#include "kiln/interpolate.h"
#include "nn/nn_util.h"
#include "ops/registry/all.h"

namespace kiln {
namespace {

using ops::GridMode;
using ops::GridPadding;
using ops::GridSampleOptions;

GridSampleOptions options(const std::string& mode, const std::string& padding, bool align_corners) {
  GridSampleOptions o;
  o.align_corners = align_corners;
  if (mode == "bilinear")
    o.mode = GridMode::Bilinear;
  else if (mode == "nearest")
    o.mode = GridMode::Nearest;
  else if (mode == "bicubic")
    o.mode = GridMode::Bicubic;
  else
    KILN_CHECK(
        false, ValueError,
        "[grid_sample] expected mode to be 'bilinear', 'nearest' or 'bicubic', but got: '" << mode << "'");
  if (padding == "zeros")
    o.padding = GridPadding::Zeros;
  else if (padding == "border")
    o.padding = GridPadding::Border;
  else if (padding == "reflection")
    o.padding = GridPadding::Reflection;
  else
    KILN_CHECK(false, ValueError,
               "[grid_sample] expected padding_mode to be 'zeros', 'border', or 'reflection', but got: '"
                   << padding << "'");
  return o;
}

// torch's grid_sampler checks; returns the output's shape [N, C, *grid's points].
Shape check(const Tensor& input, const Tensor& grid, const GridSampleOptions& o) {
  nn_detail::check_float(input, "grid_sample", "input");
  nn_detail::check_float(grid, "grid_sample", "grid");
  KILN_CHECK(input.dtype() == grid.dtype(), TypeError,
             "[grid_sample] expected input and grid to have the same dtype, got input "
                 << name(input.dtype()) << " and grid " << name(grid.dtype()));
  KILN_CHECK(input.dim() == 4 || input.dim() == 5, ValueError,
             "[grid_sample] expected a 4-d or 5-d input, got input " << input.shape_str());
  KILN_CHECK(grid.dim() == input.dim(), ValueError,
             "[grid_sample] expected grid to have " << input.dim() << " dims for input " << input.shape_str()
                                                    << ", got grid " << grid.shape_str());
  KILN_CHECK(grid.size(0) == input.size(0), ValueError,
             "[grid_sample] expected grid and input to have the same batch size, got input "
                 << input.shape_str() << " and grid " << grid.shape_str());
  KILN_CHECK(grid.size(-1) == input.dim() - 2, ValueError,
             "[grid_sample] expected grid to have size " << input.dim() - 2 << " in its last dim, got grid "
                                                         << grid.shape_str());
  for (int d = 2; d < input.dim(); ++d)
    KILN_CHECK(
        input.size(d) > 0, ValueError,
        "[grid_sample] expected input to have non-empty spatial dims, got input " << input.shape_str());
  KILN_CHECK(o.mode != GridMode::Bicubic || input.dim() == 4, ValueError,
             "[grid_sample] bicubic interpolation only supports 4-d input, got input " << input.shape_str());
  Shape out{input.size(0), input.size(1)};
  for (int d = 1; d + 1 < grid.dim(); ++d) out.push_back(grid.size(d));
  return out;
}

DType compute_dtype(DType d) { return d == DType::Float64 ? DType::Float64 : DType::Float32; }

std::pair<Tensor, Tensor> sample_backward(const Tensor& grad_output, const Tensor& input, const Tensor& grid,
                                          const GridSampleOptions& o, std::array<bool, 2> mask) {
  const Shape out_shape = check(input, grid, o);
  KILN_CHECK(grad_output.sizes() == out_shape, ValueError,
             "[grid_sample_backward] expected grad_output of shape " << shape_to_string(out_shape) << ", got "
                                                                     << grad_output.shape_str());
  const DType acc = compute_dtype(input.dtype());
  const Tensor go = grad_output.to(acc).contiguous(), x = input.to(acc).contiguous(),
               g = grid.to(acc).contiguous();
  Tensor gi = mask[0] ? empty(input.sizes(), acc, input.device()) : Tensor();
  Tensor gg = mask[1] ? empty(grid.sizes(), acc, grid.device()) : Tensor();
  if (mask[0] || mask[1])
    ops::grid_sampler_backward(common_device("grid_sampler_backward", {&go, &x, &g}), go, x, g, gi, gg, o);
  if (gi.defined() && gi.dtype() != input.dtype()) gi = gi.to(input.dtype());
  if (gg.defined() && gg.dtype() != grid.dtype()) gg = gg.to(grid.dtype());
  return {gi, gg};
}

}  // namespace

Tensor grid_sample(const Tensor& input, const Tensor& grid, const std::string& mode,
                   const std::string& padding_mode, bool align_corners) {
  const GridSampleOptions o = options(mode, padding_mode, align_corners);
  const Shape out_shape = check(input, grid, o);
  autograd::Record rec("grid_sampler", {&input, &grid});
  const DType acc = compute_dtype(input.dtype());
  const Tensor x = input.to(acc).contiguous(), g = grid.to(acc).contiguous();
  Tensor out = empty(out_shape, acc, input.device());
  if (out.numel() > 0) ops::grid_sampler(common_device("grid_sampler", {&x, &g, &out}), x, g, out, o);
  if (out.dtype() != input.dtype()) out = out.to(input.dtype());
  if (rec)
    rec.finish(input.dim() == 4 ? "GridSampler2DBackward0" : "GridSampler3DBackward0", {&out}, {input, grid},
               [o](autograd::FnNode& n, autograd::Grads& g) {
                 auto [gi, gg] = sample_backward(g[0], n.saved(0), n.saved(1), o, {n.needs(0), n.needs(1)});
                 return autograd::Grads{gi, gg};
               });
  return out;
}

std::pair<Tensor, Tensor> grid_sample_backward(const Tensor& grad_output, const Tensor& input,
                                               const Tensor& grid, const std::string& mode,
                                               const std::string& padding_mode, bool align_corners,
                                               std::array<bool, 2> output_mask) {
  return sample_backward(grad_output, input, grid, options(mode, padding_mode, align_corners), output_mask);
}

}  // namespace kiln
