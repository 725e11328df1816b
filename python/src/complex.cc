// Bindings of kiln/complex.h: kiln.conj, real, imag, angle, complex, polar,
// is_complex; Tensor.conj(), .angle() and the .real / .imag
// properties (copies in kiln, views in torch).
#include "kiln/complex.h"

#include "bind_util.h"

namespace nb = nanobind;
using namespace nb::literals;

void init_complex(nb::module_& m) {
  using namespace kiln;
  using namespace kiln::py;
  using Fn = Tensor (*)(const Tensor&);
  const std::pair<const char*, Fn> unary[] = {
      {"conj", [](const Tensor& x) { return kiln::conj(x); }},
      {"real", [](const Tensor& x) { return kiln::real(x); }},
      {"imag", [](const Tensor& x) { return kiln::imag(x); }},
      {"angle", [](const Tensor& x) { return kiln::angle(x); }},
  };
  for (const auto& [name, fn] : unary) {
    m.def(
        name, [fn](nb::handle x) { return fn(to_tensor(x)); }, "input"_a);
  }
  def_tensor_method(m, "conj");
  def_tensor_method(m, "angle");
  m.def(
      "complex", [](const Tensor& re, const Tensor& im) { return kiln::complex(re, im); }, "real"_a,
      "imag"_a);
  m.def(
      "polar", [](const Tensor& abs, const Tensor& angle) { return kiln::polar(abs, angle); }, "abs"_a,
      "angle"_a);
  m.def(
      "is_complex", [](const Tensor& x) { return kiln::is_complex(x); }, "input"_a);
  nb::handle cls = nb::type<Tensor>();
  nb::object property = nb::module_::import_("builtins").attr("property");
  nb::setattr(cls, "real", property(m.attr("real")));
  nb::setattr(cls, "imag", property(m.attr("imag")));
}
