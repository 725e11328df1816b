// torch.matmul / mm / bmm front-end: rank promotion, batch broadcasting, then
// the op (ops/registry/matmul.h) on [M, K] x [K, N] (the batch folded into the
// rows when the right operand is shared) or on [B, M, K] x [B, K, N].
#include "kiln/matmul.h"

#include "core/autograd_record.h"
#include "kiln/error.h"
#include "ops/elementwise.h"
#include "ops/registry/all.h"

namespace kiln {
namespace {

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

// matmul's broadcasting, shared by bmm (checked by the caller).
Tensor matmul_impl(const Tensor& a, const Tensor& b, const char* name) {
  const auto& op = name[0] == 'b' ? ops::bmm : ops::matmul;
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
  Tensor out = empty(out_shape, a.dtype(), a.device());
  if (out.numel() > 0) {
    if (B.dim() == 2 && nb > 0) {
      // The right operand is shared: fold the batch into the rows, one gemm.
      const Tensor flat = out.view({nb * M, N});
      Shape sa = batch;
      sa.push_back(M), sa.push_back(K);
      const Tensor Af = A.expand(sa).reshape({nb * M, K});
      op(common_device(name, {&Af, &B, &flat}), Af, B, flat);
    } else {
      Shape sa = batch, sb = batch;
      sa.push_back(M), sa.push_back(K), sb.push_back(K), sb.push_back(N);
      const Tensor Ae = A.expand(sa).reshape({nb, M, K}), Be = B.expand(sb).reshape({nb, K, N});
      const Tensor o3 = out.view({nb, M, N});
      op(common_device(name, {&Ae, &Be, &o3}), Ae, Be, o3);
    }
  }
  Tensor r = out;
  if (b1) r = r.squeeze(-1);
  if (a1) r = r.squeeze(r.dim() - (b1 ? 1 : 2));
  return r;
}

// d/da and d/db of matmul(a, b) for any ranks: the 1-D operands are
// promoted as the forward does; the engine sums batch broadcasting away.
autograd::Grads matmul_grads(autograd::FnNode& n, const Tensor& g) {
  const Tensor a = n.saved(0), b = n.saved(1);
  const bool a1 = a.dim() == 1, b1 = b.dim() == 1;
  const Tensor A = a1 ? a.unsqueeze(0) : a;   // [..., M, K]
  const Tensor B = b1 ? b.unsqueeze(-1) : b;  // [..., K, N]
  Tensor G = g;                               // [..., M, N]
  if (a1) G = G.unsqueeze(b1 ? G.dim() : G.dim() - 1);
  if (b1) G = G.unsqueeze(-1);
  Tensor ga, gb;
  if (n.needs(0)) {
    ga = matmul(G, B.transpose(-1, -2));  // [..., M, K]
    if (a1) ga = ga.squeeze(-2);
  }
  if (n.needs(1)) {
    gb = matmul(A.transpose(-1, -2), G);  // [..., K, N]
    if (b1) gb = gb.squeeze(-1);
  }
  return {ga, gb};
}

}  // namespace

Tensor mm(const Tensor& a, const Tensor& b) {
  autograd::Record rec("mm", {&a, &b});
  check_pair(a, b, "mm");
  KILN_CHECK(a.dim() == 2 && b.dim() == 2, ValueError,
             "[mm] expects 2-D operands, got " << a.shape_str() << " and " << b.shape_str());
  KILN_CHECK(a.size(1) == b.size(0), ValueError,
             "[mm] shapes " << a.shape_str() << " and " << b.shape_str() << " cannot be multiplied ("
                            << a.size(1) << " vs " << b.size(0) << ")");
  Tensor out = empty({a.size(0), b.size(1)}, a.dtype(), a.device());
  ops::mm(common_device("mm", {&a, &b, &out}), a, b, out);
  if (rec)
    rec.finish("MmBackward0", {&out}, {a, b},
               [](autograd::FnNode& n, autograd::Grads& g) { return matmul_grads(n, g[0]); });
  return out;
}

Tensor bmm(const Tensor& a, const Tensor& b) {
  check_pair(a, b, "bmm");
  KILN_CHECK(a.dim() == 3 && b.dim() == 3, ValueError,
             "[bmm] expects 3-D operands, got " << a.shape_str() << " and " << b.shape_str());
  KILN_CHECK(a.size(0) == b.size(0) && a.size(2) == b.size(1), ValueError,
             "[bmm] shapes " << a.shape_str() << " and " << b.shape_str() << " cannot be multiplied");
  autograd::Record rec("bmm", {&a, &b});
  Tensor out = matmul_impl(a, b, "bmm");
  if (rec)
    rec.finish("BmmBackward0", {&out}, {a, b},
               [](autograd::FnNode& n, autograd::Grads& g) { return matmul_grads(n, g[0]); });
  return out;
}

Tensor matmul(const Tensor& a, const Tensor& b) {
  check_pair(a, b, "matmul");
  autograd::Record rec("matmul", {&a, &b});
  Tensor out = matmul_impl(a, b, "matmul");
  if (rec)
    rec.finish("MatmulBackward0", {&out}, {a, b},
               [](autograd::FnNode& n, autograd::Grads& g) { return matmul_grads(n, g[0]); });
  return out;
}

}  // namespace kiln
