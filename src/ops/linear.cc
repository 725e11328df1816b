// linear / linear_out front-end: validates, reads the weight scale layout,
// allocates the output and calls the op (ops/registry/matmul.h), whose kernel
// routes up to kLinearGemvMaxRows rows to the matrix-vector kernel and more to
// the blocked GEMM.
#include "kiln/linear.h"

#include "core/autograd_record.h"
#include "kiln/binary.h"
#include "kiln/error.h"
#include "kiln/matmul.h"
#include "kiln/quantize.h"
#include "ops/linear_common.h"
#include "ops/registry/all.h"

namespace kiln {
namespace detail {

Tensor f32_contiguous(const Tensor& t) {
  if (t.dtype() == DType::Float32 && t.is_contiguous()) return t;
  return t.to(DType::Float32).contiguous();
}

bool is_weight_dtype(DType d) {
  return d == DType::Float32 || d == DType::BFloat16 || d == DType::Float16 || is_fp8(d);
}
bool is_activation_dtype(DType d) {
  return d == DType::Float32 || d == DType::BFloat16 || d == DType::Float16;
}

WeightScale classify_weight_scale(const Tensor& scale, int64_t N, int64_t K, const char* op) {
  WeightScale ws;
  if (!scale.defined()) return ws;
  KILN_CHECK(is_floating(scale.dtype()) && !is_fp8(scale.dtype()), TypeError,
             "[" << op << "] weight_scale must be a float tensor, got " << name(scale.dtype()));
  const int64_t nb = (N + ops::kScaleBlock - 1) / ops::kScaleBlock;
  const int64_t kb = (K + ops::kScaleBlock - 1) / ops::kScaleBlock;
  const auto s = scale.shape();
  if (scale.numel() == 1) {
    ws.layout = ops::ScaleLayout::Tensor;
  } else if ((s.size() == 1 && s[0] == N) || (s.size() == 2 && s[0] == N && s[1] == 1)) {
    ws.layout = ops::ScaleLayout::Row;
  } else if (s.size() == 2 && s[0] == nb && s[1] == kb) {
    ws.layout = ops::ScaleLayout::Block;
  } else {
    KILN_CHECK(false, ValueError,
               "[" << op << "] weight_scale of shape " << scale.shape_str() << " fits no layout for a [" << N
                   << ", " << K << "] weight: expected one element (per tensor), [" << N << "] or [" << N
                   << ", 1] (per row), or [" << nb << ", " << kb << "] (per 128x128 block)");
  }
  ws.scale = f32_contiguous(scale);
  return ws;
}

}  // namespace detail

namespace {

// Checks shapes and dtypes; returns (M, N, K).
struct Dims {
  int64_t M, N, K;
};
Dims check_linear(const Tensor& x, const Tensor& w, const Tensor& bias) {
  KILN_CHECK(x.defined() && w.defined(), ValueError, "[linear] input and weight must be defined");
  KILN_CHECK(x.dim() >= 1, ValueError, "[linear] input must have at least one dim, got a 0-d tensor");
  KILN_CHECK(w.dim() == 2, ValueError,
             "[linear] weight must be 2-D [out_features, in_features], got shape " << w.shape_str());
  KILN_CHECK(detail::is_activation_dtype(x.dtype()), TypeError,
             "[linear] input dtype must be float32, bfloat16 or float16, got " << name(x.dtype()));
  KILN_CHECK(detail::is_weight_dtype(w.dtype()), TypeError,
             "[linear] weight dtype must be float32, bfloat16, float16, float8_e4m3fn or float8_e5m2, got "
                 << name(w.dtype()));
  const int64_t K = x.size(-1), N = w.size(0);
  KILN_CHECK(w.size(1) == K, ValueError,
             "[linear] input " << x.shape_str() << " and weight " << w.shape_str()
                               << " disagree on in_features (" << K << " vs " << w.size(1) << ")");
  if (bias.defined()) {
    KILN_CHECK(is_floating(bias.dtype()) && !is_fp8(bias.dtype()), TypeError,
               "[linear] bias must be float32, bfloat16 or float16, got " << name(bias.dtype()));
    KILN_CHECK(bias.numel() == N && bias.dim() <= 1, ValueError,
               "[linear] bias of shape " << bias.shape_str() << " does not match out_features " << N);
  }
  const auto xs = x.shape();
  return {shape_numel(xs.first(xs.size() - 1), "linear"), N, K};
}

// Runs the op on checked operands: x [..., K], out [..., N] allocated.
void run(const Tensor& x, const Tensor& w, const detail::WeightScale& ws, const Tensor& bias,
         const Tensor& out, Fp8Codes codes = Fp8Codes::Unchecked, const Fp8Subnormals* subnormals = nullptr) {
  ops::linear(common_device("linear", {&x, &w, &bias, &ws.scale, &out}), x, w, bias, ws.scale, ws.layout, out,
              codes, subnormals);
}

}  // namespace

void linear_out(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& weight_scale,
                const Tensor& out, Fp8Codes codes, const Fp8Subnormals* subnormals) {
  autograd::Record rec("linear", {&x, &weight, &bias});
  rec.no_out(out);
  autograd::wrote(out);
  const Dims d = check_linear(x, weight, bias);
  if (subnormals) detail::check_subnormal_list(*subnormals, weight.dtype(), 1, d.N, d.K, "linear");
  const detail::WeightScale ws = detail::classify_weight_scale(weight_scale, d.N, d.K, "linear");
  Shape shape = x.sizes();
  shape.back() = d.N;
  KILN_CHECK(out.defined() && out.sizes() == shape, ValueError,
             "[linear] out must have shape " << shape_to_string(shape) << ", got "
                                             << (out.defined() ? out.shape_str() : "undefined"));
  KILN_CHECK(out.dtype() == x.dtype() || out.dtype() == DType::Float32, TypeError,
             "[linear] out dtype must be " << name(x.dtype()) << " or float32, got " << name(out.dtype()));
  KILN_CHECK(out.is_contiguous(), ValueError, "[linear] out must be contiguous");
  run(x, weight, ws, bias, out, codes, subnormals);
}

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& weight_scale) {
  // float64, as torch: x @ W^T + b in the operands' one dtype. The linear
  // kernels serve the float32 / bf16 / f16 / FP8 decode path; float64 (gradient
  // checks, scientific use) runs as a matmul, which records its derivative.
  if (x.defined() && weight.defined() && (x.dtype() == DType::Float64 || weight.dtype() == DType::Float64)) {
    KILN_CHECK(x.dtype() == weight.dtype() && (!bias.defined() || bias.dtype() == x.dtype()), TypeError,
               "[linear] a float64 linear needs one dtype for input, weight and bias, got "
                   << name(x.dtype()) << ", " << name(weight.dtype())
                   << (bias.defined() ? std::string(", ") + name(bias.dtype()) : std::string()));
    KILN_CHECK(!weight_scale.defined(), TypeError, "[linear] weight_scale is for FP8 weights, not float64");
    KILN_CHECK(weight.dim() == 1 || weight.dim() == 2, ValueError,
               "[linear] weight must be 2-D [out_features, in_features] or 1-D [in_features], got shape "
                   << weight.shape_str());
    const Tensor y = matmul(x, weight.dim() == 2 ? weight.transpose(0, 1) : weight);
    return bias.defined() ? add(y, bias) : y;
  }
  // torch's other forms: a 1-D weight [K] (y = x @ w, without the last dim) and
  // a bias that broadcasts to y other than [N] ([], [1], [M, N], ...): the
  // kernel runs without the bias, which is added after.
  const bool plain_bias = !bias.defined() || (weight.defined() && weight.dim() == 2 && bias.dim() <= 1 &&
                                               bias.numel() == weight.size(0));
  if ((weight.defined() && weight.dim() == 1) || !plain_bias) {
    KILN_CHECK(weight.defined() && (weight.dim() == 1 || weight.dim() == 2), ValueError,
               "[linear] weight must be 2-D [out_features, in_features] or 1-D [in_features], got shape "
                   << (weight.defined() ? weight.shape_str() : "undefined"));
    const bool vec = weight.dim() == 1;
    Tensor y = linear(x, vec ? weight.unsqueeze(0) : weight, Tensor(), weight_scale);
    if (vec) y = y.squeeze(-1);
    if (!bias.defined()) return y;
    KILN_CHECK(is_floating(bias.dtype()) && !is_fp8(bias.dtype()), TypeError,
               "[linear] bias must be float32, bfloat16 or float16, got " << name(bias.dtype()));
    bool fits = bias.dim() <= y.dim();
    for (int64_t i = 1; fits && i <= bias.dim(); ++i)
      fits = bias.size(-i) == 1 || bias.size(-i) == y.size(-i);
    KILN_CHECK(fits, ValueError,
               "[linear] bias of shape " << bias.shape_str() << " does not broadcast to the output "
                                         << y.shape_str());
    return add(y, bias.to(y.dtype()));
  }
  autograd::Record rec("linear", {&x, &weight, &bias});
  const Dims d = check_linear(x, weight, bias);
  const detail::WeightScale ws = detail::classify_weight_scale(weight_scale, d.N, d.K, "linear");
  Shape shape = x.sizes();
  shape.back() = d.N;
  Tensor out = empty(shape, x.dtype(), x.device());
  run(x, weight, ws, bias, out);
  if (rec) {
    KILN_CHECK(!weight_scale.defined() || !weight_scale.requires_grad(), NotImplementedError,
               "[linear] gradients for weight_scale are not implemented in kiln");
    // y = x @ W^T + b with W the (dequantized) weight; an FP8 weight is frozen.
    rec.finish("LinearBackward0", {&out}, {x, weight, weight_scale},
               [](autograd::FnNode& n, autograd::Grads& g) {
                 const Tensor& gy = g[0];  // [..., N]
                 const DType acc = gy.dtype() == DType::Float64 ? DType::Float64 : DType::Float32;
                 autograd::Grads r(3);
                 if (n.needs(0)) {
                   const Tensor w = n.saved(1), scale = n.saved(2);
                   const Tensor wf = scale.defined() ? dequantize(w, scale, acc) : w.to(acc);  // [N, K]
                   r[0] = matmul(gy.to(acc), wf);                                              // [..., K]
                 }
                 if (n.needs(1)) {
                   const Tensor x = n.saved(0);
                   const int64_t K = x.size(-1), N = gy.size(-1);
                   r[1] = matmul(gy.to(acc).reshape({-1, N}).t(), x.to(acc).reshape({-1, K}));  // [N, K]
                 }
                 if (n.needs(2)) r[2] = gy.to(acc);  // summed to [N] by the engine
                 return r;
               });
  }
  return out;
}

}  // namespace kiln
