// Division family: div (true / "trunc" / "floor"), true_divide, floor_divide,
// remainder (Python's %, sign of the divisor) and fmod (C's, sign of the
// dividend). Integer division by zero raises ValueError; float division by zero
// gives inf/nan as IEEE says. The kernels are the ops of ops/registry/binary.h.
#include "kiln/unary.h"
#include "ops/binary_grad.h"

namespace kiln {
namespace {

using bin::In;

enum class Mode { True, Trunc, Floor, Remainder, Fmod };

const char* mode_name(Mode m) {
  switch (m) {
    case Mode::True: return "div";
    case Mode::Trunc: return "div";
    case Mode::Floor: return "floor_divide";
    case Mode::Remainder: return "remainder";
    default: return "fmod";
  }
}

// `via_div`: called as div(rounding_mode=...), so the op is div; otherwise the
// op named by `mode`.
Tensor divide(Mode mode, bool via_div, In a, In b, const Tensor& out, const Tensor* self) {
  const char* op = mode_name(mode);
  bin::check_no_fp8(op, a, b);
  const DType r0 = bin::result_type(a, b);
  if (mode == Mode::True) {
    // Integers divide in float32 as they are loaded: no converted copies.
    const DType result = is_integral(r0, true) ? kDefaultFloat : r0;
    bin::Plan p = bin::make_plan(op, a, b, r0, result, out, self);
    const Device d = bin::device(op, p);
    if (via_div)
      ops::div(d, p.a, p.b, ops::DivMode::True, p.dest);
    else
      ops::true_divide(d, p.a, p.b, p.dest);
    return bin::finish(p);
  }
  if (r0 == DType::Bool || is_complex(r0)) bin::throw_unsupported(op, r0, a, b);
  bin::Plan p = bin::make_plan(op, a, b, r0, r0, out, self);
  const Device d = bin::device(op, p);
  bool zero = false;
  switch (mode) {
    case Mode::Trunc:
      zero = ops::div(d, p.a, p.b, ops::DivMode::Trunc, p.dest);
      break;
    case Mode::Floor:
      zero = via_div ? ops::div(d, p.a, p.b, ops::DivMode::Floor, p.dest)
                     : ops::floor_divide(d, p.a, p.b, p.dest);
      break;
    case Mode::Remainder:
      zero = ops::remainder(d, p.a, p.b, p.dest);
      break;
    default:
      zero = ops::fmod(d, p.a, p.b, p.dest);
      break;
  }
  if (zero)
    throw ValueError(std::string("[") + op + "] integer division by zero (ZeroDivisionError) with " +
                     a.desc() + " and " + b.desc());
  return bin::finish(p);
}

Mode parse_mode(std::string_view m) {
  if (m.empty()) return Mode::True;
  if (m == "trunc") return Mode::Trunc;
  if (m == "floor") return Mode::Floor;
  throw ValueError("[div] expected rounding_mode to be one of None, 'trunc', or 'floor' but found '" +
                   std::string(m) + "'");
}

// d(a / b) = (g / b, -g (a / b) / b) (conjugated for complex operands). The rounded quotients are piecewise
// constant: zero gradients, as torch. remainder and fmod: a - b * q with q the
// floored (remainder) or truncated (fmod) quotient, so (g, -g q).
const bin::GradSpec kDivGrad{
    "DivBackward0",
    true,
    true,
    false,
    [](const bin::GradArgs& x) {
      return autograd::Grads{
          x.needs_a() ? div(x.g, bin::conj_if_complex(x.b)) : Tensor(),
          x.needs_b() ? neg(mul(x.g, bin::conj_if_complex(div(div(x.a, x.b), x.b)))) : Tensor()};
    },
    true};
const bin::GradSpec kRoundedDivGrad{"DivBackward2", false, false, false, [](const bin::GradArgs& x) {
                                      return autograd::Grads{x.needs_a() ? zeros_like(x.g) : Tensor(),
                                                             x.needs_b() ? zeros_like(x.g) : Tensor()};
                                    }};
bin::GradSpec rest_grad(const char* node, const char* rounding) {
  return {node, true, true, false, [rounding](const bin::GradArgs& x) {
            return autograd::Grads{x.needs_a() ? x.g : Tensor(),
                                   x.needs_b() ? neg(mul(x.g, div(x.a, x.b, rounding))) : Tensor()};
          }};
}
const bin::GradSpec kRemainderGrad = rest_grad("RemainderBackward0", "floor");
const bin::GradSpec kFmodGrad = rest_grad("FmodBackward0", "trunc");

const bin::GradSpec* grad_of(Mode m) {
  switch (m) {
    case Mode::True:
      return &kDivGrad;
    case Mode::Trunc:
      return &kRoundedDivGrad;
    case Mode::Floor:
      return &kRoundedDivGrad;
    case Mode::Remainder:
      return &kRemainderGrad;
    default:
      return &kFmodGrad;
  }
}

// div and the named ops, recorded. floor_divide has no derivative in torch
// (it raises "derivative for floor_divide is not implemented"): it raises here too.
Tensor divide_recorded(Mode mode, bool via_div, In a, In b, const Tensor& out, const Tensor* self) {
  const bin::GradSpec* spec = mode == Mode::Floor && !via_div ? nullptr : grad_of(mode);
  return bin::run_recorded(via_div              ? "div"
                           : mode == Mode::True ? "true_divide"
                                                : mode_name(mode),
                           spec, a, b, out, self,
                           [mode, via_div](In x, In y, const Tensor& o, const Tensor* s) {
                             return divide(mode, via_div, x, y, o, s);
                           });
}

Tensor true_div_impl(In a, In b, const Tensor& out, const Tensor* self) {
  return divide_recorded(Mode::True, false, a, b, out, self);
}
Tensor floor_div_impl(In a, In b, const Tensor& out, const Tensor* self) {
  return divide_recorded(Mode::Floor, false, a, b, out, self);
}
Tensor remainder_impl(In a, In b, const Tensor& out, const Tensor* self) {
  return divide_recorded(Mode::Remainder, false, a, b, out, self);
}
Tensor fmod_impl(In a, In b, const Tensor& out, const Tensor* self) {
  return divide_recorded(Mode::Fmod, false, a, b, out, self);
}

}  // namespace

Tensor div(const Tensor& a, const Tensor& b, std::string_view rm, const Tensor& out) {
  return divide_recorded(parse_mode(rm), true, a, b, out, nullptr);
}
Tensor div(const Tensor& a, const Scalar& b, std::string_view rm, const Tensor& out) {
  return divide_recorded(parse_mode(rm), true, a, b, out, nullptr);
}
Tensor div(const Scalar& a, const Tensor& b, std::string_view rm, const Tensor& out) {
  return divide_recorded(parse_mode(rm), true, a, b, out, nullptr);
}
const Tensor& div_(const Tensor& self, const Tensor& other, std::string_view rm) {
  divide_recorded(parse_mode(rm), true, self, other, Tensor(), &self);
  return self;
}
const Tensor& div_(const Tensor& self, const Scalar& other, std::string_view rm) {
  divide_recorded(parse_mode(rm), true, self, other, Tensor(), &self);
  return self;
}

KILN_DEFINE_BINARY(true_divide, true_div_impl)
KILN_DEFINE_BINARY(floor_divide, floor_div_impl)
KILN_DEFINE_BINARY(remainder, remainder_impl)
KILN_DEFINE_BINARY(fmod, fmod_impl)

}  // namespace kiln
