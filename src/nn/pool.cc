// Pooling front-ends (include/kiln/pool.h): argument expansion and torch's
// checks, output sizes, the [planes, D, H, W] geometry the kernels walk
// (ops/registry/pool.h), and the derivatives. Each backward op is linear in
// its gradient and records its own derivative (the transpose: the forward
// pooling, or a gather by the indices), so double backward works.
#include "kiln/pool.h"

#include <sstream>

#include "core/autograd_record.h"
#include "kiln/binary.h"
#include "kiln/index.h"
#include "kiln/reduce.h"
#include "nn/nn_util.h"
#include "ops/registry/all.h"

namespace kiln {
namespace {

using ops::PoolGeom;

std::string list_str(const std::vector<int64_t>& v) {
  std::ostringstream os;
  os << "(";
  for (size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << v[i];
  os << (v.size() == 1 ? ",)" : ")");
  return os.str();
}

// v as nd entries: one entry repeats, empty takes `dflt`.
std::vector<int64_t> expand(const std::vector<int64_t>& v, int nd, const std::vector<int64_t>& dflt,
                            const char* op, const char* what) {
  if (v.empty()) return dflt;
  if (v.size() == 1) return std::vector<int64_t>(size_t(nd), v[0]);
  KILN_CHECK(
      int(v.size()) == nd, ValueError,
      "[" << op << "] " << what << " must be an int or a tuple of " << nd << " ints, got " << list_str(v));
  return v;
}

int spatial_of(size_t n, const char* op, const char* what) {
  KILN_CHECK(n >= 1 && n <= 3, ValueError,
             "[" << op << "] " << what << " must have 1, 2 or 3 entries, got " << n);
  return int(n);
}

// Checks x against nd spatial dims (x is [N, C, *] or [C, *], every dim but N
// non-zero) and fills g's planes and input sizes.
// ints: integer inputs are allowed too (max pooling, as torch's max_pool2d/3d).
PoolGeom input_geom(const Tensor& x, int nd, const char* op, bool ints = false) {
  if (!ints || !is_integral(x.dtype(), false)) nn_detail::check_float(x, op, "input");
  const int r = x.dim();
  bool ok = r == nd + 1 || r == nd + 2;
  for (int i = r == nd + 2 ? 1 : 0; ok && i < r; ++i) ok = x.size(i) > 0;
  KILN_CHECK(ok, ValueError,
             "[" << op << "] expected a " << nd + 1 << "-d (unbatched) or " << nd + 2
                 << "-d (batched, batch size may be 0) input with non-zero channel and spatial sizes, got "
                 << x.shape_str());
  PoolGeom g;
  g.planes = 1;
  for (int i = 0; i < r - nd; ++i) g.planes *= x.size(i);
  for (int i = 0; i < nd; ++i) g.in[3 - nd + i] = x.size(r - nd + i);
  return g;
}

Shape output_shape(const Shape& in_shape, const PoolGeom& g, int nd) {
  Shape s = in_shape;
  for (int i = 0; i < nd; ++i) s[s.size() - size_t(nd) + size_t(i)] = g.out[3 - nd + i];
  return s;
}

int64_t floor_div(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

// torch's pooling output size; with ceil_mode the last window must start
// inside the input or the left padding.
int64_t pooled_size(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil_mode) {
  int64_t o = floor_div(in + 2 * p - d * (k - 1) - 1 + (ceil_mode ? s - 1 : 0), s) + 1;
  if (ceil_mode && (o - 1) * s >= in + p) --o;
  return o;
}

// Fills g's window parameters and output sizes from the (expanded) arguments.
void window_geom(PoolGeom& g, int nd, const std::vector<int64_t>& kernel_size,
                 const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                 const std::vector<int64_t>& dilation, bool ceil_mode, const char* op,
                 const Shape& in_shape) {
  const std::vector<int64_t> k = kernel_size;
  const std::vector<int64_t> s = expand(stride, nd, k, op, "stride");
  const std::vector<int64_t> p = expand(padding, nd, std::vector<int64_t>(size_t(nd), 0), op, "padding");
  const std::vector<int64_t> d = expand(dilation, nd, std::vector<int64_t>(size_t(nd), 1), op, "dilation");
  bool small = false;
  for (int i = 0; i < nd; ++i) {
    const size_t u = size_t(i);
    KILN_CHECK(k[u] > 0 && s[u] > 0 && d[u] > 0, ValueError,
               "[" << op << "] kernel_size " << list_str(k) << ", stride " << list_str(s) << " and dilation "
                   << list_str(d) << " must be positive");
    KILN_CHECK(p[u] >= 0 && p[u] <= k[u] / 2, ValueError,
               "[" << op << "] padding should be at most half of kernel size, but got padding=" << list_str(p)
                   << " and kernel_size=" << list_str(k));
    const int j = 3 - nd + i;
    g.k[j] = k[u], g.s[j] = s[u], g.p[j] = p[u], g.d[j] = d[u];
    g.out[j] = pooled_size(g.in[j], k[u], s[u], p[u], d[u], ceil_mode);
    small = small || g.out[j] < 1;
  }
  KILN_CHECK(!small, ValueError,
             "[" << op << "] input " << shape_to_string(in_shape) << " gives output size "
                 << shape_to_string(output_shape(in_shape, g, nd)) << ": output size is too small");
}

// torch's node names: MaxPool2DWithIndicesBackward0, AvgPool1DBackward0, ...
std::string node_name(const char* kind, int nd, const char* suffix = "Backward0") {
  return std::string(kind) + std::to_string(nd) + "D" + suffix;
}

// Checks the backward op's arguments (grad is input_shape with other sizes in
// the nd trailing dims) and fills g.
PoolGeom backward_geom(const Tensor& grad, const Shape& input_shape, int nd, const char* op) {
  nn_detail::check_float(grad, op, "grad");
  const int r = int(input_shape.size());
  bool ok = (r == nd + 1 || r == nd + 2) && grad.dim() == r;
  for (int i = 0; ok && i < r - nd; ++i) ok = grad.size(i) == input_shape[size_t(i)];
  for (int i = r - nd; ok && i < r; ++i) ok = input_shape[size_t(i)] > 0;
  KILN_CHECK(ok, ValueError,
             "[" << op << "] grad " << grad.shape_str() << " does not fit input shape "
                 << shape_to_string(input_shape) << " with " << nd << " spatial dims");
  PoolGeom g;
  g.planes = 1;
  for (int i = 0; i < r - nd; ++i) g.planes *= input_shape[size_t(i)];
  for (int i = 0; i < nd; ++i) {
    g.in[3 - nd + i] = input_shape[size_t(r - nd + i)];
    g.out[3 - nd + i] = grad.size(r - nd + i);
  }
  return g;
}

}  // namespace

// ---- max pooling -------------------------------------------------------------

PoolResult max_pool_with_indices(const Tensor& x, const std::vector<int64_t>& kernel_size,
                                 const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                                 const std::vector<int64_t>& dilation, bool ceil_mode) {
  const int nd = spatial_of(kernel_size.size(), "max_pool", "kernel_size");
  PoolGeom g = input_geom(x, nd, "max_pool", true);
  window_geom(g, nd, kernel_size, stride, padding, dilation, ceil_mode, "max_pool", x.sizes());
  const Device device = common_device("max_pool", {&x});
  autograd::Record rec("max_pool", {&x});
  const Shape os = output_shape(x.sizes(), g, nd);
  PoolResult r{empty(os, x.dtype(), x.device()), empty(os, DType::Int64, x.device())};
  if (g.planes > 0) ops::max_pool(device, x, g, r.values, r.indices);
  if (rec)
    rec.finish(node_name("MaxPool", nd, "WithIndicesBackward0"), {&r.values, &r.indices}, {r.indices},
               [in = x.sizes(), nd](autograd::FnNode& n, autograd::Grads& gr) {
                 return autograd::Grads{n.needs(0) ? max_pool_backward(gr[0], n.saved(0), in, nd) : Tensor()};
               });
  return r;
}

Tensor max_pool(const Tensor& x, const std::vector<int64_t>& kernel_size, const std::vector<int64_t>& stride,
                const std::vector<int64_t>& padding, const std::vector<int64_t>& dilation, bool ceil_mode) {
  return max_pool_with_indices(x, kernel_size, stride, padding, dilation, ceil_mode).values;
}

Tensor max_pool_backward(const Tensor& grad, const Tensor& indices, const Shape& input_shape,
                         int spatial_dims) {
  const int nd = spatial_of(size_t(spatial_dims), "max_pool_backward", "spatial_dims");
  const PoolGeom g = backward_geom(grad, input_shape, nd, "max_pool_backward");
  KILN_CHECK(indices.dtype() == DType::Int64 && indices.sizes() == grad.sizes(), ValueError,
             "[max_pool_backward] indices must be int64 of grad's shape "
                 << grad.shape_str() << ", got " << name(indices.dtype()) << " " << indices.shape_str());
  const Device device = common_device("max_pool_backward", {&grad, &indices});
  autograd::Record rec("max_pool_backward", {&grad});
  Tensor out = empty(input_shape, grad.dtype(), grad.device());
  if (g.planes > 0) ops::max_pool_backward(device, grad, indices, g, out);
  if (rec)
    rec.finish(node_name("MaxPool", nd, "WithIndicesBackwardBackward0"), {&out}, {indices},
               [gs = grad.sizes(), g](autograd::FnNode& n, autograd::Grads& gr) {
                 // The transpose of a scatter-add by index: a gather by the same index.
                 const int64_t in_plane = g.in[0] * g.in[1] * g.in[2],
                               out_plane = g.out[0] * g.out[1] * g.out[2];
                 const Tensor idx = n.saved(0).reshape({g.planes, out_plane});
                 return autograd::Grads{gather(gr[0].reshape({g.planes, in_plane}), 1, idx).reshape(gs)};
               });
  return out;
}

// ---- average pooling -----------------------------------------------------------

Tensor avg_pool(const Tensor& x, const std::vector<int64_t>& kernel_size, const std::vector<int64_t>& stride,
                const std::vector<int64_t>& padding, bool ceil_mode, bool count_include_pad,
                std::optional<int64_t> divisor_override) {
  const int nd = spatial_of(kernel_size.size(), "avg_pool", "kernel_size");
  PoolGeom g = input_geom(x, nd, "avg_pool");
  window_geom(g, nd, kernel_size, stride, padding, {1}, ceil_mode, "avg_pool", x.sizes());
  KILN_CHECK(!divisor_override || *divisor_override != 0, ValueError, "[avg_pool] divisor must be not zero");
  const int64_t div = divisor_override.value_or(0);
  const Device device = common_device("avg_pool", {&x});
  autograd::Record rec("avg_pool", {&x});
  Tensor out = empty(output_shape(x.sizes(), g, nd), x.dtype(), x.device());
  if (g.planes > 0) ops::avg_pool(device, x, g, count_include_pad, div, out);
  if (rec)
    rec.finish(node_name("AvgPool", nd), {&out}, {},
               [in = x.sizes(), kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override](
                   autograd::FnNode&, autograd::Grads& gr) {
                 return autograd::Grads{avg_pool_backward(gr[0], in, kernel_size, stride, padding, ceil_mode,
                                                          count_include_pad, divisor_override)};
               });
  return out;
}

Tensor avg_pool_backward(const Tensor& grad, const Shape& input_shape,
                         const std::vector<int64_t>& kernel_size, const std::vector<int64_t>& stride,
                         const std::vector<int64_t>& padding, bool ceil_mode, bool count_include_pad,
                         std::optional<int64_t> divisor_override) {
  const int nd = spatial_of(kernel_size.size(), "avg_pool_backward", "kernel_size");
  PoolGeom g = backward_geom(grad, input_shape, nd, "avg_pool_backward");
  const PoolGeom given = g;
  window_geom(g, nd, kernel_size, stride, padding, {1}, ceil_mode, "avg_pool_backward", input_shape);
  KILN_CHECK(g.out[0] == given.out[0] && g.out[1] == given.out[1] && g.out[2] == given.out[2], ValueError,
             "[avg_pool_backward] grad " << grad.shape_str() << " is not the pooled shape "
                                         << shape_to_string(output_shape(input_shape, g, nd)) << " of input "
                                         << shape_to_string(input_shape));
  KILN_CHECK(!divisor_override || *divisor_override != 0, ValueError,
             "[avg_pool_backward] divisor must be not zero");
  const Device device = common_device("avg_pool_backward", {&grad});
  autograd::Record rec("avg_pool_backward", {&grad});
  Tensor out = empty(input_shape, grad.dtype(), grad.device());
  if (g.planes > 0)
    ops::avg_pool_backward(device, grad, g, count_include_pad, divisor_override.value_or(0), out);
  if (rec)
    rec.finish(node_name("AvgPool", nd, "BackwardBackward0"), {&out}, {},
               [kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override](
                   autograd::FnNode&, autograd::Grads& gr) {
                 return autograd::Grads{avg_pool(gr[0], kernel_size, stride, padding, ceil_mode,
                                                 count_include_pad, divisor_override)};
               });
  return out;
}

// ---- adaptive pooling -------------------------------------------------------------

namespace {

PoolGeom adaptive_geom(const Tensor& x, const std::vector<int64_t>& output_size, const char* op,
                       bool ints = false) {
  const int nd = spatial_of(output_size.size(), op, "output_size");
  PoolGeom g = input_geom(x, nd, op, ints);
  for (int i = 0; i < nd; ++i) {
    KILN_CHECK(output_size[size_t(i)] >= 0, ValueError,
               "[" << op << "] output_size " << list_str(output_size) << " must be non-negative");
    g.out[3 - nd + i] = output_size[size_t(i)];
  }
  return g;
}

bool any_zero(const PoolGeom& g) { return g.planes == 0 || g.out[0] * g.out[1] * g.out[2] == 0; }

}  // namespace

Tensor adaptive_avg_pool(const Tensor& x, const std::vector<int64_t>& output_size) {
  const PoolGeom g = adaptive_geom(x, output_size, "adaptive_avg_pool");
  const int nd = int(output_size.size());
  const Device device = common_device("adaptive_avg_pool", {&x});
  autograd::Record rec("adaptive_avg_pool", {&x});
  Tensor out = empty(output_shape(x.sizes(), g, nd), x.dtype(), x.device());
  if (!any_zero(g)) ops::adaptive_avg_pool(device, x, g, out);
  if (rec)
    rec.finish("AdaptiveAvgPool" + std::to_string(nd) + "DBackward0", {&out}, {},
               [in = x.sizes(), nd](autograd::FnNode&, autograd::Grads& gr) {
                 return autograd::Grads{adaptive_avg_pool_backward(gr[0], in, nd)};
               });
  return out;
}

Tensor adaptive_avg_pool_backward(const Tensor& grad, const Shape& input_shape, int spatial_dims) {
  const int nd = spatial_of(size_t(spatial_dims), "adaptive_avg_pool_backward", "spatial_dims");
  const PoolGeom g = backward_geom(grad, input_shape, nd, "adaptive_avg_pool_backward");
  const Device device = common_device("adaptive_avg_pool_backward", {&grad});
  autograd::Record rec("adaptive_avg_pool_backward", {&grad});
  Tensor out = empty(input_shape, grad.dtype(), grad.device());
  if (g.planes > 0) ops::adaptive_avg_pool_backward(device, grad, g, out);
  if (rec) {
    std::vector<int64_t> os;
    for (int i = 0; i < nd; ++i) os.push_back(g.out[3 - nd + i]);
    rec.finish("AdaptiveAvgPool" + std::to_string(nd) + "DBackwardBackward0", {&out}, {},
               [os](autograd::FnNode&, autograd::Grads& gr) {
                 return autograd::Grads{adaptive_avg_pool(gr[0], os)};
               });
  }
  return out;
}

PoolResult adaptive_max_pool(const Tensor& x, const std::vector<int64_t>& output_size) {
  const PoolGeom g = adaptive_geom(x, output_size, "adaptive_max_pool", true);
  const int nd = int(output_size.size());
  const Device device = common_device("adaptive_max_pool", {&x});
  autograd::Record rec("adaptive_max_pool", {&x});
  const Shape os = output_shape(x.sizes(), g, nd);
  PoolResult r{empty(os, x.dtype(), x.device()), empty(os, DType::Int64, x.device())};
  if (!any_zero(g)) ops::adaptive_max_pool(device, x, g, r.values, r.indices);
  if (rec)
    rec.finish("AdaptiveMaxPool" + std::to_string(nd) + "DBackward0", {&r.values, &r.indices}, {r.indices},
               [in = x.sizes(), nd](autograd::FnNode& n, autograd::Grads& gr) {
                 return autograd::Grads{max_pool_backward(gr[0], n.saved(0), in, nd)};
               });
  return r;
}

PoolResult fractional_max_pool(const Tensor& x, const std::vector<int64_t>& kernel_size,
                               const std::vector<int64_t>& output_size, const Tensor& random_samples) {
  const char* op = "fractional_max_pool";
  const int nd = spatial_of(output_size.size(), op, "output_size");
  KILN_CHECK(nd >= 2, ValueError,
             "[" << op << "] pools 2 or 3 spatial dims, got output_size " << list_str(output_size));
  PoolGeom g = input_geom(x, nd, op);
  const std::vector<int64_t> k = expand(kernel_size, nd, {}, op, "kernel_size");
  KILN_CHECK(int(k.size()) == nd, ValueError, "[" << op << "] kernel_size must have " << nd << " entries");
  for (int i = 0; i < nd; ++i) {
    const int j = 3 - nd + i;
    const int64_t ki = k[size_t(i)], oi = output_size[size_t(i)];
    KILN_CHECK(ki > 0 && oi > 0, ValueError,
               "[" << op << "] kernel_size " << list_str(k) << " and output_size " << list_str(output_size)
                   << " must be positive");
    KILN_CHECK(oi + ki - 1 <= g.in[j], ValueError,
               "[" << op << "] output_size " << list_str(output_size) << " with kernel_size " << list_str(k)
                   << " does not fit input " << x.shape_str()
                   << " (output + kernel - 1 must not exceed the input)");
    g.k[j] = ki, g.out[j] = oi;
  }
  const int64_t batch = x.dim() == nd + 2 ? x.size(0) : 1, channels = x.size(x.dim() - nd - 1);
  KILN_CHECK(random_samples.sizes() == (Shape{batch, channels, nd}), ValueError,
             "[" << op << "] expected _random_samples of shape "
                 << shape_to_string(Shape{batch, channels, nd}) << " for input " << x.shape_str() << ", got "
                 << random_samples.shape_str());
  nn_detail::check_float(random_samples, op, "_random_samples");
  const Tensor u =
      random_samples.to(x.dtype() == DType::Float64 ? DType::Float64 : DType::Float32).contiguous();
  // A sample outside [0, 1) would move windows out of the input.
  KILN_CHECK(u.numel() == 0 || all(logical_and(ge(u, 0.0), lt(u, 1.0))).item<bool>(), ValueError,
             "[" << op << "] _random_samples must lie in [0, 1)");
  const Device device = common_device(op, {&x, &u});
  autograd::Record rec(op, {&x});
  const Shape os = output_shape(x.sizes(), g, nd);
  PoolResult r{empty(os, x.dtype(), x.device()), empty(os, DType::Int64, x.device())};
  if (g.planes > 0) ops::fractional_max_pool(device, x, u, g, nd, r.values, r.indices);
  if (rec)
    rec.finish(node_name("FractionalMaxPool", nd), {&r.values, &r.indices}, {r.indices},
               [in = x.sizes(), nd](autograd::FnNode& n, autograd::Grads& gr) {
                 return autograd::Grads{max_pool_backward(gr[0], n.saved(0), in, nd)};
               });
  return r;
}

}  // namespace kiln
