// torch.matmul / mm / bmm front-end: rank promotion, batch broadcasting, then
// one gemm per batch (or one gemm in all when the right operand is shared).
#include "kiln/matmul.h"

#include <algorithm>
#include <vector>

#include "cpu/gemm.h"
#include "kiln/error.h"
#include "ops/elementwise.h"

namespace kiln {
namespace {

// A [M, K] operand as gemm wants it: row-major with unit inner stride
// (ld = row stride), or its transpose view (trans, ld = column stride).
struct MatView {
  Tensor t;  // keeps a copy alive
  bool trans = false;
  int64_t ld = 0;
};
MatView as_gemm_operand(const Tensor& m) {  // m: 2-D
  const int64_t r = m.size(0), c = m.size(1);
  if (m.stride(1) == 1 && (r <= 1 || m.stride(0) >= c))
    return {m, false, std::max<int64_t>(c, r <= 1 ? c : m.stride(0))};
  if (m.stride(0) == 1 && (c <= 1 || m.stride(1) >= r))
    return {m, true, std::max<int64_t>(r, c <= 1 ? r : m.stride(1))};
  const Tensor cm = m.contiguous();
  return {cm, false, c};
}

// out [M, N] (contiguous, float32/float64) = a [M, K] @ b [K, N].
template <typename T>
void gemm2d(const Tensor& a, const Tensor& b, T* out) {
  const int64_t M = a.size(0), K = a.size(1), N = b.size(1);
  if (M == 0 || N == 0) return;
  if (K == 0) {
    std::fill(out, out + M * N, T(0));
    return;
  }
  MatView va = as_gemm_operand(a);
  if (va.trans) va = {a.contiguous(), false, K};  // the helper takes A row-major only
  const MatView vb = as_gemm_operand(b);
  // b [K, N]: trans=false is row-major [K, N]; trans=true is a [N, K] row-major
  // buffer viewed transposed, which is what gemm's b_trans means.
  if constexpr (std::is_same_v<T, float>)
    cpu::sgemm(vb.trans, M, N, K, 1.0f, va.t.template data<float>(), va.ld, vb.t.template data<float>(),
               vb.ld, 0.0f, out, N);
  else
    cpu::dgemm(vb.trans, M, N, K, 1.0, va.t.template data<double>(), va.ld, vb.t.template data<double>(),
               vb.ld, 0.0, out, N);
}

// Exact integer product, accumulated in the storage type (wrapping like torch).
template <typename T>
void int_mm(const Tensor& a, const Tensor& b, T* out) {
  const int64_t M = a.size(0), K = a.size(1), N = b.size(1);
  const T* pa = a.data<T>();
  const T* pb = b.data<T>();
  const int64_t sa0 = a.stride(0), sa1 = a.stride(1), sb0 = b.stride(0), sb1 = b.stride(1);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      uint64_t acc = 0;
      for (int64_t k = 0; k < K; ++k)
        acc += uint64_t(int64_t(pa[m * sa0 + k * sa1])) * uint64_t(int64_t(pb[k * sb0 + n * sb1]));
      out[m * N + n] = T(acc);
    }
}

// out [M, N] contiguous of a's dtype = a @ b (2-D each).
void mm_into(const Tensor& a, const Tensor& b, Tensor& out) {
  const DType d = a.dtype();
  if (d == DType::Float32) return gemm2d<float>(a, b, out.data<float>());
  if (d == DType::Float64) return gemm2d<double>(a, b, out.data<double>());
  if (d == DType::BFloat16 || d == DType::Float16) {
    Tensor of = empty({a.size(0), b.size(1)}, DType::Float32);
    gemm2d<float>(a.to(DType::Float32), b.to(DType::Float32), of.data<float>());
    out.copy_(of);
    return;
  }
  dispatch<kIntSet>(d, "matmul", [&]<typename T>() { int_mm<T>(a, b, out.data<T>()); });
}

void check_pair(const Tensor& a, const Tensor& b, const char* op) {
  KILN_CHECK(a.defined() && b.defined(), ValueError, "[" << op << "] operands must be defined");
  KILN_CHECK(a.dtype() == b.dtype(), TypeError,
             "[" << op << "] expected both operands to have the same dtype, got " << name(a.dtype())
                 << " and " << name(b.dtype()));
  const DType d = a.dtype();
  KILN_CHECK(d == DType::Float32 || d == DType::Float64 || d == DType::BFloat16 || d == DType::Float16 ||
                 is_integral(d, false),
             TypeError, "[" << op << "] unsupported dtype " << name(d));
}

}  // namespace

Tensor mm(const Tensor& a, const Tensor& b) {
  check_pair(a, b, "mm");
  KILN_CHECK(a.dim() == 2 && b.dim() == 2, ValueError,
             "[mm] expects 2-D operands, got " << a.shape_str() << " and " << b.shape_str());
  KILN_CHECK(a.size(1) == b.size(0), ValueError,
             "[mm] shapes " << a.shape_str() << " and " << b.shape_str() << " cannot be multiplied ("
                            << a.size(1) << " vs " << b.size(0) << ")");
  Tensor out = empty({a.size(0), b.size(1)}, a.dtype());
  mm_into(a, b, out);
  return out;
}

Tensor bmm(const Tensor& a, const Tensor& b) {
  check_pair(a, b, "bmm");
  KILN_CHECK(a.dim() == 3 && b.dim() == 3, ValueError,
             "[bmm] expects 3-D operands, got " << a.shape_str() << " and " << b.shape_str());
  KILN_CHECK(a.size(0) == b.size(0) && a.size(2) == b.size(1), ValueError,
             "[bmm] shapes " << a.shape_str() << " and " << b.shape_str() << " cannot be multiplied");
  return matmul(a, b);
}

Tensor matmul(const Tensor& a, const Tensor& b) {
  check_pair(a, b, "matmul");
  KILN_CHECK(
      a.dim() >= 1 && b.dim() >= 1, ValueError,
      "[matmul] both operands need at least one dim, got " << a.shape_str() << " and " << b.shape_str());
  const bool a1 = a.dim() == 1, b1 = b.dim() == 1;
  const Tensor A = a1 ? a.unsqueeze(0) : a;   // [..., M, K]
  const Tensor B = b1 ? b.unsqueeze(-1) : b;  // [..., K, N]
  const int64_t M = A.size(-2), K = A.size(-1), N = B.size(-1);
  KILN_CHECK(B.size(-2) == K, ValueError,
             "[matmul] shapes " << a.shape_str() << " and " << b.shape_str() << " cannot be multiplied (" << K
                                << " vs " << B.size(-2) << ")");
  const auto as = A.shape(), bs = B.shape();
  const Shape batch = broadcast_shapes(as.first(as.size() - 2), bs.first(bs.size() - 2), "matmul");
  const int64_t nb = shape_numel(batch, "matmul");
  Shape out_shape = batch;
  out_shape.push_back(M);
  out_shape.push_back(N);
  Tensor out = empty(out_shape, a.dtype());
  if (out.numel() > 0) {
    if (B.dim() == 2 && nb > 0) {
      // The right operand is shared: fold the batch into the rows, one gemm.
      Tensor flat = out.view({nb * M, N});
      Shape sa = batch;
      sa.push_back(M), sa.push_back(K);
      mm_into(A.expand(sa).reshape({nb * M, K}), B, flat);
    } else {
      Shape sa = batch, sb = batch;
      sa.push_back(M), sa.push_back(K), sb.push_back(K), sb.push_back(N);
      const Tensor Ae = A.expand(sa).reshape({nb, M, K}), Be = B.expand(sb).reshape({nb, K, N});
      Tensor o3 = out.view({nb, M, N});
      for (int64_t i = 0; i < nb; ++i) {
        Tensor oi = o3.select(0, i);
        mm_into(Ae.select(0, i), Be.select(0, i), oi);
      }
    }
  }
  Tensor r = out;
  if (b1) r = r.squeeze(-1);
  if (a1) r = r.squeeze(r.dim() - (b1 ? 1 : 2));
  return r;
}

}  // namespace kiln
