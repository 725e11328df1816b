// group_norm / instance_norm front-ends (include/kiln/group_norm.h). The
// forward op returns the per-(sample, group) mean and rstd, which the backward
// op reads; when the backward itself is recorded (create_graph), the formula
// recomputes them from x with public ops and group_norm_backward runs as
// public ops, so group_norm is twice differentiable.
#include "kiln/group_norm.h"

#include "core/autograd_record.h"
#include "kiln/binary.h"
#include "kiln/nn.h"
#include "kiln/reduce.h"
#include "kiln/unary.h"
#include "nn/nn_util.h"
#include "ops/registry/all.h"

namespace kiln {
namespace {

DType compute_dtype(DType d) { return d == DType::Float64 ? DType::Float64 : DType::Float32; }

void check_channels(const Tensor& t, int64_t C, const char* op, const char* what) {
  if (!t.defined()) return;
  nn_detail::check_float(t, op, what);
  KILN_CHECK(t.dim() == 1 && t.numel() == C, ValueError,
             "[" << op << "] expected " << what << " of shape [" << C << "], got " << t.shape_str());
}

// x [N, C, *] -> (N, C, HxW).
std::array<int64_t, 3> dims3(const Tensor& x) {
  const int64_t N = x.size(0), C = x.size(1);
  int64_t HW = 1;
  for (int d = 2; d < x.dim(); ++d) HW *= x.size(d);
  return {N, C, HW};
}

bool needs_grad(std::initializer_list<const Tensor*> ts) {
  if (!autograd::is_grad_enabled()) return false;
  for (const Tensor* t : ts)
    if (t->defined() && t->requires_grad()) return true;
  return false;
}

// group_norm_backward as public ops on [N, G, D, HW] views (see the kernel's
// formulas in cpu/ops/group_norm.cc), differentiable in every input.
std::tuple<Tensor, Tensor, Tensor> backward_composite(const Tensor& g, const Tensor& x, const Tensor& mean,
                                                      const Tensor& rstd, const Tensor& weight, int64_t G,
                                                      std::array<bool, 3> mask) {
  const auto [N, C, HW] = dims3(x);
  const int64_t D = C / G;
  const DType cd = compute_dtype(x.dtype());
  const Tensor gf = g.to(cd).reshape({N, G, D, HW}), xf = x.to(cd).reshape({N, G, D, HW});
  const Tensor m = mean.to(cd).reshape({N, G, 1, 1}), r = rstd.to(cd).reshape({N, G, 1, 1});
  const Tensor wv = weight.defined() ? weight.to(cd).reshape({1, G, D, 1}) : Tensor();
  Tensor dx, dw, db;
  if (mask[0]) {
    const Tensor gw = wv.defined() ? mul(gf, wv) : gf;
    const Tensor dsg = sum(mul(gw, xf), std::vector<int>{2, 3}, true);
    const Tensor dbg = sum(gw, std::vector<int>{2, 3}, true);
    const double s = 1.0 / double(D * HW);
    const Tensor c2 = mul(mul(sub(mul(dbg, m), dsg), mul(mul(r, r), r)), Scalar(s));
    const Tensor c3 = sub(neg(mul(c2, m)), mul(mul(dbg, r), Scalar(s)));
    dx = add(add(mul(gw, r), mul(c2, xf)), c3).reshape(x.sizes()).to(x.dtype());
  }
  if (mask[1] && weight.defined())
    dw = sum(mul(gf, mul(sub(xf, m), r)), std::vector<int>{0, 3}).reshape({C}).to(weight.dtype());
  if (mask[2] && weight.defined()) db = sum(gf, std::vector<int>{0, 3}).reshape({C}).to(weight.dtype());
  return {dx, dw, db};
}

}  // namespace

std::tuple<Tensor, Tensor, Tensor> native_group_norm(const Tensor& x, const Tensor& weight,
                                                     const Tensor& bias, int64_t num_groups, double eps) {
  nn_detail::check_float(x, "group_norm", "input");
  KILN_CHECK(x.dim() >= 2, ValueError,
             "[group_norm] expected input of at least 2 dims [N, C, *], got " << x.shape_str());
  const auto [N, C, HW] = dims3(x);
  KILN_CHECK(num_groups > 0 && C % num_groups == 0, ValueError,
             "[group_norm] expected number of channels in input to be divisible by num_groups, got input "
                 << x.shape_str() << " and num_groups=" << num_groups);
  check_channels(weight, C, "group_norm", "weight");
  check_channels(bias, C, "group_norm", "bias");
  const Device device = common_device("group_norm", {&x, &weight, &bias});
  autograd::Record rec("group_norm", {&x, &weight, &bias});
  Tensor out = empty(x.sizes(), x.dtype(), x.device());
  Tensor mu = empty({N, num_groups}, compute_dtype(x.dtype()), x.device());
  Tensor rs = empty({N, num_groups}, compute_dtype(x.dtype()), x.device());
  if (N > 0)
    ops::group_norm(
        device, x.contiguous().reshape({N, C, HW}), weight.defined() ? weight.contiguous() : weight,
        bias.defined() ? bias.contiguous() : bias, num_groups, eps, out.reshape({N, C, HW}), mu, rs);
  if (rec)
    rec.finish("NativeGroupNormBackward0", {&out}, {x, weight, mu, rs},
               [num_groups, eps](autograd::FnNode& n, autograd::Grads& g) {
                 const Tensor x = n.saved(0), w = n.saved(1);
                 Tensor m = n.saved(2), r = n.saved(3);
                 if (autograd::is_grad_enabled()) {  // create_graph: the stats as functions of x
                   const Tensor xg = x.to(compute_dtype(x.dtype())).reshape({x.size(0), num_groups, -1});
                   m = mean(xg, std::vector<int>{2}, true);
                   const Tensor xc = sub(xg, m);
                   r = rsqrt(add(mean(mul(xc, xc), std::vector<int>{2}, true), Scalar(eps)));
                 }
                 auto [dx, dw, db] =
                     group_norm_backward(g[0], x, m, r, w, num_groups, {n.needs(0), n.needs(1), n.needs(2)});
                 return autograd::Grads{dx, dw, db};
               });
  return {out, mu, rs};
}

Tensor group_norm(const Tensor& x, int64_t num_groups, const Tensor& weight, const Tensor& bias, double eps) {
  return std::get<0>(native_group_norm(x, weight, bias, num_groups, eps));
}

std::tuple<Tensor, Tensor, Tensor> group_norm_backward(const Tensor& grad_out, const Tensor& x,
                                                       const Tensor& mean, const Tensor& rstd,
                                                       const Tensor& weight, int64_t num_groups,
                                                       std::array<bool, 3> mask) {
  nn_detail::check_float(x, "group_norm_backward", "input");
  nn_detail::check_float(grad_out, "group_norm_backward", "grad_out");
  KILN_CHECK(x.dim() >= 2 && grad_out.sizes() == x.sizes(), ValueError,
             "[group_norm_backward] expected input [N, C, *] and grad_out of its shape, got "
                 << x.shape_str() << " and " << grad_out.shape_str());
  const auto [N, C, HW] = dims3(x);
  KILN_CHECK(num_groups > 0 && C % num_groups == 0, ValueError,
             "[group_norm_backward] num_groups=" << num_groups << " does not divide the channels of input "
                                                 << x.shape_str());
  for (const Tensor* t : {&mean, &rstd}) {
    nn_detail::check_float(*t, "group_norm_backward", "mean/rstd");
    KILN_CHECK(t->numel() == N * num_groups, ValueError,
               "[group_norm_backward] expected mean and rstd of " << N * num_groups << " elements, got "
                                                                  << t->shape_str());
  }
  check_channels(weight, C, "group_norm_backward", "weight");
  const Device device = common_device("group_norm_backward", {&grad_out, &x, &mean, &rstd, &weight});
  if (needs_grad({&grad_out, &x, &mean, &rstd, &weight}))
    return backward_composite(grad_out, x, mean, rstd, weight, num_groups, mask);
  Tensor dx, dw, db;
  if (mask[0]) dx = empty(x.sizes(), x.dtype(), x.device());
  if (mask[1] && weight.defined()) dw = empty({C}, weight.dtype(), x.device());
  if (mask[2] && weight.defined()) db = empty({C}, weight.dtype(), x.device());
  if (N > 0) {
    const DType cd = compute_dtype(x.dtype());
    ops::group_norm_backward(device, grad_out.to(x.dtype()).contiguous().reshape({N, C, HW}),
                             x.contiguous().reshape({N, C, HW}), mean.to(cd).contiguous(),
                             rstd.to(cd).contiguous(), weight.defined() ? weight.contiguous() : weight,
                             num_groups, dx.defined() ? dx.reshape({N, C, HW}) : dx, dw, db);
  } else {
    if (dw.defined()) dw.fill_(Scalar(0));
    if (db.defined()) db.fill_(Scalar(0));
  }
  return {dx, dw, db};
}

Tensor instance_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var,
                     const Tensor& weight, const Tensor& bias, bool use_input_stats, double momentum,
                     double eps) {
  nn_detail::check_float(x, "instance_norm", "input");
  KILN_CHECK(x.dim() >= 2, ValueError,
             "[instance_norm] expected input of at least 2 dims [N, C, *], got " << x.shape_str());
  KILN_CHECK(running_mean.defined() == running_var.defined(), ValueError,
             "[instance_norm] running_mean and running_var must be both defined or both undefined");
  const auto [N, C, HW] = dims3(x);
  check_channels(running_mean, C, "instance_norm", "running_mean");
  check_channels(running_var, C, "instance_norm", "running_var");
  if (!use_input_stats) {
    KILN_CHECK(running_mean.defined(), ValueError,
               "[instance_norm] expected running_mean and running_var to be defined when use_input_stats is "
               "false");
    return batch_norm(x, running_mean, running_var, weight, bias, false, momentum, eps);
  }
  KILN_CHECK(
      HW > 1, ValueError,
      "[instance_norm] expected more than 1 spatial element when training, got input " << x.shape_str());
  const Tensor out = group_norm(x, C, weight, bias, eps);
  if (running_mean.defined() && N > 0) {
    autograd::NoGradGuard no_grad;
    const Tensor xs = x.to(compute_dtype(x.dtype())).reshape({N, C, HW});
    const Tensor bm = mean(mean(xs, std::vector<int>{2}), std::vector<int>{0});      // [C]
    const Tensor bv = mean(var(xs, std::vector<int>{2}, 1.0), std::vector<int>{0});  // [C], unbiased
    Tensor rm = running_mean, rv = running_var;
    rm.copy_(add(mul(rm.to(bm.dtype()), Scalar(1 - momentum)), mul(bm, Scalar(momentum))));
    rv.copy_(add(mul(rv.to(bv.dtype()), Scalar(1 - momentum)), mul(bv, Scalar(momentum))));
  }
  return out;
}

}  // namespace kiln
