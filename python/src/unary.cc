// Bindings for include/kiln/unary.h: kiln.<op>(input), the in-place kiln.<op>_(t),
// Tensor methods t.<op>() / t.<op>_(), the operators -t, abs(t), ~t, round(t),
// kiln.frexp (a named tuple) and the kiln.special aliases (bound as special_<name>).
#include "kiln/unary.h"

#include <climits>

#include "bind_util.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace kiln::py {
namespace {

using UnaryFn = Tensor (*)(const Tensor&);
using InplaceFn = Tensor& (*)(Tensor&);

// kiln.<name>(input) and Tensor.<name>().
void def_unary(nb::module_& m, const char* name, UnaryFn fn) {
  m.def(name, [fn](nb::handle x) { return fn(to_tensor(x)); }, "input"_a);
  def_tensor_method(m, name);
}

// kiln.<name>_(t) and Tensor.<name>_(): modify t and return the same object.
void def_inplace(nb::module_& m, const char* name, InplaceFn fn) {
  m.def(name, [fn](nb::object self) {
    fn(nb::cast<Tensor&>(self));
    return self;
  }, "input"_a);
  def_tensor_method(m, name);
}

struct Op {
  const char* name;
  UnaryFn fn;
  const char* inplace_name;
  InplaceFn inplace;
};

Operand required_operand(nb::handle h) { return to_operand(h); }

Tensor laguerre(nb::handle x, nb::handle n) {
  const Operand a = required_operand(x), b = required_operand(n);
  const Tensor* ta = std::get_if<Tensor>(&a);
  const Tensor* tb = std::get_if<Tensor>(&b);
  if (ta && tb) return special_laguerre_polynomial_l(*ta, *tb);
  if (ta) return special_laguerre_polynomial_l(*ta, std::get<Scalar>(b));
  if (tb) return special_laguerre_polynomial_l(std::get<Scalar>(a), *tb);
  throw TypeError("[special_laguerre_polynomial_l] needs at least one tensor argument, got two numbers");
}

}  // namespace
}  // namespace kiln::py

void init_unary(nb::module_& m) {
  using namespace kiln;
  using namespace kiln::py;

  // Wrapping the overloaded names in lambdas picks the one-argument forms.
  const Op ops[] = {
      {"neg", [](const Tensor& x) { return kiln::neg(x); }, "neg_", [](Tensor& x) -> Tensor& { return neg_(x); }},
      {"abs", [](const Tensor& x) { return kiln::abs(x); }, "abs_", [](Tensor& x) -> Tensor& { return abs_(x); }},
      {"sign", [](const Tensor& x) { return kiln::sign(x); }, "sign_", [](Tensor& x) -> Tensor& { return sign_(x); }},
      {"exp", [](const Tensor& x) { return kiln::exp(x); }, "exp_", [](Tensor& x) -> Tensor& { return exp_(x); }},
      {"exp2", [](const Tensor& x) { return kiln::exp2(x); }, "exp2_", [](Tensor& x) -> Tensor& { return exp2_(x); }},
      {"expm1", [](const Tensor& x) { return kiln::expm1(x); }, "expm1_",
       [](Tensor& x) -> Tensor& { return expm1_(x); }},
      {"log", [](const Tensor& x) { return kiln::log(x); }, "log_", [](Tensor& x) -> Tensor& { return log_(x); }},
      {"log2", [](const Tensor& x) { return kiln::log2(x); }, "log2_", [](Tensor& x) -> Tensor& { return log2_(x); }},
      {"log1p", [](const Tensor& x) { return kiln::log1p(x); }, "log1p_",
       [](Tensor& x) -> Tensor& { return log1p_(x); }},
      {"sqrt", [](const Tensor& x) { return kiln::sqrt(x); }, "sqrt_", [](Tensor& x) -> Tensor& { return sqrt_(x); }},
      {"rsqrt", [](const Tensor& x) { return kiln::rsqrt(x); }, "rsqrt_",
       [](Tensor& x) -> Tensor& { return rsqrt_(x); }},
      {"reciprocal", [](const Tensor& x) { return kiln::reciprocal(x); }, "reciprocal_",
       [](Tensor& x) -> Tensor& { return reciprocal_(x); }},
      {"sin", [](const Tensor& x) { return kiln::sin(x); }, "sin_", [](Tensor& x) -> Tensor& { return sin_(x); }},
      {"cos", [](const Tensor& x) { return kiln::cos(x); }, "cos_", [](Tensor& x) -> Tensor& { return cos_(x); }},
      {"tan", [](const Tensor& x) { return kiln::tan(x); }, "tan_", [](Tensor& x) -> Tensor& { return tan_(x); }},
      {"tanh", [](const Tensor& x) { return kiln::tanh(x); }, "tanh_", [](Tensor& x) -> Tensor& { return tanh_(x); }},
      {"sigmoid", [](const Tensor& x) { return kiln::sigmoid(x); }, "sigmoid_",
       [](Tensor& x) -> Tensor& { return sigmoid_(x); }},
      {"silu", [](const Tensor& x) { return kiln::silu(x); }, "silu_", [](Tensor& x) -> Tensor& { return silu_(x); }},
      {"relu", [](const Tensor& x) { return kiln::relu(x); }, "relu_", [](Tensor& x) -> Tensor& { return relu_(x); }},
      {"floor", [](const Tensor& x) { return kiln::floor(x); }, "floor_",
       [](Tensor& x) -> Tensor& { return floor_(x); }},
      {"ceil", [](const Tensor& x) { return kiln::ceil(x); }, "ceil_", [](Tensor& x) -> Tensor& { return ceil_(x); }},
      {"trunc", [](const Tensor& x) { return kiln::trunc(x); }, "trunc_",
       [](Tensor& x) -> Tensor& { return trunc_(x); }},
      {"isnan", [](const Tensor& x) { return kiln::isnan(x); }, nullptr, nullptr},
      {"isinf", [](const Tensor& x) { return kiln::isinf(x); }, nullptr, nullptr},
      {"isfinite", [](const Tensor& x) { return kiln::isfinite(x); }, nullptr, nullptr},
      {"logical_not", [](const Tensor& x) { return kiln::logical_not(x); }, "logical_not_",
       [](Tensor& x) -> Tensor& { return logical_not_(x); }},
      {"bitwise_not", [](const Tensor& x) { return kiln::bitwise_not(x); }, "bitwise_not_",
       [](Tensor& x) -> Tensor& { return bitwise_not_(x); }},
  };
  for (const Op& op : ops) {
    def_unary(m, op.name, op.fn);
    if (op.inplace) def_inplace(m, op.inplace_name, op.inplace);
  }
  // torch names for the same ops.
  m.attr("negative") = m.attr("neg");
  m.attr("absolute") = m.attr("abs");
  m.attr("fix") = m.attr("trunc");
  def_tensor_method(m, "negative", "neg");
  def_tensor_method(m, "absolute", "abs");

  // round(input, *, decimals=0)
  m.def("round", [](nb::handle x, int decimals) { return kiln::round(to_tensor(x), decimals); }, "input"_a,
        nb::kw_only(), "decimals"_a = 0);
  def_tensor_method(m, "round");
  m.def("round_", [](nb::object self, int decimals) {
    round_(nb::cast<Tensor&>(self), decimals);
    return self;
  }, "input"_a, nb::kw_only(), "decimals"_a = 0);
  def_tensor_method(m, "round_");

  // gelu(input, approximate='none')
  m.def(
      "gelu",
      [](nb::handle x, nb::handle approximate) {
        return kiln::gelu(to_tensor(x), std::string(utf8(approximate, "gelu", "approximate")));
      },
      "input"_a, nb::kw_only(), "approximate"_a = "none");
  def_tensor_method(m, "gelu");
  m.def(
      "gelu_",
      [](nb::object self, nb::handle approximate) {
        gelu_(nb::cast<Tensor&>(self), std::string(utf8(approximate, "gelu_", "approximate")));
        return self;
      },
      "input"_a, nb::kw_only(), "approximate"_a = "none");

  // frexp(input) -> (mantissa, exponent), a named tuple as torch.return_types.frexp.
  nb::object frexp_type = nb::module_::import_("collections").attr("namedtuple")(
      "frexp", nb::make_tuple("mantissa", "exponent"));
  frexp_type.attr("__module__") = "kiln.return_types";
  m.def("frexp", [frexp_type](nb::handle x) {
    auto [mant, expo] = kiln::frexp(to_tensor(x));
    return frexp_type(nb::cast(mant), nb::cast(expo));
  }, "input"_a);
  def_tensor_method(m, "frexp");

  // Python operators.
  nb::handle cls = nb::type<Tensor>();
  nb::setattr(cls, "__neg__", nb::cpp_function([](const Tensor& t) { return kiln::neg(t); }, nb::is_method()));
  nb::setattr(cls, "__abs__", nb::cpp_function([](const Tensor& t) { return kiln::abs(t); }, nb::is_method()));
  nb::setattr(cls, "__invert__",
              nb::cpp_function([](const Tensor& t) { return kiln::bitwise_not(t); }, nb::is_method()));
  nb::setattr(cls, "__round__",
              nb::cpp_function(
                  [](const Tensor& t, nb::handle ndigits) {
                    const int64_t n = ndigits.is_none() ? 0 : to_int64(ndigits, "round", "ndigits");
                    if (n < INT_MIN || n > INT_MAX)
                      throw OverflowError("[round] ndigits " + std::to_string(n) + " does not fit int");
                    return kiln::round(t, int(n));
                  },
                  nb::is_method(), "ndigits"_a = nb::none()));

  // kiln.special.* (bound as special_<name>, see python/kiln/__init__.py).
  m.def("special_laguerre_polynomial_l", &laguerre, "input"_a, "n"_a);
  m.attr("special_expit") = m.attr("sigmoid");
  m.attr("special_exp2") = m.attr("exp2");
  m.attr("special_expm1") = m.attr("expm1");
  m.attr("special_log1p") = m.attr("log1p");
  m.attr("special_round") = m.attr("round");
}
