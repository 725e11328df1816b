// unfold / fold front-ends (include/kiln/fold.h): torch's checks, the block
// count, a contiguous [N, C, H, W] / [N, C*kh*kw, L] operand, then the im2col /
// col2im op. The two are adjoint: each one's derivative is the other, so they
// are differentiable any number of times.
#include "kiln/fold.h"

#include "core/autograd_record.h"
#include "nn/nn_util.h"
#include "ops/registry/all.h"

namespace kiln {
namespace {

std::string pair_str(Size2 p) { return "(" + std::to_string(p[0]) + ", " + std::to_string(p[1]) + ")"; }

// Checks the parameters and computes the block grid of an H x W image.
ops::FoldGeom geometry(const char* op, int64_t H, int64_t W, Size2 k, Size2 d, Size2 p, Size2 s) {
  KILN_CHECK(k[0] > 0 && k[1] > 0, ValueError,
             "[" << op << "] kernel_size should be greater than zero, got " << pair_str(k));
  KILN_CHECK(d[0] > 0 && d[1] > 0, ValueError,
             "[" << op << "] dilation should be greater than zero, got " << pair_str(d));
  KILN_CHECK(p[0] >= 0 && p[1] >= 0, ValueError,
             "[" << op << "] padding should be non-negative, got " << pair_str(p));
  KILN_CHECK(s[0] > 0 && s[1] > 0, ValueError,
             "[" << op << "] stride should be greater than zero, got " << pair_str(s));
  const int64_t oh = (H + 2 * p[0] - d[0] * (k[0] - 1) - 1) / s[0] + 1;
  const int64_t ow = (W + 2 * p[1] - d[1] * (k[1] - 1) - 1) / s[1] + 1;
  const bool fits = H + 2 * p[0] - d[0] * (k[0] - 1) - 1 >= 0 && W + 2 * p[1] - d[1] * (k[1] - 1) - 1 >= 0;
  KILN_CHECK(fits && oh >= 1 && ow >= 1, ValueError,
             "[" << op << "] given input with spatial size " << pair_str({H, W})
                 << ", kernel_size=" << pair_str(k) << ", dilation=" << pair_str(d)
                 << ", padding=" << pair_str(p) << ", the calculated shape of the array of sliding blocks is "
                 << pair_str({oh, ow}) << ", but its components must be at least one");
  return {k[0], k[1], d[0], d[1], p[0], p[1], s[0], s[1], oh, ow};
}

}  // namespace

Tensor unfold(const Tensor& x, Size2 kernel_size, Size2 dilation, Size2 padding, Size2 stride) {
  nn_detail::check_float(x, "unfold", "input");
  KILN_CHECK(x.dim() == 3 || x.dim() == 4, ValueError,
             "[unfold] expected a 3-d or 4-d (batched) input, got " << x.shape_str());
  const bool batched = x.dim() == 4;
  const Tensor x4 = batched ? x : x.unsqueeze(0);
  const int64_t N = x4.size(0), C = x4.size(1), H = x4.size(2), W = x4.size(3);
  KILN_CHECK(C > 0 && H > 0 && W > 0, ValueError,
             "[unfold] expected non-zero channel and spatial sizes, got input " << x.shape_str());
  const ops::FoldGeom g = geometry("unfold", H, W, kernel_size, dilation, padding, stride);
  autograd::Record rec("unfold", {&x});
  Tensor out = empty({N, C * g.kh * g.kw, g.oh * g.ow}, x.dtype(), x.device());
  if (out.numel() > 0) ops::im2col(common_device("unfold", {&x, &out}), x4.contiguous(), g, out);
  if (!batched) out = out.squeeze(0);
  if (rec)
    rec.finish(
        "Im2ColBackward0", {&out}, {},
        [HW = Size2{H, W}, kernel_size, dilation, padding, stride](autograd::FnNode&, autograd::Grads& gr) {
          return autograd::Grads{fold(gr[0], HW, kernel_size, dilation, padding, stride)};
        });
  return out;
}

Tensor fold(const Tensor& x, Size2 output_size, Size2 kernel_size, Size2 dilation, Size2 padding,
            Size2 stride) {
  nn_detail::check_float(x, "fold", "input");
  KILN_CHECK(x.dim() == 2 || x.dim() == 3, ValueError,
             "[fold] expected a 2-d or 3-d (batched) input, got " << x.shape_str());
  const bool batched = x.dim() == 3;
  const Tensor x3 = batched ? x : x.unsqueeze(0);
  const int64_t N = x3.size(0), CK = x3.size(1), L = x3.size(2);
  KILN_CHECK(output_size[0] > 0 && output_size[1] > 0, ValueError,
             "[fold] output_size should be greater than zero, got " << pair_str(output_size));
  const ops::FoldGeom g =
      geometry("fold", output_size[0], output_size[1], kernel_size, dilation, padding, stride);
  const int64_t K = g.kh * g.kw;
  KILN_CHECK(CK > 0 && CK % K == 0, ValueError,
             "[fold] expected size of input's dimension 1 to be divisible by the product of kernel_size "
                 << K << ", got input " << x.shape_str());
  KILN_CHECK(L == g.oh * g.ow, ValueError,
             "[fold] given output_size=" << pair_str(output_size) << ", kernel_size=" << pair_str(kernel_size)
                                         << ", dilation=" << pair_str(dilation) << ", padding="
                                         << pair_str(padding) << ", stride=" << pair_str(stride)
                                         << ", expected size of input's dimension 2 to match the number of "
                                            "sliding blocks "
                                         << g.oh * g.ow << ", got input " << x.shape_str());
  autograd::Record rec("fold", {&x});
  Tensor out = empty({N, CK / K, output_size[0], output_size[1]}, x.dtype(), x.device());
  if (out.numel() > 0) ops::col2im(common_device("fold", {&x, &out}), x3.contiguous(), g, out);
  if (!batched) out = out.squeeze(0);
  if (rec)
    rec.finish("Col2ImBackward0", {&out}, {},
               [kernel_size, dilation, padding, stride](autograd::FnNode&, autograd::Grads& gr) {
                 return autograd::Grads{unfold(gr[0], kernel_size, dilation, padding, stride)};
               });
  return out;
}

}  // namespace kiln
