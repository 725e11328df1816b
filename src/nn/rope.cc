// Rotary position embedding front-ends: inv_freq, the cos/sin tables and the
// rotation of [..., T, H, D] activations. They check arguments, prepare the
// float32 tables and call the ops (ops/registry/nn.h).
#include "core/autograd_record.h"
#include "kiln/memory_format.h"
#include "kiln/nn.h"
#include "kiln/unary.h"
#include "nn/nn_util.h"
#include "ops/registry/all.h"

namespace kiln {

Tensor rope_inv_freq(int64_t rotary_dim, double theta, const RopeScaling& sc) {
  KILN_CHECK(rotary_dim > 0 && rotary_dim % 2 == 0, ValueError,
             "[rope_inv_freq] rotary_dim must be even and positive, got " << rotary_dim);
  KILN_CHECK(theta > 0, ValueError, "[rope_inv_freq] theta must be positive, got " << theta);
  Tensor out = empty({rotary_dim / 2}, DType::Float32);
  ops::rope_inv_freq(out.device(), rotary_dim, theta, sc, out);
  return out;
}

namespace {
// positions: int64 [T] contiguous, or undefined for start, start + 1, ...
RopeTables tables(const Tensor& positions, int64_t start, int64_t T, const Tensor& inv_freq) {
  KILN_CHECK(inv_freq.dim() == 1, ValueError,
             "[rope_cos_sin] inv_freq must be 1-D, got " << inv_freq.shape_str());
  const Tensor f = inv_freq.to(DType::Float32).contiguous();
  const int64_t h = f.numel();
  RopeTables r{empty({T, h}, DType::Float32, f.device()), empty({T, h}, DType::Float32, f.device())};
  ops::rope_cos_sin(common_device("rope_cos_sin", {&positions, &f}), positions, start, f, r.cos, r.sin);
  return r;
}
}  // namespace

RopeTables rope_cos_sin(const Tensor& positions, const Tensor& inv_freq) {
  KILN_CHECK(positions.dim() == 1 && is_integral(positions.dtype(), false), ValueError,
             "[rope_cos_sin] positions must be a 1-D integer tensor, got " << positions.shape_str() << " "
                                                                           << name(positions.dtype()));
  const Tensor p = positions.to(DType::Int64).contiguous();
  return tables(p, 0, p.numel(), inv_freq);
}

RopeTables rope_cos_sin(int64_t start, int64_t count, const Tensor& inv_freq) {
  KILN_CHECK(count >= 0, ValueError, "[rope_cos_sin] count must be >= 0, got " << count);
  return tables(Tensor(), start, count, inv_freq);
}

void rope_cos_sin_out(int64_t start, const Tensor& inv_freq, const Tensor& cos, const Tensor& sin) {
  const char* op = "rope_cos_sin_out";
  KILN_CHECK(inv_freq.dim() == 1 && inv_freq.dtype() == DType::Float32 && inv_freq.is_contiguous(),
             ValueError,
             "[" << op << "] inv_freq must be a contiguous 1-D float32 tensor, got " << inv_freq.shape_str()
                 << " " << name(inv_freq.dtype()));
  const int64_t h = inv_freq.numel();
  for (const Tensor* t : {&cos, &sin})
    KILN_CHECK(t->dim() == 2 && t->size(1) == h && t->dtype() == DType::Float32 && t->is_contiguous(),
               ValueError,
               "[" << op << "] cos and sin must be contiguous float32 [T, " << h << "], got "
                   << t->shape_str() << " " << name(t->dtype()));
  KILN_CHECK(sin.size(0) == cos.size(0), ValueError,
             "[" << op << "] cos " << cos.shape_str() << " and sin " << sin.shape_str() << " differ");
  ops::rope_cos_sin(common_device("rope_cos_sin", {&inv_freq, &cos, &sin}), Tensor(), start, inv_freq, cos,
                    sin);
}

void apply_rotary_emb_(const Tensor& x, const Tensor& cos, const Tensor& sin, bool interleaved) {
  const char* op = "apply_rotary_emb";
  if (autograd::inplace_needs_grad("apply_rotary_emb_", x, {&cos, &sin})) {
    autograd::rebase_inplace(x, apply_rotary_emb(x, cos, sin, interleaved));
    return;
  }
  nn_detail::check_float(x, op, "x");
  KILN_CHECK(x.dim() >= 2, ValueError,
             "[" << op << "] x must be [..., T, H, D] or [T, D], got " << x.shape_str());
  KILN_CHECK(cos.dim() == 2 && sin.sizes() == cos.sizes(), ValueError,
             "[" << op << "] cos " << cos.shape_str() << " and sin " << sin.shape_str()
                 << " must both be [T, rotary_dim / 2]");
  const int nd = x.dim();
  const int tdim = nd >= 3 ? nd - 3 : nd - 2;
  const int64_t T = x.size(tdim), D = x.size(-1), half = cos.size(1);
  KILN_CHECK(cos.size(0) == T && 2 * half <= D, ValueError,
             "[" << op << "] cos/sin " << cos.shape_str() << " do not fit x " << x.shape_str()
                 << " (need [T=" << T << ", <= D/2=" << D / 2 << "])");
  KILN_CHECK(x.stride(-1) == 1 || D == 1, ValueError, "[" << op << "] x needs a unit-stride last dim");
  assert_no_internal_overlap(x, op);
  const Device device = common_device(op, {&x, &cos, &sin});
  if (x.numel() == 0 || half == 0) return;
  const Tensor c = cos.to(DType::Float32).contiguous(), s = sin.to(DType::Float32).contiguous();
  ops::apply_rotary_emb(device, x, c, s, interleaved);
}

Tensor apply_rotary_emb(const Tensor& x, const Tensor& cos, const Tensor& sin, bool interleaved) {
  nn_detail::check_float(x, "apply_rotary_emb", "x");
  autograd::Record rec("apply_rotary_emb", {&x, &cos, &sin});
  // The tables are float32 constants of the positions (rope_cos_sin makes them).
  KILN_CHECK(!rec || (!cos.requires_grad() && !sin.requires_grad()), NotImplementedError,
             "[apply_rotary_emb] gradients for cos and sin are not implemented in kiln");
  // A row-major copy: the kernel needs a unit-stride last dim (clone() would keep
  // a transposed x transposed).
  Tensor y = kiln::clone(x, MemoryFormat::Contiguous);
  apply_rotary_emb_(y, cos, sin, interleaved);
  // A rotation: its adjoint rotates back by the opposite angle (sin negated).
  if (rec)
    rec.finish("ApplyRotaryEmbBackward0", {&y}, {cos, sin},
               [interleaved](autograd::FnNode& n, autograd::Grads& g) {
                 return autograd::Grads{
                     apply_rotary_emb(g[0].contiguous(), n.saved(0), neg(n.saved(1)), interleaved), Tensor(),
                     Tensor()};
               });
  return y;
}

}  // namespace kiln
