// pad front-ends (include/kiln/pad.h): torch's checks on the pad list, the
// input rank each mode takes and the pad sizes, the output shape, and the
// derivatives: pad's is pad_backward, pad_backward's is pad (both linear).
#include "kiln/pad.h"

#include <algorithm>
#include <sstream>

#include "core/autograd_record.h"
#include "kiln/dtype.h"
#include "kiln/error.h"
#include "kiln/memory_format.h"
#include "ops/registry/all.h"

namespace kiln {

PadMode pad_mode(std::string_view name) {
  if (name == "constant") return PadMode::Constant;
  if (name == "reflect") return PadMode::Reflect;
  if (name == "replicate") return PadMode::Replicate;
  if (name == "circular") return PadMode::Circular;
  KILN_CHECK(false, NotImplementedError,
             "[pad] unrecognised padding mode '" << name << "' (constant, reflect, replicate or circular)");
  return PadMode::Constant;
}

const char* pad_mode_name(PadMode mode) {
  switch (mode) {
    case PadMode::Constant:
      return "constant";
    case PadMode::Reflect:
      return "reflect";
    case PadMode::Replicate:
      return "replicate";
    case PadMode::Circular:
      return "circular";
  }
  return "?";
}

namespace {

std::string shape_str(const Shape& s) {
  std::ostringstream o;
  o << "[";
  for (size_t i = 0; i < s.size(); ++i) o << (i ? ", " : "") << s[i];
  o << "]";
  return o.str();
}

// The output shape of padding `in` by `pad` in `mode`, after torch's checks
// (op names the front-end in messages).
Shape padded_shape(const char* op, const Shape& in, const std::vector<int64_t>& pad, PadMode mode) {
  const int R = int(in.size());
  const int K = int(pad.size() / 2);
  const char* mname = pad_mode_name(mode);
  KILN_CHECK(pad.size() % 2 == 0, ValueError,
             "[" << op << "] padding length must be divisible by 2, got " << pad.size());
  KILN_CHECK(K <= R, ValueError,
             "[" << op << "] padding length " << pad.size() << " must be at most twice the input's dimension "
                 << R << " (input " << shape_str(in) << ")");
  if (mode != PadMode::Constant) {
    KILN_CHECK(K >= 1 && K <= 3 && (R == K + 1 || R == K + 2), NotImplementedError,
               "[" << op << "] " << mname << " padding of size " << pad.size() << " is not supported for a "
                   << R << "-d input " << shape_str(in)
                   << " (pads of 2, 4, 6 take 2-3, 3-4, 4-5 dim inputs)");
    if (mode != PadMode::Circular) {
      // Unbatched inputs need every dim non-zero; batched ones all but the batch.
      for (int d = R == K + 2 ? 1 : 0; d < R; ++d)
        KILN_CHECK(in[size_t(d)] != 0, ValueError,
                   "[" << op << "] " << mname << " padding needs non-zero dims besides the batch, got input "
                       << shape_str(in));
    }
  }
  Shape out = in;
  for (int k = 0; k < K; ++k) {
    const int d = R - 1 - k;
    const int64_t n = in[size_t(d)], l = pad[size_t(2 * k)], r = pad[size_t(2 * k + 1)];
    const int64_t m = n + l + r;
    switch (mode) {
      case PadMode::Constant:
        break;
      case PadMode::Reflect:
        KILN_CHECK(l < n && r < n, ValueError,
                   "[" << op << "] reflect padding (" << l << ", " << r << ") of dim " << d
                       << " must be less than its size " << n << " (input " << shape_str(in) << ")");
        break;
      case PadMode::Replicate:
        break;
      case PadMode::Circular: {
        // Wraps within the cropped input, at most once.
        const int64_t len = n - std::max<int64_t>(0, -l) - std::max<int64_t>(0, -r);
        KILN_CHECK(m < 0 || (l <= len && r <= len && (len > 0 || m == 0)), ValueError,
                   "[" << op << "] circular padding (" << l << ", " << r << ") of dim " << d << " (size " << n
                       << ", " << len << " after cropping) wraps around more than once (input "
                       << shape_str(in) << ")");
        break;
      }
    }
    const int64_t least = mode == PadMode::Reflect || mode == PadMode::Replicate ? 1 : 0;
    KILN_CHECK(m >= least, ValueError,
               "[" << op << "] padding (" << l << ", " << r << ") of dim " << d << " (size " << n
                   << ") gives " << m << " elements, less than " << least << " (input " << shape_str(in)
                   << ")");
    out[size_t(d)] = m;
  }
  return out;
}

}  // namespace

Tensor pad(const Tensor& x, const std::vector<int64_t>& pad, PadMode mode, std::optional<double> value) {
  KILN_CHECK(mode == PadMode::Constant || !value || *value == 0.0, ValueError,
             "[pad] padding mode '" << pad_mode_name(mode) << "' doesn't take a value argument (got "
                                    << *value << ")");
  const Shape in_shape = x.sizes();
  const Shape shape = padded_shape("pad", in_shape, pad, mode);
  // A channels-last input padded with a constant in its spatial dims stays
  // channels-last, as torch's constant_pad_nd: the pad runs on the row-major
  // [N, *spatial, C] view, whose channel dim gets no padding.
  const int nd = x.dim();
  if (mode == PadMode::Constant && nd >= 4 && int(pad.size()) <= 2 * (nd - 2) && !x.is_contiguous() &&
      suggest_memory_format(x) != MemoryFormat::Contiguous) {
    std::vector<int> to_last{0}, back{0, nd - 1};
    for (int d = 2; d < nd; ++d) to_last.push_back(d);
    to_last.push_back(1);
    for (int d = 1; d < nd - 1; ++d) back.push_back(d);
    std::vector<int64_t> p{0, 0};
    p.insert(p.end(), pad.begin(), pad.end());
    return kiln::pad(x.permute(to_last), p, mode, value).permute(back);
  }
  autograd::Record rec("pad", {&x});
  Tensor out = empty(shape, x.dtype(), x.device());
  if (pad.empty())
    out.copy_(x);
  else
    ops::pad(common_device("pad", {&x, &out}), x, pad, mode, value.value_or(0.0), out);
  if (rec) {
    const char* node = mode == PadMode::Constant    ? "ConstantPadNdBackward0"
                       : mode == PadMode::Reflect   ? "ReflectionPadBackward0"
                       : mode == PadMode::Replicate ? "ReplicationPadBackward0"
                                                    : "CircularPadBackward0";
    rec.finish(node, {&out}, {}, [in_shape, pad, mode](autograd::FnNode& n, autograd::Grads& g) {
      autograd::Grads r(1);
      if (n.needs(0)) r[0] = pad_backward(g[0], in_shape, pad, mode);
      return r;
    });
  }
  return out;
}

Tensor pad_backward(const Tensor& grad_output, const Shape& input_shape, const std::vector<int64_t>& pad,
                    PadMode mode) {
  const Shape shape = padded_shape("pad_backward", input_shape, pad, mode);
  KILN_CHECK(grad_output.sizes() == shape, ValueError,
             "[pad_backward] grad_output " << grad_output.shape_str() << " must have pad's output shape "
                                           << shape_str(shape) << " for input " << shape_str(input_shape));
  const DType dt = grad_output.dtype();
  KILN_CHECK((is_floating(dt) && !is_fp8(dt)) || is_complex(dt), TypeError,
             "[pad_backward] unsupported dtype " << name(dt));
  autograd::Record rec("pad_backward", {&grad_output});
  Tensor out = empty(input_shape, dt, grad_output.device());
  if (pad.empty())
    out.copy_(grad_output);
  else
    ops::pad_backward(common_device("pad_backward", {&grad_output, &out}), grad_output, pad, mode, out);
  if (rec)
    rec.finish("PadBackwardBackward0", {&out}, {}, [pad, mode](autograd::FnNode& n, autograd::Grads& g) {
      autograd::Grads r(1);
      if (n.needs(0)) r[0] = kiln::pad(g[0], pad, mode);
      return r;
    });
  return out;
}

}  // namespace kiln
