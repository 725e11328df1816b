// grouped_mm front-end (PyTorch's four rank combinations): checks, offs
// validated, operands in float32 (FP8 weights as they are), then the op
// (ops/registry/matmul.h); 3-D x 3-D is a batched matmul.
#include "kiln/grouped_mm.h"

#include "core/autograd_record.h"
#include "kiln/binary.h"
#include "kiln/error.h"
#include "kiln/matmul.h"
#include "ops/linear_common.h"
#include "ops/registry/all.h"

namespace kiln {
namespace {

// Validates offs against the grouped extent `total` and returns it as int32.
Tensor check_offs(const Tensor& offs, int64_t groups, int64_t total, const char* what) {
  KILN_CHECK(offs.defined(), ValueError,
             "[grouped_mm] offs is required when an operand is 2-D (groups along " << what << ")");
  KILN_CHECK(offs.dtype() == DType::Int32, TypeError,
             "[grouped_mm] offs must be int32, got " << name(offs.dtype()));
  KILN_CHECK(offs.dim() == 1, ValueError, "[grouped_mm] offs must be 1-D, got shape " << offs.shape_str());
  if (groups >= 0)
    KILN_CHECK(offs.size(0) == groups, ValueError,
               "[grouped_mm] offs has " << offs.size(0) << " entries but the 3-D operand has " << groups
                                        << " groups");
  const Tensor o = offs.contiguous();
  const Tensor oh = o.cpu();  // the checks read the offsets on the host
  const int32_t* p = oh.data<int32_t>();
  int64_t prev = 0;
  for (int64_t g = 0; g < o.numel(); ++g) {
    KILN_CHECK(p[g] >= prev, ValueError,
               "[grouped_mm] offs must be non-decreasing and non-negative; offs[" << g << "] = " << p[g]
                                                                                  << " after " << prev);
    KILN_CHECK(p[g] <= total, ValueError,
               "[grouped_mm] offs[" << g << "] = " << p[g] << " exceeds the " << what << " extent " << total);
    prev = p[g];
  }
  return o;
}

}  // namespace

namespace {

Tensor grouped_mm_forward(const Tensor& a, const Tensor& b, const Tensor& offs, const Tensor& bias,
                          const Tensor& b_scale, std::optional<DType> out_dtype);

// The gradients of grouped_mm are grouped_mms themselves (in float32, or
// float64): each form's transposed products group the same rows or columns.
autograd::Grads grouped_mm_grads(autograd::FnNode& n, const Tensor& gy) {
  const Tensor a = n.saved(0), b = n.saved(1), offs = n.saved(2), b_scale = n.saved(3);
  const DType acc = a.dtype() == DType::Float64 ? DType::Float64 : DType::Float32;
  const Tensor g = gy.to(acc), af = a.to(acc);
  Tensor bf = b.to(acc);
  if (is_fp8(b.dtype()) && b_scale.defined())
    bf = mul(bf, b_scale.to(acc).reshape({b.size(0), 1, b.size(2)}));
  autograd::Grads r(4);
  const bool ga = n.needs(0), gb = n.needs(1), gbias = n.needs(3);
  if (a.dim() == 3 && b.dim() == 3) {  // [G, M, K] x [G, K, N]
    if (ga) r[0] = matmul(g, bf.transpose(1, 2));
    if (gb) r[1] = matmul(af.transpose(1, 2), g);
  } else if (a.dim() == 2 && b.dim() == 3) {  // rows of a [T, K] grouped; b [G, K, N]; g [T, N]
    if (ga) r[0] = grouped_mm(g, bf.transpose(1, 2), offs);                                   // [T, K]
    if (gb) r[1] = grouped_mm(af.t(), g, offs);                                               // [G, K, N]
    if (gbias) r[3] = grouped_mm(ones({1, g.size(0)}, acc, g.device()), g, offs).squeeze(1);  // [G, N]
  } else if (a.dim() == 3) {                     // a [G, M, K], columns of b [K, T] grouped; g [M, T]
    if (ga) r[0] = grouped_mm(g, bf.t(), offs);  // [G, M, K]
    if (gb) r[1] = grouped_mm(af.transpose(1, 2), g, offs);  // [K, T]
  } else {                                       // a [M, T], b [T, N], contraction grouped; g [G, M, N]
    if (ga) r[0] = grouped_mm(g, bf.t(), offs);  // [M, T]
    if (gb) r[1] = grouped_mm(af.t(), g, offs);  // [T, N]
  }
  return r;
}

}  // namespace

Tensor grouped_mm(const Tensor& a, const Tensor& b, const Tensor& offs, const Tensor& bias,
                  const Tensor& b_scale, std::optional<DType> out_dtype) {
  autograd::Record rec("grouped_mm", {&a, &b, &offs, &bias, &b_scale});
  KILN_CHECK(!rec || !b_scale.defined() || !b_scale.requires_grad(), NotImplementedError,
             "[grouped_mm] gradients for b_scale are not implemented in kiln");
  Tensor out = grouped_mm_forward(a, b, offs, bias, b_scale, out_dtype);
  if (rec)
    rec.finish("GroupedMmBackward0", {&out}, {a, b, offs, b_scale},
               [](autograd::FnNode& n, autograd::Grads& g) {
                 autograd::Grads r = grouped_mm_grads(n, g[0]);
                 r.push_back(Tensor());  // b_scale
                 return r;
               });
  return out;
}

namespace {

Tensor grouped_mm_forward(const Tensor& a, const Tensor& b, const Tensor& offs, const Tensor& bias,
                          const Tensor& b_scale, std::optional<DType> out_dtype) {
  KILN_CHECK(a.defined() && b.defined(), ValueError, "[grouped_mm] mat_a and mat_b must be defined");
  KILN_CHECK(a.dim() == 2 || a.dim() == 3, ValueError,
             "[grouped_mm] mat_a must be 2-D or 3-D, got shape " << a.shape_str());
  KILN_CHECK(b.dim() == 2 || b.dim() == 3, ValueError,
             "[grouped_mm] mat_b must be 2-D or 3-D, got shape " << b.shape_str());
  KILN_CHECK(detail::is_activation_dtype(a.dtype()), TypeError,
             "[grouped_mm] mat_a must be float32, bfloat16 or float16, got " << name(a.dtype()));
  const bool fp8_b = is_fp8(b.dtype());
  if (fp8_b) {
    KILN_CHECK(a.dim() == 2 && b.dim() == 3, ValueError,
               "[grouped_mm] FP8 mat_b is supported in the 2-D x 3-D form only, got "
                   << a.shape_str() << " x " << b.shape_str());
  } else {
    KILN_CHECK(a.dtype() == b.dtype(), TypeError,
               "[grouped_mm] mat_a and mat_b must have the same dtype, got " << name(a.dtype()) << " and "
                                                                             << name(b.dtype()));
    KILN_CHECK(!b_scale.defined(), ValueError, "[grouped_mm] b_scale is for FP8 mat_b only");
  }
  const DType od = out_dtype.value_or(a.dtype());
  KILN_CHECK(od == a.dtype() || od == DType::Float32, TypeError,
             "[grouped_mm] out_dtype must be " << (a.dtype() == DType::Float32 ? std::string("float32")
                                                                                : std::string(name(a.dtype())) + " or float32")
                                                   << ", got " << name(od));
  KILN_CHECK(a.size(-1) == b.size(-2), ValueError,
             "[grouped_mm] contraction dims of mat_a " << a.shape_str() << " and mat_b " << b.shape_str()
                                                       << " must match");
  KILN_CHECK(!bias.defined() || (a.dim() == 2 && b.dim() == 3), ValueError,
             "[grouped_mm] bias is supported in the 2-D x 3-D form only");

  if (a.dim() == 3 && b.dim() == 3) {
    KILN_CHECK(!offs.defined(), ValueError, "[grouped_mm] offs must be None when both operands are 3-D");
    KILN_CHECK(a.size(0) == b.size(0), ValueError,
               "[grouped_mm] group counts differ: " << a.shape_str() << " and " << b.shape_str());
    return matmul(a.to(DType::Float32), b.to(DType::Float32)).to(od);
  }

  if (a.dim() == 2 && b.dim() == 3) {
    // out[s:e] = a[s:e] @ b[g]; b[g] = W[g]^T with W [G, N, K] in the linear layout.
    const int64_t T = a.size(0), K = a.size(1), G = b.size(0), N = b.size(2);
    const Tensor o = check_offs(offs, G, T, "rows of mat_a");
    Tensor bw = b.transpose(1, 2);  // [G, N, K]
    if (bw.stride(2) != 1 || (N > 1 && bw.stride(1) < K) || (G > 1 && bw.stride(0) < N * K))
      bw = bw.contiguous();
    Tensor sc, bi;
    if (fp8_b && b_scale.defined()) {
      KILN_CHECK(
          b_scale.numel() == G * N && ((b_scale.dim() == 2 && b_scale.size(0) == G) ||
                                       (b_scale.dim() == 3 && b_scale.size(2) == 1 && b_scale.size(0) == G)),
          ValueError,
          "[grouped_mm] b_scale must be [" << G << ", " << N << "] or [" << G << ", " << N << ", 1], got "
                                           << b_scale.shape_str());
      KILN_CHECK(is_floating(b_scale.dtype()) && !is_fp8(b_scale.dtype()), TypeError,
                 "[grouped_mm] b_scale must be float32, bfloat16 or float16, got " << name(b_scale.dtype()));
      sc = detail::f32_contiguous(b_scale);
    }
    if (bias.defined()) {
      KILN_CHECK(bias.dim() == 2 && bias.size(0) == G && bias.size(1) == N, ValueError,
                 "[grouped_mm] bias must be [" << G << ", " << N << "], got " << bias.shape_str());
      KILN_CHECK(is_floating(bias.dtype()) && !is_fp8(bias.dtype()), TypeError,
                 "[grouped_mm] bias must be float32, bfloat16 or float16, got " << name(bias.dtype()));
      bi = detail::f32_contiguous(bias);
    }
    const Tensor xf = detail::f32_contiguous(a);
    const Tensor y = zeros({T, N}, DType::Float32, a.device());
    ops::grouped_mm(common_device("grouped_mm", {&xf, &bw, &o, &bi, &sc, &y}), xf, bw, o, bi, sc, y);
    return y.to(od);
  }

  const Tensor af = detail::f32_contiguous(a), bf = detail::f32_contiguous(b);
  if (a.dim() == 3) {
    // 3-D x 2-D: out[:, s:e] = a[g] @ b[:, s:e]; a [G, M, K], b [K, T].
    const int64_t G = a.size(0), M = a.size(1), T = b.size(1);
    const Tensor o = check_offs(offs, G, T, "columns of mat_b");
    const Tensor y = zeros({M, T}, DType::Float32, a.device());
    ops::grouped_mm(common_device("grouped_mm", {&af, &bf, &o, &y}), af, bf, o, Tensor(), Tensor(), y);
    return y.to(od);
  }
  // 2-D x 2-D: out[g] = a[:, s:e] @ b[s:e]; a [M, T], b [T, N], groups along T.
  const int64_t M = a.size(0), T = a.size(1), N = b.size(1);
  const int64_t G = offs.defined() && offs.dim() == 1 ? offs.size(0) : -1;
  const Tensor o = check_offs(offs, G, T, "contraction dim");
  const Tensor y = zeros({G, M, N}, DType::Float32, a.device());
  ops::grouped_mm(common_device("grouped_mm", {&af, &bf, &o, &y}), af, bf, o, Tensor(), Tensor(), y);
  return y.to(od);
}

}  // namespace
}  // namespace kiln
