// convolution and convolution_backward_weight front-ends (include/kiln/conv.h):
// shape checks with torch's messages, output sizes, the float32 compute cast
// of narrow floats, and the derivatives, written with these two public ops so
// that double backward works:
//   forward:    grad_input = convolution(g, w, transposed), grad_weight = backward_weight
//   transposed: grad_input = convolution(g, w, forward)
#include "kiln/conv.h"

#include <algorithm>
#include <sstream>

#include "core/autograd_record.h"
#include "kiln/memory_format.h"
#include "kiln/reduce.h"
#include "nn/nn_util.h"
#include "ops/registry/all.h"

namespace kiln {
namespace {

std::string join(const std::vector<int64_t>& v, const char* sep) {
  std::ostringstream s;
  for (size_t i = 0; i < v.size(); ++i) s << (i ? sep : "") << v[i];
  return s.str();
}

// A parameter list of nd values (one value repeats).
std::vector<int64_t> expand(const std::vector<int64_t>& v, int nd, const char* what) {
  KILN_CHECK(v.size() == 1 || v.size() == size_t(nd), ValueError,
             "[convolution] expected " << what << " to be a single integer value or a list of " << nd
                                       << " values to match the convolution dimensions, but got " << what
                                       << "=[" << join(v, ", ") << "]");
  return v.size() == 1 ? std::vector<int64_t>(size_t(nd), v[0]) : v;
}

struct Conv {
  int nd = 0;
  std::vector<int64_t> stride, padding, dilation, output_padding;
  bool transposed = false;
  int64_t groups = 1;

  ops::ConvParams params() const {
    ops::ConvParams p;
    for (int i = 0; i < nd; ++i) {
      const size_t j = size_t(3 - nd + i);
      p.stride[j] = stride[size_t(i)];
      p.padding[j] = padding[size_t(i)];
      p.dilation[j] = dilation[size_t(i)];
    }
    p.transposed = transposed;
    p.groups = groups;
    return p;
  }
  // Spatial output size along dim i for input size s, kernel k.
  int64_t out_size(int i, int64_t s, int64_t k) const {
    const size_t u = size_t(i);
    if (transposed)
      return (s - 1) * stride[u] - 2 * padding[u] + dilation[u] * (k - 1) + output_padding[u] + 1;
    return (s + 2 * padding[u] - dilation[u] * (k - 1) - 1) / stride[u] + 1;
  }
};

Conv make_conv(int nd, const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
               const std::vector<int64_t>& dilation, bool transposed,
               const std::vector<int64_t>& output_padding, int64_t groups) {
  Conv c;
  c.nd = nd;
  c.stride = expand(stride, nd, "stride");
  c.padding = expand(padding, nd, "padding");
  c.dilation = expand(dilation, nd, "dilation");
  c.output_padding = expand(output_padding, nd, "output_padding");
  c.transposed = transposed;
  c.groups = groups;
  for (int i = 0; i < nd; ++i) {
    const size_t u = size_t(i);
    KILN_CHECK(c.stride[u] > 0, ValueError, "[convolution] non-positive stride is not supported");
    KILN_CHECK(c.padding[u] >= 0, ValueError, "[convolution] negative padding is not supported");
    KILN_CHECK(c.dilation[u] > 0, ValueError, "[convolution] dilation should be greater than zero");
    KILN_CHECK(c.output_padding[u] >= 0, ValueError,
               "[convolution] negative output_padding is not supported");
    KILN_CHECK(transposed || c.output_padding[u] == 0, ValueError,
               "[convolution] output_padding is only supported for transposed convolutions");
    KILN_CHECK(c.output_padding[u] < c.stride[u] || c.output_padding[u] < c.dilation[u], ValueError,
               "[convolution] output padding must be smaller than either stride or dilation, but got "
               "output_padding=["
                   << join(c.output_padding, ", ") << "] stride=[" << join(c.stride, ", ") << "] dilation=["
                   << join(c.dilation, ", ") << "]");
  }
  KILN_CHECK(groups > 0, ValueError, "[convolution] non-positive groups is not supported");
  return c;
}

// The gradient of the input (sizes `in`) of a convolution c with weight w,
// given the gradient g of its output: the convolution of the other direction.
Tensor grad_input(const Tensor& g_in, const Tensor& w, const Shape& in, const Conv& c,
                  MemoryFormat fmt = MemoryFormat::Contiguous) {
  // A channels-last input gets a channels-last gradient, as torch's.
  const Tensor g = fmt != MemoryFormat::Contiguous ? contiguous(g_in, fmt) : g_in;
  if (!c.transposed) {
    // The rows of the input no window reached: output_padding restores them.
    std::vector<int64_t> op(size_t(c.nd));
    for (int i = 0; i < c.nd; ++i) {
      const size_t u = size_t(i);
      op[u] = in[u + 2] + 2 * c.padding[u] - c.dilation[u] * (w.size(i + 2) - 1) - 1 -
              (g.size(i + 2) - 1) * c.stride[u];
    }
    return convolution(g, w, Tensor(), c.stride, c.padding, c.dilation, true, op, c.groups);
  }
  Tensor r = convolution(g, w, Tensor(), c.stride, c.padding, c.dilation, false, {0}, c.groups);
  // output_padding >= stride (allowed below the dilation) adds windows past the input.
  for (int i = 0; i < c.nd; ++i)
    if (r.size(i + 2) != in[size_t(i) + 2]) r = r.narrow(i + 2, 0, in[size_t(i) + 2]);
  return r;
}

Tensor backward_weight(const Tensor& input, const Tensor& g, const Shape& ws, const Conv& c) {
  return convolution_backward_weight(input, g, ws, c.stride, c.padding, c.dilation, c.transposed,
                                     c.output_padding, c.groups);
}

void check_dtypes(const Tensor& a, const Tensor& b, const char* op, const char* an, const char* bn) {
  nn_detail::check_float(a, op, an);
  KILN_CHECK(a.dtype() == b.dtype(), TypeError,
             "[" << op << "] " << an << " type (" << name(a.dtype()) << ") and " << bn << " type ("
                 << name(b.dtype()) << ") should be the same");
}

// ChannelsLast (3d) when input or weight (4-d or 5-d) is laid out so, else Contiguous.
MemoryFormat output_format(const Tensor& input, const Tensor& weight) {
  if (input.dim() != 4 && input.dim() != 5) return MemoryFormat::Contiguous;
  const MemoryFormat f = suggest_memory_format(input);
  return f != MemoryFormat::Contiguous ? f : suggest_memory_format(weight);
}

bool takes_channels_last(MemoryFormat fmt, const Conv& c, const Device& device) {
  return fmt != MemoryFormat::Contiguous && c.groups == 1 && device.is_cpu();
}

// The layout the CPU kernels run in: fmt, or channels-last for float32 4-d / 5-d.
MemoryFormat kernel_format(MemoryFormat fmt, const Tensor& input, DType acc) {
  if (fmt != MemoryFormat::Contiguous || acc != DType::Float32) return fmt;
  if (input.dim() == 4) return MemoryFormat::ChannelsLast;
  return input.dim() == 5 ? MemoryFormat::ChannelsLast3d : fmt;
}

DType compute_dtype(DType d) { return d == DType::Float64 ? DType::Float64 : DType::Float32; }

// input [N, C, *] (batched, checked by the caller).
Tensor convolution_batched(const Tensor& input, const Tensor& weight, const Tensor& bias, const Conv& c) {
  const Shape& ws = weight.sizes();
  const int64_t G = c.groups;
  int64_t C_out;
  if (!c.transposed) {
    KILN_CHECK(ws[0] % G == 0, ValueError,
               "[convolution] Given groups=" << G << ", expected weight to be divisible by " << G
                                             << " at dimension 0, but got weight of size "
                                             << weight.shape_str() << " instead");
    KILN_CHECK(input.size(1) == ws[1] * G, ValueError,
               "[convolution] Given groups=" << G << ", weight of size " << weight.shape_str()
                                             << ", expected input" << input.shape_str() << " to have "
                                             << ws[1] * G << " channels, but got " << input.size(1)
                                             << " channels instead");
    C_out = ws[0];
  } else {
    KILN_CHECK(input.size(1) == ws[0], ValueError,
               "[convolution] Given transposed=1, weight of size "
                   << weight.shape_str() << ", expected input" << input.shape_str() << " to have " << ws[0]
                   << " channels, but got " << input.size(1) << " channels instead");
    KILN_CHECK(ws[0] % G == 0, ValueError,
               "[convolution] Given groups=" << G << ", expected weight to be divisible by " << G
                                             << " at dimension 0, but got weight of size "
                                             << weight.shape_str() << " instead");
    C_out = ws[1] * G;
  }
  if (bias.defined()) {
    check_dtypes(input, bias, "convolution", "Input", "bias");
    KILN_CHECK(bias.dim() == 1 && bias.size(0) == C_out, ValueError,
               "[convolution] Given weight of size "
                   << weight.shape_str() << ", expected bias to be 1-dimensional with " << C_out
                   << " elements, but got bias of size " << bias.shape_str() << " instead");
  }
  Shape out_shape{input.size(0), C_out};
  std::vector<int64_t> padded, kernel;
  bool too_small = false;
  for (int i = 0; i < c.nd; ++i) {
    const int64_t s = input.size(i + 2), k = ws[size_t(i) + 2];
    padded.push_back(s + 2 * c.padding[size_t(i)]);
    kernel.push_back(c.dilation[size_t(i)] * (k - 1) + 1);
    too_small = too_small || padded.back() < kernel.back();
    out_shape.push_back(c.out_size(i, s, k));
  }
  KILN_CHECK(c.transposed || !too_small, ValueError,
             "[convolution] Calculated padded input size per channel: ("
                 << join(padded, " x ") << "). Kernel size: (" << join(kernel, " x ")
                 << "). Kernel size can't be greater than actual input size");
  for (size_t i = 2; i < out_shape.size(); ++i)
    KILN_CHECK(out_shape[i] >= 0, ValueError,
               "[convolution] input " << input.shape_str() << " with weight " << weight.shape_str()
                                      << " gives a negative output size " << shape_to_string(out_shape));
  const Device device = common_device("convolution", {&input, &weight, &bias});
  autograd::Record rec("convolution", {&input, &weight, &bias});
  const DType acc = compute_dtype(input.dtype());
  // A channels-last input or weight gives a channels-last output, as torch's;
  // the CPU kernels take channels-last tensors directly when groups = 1.
  const MemoryFormat fmt = output_format(input, weight);
  // float32 row-major images also run channels-last (two copies): its kernel
  // is the faster one.
  const MemoryFormat kfmt = kernel_format(fmt, input, acc);
  const bool cl = takes_channels_last(kfmt, c, device);
  Tensor out = cl ? empty(out_shape, acc, input.device(), kfmt) : empty(out_shape, acc, input.device());
  if (out.numel() > 0) {
    const Tensor b = bias.defined() ? bias.to(acc).contiguous() : Tensor();
    const Tensor x = cl ? contiguous(input.to(acc), kfmt) : input.to(acc).contiguous();
    ops::convolution(device, x, weight.to(acc).contiguous(), b, c.params(), out);
  }
  if (out.dtype() != input.dtype()) out = out.to(input.dtype());
  out = fmt != MemoryFormat::Contiguous ? contiguous(out, fmt) : out.contiguous();
  if (rec) {
    std::vector<int> bias_dims{0};
    for (int i = 0; i < c.nd; ++i) bias_dims.push_back(i + 2);
    rec.finish("ConvolutionBackward0", {&out}, {input, weight},
               [c, bias_dims, has_bias = bias.defined()](autograd::FnNode& n, autograd::Grads& g) {
                 const Tensor x = n.saved(0), w = n.saved(1);
                 autograd::Grads r(3);
                 if (n.needs(0)) r[0] = grad_input(g[0], w, x.sizes(), c, output_format(x, w));
                 if (n.needs(1)) r[1] = backward_weight(x, g[0], w.sizes(), c);
                 if (has_bias && n.needs(2)) r[2] = sum(g[0], bias_dims);
                 return r;
               });
  }
  return out;
}

}  // namespace

Tensor convolution(const Tensor& input, const Tensor& weight, const Tensor& bias,
                   const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                   const std::vector<int64_t>& dilation, bool transposed,
                   const std::vector<int64_t>& output_padding, int64_t groups) {
  check_dtypes(input, weight, "convolution", "Input", "weight");
  const int nd = weight.dim() - 2;
  KILN_CHECK(nd >= 1 && nd <= 3, ValueError,
             "[convolution] weight must be 3-d, 4-d or 5-d ([C_out, C_in / groups, *kernel]), got "
                 << weight.shape_str());
  KILN_CHECK(input.dim() == nd + 1 || input.dim() == nd + 2, ValueError,
             "[convolution] Expected " << nd + 1 << "D (unbatched) or " << nd + 2
                                       << "D (batched) input for weight of size " << weight.shape_str()
                                       << ", but got input of size: " << input.shape_str());
  const Conv c = make_conv(nd, stride, padding, dilation, transposed, output_padding, groups);
  if (input.dim() == nd + 1) return convolution_batched(input.unsqueeze(0), weight, bias, c).squeeze(0);
  return convolution_batched(input, weight, bias, c);
}

Tensor convolution_backward_weight(const Tensor& input, const Tensor& grad_output, const Shape& weight_shape,
                                   const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                                   const std::vector<int64_t>& dilation, bool transposed,
                                   const std::vector<int64_t>& output_padding, int64_t groups) {
  check_dtypes(input, grad_output, "convolution_backward_weight", "input", "grad_output");
  const int nd = int(weight_shape.size()) - 2;
  KILN_CHECK(nd >= 1 && nd <= 3 && input.dim() == nd + 2 && grad_output.dim() == nd + 2, ValueError,
             "[convolution_backward_weight] expected batched input and grad_output of "
                 << nd + 2 << " dims for weight shape " << shape_to_string(weight_shape) << ", got input "
                 << input.shape_str() << " and grad_output " << grad_output.shape_str());
  const Conv c = make_conv(nd, stride, padding, dilation, transposed, output_padding, groups);
  const int64_t G = groups;
  const int64_t C_in = transposed ? weight_shape[0] : weight_shape[1] * G;
  const int64_t C_out = transposed ? weight_shape[1] * G : weight_shape[0];
  bool ok = input.size(0) == grad_output.size(0) && input.size(1) == C_in && grad_output.size(1) == C_out &&
            weight_shape[0] % G == 0;
  for (int i = 0; ok && i < nd; ++i)
    ok = grad_output.size(i + 2) == c.out_size(i, input.size(i + 2), weight_shape[size_t(i) + 2]);
  KILN_CHECK(ok, ValueError,
             "[convolution_backward_weight] input " << input.shape_str() << " and grad_output "
                                                    << grad_output.shape_str() << " do not fit weight shape "
                                                    << shape_to_string(weight_shape) << " with groups=" << G);
  const Device device = common_device("convolution_backward_weight", {&input, &grad_output});
  autograd::Record rec("convolution_backward_weight", {&input, &grad_output});
  const DType acc = compute_dtype(input.dtype());
  Tensor gw = empty(weight_shape, acc, input.device());
  if (gw.numel() > 0) {
    if (input.numel() == 0 || grad_output.numel() == 0)
      gw.fill_(Scalar(0.0));
    else if (const MemoryFormat fmt = kernel_format(output_format(input, grad_output), input, acc);
             takes_channels_last(fmt, c, device))
      ops::convolution_backward_weight(device, contiguous(input.to(acc), fmt),
                                       contiguous(grad_output.to(acc), fmt), c.params(), gw);
    else
      ops::convolution_backward_weight(device, input.to(acc).contiguous(), grad_output.to(acc).contiguous(),
                                       c.params(), gw);
  }
  if (gw.dtype() != input.dtype()) gw = gw.to(input.dtype());
  if (rec)
    // Bilinear in (input, grad_output): each gradient is a convolution with
    // the incoming weight-shaped gradient gg.
    rec.finish("ConvolutionBackwardWeightBackward0", {&gw}, {input, grad_output},
               [c](autograd::FnNode& n, autograd::Grads& g) {
                 const Tensor x = n.saved(0), go = n.saved(1);
                 autograd::Grads r(2);
                 if (n.needs(0)) r[0] = grad_input(go, g[0], x.sizes(), c);
                 if (n.needs(1))
                   r[1] = convolution(x, g[0], Tensor(), c.stride, c.padding, c.dilation, c.transposed,
                                      c.output_padding, c.groups);
                 return r;
               });
  return gw;
}

}  // namespace kiln
