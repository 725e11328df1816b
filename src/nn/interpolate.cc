// Front-ends of the resampling ops (ops/registry/interpolate.h): shape and
// option checks, the output, the op, and the derivative. Every op is linear
// in its input, so the forward's gradient is its backward op and the
// backward's gradient is the forward again (double backward works).
#include "kiln/interpolate.h"

#include <functional>
#include <string>

#include "core/autograd_record.h"
#include "kiln/memory_format.h"
#include "nn/nn_util.h"
#include "ops/registry/all.h"

namespace kiln {
namespace {

using ops::ResampleOptions;
using ResampleOp = Op<ops::Resample>;

enum class Kind { Nearest, Linear, Bicubic, Area };

const char* op_name(Kind k, bool backward) {
  static const char* names[4][2] = {{"upsample_nearest", "upsample_nearest_backward"},
                                    {"upsample_linear", "upsample_linear_backward"},
                                    {"upsample_bicubic2d", "upsample_bicubic2d_backward"},
                                    {"upsample_area", "upsample_area_backward"}};
  return names[int(k)][backward ? 1 : 0];
}

ResampleOp& op_of(Kind k, bool backward) {
  switch (k) {
    case Kind::Nearest:
      return backward ? ops::upsample_nearest_backward : ops::upsample_nearest;
    case Kind::Linear:
      return backward ? ops::upsample_linear_backward : ops::upsample_linear;
    case Kind::Bicubic:
      return backward ? ops::upsample_bicubic2d_backward : ops::upsample_bicubic2d;
    case Kind::Area:
      break;
  }
  return backward ? ops::upsample_area_backward : ops::upsample_area;
}

// torch's node names: UpsampleBilinear2DBackward0, AdaptiveAvgPool2DBackward0, ...
std::string node_name(Kind k, int nd, const ResampleOptions& o, bool backward) {
  const std::string d = std::to_string(nd) + "D";
  std::string n;
  switch (k) {
    case Kind::Nearest:
      n = std::string(o.exact ? "UpsampleNearestExact" : "UpsampleNearest") + d;
      break;
    case Kind::Linear:
      n = (nd == 1 ? "UpsampleLinear" : nd == 2 ? "UpsampleBilinear" : "UpsampleTrilinear") + d;
      break;
    case Kind::Bicubic:
      n = "UpsampleBicubic" + d;
      break;
    case Kind::Area:
      n = "AdaptiveAvgPool" + d;
      break;
  }
  if (o.antialias) n = "_" + n + "Aa";
  return n + (backward ? "BackwardBackward0" : "Backward0");
}

ResampleOptions options(const char* op, int nd, const std::vector<double>& scales, bool align_corners,
                        bool exact, bool antialias) {
  ResampleOptions o;
  o.align_corners = align_corners;
  o.exact = exact;
  o.antialias = antialias;
  KILN_CHECK(scales.empty() || (int(scales.size()) == nd && nd <= 3), ValueError,
             "[" << op << "] expected " << nd << " scales, got " << scales.size());
  for (size_t i = 0; i < scales.size(); ++i) o.scales[i] = scales[i];
  return o;
}

// Checks a [N, C, *spatial] tensor against the op's spatial rank (nd_only > 0:
// that rank only) and the spatial sizes of the other side.
int check_input(const char* op, const Tensor& x, int nd_only, const Shape& spatial, const char* what) {
  nn_detail::check_float(x, op, what);
  const int nd = x.dim() - 2;
  KILN_CHECK(nd >= 1 && nd <= 3 && (nd_only == 0 || nd == nd_only), ValueError,
             "[" << op << "] " << what << " must be [N, C, " << (nd_only ? std::to_string(nd_only) : "1 to 3")
                 << " spatial dims], got " << x.shape_str());
  KILN_CHECK(int(spatial.size()) == nd, ValueError,
             "[" << op << "] expected " << nd << " spatial sizes for " << what << " " << x.shape_str()
                 << ", got " << shape_to_string(spatial));
  for (int d = 0; d < nd; ++d)
    KILN_CHECK(x.size(d + 2) > 0 && spatial[size_t(d)] > 0, ValueError,
               "[" << op << "] input and output sizes should be greater than 0, got " << what << " "
                   << x.shape_str() << " and sizes " << shape_to_string(spatial));
  return nd;
}

// The result's layout: src's suggested memory format, so a channels-last input
// (or gradient) gives a channels-last result, as torch's upsample kernels and
// 2-d adaptive average pooling; torch's 3-d area resampling is row-major.
MemoryFormat output_format(Kind k, bool backward, const Tensor& src) {
  if (src.dim() < 4 || (k == Kind::Area && !backward && src.dim() == 5)) return MemoryFormat::Contiguous;
  return suggest_memory_format(src);
}

// src [N, C, *a] -> [N, C, *b] (dst_shape: full), recording the derivative:
// the op of the other direction back to src's shape.
Tensor resample(Kind k, bool backward, const Tensor& src, const Shape& dst_shape, const ResampleOptions& o) {
  const char* name = op_name(k, backward);
  autograd::Record rec(name, {&src});
  Tensor out = empty(dst_shape, src.dtype(), src.device(), output_format(k, backward, src));
  if (out.numel() > 0) op_of(k, backward)(common_device(name, {&src, &out}), src, out, o);
  if (rec)
    rec.finish(node_name(k, src.dim() - 2, o, backward), {&out}, {},
               [k, backward, o, shape = src.sizes()](autograd::FnNode&, autograd::Grads& g) {
                 return autograd::Grads{resample(k, !backward, g[0], shape, o)};
               });
  return out;
}

Shape full_shape(const Tensor& x, const Shape& spatial) {
  Shape s{x.size(0), x.size(1)};
  s.insert(s.end(), spatial.begin(), spatial.end());
  return s;
}

Tensor forward(Kind k, int nd_only, const Tensor& x, const Shape& output_size, const ResampleOptions& o) {
  const char* name = op_name(k, false);
  check_input(name, x, nd_only, output_size, "input");
  return resample(k, false, x, full_shape(x, output_size), o);
}

Tensor backward(Kind k, int nd_only, const Tensor& grad, const Shape& input_size, const ResampleOptions& o) {
  const char* name = op_name(k, true);
  KILN_CHECK(input_size.size() == size_t(grad.dim()) && input_size.size() >= 3 &&
                 input_size[0] == grad.size(0) && input_size[1] == grad.size(1),
             ValueError,
             "[" << name << "] input_size " << shape_to_string(input_size) << " does not fit grad_output "
                 << grad.shape_str());
  check_input(name, grad, nd_only, Shape(input_size.begin() + 2, input_size.end()), "grad_output");
  return resample(k, true, grad, input_size, o);
}

void check_antialias(const char* op, bool antialias, int nd) {
  KILN_CHECK(!antialias || nd == 2, ValueError,
             "[" << op << "] antialias is restricted to bilinear and bicubic modes on 4-D input");
}

}  // namespace

Tensor upsample_nearest(const Tensor& x, const Shape& output_size, const std::vector<double>& scales,
                        bool exact) {
  return forward(Kind::Nearest, 0, x, output_size,
                 options("upsample_nearest", x.dim() - 2, scales, false, exact, false));
}

Tensor upsample_nearest_backward(const Tensor& grad, const Shape& input_size,
                                 const std::vector<double>& scales, bool exact) {
  return backward(Kind::Nearest, 0, grad, input_size,
                  options("upsample_nearest_backward", grad.dim() - 2, scales, false, exact, false));
}

Tensor upsample_linear(const Tensor& x, const Shape& output_size, bool align_corners,
                       const std::vector<double>& scales, bool antialias) {
  check_antialias("upsample_linear", antialias, x.dim() - 2);
  return forward(Kind::Linear, 0, x, output_size,
                 options("upsample_linear", x.dim() - 2, scales, align_corners, false, antialias));
}

Tensor upsample_linear_backward(const Tensor& grad, const Shape& input_size, bool align_corners,
                                const std::vector<double>& scales, bool antialias) {
  check_antialias("upsample_linear_backward", antialias, grad.dim() - 2);
  return backward(
      Kind::Linear, 0, grad, input_size,
      options("upsample_linear_backward", grad.dim() - 2, scales, align_corners, false, antialias));
}

Tensor upsample_bicubic2d(const Tensor& x, const Shape& output_size, bool align_corners,
                          const std::vector<double>& scales, bool antialias) {
  return forward(Kind::Bicubic, 2, x, output_size,
                 options("upsample_bicubic2d", 2, scales, align_corners, false, antialias));
}

Tensor upsample_bicubic2d_backward(const Tensor& grad, const Shape& input_size, bool align_corners,
                                   const std::vector<double>& scales, bool antialias) {
  return backward(Kind::Bicubic, 2, grad, input_size,
                  options("upsample_bicubic2d_backward", 2, scales, align_corners, false, antialias));
}

Tensor upsample_area(const Tensor& x, const Shape& output_size) {
  return forward(Kind::Area, 0, x, output_size, ResampleOptions{});
}

Tensor upsample_area_backward(const Tensor& grad, const Shape& input_size) {
  return backward(Kind::Area, 0, grad, input_size, ResampleOptions{});
}

}  // namespace kiln
