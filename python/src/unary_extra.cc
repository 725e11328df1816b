// Bindings of the unary ops of include/kiln/unary.h's "unary_extra" section:
// kiln.<op>(input, *, out=None), kiln.<op>_(t), Tensor methods t.<op>() /
// t.<op>_(), numpy-style aliases (arccos, ...) and the kiln.special entries
// bound as special_<name> (python/kiln/__init__.py moves them to kiln.special).
#include "kiln/unary_extra.h"

#include <optional>

#include "bind_util.h"
#include "kiln/binary.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace kiln::py {
namespace {

using UnaryFn = Tensor (*)(const Tensor&);
using InplaceFn = Tensor& (*)(Tensor&);

// out=: the result written into `out` (same shape; a dtype the result casts to).
nb::object with_out(const char* op, const Tensor& r, nb::handle out) {
  if (out.is_none()) return nb::cast(r);
  if (!is_tensor(out)) throw TypeError(std::string("[") + op + "] expected a kiln.Tensor for out=");
  Tensor& o = nb::cast<Tensor&>(out);
  if (o.sizes() != r.sizes())
    throw ValueError(std::string("[") + op + "] out= has shape " + o.shape_str() + ", expected " +
                     r.shape_str());
  if (!can_cast(r.dtype(), o.dtype()))
    throw TypeError(std::string("[") + op + "] result type " + name(r.dtype()) +
                    " can't be cast to the desired output type " + name(o.dtype()));
  o.copy_(r);
  return nb::borrow(out);
}

void def_fn(nb::module_& m, const char* name, UnaryFn fn) {
  m.def(
      name, [fn, name](nb::handle x, nb::handle out) { return with_out(name, fn(to_tensor(x)), out); },
      "input"_a, nb::kw_only(), "out"_a = nb::none());
  def_tensor_method(m, name);
}

void def_inplace(nb::module_& m, const char* name, InplaceFn fn) {
  m.def(
      name,
      [fn](nb::object self) {
        fn(nb::cast<Tensor&>(self));
        return self;
      },
      "input"_a);
  def_tensor_method(m, name);
}

// name = target for the module function and the Tensor method.
void alias(nb::module_& m, const char* name, const char* target) {
  m.attr(name) = m.attr(target);
  def_tensor_method(m, name, target);
}

}  // namespace
}  // namespace kiln::py

void init_unary_extra(nb::module_& m) {
  using namespace kiln;
  using namespace kiln::py;
  struct Op {
    const char* name;
    UnaryFn fn;
    const char* inplace_name;
    InplaceFn inplace;
  };
#define KILN_OP(fn)                                                                                     \
  {                                                                                                     \
#fn, [](const Tensor& x) { return kiln::fn(x); }, #fn "_",                                          \
                                                   [](Tensor & x) -> Tensor& { return kiln::fn##_(x); } \
  }
  const Op ops[] = {
      KILN_OP(acos),
      KILN_OP(asin),
      KILN_OP(atan),
      KILN_OP(acosh),
      KILN_OP(asinh),
      KILN_OP(atanh),
      KILN_OP(cosh),
      KILN_OP(sinh),
      KILN_OP(erf),
      KILN_OP(erfc),
      KILN_OP(erfinv),
      KILN_OP(lgamma),
      KILN_OP(digamma),
      KILN_OP(log10),
      KILN_OP(sinc),
      KILN_OP(deg2rad),
      KILN_OP(rad2deg),
      KILN_OP(i0),
      KILN_OP(frac),
      KILN_OP(square),
      KILN_OP(sgn),
      {"signbit", [](const Tensor& x) { return kiln::signbit(x); }, nullptr, nullptr},
      {"isposinf", [](const Tensor& x) { return kiln::isposinf(x); }, nullptr, nullptr},
      {"isneginf", [](const Tensor& x) { return kiln::isneginf(x); }, nullptr, nullptr},
  };
#undef KILN_OP
  for (const Op& op : ops) {
    def_fn(m, op.name, op.fn);
    if (op.inplace) def_inplace(m, op.inplace_name, op.inplace);
  }
  // isreal and positive have no out= in torch.
  m.def(
      "isreal", [](nb::handle x) { return kiln::isreal(to_tensor(x)); }, "input"_a);
  def_tensor_method(m, "isreal");
  m.def(
      "positive",
      [](nb::object x) -> nb::object {
        kiln::positive(to_tensor(x));  // raises for bool
        return is_tensor(x) ? x : nb::cast(to_tensor(x));
      },
      "input"_a);
  def_tensor_method(m, "positive");

  // logit(input, eps=None, *, out=None)
  m.def(
      "logit",
      [](nb::handle x, std::optional<double> eps, nb::handle out) {
        return with_out("logit", kiln::logit(to_tensor(x), eps), out);
      },
      "input"_a, "eps"_a = nb::none(), nb::kw_only(), "out"_a = nb::none());
  def_tensor_method(m, "logit");
  m.def(
      "logit_",
      [](nb::object self, std::optional<double> eps) {
        kiln::logit_(nb::cast<Tensor&>(self), eps);
        return self;
      },
      "input"_a, "eps"_a = nb::none());
  def_tensor_method(m, "logit_");

  // nan_to_num(input, nan=0.0, posinf=None, neginf=None, *, out=None)
  m.def(
      "nan_to_num",
      [](nb::handle x, double nan, std::optional<double> posinf, std::optional<double> neginf,
         nb::handle out) {
        return with_out("nan_to_num", kiln::nan_to_num(to_tensor(x), nan, posinf, neginf), out);
      },
      "input"_a, "nan"_a = 0.0, "posinf"_a = nb::none(), "neginf"_a = nb::none(), nb::kw_only(),
      "out"_a = nb::none());
  def_tensor_method(m, "nan_to_num");
  m.def(
      "nan_to_num_",
      [](nb::object self, double nan, std::optional<double> posinf, std::optional<double> neginf) {
        kiln::nan_to_num_(nb::cast<Tensor&>(self), nan, posinf, neginf);
        return self;
      },
      "input"_a, "nan"_a = 0.0, "posinf"_a = nb::none(), "neginf"_a = nb::none());
  def_tensor_method(m, "nan_to_num_");

  // numpy-style names of the same ops, and torch.fix (trunc) as a method.
  const char* const aliases[][2] = {{"arccos", "acos"},     {"arcsin", "asin"},     {"arctan", "atan"},
                                    {"arccosh", "acosh"},   {"arcsinh", "asinh"},   {"arctanh", "atanh"},
                                    {"arccos_", "acos_"},   {"arcsin_", "asin_"},   {"arctan_", "atan_"},
                                    {"arccosh_", "acosh_"}, {"arcsinh_", "asinh_"}, {"arctanh_", "atanh_"}};
  for (const auto& a : aliases) alias(m, a[0], a[1]);
  def_tensor_method(m, "fix", "trunc");
  alias(m, "fix_", "trunc_");

  // kiln.special.*
  const char* const special[][2] = {
      {"special_erf", "erf"},         {"special_erfc", "erfc"},   {"special_erfinv", "erfinv"},
      {"special_logit", "logit"},     {"special_i0", "i0"},       {"special_sinc", "sinc"},
      {"special_digamma", "digamma"}, {"special_psi", "digamma"}, {"special_gammaln", "lgamma"}};
  for (const auto& a : special) m.attr(a[0]) = m.attr(a[1]);
}
