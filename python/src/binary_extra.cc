// Bindings of include/kiln/binary_extra.h: kiln.<op>(input, other, *, out=None)
// with Tensor.<op>(other) and Tensor.<op>_(other) for hypot, logaddexp,
// logaddexp2, xlogy, fmax, fmin, gcd, lcm, ldexp, nextafter, float_power;
// kiln.isclose / allclose / equal with their methods, and kiln.special.xlogy.
#include "kiln/binary_extra.h"

#include "bind_util.h"

namespace nb = nanobind;
using namespace nb::literals;
using namespace kiln;
using kiln::py::Operand;
using kiln::py::out_tensor;
using kiln::py::visit2;

namespace {

#define KILN_BIND(fname)                                                                                \
  do {                                                                                                  \
    m.def(                                                                                              \
        #fname,                                                                                         \
        [](nb::handle a, nb::handle b, nb::handle out) -> nb::object {                                  \
          const Tensor o = out_tensor(out, #fname);                                                     \
          const Tensor r =                                                                              \
              visit2(#fname, a, b, [&](const auto& x, const auto& y) { return kiln::fname(x, y, o); }); \
          return out.is_none() ? nb::cast(r) : nb::borrow(out);                                         \
        },                                                                                              \
        "input"_a, "other"_a, nb::kw_only(), "out"_a = nb::none());                                     \
    py::def_tensor_method(m, #fname);                                                                   \
    m.def(                                                                                              \
        #fname "_",                                                                                     \
        [](nb::object self, nb::handle other) {                                                         \
          const Tensor& s = nb::cast<const Tensor&>(self);                                              \
          const Operand v = py::to_operand(other, #fname "_");                                          \
          std::visit([&](const auto& w) { kiln::fname##_(s, w); }, v);                                  \
          return self;                                                                                  \
        },                                                                                              \
        "input"_a, "other"_a);                                                                          \
    py::def_tensor_method(m, #fname "_");                                                               \
  } while (0)

}  // namespace

void init_binary_extra(nb::module_& m) {
  KILN_BIND(hypot);
  KILN_BIND(logaddexp);
  KILN_BIND(logaddexp2);
  KILN_BIND(xlogy);
  KILN_BIND(fmax);
  KILN_BIND(fmin);
  KILN_BIND(gcd);
  KILN_BIND(lcm);
  KILN_BIND(ldexp);
  KILN_BIND(nextafter);
  KILN_BIND(float_power);

  m.def(
      "isclose",
      [](nb::handle a, nb::handle b, double rtol, double atol, bool equal_nan) {
        return kiln::isclose(py::to_tensor(a), py::to_tensor(b), rtol, atol, equal_nan);
      },
      "input"_a, "other"_a, "rtol"_a = 1e-5, "atol"_a = 1e-8, "equal_nan"_a = false);
  py::def_tensor_method(m, "isclose");
  m.def(
      "allclose",
      [](nb::handle a, nb::handle b, double rtol, double atol, bool equal_nan) {
        return kiln::allclose(py::to_tensor(a), py::to_tensor(b), rtol, atol, equal_nan);
      },
      "input"_a, "other"_a, "rtol"_a = 1e-5, "atol"_a = 1e-8, "equal_nan"_a = false);
  py::def_tensor_method(m, "allclose");
  m.def(
      "equal", [](nb::handle a, nb::handle b) { return kiln::equal(py::to_tensor(a), py::to_tensor(b)); },
      "input"_a, "other"_a);
  py::def_tensor_method(m, "equal");

  m.attr("special_xlogy") = m.attr("xlogy");
}
