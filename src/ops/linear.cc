// linear / linear_out front-end: validates, reads the weight scale layout,
// routes up to kLinearGemvMaxRows rows to the matrix-vector kernel and more to
// the blocked GEMM, and narrows the result to x's dtype.
#include "kiln/linear.h"

#include <algorithm>
#include <vector>

#include "core/convert.h"
#include "cpu/gemm.h"
#include "cpu/gemv.h"
#include "kiln/binary.h"
#include "kiln/error.h"
#include "ops/linear_common.h"

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
  const int64_t nb = (N + cpu::kScaleBlock - 1) / cpu::kScaleBlock;
  const int64_t kb = (K + cpu::kScaleBlock - 1) / cpu::kScaleBlock;
  const auto s = scale.shape();
  if (scale.numel() == 1) {
    ws.kind = cpu::ScaleKind::Tensor;
  } else if ((s.size() == 1 && s[0] == N) || (s.size() == 2 && s[0] == N && s[1] == 1)) {
    ws.kind = cpu::ScaleKind::Row;
  } else if (s.size() == 2 && s[0] == nb && s[1] == kb) {
    ws.kind = cpu::ScaleKind::Block;
    ws.ld = kb;
  } else {
    KILN_CHECK(false, ValueError,
               "[" << op << "] weight_scale of shape " << scale.shape_str() << " fits no layout for a [" << N
                   << ", " << K << "] weight: expected one element (per tensor), [" << N << "] or [" << N
                   << ", 1] (per row), or [" << nb << ", " << kb << "] (per 128x128 block)");
  }
  ws.holder = f32_contiguous(scale);
  ws.data = ws.holder.data<float>();
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

// Scratch for widened activations and bias that lives as long as the thread:
// the decode path allocates nothing once it has grown.
float* scratch(std::vector<float>& v, size_t n) {
  if (v.size() < n) v.resize(n);
  return v.data();
}

void run(const Tensor& x, const Tensor& w, const detail::WeightScale& ws, const Tensor& bias, Tensor& out,
         const Dims& d, Fp8Codes codes = Fp8Codes::Unchecked, const Fp8Subnormals* subnormals = nullptr) {
  thread_local std::vector<float> xbuf, bbuf;
  Tensor w2 = w;
  if (w.stride(1) != 1 || (w.size(0) > 1 && w.stride(0) < w.size(1))) w2 = w.contiguous();
  cpu::GemvArgs a;
  a.w = w2.data_ptr();
  a.ldw = w2.size(0) > 1 ? w2.stride(0) : w2.size(1);
  a.N = d.N;
  a.K = d.K;
  a.M = d.M;
  a.scale_kind = ws.kind;
  a.scale = ws.data;
  a.scale_ld = ws.ld;
  a.w_no_nan = codes == Fp8Codes::NoNan;
  if (subnormals && w.dtype() == DType::Float8_e4m3fn) {
    a.sub_row_start = subnormals->row_start.data();
    a.sub_col = subnormals->col.data();
    a.sub_row = subnormals->row.data();
    a.sub_code = subnormals->code.data();
  }
  if (d.M == 0 || d.N == 0) return;
  if (d.K == 0) {
    // An empty sum: the bias, or zeros.
    out.fill_(Scalar(0.0));
    if (bias.defined()) out.copy_(bias.reshape({d.N}));
    return;
  }

  // x as float32 rows [M, K].
  Tensor xf;
  if (x.dtype() == DType::Float32 && x.is_contiguous()) {
    a.x = x.data<float>();
  } else if (x.is_contiguous() && d.M <= kLinearGemvMaxRows) {
    float* buf = scratch(xbuf, size_t(d.M * d.K));
    convert_contiguous(x.data_ptr(), x.dtype(), buf, DType::Float32, d.M * d.K);
    a.x = buf;
  } else {
    xf = detail::f32_contiguous(x);
    a.x = xf.data<float>();
  }
  a.ldx = d.K;

  Tensor bf;
  if (bias.defined()) {
    if (bias.dtype() == DType::Float32 && bias.is_contiguous()) {
      a.bias = bias.data<float>();
    } else if (bias.is_contiguous()) {
      float* buf = scratch(bbuf, size_t(d.N));
      convert_contiguous(bias.data_ptr(), bias.dtype(), buf, DType::Float32, d.N);
      a.bias = buf;
    } else {
      bf = detail::f32_contiguous(bias);
      a.bias = bf.data<float>();
    }
  }

  if (d.M <= kLinearGemvMaxRows) {
    a.y = out.data_ptr();
    a.ldy = d.N;
    a.y_dtype = out.dtype();
    cpu::gemv(w2.dtype(), a);
    return;
  }
  Tensor yf = out.dtype() == DType::Float32 ? out : empty({d.M, d.N}, DType::Float32);
  a.y = yf.data_ptr();
  a.ldy = d.N;
  a.y_dtype = DType::Float32;
  cpu::gemm(w2.dtype(), a);
  if (out.dtype() != DType::Float32)
    convert_contiguous(yf.data_ptr(), DType::Float32, out.data_ptr(), out.dtype(), d.M * d.N);
}

}  // namespace

void linear_out(const Tensor& x, const Tensor& weight, const Tensor& weight_scale, const Tensor& bias,
                Tensor& out, Fp8Codes codes, const Fp8Subnormals* subnormals) {
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
  run(x, weight, ws, bias, out, d, codes, subnormals);
}

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& weight_scale) {
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
  const Dims d = check_linear(x, weight, bias);
  const detail::WeightScale ws = detail::classify_weight_scale(weight_scale, d.N, d.K, "linear");
  Shape shape = x.sizes();
  shape.back() = d.N;
  Tensor out = empty(shape, x.dtype());
  run(x, weight, ws, bias, out, d);
  return out;
}

}  // namespace kiln
