// torch.nn.functional's conv{1,2,3}d and conv_transpose{1,2,3}d over
// convolution (nn/conv.cc): the input's rank check with torch's message and
// padding="same" / "valid".
#include <string>

#include "kiln/conv.h"
#include "kiln/shape.h"

namespace kiln {
namespace {

std::string op_name(const char* base, int nd) { return std::string(base) + std::to_string(nd) + "d"; }

void check_rank(const Tensor& input, int nd, const std::string& op) {
  KILN_CHECK(nd >= 1 && nd <= 3, ValueError, "[" << op << "] expected 1, 2 or 3 spatial dims, got " << nd);
  KILN_CHECK(input.dim() == nd + 1 || input.dim() == nd + 2, ValueError,
             "[" << op << "] Expected " << nd + 1 << "D (unbatched) or " << nd + 2 << "D (batched) input to "
                 << op << ", but got input of size: " << input.shape_str());
}

}  // namespace

Tensor conv_nd(int nd, const Tensor& input, const Tensor& weight, const Tensor& bias,
               const std::vector<int64_t>& stride, const ConvPadding& padding,
               const std::vector<int64_t>& dilation, int64_t groups) {
  const std::string op = op_name("conv", nd);
  check_rank(input, nd, op);
  KILN_CHECK(weight.dim() == nd + 2, ValueError,
             "[" << op << "] expected weight to be " << nd + 2 << "-d, got " << weight.shape_str());
  if (padding.mode.empty())
    return convolution(input, weight, bias, stride, padding.values, dilation, false, {0}, groups);
  if (padding.mode == "valid")
    return convolution(input, weight, bias, stride, {0}, dilation, false, {0}, groups);
  KILN_CHECK(padding.mode == "same", ValueError,
             "[" << op << "] Invalid padding string: '" << padding.mode << "'");
  for (int64_t s : stride)
    KILN_CHECK(s == 1, ValueError, "[" << op << "] padding='same' is not supported for strided convolutions");
  KILN_CHECK(
      dilation.size() == 1 || dilation.size() == size_t(nd), ValueError,
      "[" << op << "] expected dilation to be a single integer value or a list of " << nd << " values");
  // d * (k - 1) in total per dim: half on each side, the odd one on the right
  // (zeros appended to the input there, as torch does).
  std::vector<int64_t> pad(static_cast<size_t>(nd), 0);
  Tensor x = input;
  const int first = input.dim() - nd;
  for (int i = 0; i < nd; ++i) {
    const int64_t d = dilation.size() == 1 ? dilation[0] : dilation[size_t(i)];
    const int64_t total = d * (weight.size(i + 2) - 1);
    pad[size_t(i)] = total / 2;
    if (total % 2 == 1 && d > 0) {
      Shape zs = x.sizes();
      zs[size_t(first + i)] = 1;
      const Tensor parts[] = {x, zeros(zs, x.dtype(), x.device())};
      x = cat(parts, first + i);
    }
  }
  return convolution(x, weight, bias, stride, pad, dilation, false, {0}, groups);
}

Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias,
              const std::vector<int64_t>& stride, const ConvPadding& padding,
              const std::vector<int64_t>& dilation, int64_t groups) {
  return conv_nd(1, input, weight, bias, stride, padding, dilation, groups);
}
Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias,
              const std::vector<int64_t>& stride, const ConvPadding& padding,
              const std::vector<int64_t>& dilation, int64_t groups) {
  return conv_nd(2, input, weight, bias, stride, padding, dilation, groups);
}
Tensor conv3d(const Tensor& input, const Tensor& weight, const Tensor& bias,
              const std::vector<int64_t>& stride, const ConvPadding& padding,
              const std::vector<int64_t>& dilation, int64_t groups) {
  return conv_nd(3, input, weight, bias, stride, padding, dilation, groups);
}

Tensor conv_transpose_nd(int nd, const Tensor& input, const Tensor& weight, const Tensor& bias,
                         const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                         const std::vector<int64_t>& output_padding, int64_t groups,
                         const std::vector<int64_t>& dilation) {
  const std::string op = op_name("conv_transpose", nd);
  check_rank(input, nd, op);
  KILN_CHECK(weight.dim() == nd + 2, ValueError,
             "[" << op << "] expected weight to be " << nd + 2 << "-d, got " << weight.shape_str());
  return convolution(input, weight, bias, stride, padding, dilation, true, output_padding, groups);
}

Tensor conv_transpose1d(const Tensor& input, const Tensor& weight, const Tensor& bias,
                        const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                        const std::vector<int64_t>& output_padding, int64_t groups,
                        const std::vector<int64_t>& dilation) {
  return conv_transpose_nd(1, input, weight, bias, stride, padding, output_padding, groups, dilation);
}
Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const Tensor& bias,
                        const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                        const std::vector<int64_t>& output_padding, int64_t groups,
                        const std::vector<int64_t>& dilation) {
  return conv_transpose_nd(2, input, weight, bias, stride, padding, output_padding, groups, dilation);
}
Tensor conv_transpose3d(const Tensor& input, const Tensor& weight, const Tensor& bias,
                        const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                        const std::vector<int64_t>& output_padding, int64_t groups,
                        const std::vector<int64_t>& dilation) {
  return conv_transpose_nd(3, input, weight, bias, stride, padding, output_padding, groups, dilation);
}

}  // namespace kiln
