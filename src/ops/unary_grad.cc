// The derivatives of the unary ops (torch's formulas, derivatives.yaml), each
// written with kiln's public ops so that create_graph differentiates it again;
#include "ops/unary_grad.h"

#include <cmath>
#include <numbers>

#include "kiln/binary.h"
#include "kiln/complex.h"
#include "kiln/special.h"
#include "kiln/unary.h"
#include "kiln/unary_extra.h"

namespace kiln::unary_detail {

void finish_unary(autograd::Record& rec, const char* op, const UnaryGrad& spec, const Tensor& x,
                  Tensor& out) {
  const bool cplx = is_complex(x.dtype()) || is_complex(out.dtype());
  if (cplx && spec.complex == UnaryGrad::None)
    throw NotImplementedError(std::string("[") + op + "] complex gradients are not implemented in kiln yet");
  const bool wrap = cplx && spec.complex == UnaryGrad::Holomorphic;
  rec.finish(spec.node, {&out}, {spec.save_x ? x : Tensor(), spec.save_result ? out : Tensor()},
             [f = spec.formula, wrap](autograd::FnNode& n, autograd::Grads& g) {
               if (!n.needs(0) || !g[0].defined()) return autograd::Grads{Tensor()};
               if (wrap) return autograd::Grads{conj(f(conj(g[0]), n.saved(0), n.saved(1)))};
               return autograd::Grads{f(g[0], n.saved(0), n.saved(1))};
             });
}

namespace {

using std::numbers::pi;
constexpr double kLn2 = std::numbers::ln2, kLn10 = std::numbers::ln10;

Tensor sq(const Tensor& t) { return mul(t, t); }

// No gradient flows (piecewise constant functions): zeros, as torch.
Tensor zero_grad(const Tensor& g, const Tensor&, const Tensor&) { return zeros_like(g); }

}  // namespace

#define KILN_GRAD(fn, name, sx, sy, cplx, body) \
  const UnaryGrad fn##_grad{name, sx, sy,       \
                            [](const Tensor& g, const Tensor& x, const Tensor& y) -> Tensor body, cplx};

KILN_GRAD(exp, "ExpBackward0", false, true, UnaryGrad::Holomorphic, { return mul(g, y); })
KILN_GRAD(exp2, "Exp2Backward0", false, true, UnaryGrad::Holomorphic, { return mul(g, mul(y, kLn2)); })
KILN_GRAD(expm1, "Expm1Backward0", false, true, UnaryGrad::Holomorphic, { return mul(g, add(y, 1.0)); })
KILN_GRAD(log, "LogBackward0", true, false, UnaryGrad::Holomorphic, { return mul(g, reciprocal(x)); })
KILN_GRAD(log2, "Log2Backward0", true, false, UnaryGrad::Holomorphic,
          { return mul(g, mul(reciprocal(x), 1 / kLn2)); })
KILN_GRAD(log10, "Log10Backward0", true, false, UnaryGrad::Holomorphic,
          { return mul(g, mul(reciprocal(x), 1 / kLn10)); })
KILN_GRAD(log1p, "Log1PBackward0", true, false, UnaryGrad::Holomorphic,
          { return mul(g, reciprocal(add(x, 1.0))); })
KILN_GRAD(sqrt, "SqrtBackward0", false, true, UnaryGrad::Holomorphic,
          { return mul(g, mul(reciprocal(y), 0.5)); })
KILN_GRAD(rsqrt, "RsqrtBackward0", false, true, UnaryGrad::Holomorphic,
          { return mul(g, mul(mul(sq(y), y), -0.5)); })
KILN_GRAD(reciprocal, "ReciprocalBackward0", false, true, UnaryGrad::Holomorphic,
          { return mul(g, mul(sq(y), -1.0)); })
KILN_GRAD(sin, "SinBackward0", true, false, UnaryGrad::Holomorphic, { return mul(g, cos(x)); })
KILN_GRAD(cos, "CosBackward0", true, false, UnaryGrad::Holomorphic, { return mul(g, mul(sin(x), -1.0)); })
KILN_GRAD(tan, "TanBackward0", false, true, UnaryGrad::Holomorphic, { return mul(g, add(sq(y), 1.0)); })
KILN_GRAD(tanh, "TanhBackward0", false, true, UnaryGrad::Holomorphic, { return mul(g, sub(1.0, sq(y))); })
KILN_GRAD(sigmoid, "SigmoidBackward0", false, true, UnaryGrad::Holomorphic,
          { return mul(g, mul(y, sub(1.0, y))); })
// silu'(x) = s (1 + x (1 - s)), s = sigmoid(x)
KILN_GRAD(silu, "SiluBackward0", true, false, UnaryGrad::Holomorphic, {
  Tensor s = sigmoid(x);
  return mul(g, mul(s, add(mul(x, sub(1.0, s)), 1.0)));
})
KILN_GRAD(neg, "NegBackward0", false, false, UnaryGrad::Holomorphic, { return mul(g, -1.0); })
// abs'(0) = sign(0) = 0, as torch; complex: g z / |z| (g is real), 0 at 0
KILN_GRAD(abs, "AbsBackward0", true, false, UnaryGrad::Own,
          { return mul(g, is_complex(x.dtype()) ? sgn(x) : sign(x)); })
KILN_GRAD(relu, "ReluBackward0", false, true, UnaryGrad::None, { return mul(g, gt(y, Scalar(0.0))); })
KILN_GRAD(frac, "FracBackward0", false, false, UnaryGrad::None, { return g; })
KILN_GRAD(acos, "AcosBackward0", true, false, UnaryGrad::Holomorphic,
          { return mul(g, mul(rsqrt(sub(1.0, sq(x))), -1.0)); })
KILN_GRAD(asin, "AsinBackward0", true, false, UnaryGrad::Holomorphic,
          { return mul(g, rsqrt(sub(1.0, sq(x)))); })
KILN_GRAD(atan, "AtanBackward0", true, false, UnaryGrad::Holomorphic,
          { return mul(g, reciprocal(add(sq(x), 1.0))); })
// complex: 1 / (sqrt(z - 1) sqrt(z + 1)), the principal branch (1 / sqrt(z^2 - 1) differs for Re z < 0)
KILN_GRAD(acosh, "AcoshBackward0", true, false, UnaryGrad::Holomorphic, {
  if (is_complex(x.dtype())) return mul(g, mul(rsqrt(sub(x, 1.0)), rsqrt(add(x, 1.0))));
  return mul(g, rsqrt(sub(sq(x), 1.0)));
})
KILN_GRAD(asinh, "AsinhBackward0", true, false, UnaryGrad::Holomorphic,
          { return mul(g, rsqrt(add(sq(x), 1.0))); })
KILN_GRAD(atanh, "AtanhBackward0", true, false, UnaryGrad::Holomorphic,
          { return mul(g, reciprocal(sub(1.0, sq(x)))); })
KILN_GRAD(cosh, "CoshBackward0", true, false, UnaryGrad::Holomorphic, { return mul(g, sinh(x)); })
KILN_GRAD(sinh, "SinhBackward0", true, false, UnaryGrad::Holomorphic, { return mul(g, cosh(x)); })
KILN_GRAD(erf, "ErfBackward0", true, false, UnaryGrad::None,
          { return mul(g, mul(exp(mul(sq(x), -1.0)), 2 / std::sqrt(pi))); })
KILN_GRAD(erfc, "ErfcBackward0", true, false, UnaryGrad::None,
          { return mul(g, mul(exp(mul(sq(x), -1.0)), -2 / std::sqrt(pi))); })
KILN_GRAD(erfinv, "ErfinvBackward0", false, true, UnaryGrad::None,
          { return mul(g, mul(exp(sq(y)), std::sqrt(pi) / 2)); })
KILN_GRAD(lgamma, "LgammaBackward0", true, false, UnaryGrad::None, { return mul(g, digamma(x)); })
KILN_GRAD(digamma, "DigammaBackward0", true, false, UnaryGrad::None,
          { return mul(g, special_polygamma(1, x)); })
KILN_GRAD(i0, "I0Backward0", true, false, UnaryGrad::None, { return mul(g, special_i1(x)); })
// sinc'(x) = (cos(pi x) - sinc(x)) / x, and 0 at x = 0
KILN_GRAD(sinc, "SincBackward0", true, false, UnaryGrad::None, {
  Tensor d = div(sub(cos(mul(x, pi)), sinc(x)), x);
  return mul(g, where(eq(x, Scalar(0.0)), Scalar(0.0), d));
})
KILN_GRAD(deg2rad, "Deg2RadBackward0", false, false, UnaryGrad::None, { return mul(g, pi / 180); })
KILN_GRAD(rad2deg, "Rad2DegBackward0", false, false, UnaryGrad::None, { return mul(g, 180 / pi); })
KILN_GRAD(square, "PowBackward0", true, false, UnaryGrad::Holomorphic, { return mul(g, mul(x, 2.0)); })
KILN_GRAD(nan_to_num, "NanToNumBackward0", true, false, UnaryGrad::None, { return mul(g, isfinite(x)); })
#undef KILN_GRAD

// Piecewise constant: zero gradient.
const UnaryGrad sign_grad{"SignBackward0", false, false, zero_grad};
// sgn of a complex z = z / |z|: (g - Re(g conj(sgn)) sgn) / |z|, 0 at z = 0 (torch's sgn_backward).
const UnaryGrad sgn_grad{"SgnBackward0", true, true,
                         [](const Tensor& g, const Tensor& x, const Tensor& y) {
                           if (!is_complex(x.dtype())) return zeros_like(g);
                           const Tensor a = abs(x);
                           const Tensor d = div(sub(g, mul(real(mul(g, conj(y))), y)), a);
                           return where(eq(a, Scalar(0.0)), Scalar(0.0), d);
                         },
                         UnaryGrad::Own};
const UnaryGrad floor_grad{"FloorBackward0", false, false, zero_grad};
const UnaryGrad ceil_grad{"CeilBackward0", false, false, zero_grad};
const UnaryGrad round_grad{"RoundBackward0", false, false, zero_grad};
const UnaryGrad trunc_grad{"TruncBackward0", false, false, zero_grad};

// gelu'(x) = Phi(x) + x phi(x) (exact), or the derivative of
// 0.5 x (1 + tanh(k (x + c x^3))), k = sqrt(2/pi), c = 0.044715.
const UnaryGrad gelu_grad{"GeluBackward0", true, false, [](const Tensor& g, const Tensor& x, const Tensor&) {
                            Tensor cdf = mul(add(erf(mul(x, 1 / std::numbers::sqrt2)), 1.0), 0.5);
                            Tensor pdf = mul(exp(mul(sq(x), -0.5)), 1 / std::sqrt(2 * pi));
                            return mul(g, add(cdf, mul(x, pdf)));
                          }};
const UnaryGrad gelu_tanh_grad{
    "GeluBackward0", true, false, [](const Tensor& g, const Tensor& x, const Tensor&) {
      const double k = std::sqrt(2 / pi), c = 0.044715;
      Tensor x2 = sq(x);
      Tensor t = tanh(mul(mul(x, add(mul(x2, c), 1.0)), k));
      Tensor left = mul(add(t, 1.0), 0.5);
      Tensor right = mul(mul(x, sub(1.0, sq(t))), mul(add(mul(x2, 3 * c), 1.0), 0.5 * k));
      return mul(g, add(left, right));
    }};

// logit'(x) = 1 / (x (1 - x)); with eps, 0 outside [eps, 1 - eps] (where the
// forward clamps), as torch.
UnaryGrad logit_grad(double eps) {
  return UnaryGrad{"LogitBackward0", true, false, [eps](const Tensor& g, const Tensor& x, const Tensor&) {
                     Tensor d = mul(g, reciprocal(mul(x, sub(1.0, x))));
                     if (eps < 0) return d;
                     return where(logical_or(lt(x, Scalar(eps)), gt(x, Scalar(1 - eps))), Scalar(0.0), d);
                   }};
}

}  // namespace kiln::unary_detail
