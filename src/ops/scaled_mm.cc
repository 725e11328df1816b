// scaled_mm front-end: PyTorch's checks, the scaling scheme read from the
// scales' shapes, then the op (ops/registry/matmul.h).
#include "kiln/scaled_mm.h"

#include "core/autograd_record.h"
#include "kiln/error.h"
#include "ops/linear_common.h"
#include "ops/registry/all.h"

namespace kiln {
namespace {

using Scheme = ops::ScaleLayout;

std::string shape_of(const Tensor& t) { return t.shape_str(); }

Scheme check_scales(const Tensor& sa, const Tensor& sb, int64_t M, int64_t K, int64_t N) {
  KILN_CHECK(sa.defined() && sb.defined(), ValueError, "[scaled_mm] scale_a and scale_b are required");
  KILN_CHECK(sa.dtype() == DType::Float32 && sb.dtype() == DType::Float32, TypeError,
             "[scaled_mm] both scale_a and scale_b must be float32 tensors, got "
                 << name(sa.dtype()) << " and " << name(sb.dtype()));
  const int64_t kb = (K + 127) / 128, nb = (N + 127) / 128;
  if (sa.numel() == 1 && sb.numel() == 1) return Scheme::Tensor;
  const auto a = sa.shape(), b = sb.shape();
  if (a.size() == 2 && b.size() == 2 && a[0] == M && a[1] == 1 && b[0] == 1 && b[1] == N) {
    return Scheme::Row;
  }
  if (a.size() == 2 && b.size() == 2 && a[0] == M && a[1] == kb && b[0] == kb && b[1] == nb)
    return Scheme::Block;
  KILN_CHECK(false, ValueError,
             "[scaled_mm] invalid scaling configuration: scale_a "
                 << shape_of(sa) << ", scale_b " << shape_of(sb) << " for A [" << M << ", " << K << "] @ B ["
                 << K << ", " << N << "]; expected tensor-wise (one element each), row-wise (scale_a [" << M
                 << ", 1], scale_b [1, " << N << "]) or block-wise (scale_a [" << M << ", " << kb
                 << "] for 1x128 blocks, scale_b [" << kb << ", " << nb << "] for 128x128 blocks)");
  return Scheme::Tensor;
}

}  // namespace

Tensor scaled_mm(const Tensor& a, const Tensor& b, const Tensor& scale_a, const Tensor& scale_b,
                 const Tensor& bias, const Tensor& scale_result, std::optional<DType> out_dtype,
                 bool use_fast_accum) {
  (void)use_fast_accum;  // accumulation is always float32 here
  // mat1 and mat2 are FP8 (frozen): only the bias carries a gradient.
  autograd::Record rec("scaled_mm", {&a, &b, &scale_a, &scale_b, &bias, &scale_result});
  KILN_CHECK(!rec || (!scale_a.requires_grad() && !scale_b.requires_grad() &&
                      !(scale_result.defined() && scale_result.requires_grad()) &&
                      !(scale_result.defined() && bias.defined() && bias.requires_grad())),
             NotImplementedError, "[scaled_mm] gradients for the scales are not implemented in kiln");
  KILN_CHECK(a.defined() && b.defined(), ValueError, "[scaled_mm] mat1 and mat2 must be defined");
  KILN_CHECK(a.dim() == 2, ValueError, "[scaled_mm] mat1 must be a matrix, got shape " << a.shape_str());
  KILN_CHECK(b.dim() == 2, ValueError, "[scaled_mm] mat2 must be a matrix, got shape " << b.shape_str());
  KILN_CHECK(a.size(1) == b.size(0), ValueError,
             "[scaled_mm] mat1 and mat2 shapes cannot be multiplied ("
                 << a.size(0) << "x" << a.size(1) << " and " << b.size(0) << "x" << b.size(1) << ")");
  KILN_CHECK(is_fp8(a.dtype()) && is_fp8(b.dtype()), TypeError,
             "[scaled_mm] expected mat1 and mat2 to be float8_e4m3fn or float8_e5m2, got "
                 << name(a.dtype()) << " and " << name(b.dtype()));
  KILN_CHECK(!(a.dtype() == DType::Float8_e5m2 && b.dtype() == DType::Float8_e5m2), TypeError,
             "[scaled_mm] multiplication of two float8_e5m2 matrices is not supported");
  const DType od = out_dtype.value_or(a.dtype());
  KILN_CHECK(
      od == DType::Float32 || od == DType::BFloat16 || od == DType::Float16 || od == DType::Float8_e4m3fn,
      TypeError,
      "[scaled_mm] out_dtype must be float32, bfloat16, float16 or float8_e4m3fn, got " << name(od));
  const int64_t M = a.size(0), K = a.size(1), N = b.size(1);
  const Scheme scheme = check_scales(scale_a, scale_b, M, K, N);
  if (bias.defined()) {
    KILN_CHECK(od != DType::Float32, ValueError,
               "[scaled_mm] bias is not supported when out_dtype is float32");
    KILN_CHECK(bias.numel() == N, ValueError,
               "[scaled_mm] bias must be size " << N << " but got " << bias.numel());
    KILN_CHECK(bias.dtype() == DType::BFloat16 || bias.dtype() == DType::Float16, TypeError,
               "[scaled_mm] bias must be either float16 or bfloat16, but got " << name(bias.dtype()));
    KILN_CHECK(is_fp8(od) || bias.dtype() == od, TypeError,
               "[scaled_mm] bias dtype " << name(bias.dtype()) << " must match out_dtype " << name(od));
  }
  if (scale_result.defined()) {
    KILN_CHECK(scale_result.numel() == 1 && scale_result.dtype() == DType::Float32, ValueError,
               "[scaled_mm] scale_result must be one float32 element, got " << scale_result.shape_str() << " "
                                                                            << name(scale_result.dtype()));
  }

  Tensor out = empty({M, N}, od, a.device());
  if (M > 0 && N > 0) {
    const Tensor sa = detail::f32_contiguous(scale_a), sb = detail::f32_contiguous(scale_b);
    ops::scaled_mm(common_device("scaled_mm", {&a, &b, &sa, &sb, &bias, &scale_result, &out}), a, b, sa, sb,
                   scheme, bias, scale_result, out);
  }
  if (rec)  // d bias: the output gradient summed over the rows (by the engine)
    rec.finish("ScaledMmBackward0", {&out}, {}, [](autograd::FnNode& n, autograd::Grads& g) {
      autograd::Grads r(6);
      if (n.needs(4)) r[4] = g[0].to(DType::Float32);
      return r;
    });
  return out;
}

}  // namespace kiln
