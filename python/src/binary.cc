// Python bindings for kiln/binary.h: kiln.add(..., alpha=), kiln.div(...,
// rounding_mode=), comparisons, logical/bitwise ops, where, clamp, lerp, addcmul;
// the matching Tensor methods (t.add(x), t.add_(x), ...) and Python operators
// (+ - * / // % ** == != < <= > >= & | ^ << >> and their reflected and in-place
// forms). Operands may be kiln tensors, Python/NumPy numbers (promoted as torch's
// wrapped numbers) or anything kiln.tensor accepts (NumPy arrays, lists).
#include "bind_util.h"
#include "kiln/binary.h"

namespace nb = nanobind;
using namespace nb::literals;
using namespace kiln;
using kiln::py::Operand;
using kiln::py::out_tensor;
using kiln::py::visit2;

namespace {

// The result as Python: the out= object itself when one was given.
nb::object result(const Tensor& r, nb::handle out) {
  if (!out.is_none()) return nb::borrow(out);
  return nb::cast(r);
}

bool is_operand(nb::handle h) {
  return py::is_tensor(h) || py::is_number(h) || py::is_numpy_array(h);
}

void set_method(const char* name, nb::object fn) { nb::setattr(nb::type<Tensor>(), name, fn); }

// Tensor.<name>(other) -> self, in place.
template <typename F>
void def_inplace(const char* name, F f) {
  nb::handle cls = nb::type<Tensor>();
  set_method(name, nb::cpp_function(
                       [f, name](nb::handle self, nb::handle other) -> nb::object {
                         const Tensor& s = nb::cast<const Tensor&>(self);
                         const Operand o = py::to_operand(other, name);
                         std::visit([&](const auto& v) { f(s, v); }, o);
                         return nb::borrow(self);
                       },
                       nb::scope(cls), nb::name(name), nb::is_method(), "other"_a));
}

// A Python operator: fn(self, other) or, reflected, fn(other, self); returns
// NotImplemented for operands kiln does not know, so Python can try the other side.
template <typename F>
void def_operator(const char* name, bool reflected, F f) {
  nb::handle cls = nb::type<Tensor>();
  set_method(name, nb::cpp_function(
                       [f, reflected, name](nb::handle self, nb::handle other) -> nb::object {
                         if (!is_operand(other)) return nb::borrow(Py_NotImplemented);
                         const Tensor r = reflected ? visit2(name, other, self, f) : visit2(name, self, other, f);
                         return nb::cast(r);
                       },
                       nb::scope(cls), nb::name(name), nb::is_method(), "other"_a.none()));
}

// An in-place Python operator (__iadd__ ...): modifies self and returns it.
template <typename F>
void def_ioperator(const char* name, F f) {
  nb::handle cls = nb::type<Tensor>();
  set_method(name, nb::cpp_function(
                       [f, name](nb::handle self, nb::handle other) -> nb::object {
                         if (!is_operand(other)) return nb::borrow(Py_NotImplemented);
                         const Tensor& s = nb::cast<const Tensor&>(self);
                         const Operand o = py::to_operand(other, name);
                         std::visit([&](const auto& v) { f(s, v); }, o);
                         return nb::borrow(self);
                       },
                       nb::scope(cls), nb::name(name), nb::is_method(), "other"_a.none()));
}

// A plain binary op: kiln.<name>(input, other, *, out=None), Tensor.<name>(other),
// Tensor.<name>_(other).
#define KILN_BIND_BINARY(fname)                                                                          \
  do {                                                                                                   \
    m.def(                                                                                               \
        #fname,                                                                                          \
        [](nb::handle a, nb::handle b, nb::handle out) {                                                 \
          const Tensor op = out_tensor(out);                                                             \
          const Tensor r =                                                                               \
              visit2(#fname, a, b, [&](const auto& x, const auto& y) { return kiln::fname(x, y, op); }); \
          return result(r, out);                                                                         \
        },                                                                                               \
        "input"_a, "other"_a, nb::kw_only(), "out"_a = nb::none());                                      \
    py::def_tensor_method(m, #fname);                                                                    \
    def_inplace(#fname "_", [](const Tensor& s, const auto& v) { kiln::fname##_(s, v); });               \
  } while (0)

// Binary functors for the operators.
#define KILN_FN(expr) [](const auto& x, const auto& y) { return expr; }

}  // namespace

void init_binary(nb::module_& m) {
  // ---- add / sub with alpha ----
  m.def(
      "add",
      [](nb::handle a, nb::handle b, Scalar alpha, nb::handle out) {
        const Tensor op = out_tensor(out);
        return result(visit2("add", a, b, [&](const auto& x, const auto& y) { return kiln::add(x, y, alpha, op); }), out);
      },
      "input"_a, "other"_a, nb::kw_only(), "alpha"_a = 1, "out"_a = nb::none());
  m.def(
      "sub",
      [](nb::handle a, nb::handle b, Scalar alpha, nb::handle out) {
        const Tensor op = out_tensor(out);
        return result(visit2("sub", a, b, [&](const auto& x, const auto& y) { return kiln::sub(x, y, alpha, op); }), out);
      },
      "input"_a, "other"_a, nb::kw_only(), "alpha"_a = 1, "out"_a = nb::none());
  m.attr("subtract") = m.attr("sub");
  py::def_tensor_method(m, "add");
  py::def_tensor_method(m, "sub");
  py::def_tensor_method(m, "subtract", "sub");
  for (const char* name : {"add_", "sub_"}) {
    const bool is_add = name[0] == 'a';
    nb::handle cls = nb::type<Tensor>();
    set_method(name, nb::cpp_function(
                         [is_add, name](nb::handle self, nb::handle other, Scalar alpha) -> nb::object {
                           const Tensor& s = nb::cast<const Tensor&>(self);
                           const Operand o = py::to_operand(other, name);
                           std::visit([&](const auto& v) { is_add ? (void)kiln::add_(s, v, alpha) : (void)kiln::sub_(s, v, alpha); }, o);
                           return nb::borrow(self);
                         },
                         nb::scope(cls), nb::name(name), nb::is_method(), "other"_a, nb::kw_only(),
                         "alpha"_a = 1));
  }

  // ---- div with rounding_mode ----
  m.def(
      "div",
      [](nb::handle a, nb::handle b, nb::handle rounding_mode, nb::handle out) {
        const Tensor op = out_tensor(out);
        const std::string rm(py::optional_utf8(rounding_mode, "div", "rounding_mode").value_or(""));
        return result(visit2("div", a, b, [&](const auto& x, const auto& y) { return kiln::div(x, y, rm, op); }), out);
      },
      "input"_a, "other"_a, nb::kw_only(), "rounding_mode"_a = nb::none(), "out"_a = nb::none());
  m.attr("divide") = m.attr("div");
  py::def_tensor_method(m, "div");
  py::def_tensor_method(m, "divide", "div");
  set_method("div_", nb::cpp_function(
                         [](nb::handle self, nb::handle other, nb::handle rounding_mode) -> nb::object {
                           const Tensor& s = nb::cast<const Tensor&>(self);
                           const Operand o = py::to_operand(other, "div_");
                           const std::string rm(
                               py::optional_utf8(rounding_mode, "div_", "rounding_mode").value_or(""));
                           std::visit([&](const auto& v) { kiln::div_(s, v, rm); }, o);
                           return nb::borrow(self);
                         },
                         nb::scope(nb::type<Tensor>()), nb::name("div_"), nb::is_method(), "other"_a,
                         nb::kw_only(), "rounding_mode"_a = nb::none()));

  // ---- plain binary ops ----
  KILN_BIND_BINARY(mul);
  m.attr("multiply") = m.attr("mul");
  py::def_tensor_method(m, "multiply", "mul");
  KILN_BIND_BINARY(true_divide);
  KILN_BIND_BINARY(floor_divide);
  KILN_BIND_BINARY(remainder);
  KILN_BIND_BINARY(fmod);
  KILN_BIND_BINARY(pow);
  KILN_BIND_BINARY(maximum);
  KILN_BIND_BINARY(minimum);
  KILN_BIND_BINARY(atan2);
  KILN_BIND_BINARY(copysign);
  KILN_BIND_BINARY(heaviside);
  KILN_BIND_BINARY(eq);
  KILN_BIND_BINARY(ne);
  KILN_BIND_BINARY(lt);
  KILN_BIND_BINARY(le);
  KILN_BIND_BINARY(gt);
  KILN_BIND_BINARY(ge);
  KILN_BIND_BINARY(logical_and);
  KILN_BIND_BINARY(logical_or);
  KILN_BIND_BINARY(logical_xor);
  KILN_BIND_BINARY(bitwise_and);
  KILN_BIND_BINARY(bitwise_or);
  KILN_BIND_BINARY(bitwise_xor);
  KILN_BIND_BINARY(bitwise_left_shift);
  KILN_BIND_BINARY(bitwise_right_shift);
  // torch's aliases.
  for (auto [alias, target] : {std::pair{"greater", "gt"}, {"greater_equal", "ge"}, {"less", "lt"},
                               {"less_equal", "le"}, {"not_equal", "ne"}, {"arctan2", "atan2"}}) {
    m.attr(alias) = m.attr(target);
    py::def_tensor_method(m, alias, target);
  }

  // ---- Python operators ----
  def_operator("__add__", false, KILN_FN(kiln::add(x, y)));
  def_operator("__radd__", true, KILN_FN(kiln::add(x, y)));
  def_operator("__sub__", false, KILN_FN(kiln::sub(x, y)));
  def_operator("__rsub__", true, KILN_FN(kiln::sub(x, y)));
  def_operator("__mul__", false, KILN_FN(kiln::mul(x, y)));
  def_operator("__rmul__", true, KILN_FN(kiln::mul(x, y)));
  def_operator("__truediv__", false, KILN_FN(kiln::div(x, y)));
  def_operator("__rtruediv__", true, KILN_FN(kiln::div(x, y)));
  def_operator("__floordiv__", false, KILN_FN(kiln::floor_divide(x, y)));
  def_operator("__rfloordiv__", true, KILN_FN(kiln::floor_divide(x, y)));
  def_operator("__mod__", false, KILN_FN(kiln::remainder(x, y)));
  def_operator("__rmod__", true, KILN_FN(kiln::remainder(x, y)));
  def_operator("__pow__", false, KILN_FN(kiln::pow(x, y)));
  def_operator("__rpow__", true, KILN_FN(kiln::pow(x, y)));
  def_operator("__eq__", false, KILN_FN(kiln::eq(x, y)));
  def_operator("__ne__", false, KILN_FN(kiln::ne(x, y)));
  def_operator("__lt__", false, KILN_FN(kiln::lt(x, y)));
  def_operator("__le__", false, KILN_FN(kiln::le(x, y)));
  def_operator("__gt__", false, KILN_FN(kiln::gt(x, y)));
  def_operator("__ge__", false, KILN_FN(kiln::ge(x, y)));
  def_operator("__and__", false, KILN_FN(kiln::bitwise_and(x, y)));
  def_operator("__rand__", true, KILN_FN(kiln::bitwise_and(x, y)));
  def_operator("__or__", false, KILN_FN(kiln::bitwise_or(x, y)));
  def_operator("__ror__", true, KILN_FN(kiln::bitwise_or(x, y)));
  def_operator("__xor__", false, KILN_FN(kiln::bitwise_xor(x, y)));
  def_operator("__rxor__", true, KILN_FN(kiln::bitwise_xor(x, y)));
  def_operator("__lshift__", false, KILN_FN(kiln::bitwise_left_shift(x, y)));
  def_operator("__rlshift__", true, KILN_FN(kiln::bitwise_left_shift(x, y)));
  def_operator("__rshift__", false, KILN_FN(kiln::bitwise_right_shift(x, y)));
  def_operator("__rrshift__", true, KILN_FN(kiln::bitwise_right_shift(x, y)));
  // NumPy defers to these operators (array + tensor gives a tensor), as with torch.
  nb::setattr(nb::type<Tensor>(), "__array_priority__", nb::int_(1000));
  // Tensors stay hashable by identity (as torch's), although __eq__ is elementwise.
  nb::setattr(nb::type<Tensor>(), "__hash__", nb::module_::import_("builtins").attr("object").attr("__hash__"));

  auto iop = [](auto fn) { return fn; };
  def_ioperator("__iadd__", iop([](const Tensor& s, const auto& v) { kiln::add_(s, v); }));
  def_ioperator("__isub__", iop([](const Tensor& s, const auto& v) { kiln::sub_(s, v); }));
  def_ioperator("__imul__", iop([](const Tensor& s, const auto& v) { kiln::mul_(s, v); }));
  def_ioperator("__itruediv__", iop([](const Tensor& s, const auto& v) { kiln::div_(s, v); }));
  def_ioperator("__ifloordiv__", iop([](const Tensor& s, const auto& v) { kiln::floor_divide_(s, v); }));
  def_ioperator("__imod__", iop([](const Tensor& s, const auto& v) { kiln::remainder_(s, v); }));
  def_ioperator("__ipow__", iop([](const Tensor& s, const auto& v) { kiln::pow_(s, v); }));
  def_ioperator("__iand__", iop([](const Tensor& s, const auto& v) { kiln::bitwise_and_(s, v); }));
  def_ioperator("__ior__", iop([](const Tensor& s, const auto& v) { kiln::bitwise_or_(s, v); }));
  def_ioperator("__ixor__", iop([](const Tensor& s, const auto& v) { kiln::bitwise_xor_(s, v); }));
  def_ioperator("__ilshift__", iop([](const Tensor& s, const auto& v) { kiln::bitwise_left_shift_(s, v); }));
  def_ioperator("__irshift__", iop([](const Tensor& s, const auto& v) { kiln::bitwise_right_shift_(s, v); }));

  // ---- where ----
  m.def(
      "where",
      [](nb::handle cond, nb::handle a, nb::handle b, nb::handle out) {
        const Tensor c = py::to_tensor(cond);
        const Tensor op = out_tensor(out);
        const Operand x = py::to_operand(a, "where"), y = py::to_operand(b, "where");
        const Tensor r = std::visit([&](const auto& p, const auto& q) { return kiln::where(c, p, q, op); }, x, y);
        return result(r, out);
      },
      "condition"_a, "input"_a, "other"_a, nb::kw_only(), "out"_a = nb::none());
  set_method("where", nb::cpp_function(
                          [](const Tensor& self, nb::handle cond, nb::handle other) {
                            const Operand y = py::to_operand(other, "where");
                            const Tensor c = py::to_tensor(cond);
                            return std::visit([&](const auto& q) { return kiln::where(c, self, q); }, y);
                          },
                          nb::scope(nb::type<Tensor>()), nb::name("where"), nb::is_method(), "condition"_a,
                          "other"_a));

  // ---- clamp ----
  // min/max: None, a number or a tensor; with any tensor bound, a number bound
  // becomes a 0-dim tensor of its promotion dtype.
  auto clamp_call = [](const Tensor& x, nb::handle lo, nb::handle hi, const Tensor& out, const Tensor* self) {
    const bool tensor_bounds = (!lo.is_none() && !py::is_number(lo)) || (!hi.is_none() && !py::is_number(hi));
    const char* op = self ? "clamp_" : "clamp";
    if (!tensor_bounds) {
      std::optional<Scalar> l, h;
      ResultType rt;
      rt.add(x.dtype(), x.dim() == 0 ? Priority::ZeroDim : Priority::Dimensioned);
      if (!lo.is_none()) rt.add((l = py::to_scalar(lo, op))->promotion_dtype(), Priority::Scalar);
      if (!hi.is_none()) rt.add((h = py::to_scalar(hi, op))->promotion_dtype(), Priority::Scalar);
      // As torch: the bounds are converted (checked) to the dtype the clamp runs in.
      const DType d = self ? self->dtype() : (out.defined() ? out.dtype() : rt.get());
      if (l) py::check_fits(*l, d, op, "min");
      if (h) py::check_fits(*h, d, op, "max");
      return self ? kiln::clamp_(*self, l, h) : kiln::clamp(x, l, h, out);
    }
    auto bound = [op](nb::handle b) -> Tensor {
      if (b.is_none()) return Tensor();
      const Operand o = py::to_operand(b, op);
      if (const Scalar* s = std::get_if<Scalar>(&o)) return scalar_tensor(*s, s->promotion_dtype());
      return std::get<Tensor>(o);
    };
    const Tensor l = bound(lo), h = bound(hi);
    return self ? kiln::clamp_(*self, l, h) : kiln::clamp(x, l, h, out);
  };
  m.def(
      "clamp",
      [clamp_call](const Tensor& x, nb::handle min, nb::handle max, nb::handle out) {
        const Tensor op = out_tensor(out);
        return result(clamp_call(x, min, max, op, nullptr), out);
      },
      "input"_a, "min"_a = nb::none(), "max"_a = nb::none(), nb::kw_only(), "out"_a = nb::none());
  m.attr("clip") = m.attr("clamp");
  m.def(
      "clamp_min",
      [clamp_call](const Tensor& x, nb::handle min) {
        return clamp_call(x, min, nb::none(), Tensor(), nullptr);
      },
      "input"_a, "min"_a);
  m.def(
      "clamp_max",
      [clamp_call](const Tensor& x, nb::handle max) {
        return clamp_call(x, nb::none(), max, Tensor(), nullptr);
      },
      "input"_a, "max"_a);
  py::def_tensor_method(m, "clamp");
  py::def_tensor_method(m, "clip", "clamp");
  py::def_tensor_method(m, "clamp_min");
  py::def_tensor_method(m, "clamp_max");
  set_method("clamp_", nb::cpp_function(
                           [clamp_call](nb::handle self, nb::handle min, nb::handle max) -> nb::object {
                             const Tensor& s = nb::cast<const Tensor&>(self);
                             clamp_call(s, min, max, Tensor(), &s);
                             return nb::borrow(self);
                           },
                           nb::scope(nb::type<Tensor>()), nb::name("clamp_"), nb::is_method(),
                           "min"_a = nb::none(), "max"_a = nb::none()));

  // ---- lerp ----
  m.def(
      "lerp",
      [](const Tensor& start, nb::handle end, nb::handle weight, nb::handle out) {
        const Tensor op = out_tensor(out);
        const Tensor e = py::to_tensor(end);
        const Operand w = py::to_operand(weight, "lerp");
        const Tensor r = std::visit([&](const auto& v) { return kiln::lerp(start, e, v, op); }, w);
        return result(r, out);
      },
      "input"_a, "end"_a, "weight"_a, nb::kw_only(), "out"_a = nb::none());
  py::def_tensor_method(m, "lerp");
  set_method("lerp_", nb::cpp_function(
                          [](nb::handle self, nb::handle end, nb::handle weight) -> nb::object {
                            const Tensor& s = nb::cast<const Tensor&>(self);
                            const Tensor e = py::to_tensor(end);
                            const Operand w = py::to_operand(weight, "lerp_");
                            std::visit([&](const auto& v) { kiln::lerp_(s, e, v); }, w);
                            return nb::borrow(self);
                          },
                          nb::scope(nb::type<Tensor>()), nb::name("lerp_"), nb::is_method(), "end"_a, "weight"_a));

  // ---- addcmul ----
  m.def(
      "addcmul",
      [](nb::handle input, nb::handle t1, nb::handle t2, Scalar value, nb::handle out) {
        const Tensor op = out_tensor(out);
        const Tensor r = kiln::addcmul(py::to_tensor(input), py::to_tensor(t1), py::to_tensor(t2), value, op);
        return result(r, out);
      },
      "input"_a, "tensor1"_a, "tensor2"_a, nb::kw_only(), "value"_a = 1, "out"_a = nb::none());
  py::def_tensor_method(m, "addcmul");
  set_method("addcmul_", nb::cpp_function(
                             [](nb::handle self, nb::handle t1, nb::handle t2, Scalar value) -> nb::object {
                               kiln::addcmul_(nb::cast<const Tensor&>(self), py::to_tensor(t1), py::to_tensor(t2), value);
                               return nb::borrow(self);
                             },
                             nb::scope(nb::type<Tensor>()), nb::name("addcmul_"), nb::is_method(), "tensor1"_a,
                             "tensor2"_a, nb::kw_only(), "value"_a = 1));

}
