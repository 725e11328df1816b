// kiln.special's Bessel, Airy, ndtri, zeta, polygamma and incomplete gamma
// functions (include/kiln/special.h), bound as _C.special_<name> (seen as
// kiln.special.<name>) with torch.special's signatures and out=; and torch's
// other names for them: torch.igamma / igammac / polygamma and the Tensor
// methods igamma(_), igammac(_), polygamma(_).
#include "kiln/special.h"

#include <string>

#include "bind_util.h"
#include "kiln/unary_extra.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace kiln::py {
namespace {

// Both operands as tensors (a number becomes a 0-d tensor of its own type, so
// torch's promotion of a number beside a tensor applies).
Tensor operand(nb::handle h, const char* op) {
  if (is_tensor(h)) return nb::cast<const Tensor&>(h);
  const Operand o = to_operand(h, op);
  if (const Tensor* t = std::get_if<Tensor>(&o)) return *t;
  const Scalar s = std::get<Scalar>(o);
  return scalar_tensor(s, s.promotion_dtype());
}

// An in-place form: the result written into self, which must have its shape
// and a float dtype (torch: "result type Float can't be cast to ...").
void write_inplace(const char* op, Tensor& self, const Tensor& result) {
  KILN_CHECK(result.sizes() == self.sizes(), ValueError,
             "[" << op << "] the result's shape " << result.shape_str() << " does not match self's "
                 << self.shape_str());
  KILN_CHECK(is_floating(self.dtype()) && !is_fp8(self.dtype()), TypeError,
             "[" << op << "] result type " << name(result.dtype())
                 << " can't be cast to the desired output type " << name(self.dtype()));
  self.copy_(result);
}

}  // namespace
}  // namespace kiln::py

void init_special(nb::module_& m) {
  using namespace kiln;
  using namespace kiln::py;
  using Unary = Tensor (*)(const Tensor&);
  const std::pair<const char*, Unary> unary[] = {
      {"bessel_j0", &special_bessel_j0},
      {"bessel_j1", &special_bessel_j1},
      {"bessel_y0", &special_bessel_y0},
      {"bessel_y1", &special_bessel_y1},
      {"modified_bessel_k0", &special_modified_bessel_k0},
      {"modified_bessel_k1", &special_modified_bessel_k1},
      {"scaled_modified_bessel_k0", &special_scaled_modified_bessel_k0},
      {"scaled_modified_bessel_k1", &special_scaled_modified_bessel_k1},
      {"modified_bessel_i0", [](const Tensor& x) { return i0(x); }},
      {"modified_bessel_i1", &special_i1},
      {"i0e", &special_i0e},
      {"i1", &special_i1},
      {"i1e", &special_i1e},
      {"airy_ai", &special_airy_ai},
      {"ndtri", &special_ndtri},
  };
  for (const auto& [name, fn] : unary) {
    const std::string op = std::string("special_") + name;
    m.def(
        op.c_str(),
        [fn, op](nb::handle input, nb::handle out) {
          return result_or_out(op.c_str(), fn(to_tensor(input)), out);
        },
        "input"_a, nb::kw_only(), "out"_a = nb::none());
  }
  using Binary = Tensor (*)(const Tensor&, const Tensor&);
  struct Two {
    const char* name;
    const char* a;
    const char* b;
    Binary fn;
  };
  for (const Two& f : {Two{"special_zeta", "input", "other", &special_zeta},
                       Two{"special_gammainc", "input", "other", &special_gammainc},
                       Two{"special_gammaincc", "input", "other", &special_gammaincc},
                       Two{"igamma", "input", "other", &special_gammainc},
                       Two{"igammac", "input", "other", &special_gammaincc}}) {
    m.def(
        f.name,
        [f](nb::handle a, nb::handle b, nb::handle out) {
          if (!is_tensor(a) && !is_tensor(b))
            throw TypeError(std::string("[") + f.name +
                            "] expected at least one tensor argument, got two numbers");
          return result_or_out(f.name, f.fn(operand(a, f.name), operand(b, f.name)), out);
        },
        nb::arg(f.a), nb::arg(f.b), nb::kw_only(), "out"_a = nb::none());
  }
  for (const char* name : {"igamma", "igammac"}) {
    def_tensor_method(m, name);
    const std::string inplace = std::string(name) + "_";
    const Binary fn = std::string(name) == "igamma" ? &special_gammainc : &special_gammaincc;
    m.def(
        inplace.c_str(),
        [fn, inplace](nb::object self, nb::handle other) {
          Tensor& s = nb::cast<Tensor&>(self);
          write_inplace(inplace.c_str(), s, fn(s, operand(other, inplace.c_str())));
          return self;
        },
        "input"_a, "other"_a);
    def_tensor_method(m, inplace.c_str());
  }
  auto polygamma = [](int64_t n, nb::handle input, nb::handle out) {
    return result_or_out("polygamma", special_polygamma(n, to_tensor(input)), out);
  };
  m.def("special_polygamma", polygamma, "n"_a, "input"_a, nb::kw_only(), "out"_a = nb::none());
  m.def("polygamma", polygamma, "n"_a, "input"_a, nb::kw_only(), "out"_a = nb::none());
  // Tensor.polygamma(n): self first.
  nb::handle cls = nb::type<Tensor>();
  nb::setattr(cls, "polygamma",
              nb::cpp_function([](const Tensor& self, int64_t n) { return special_polygamma(n, self); },
                               nb::scope(cls), nb::name("polygamma"), nb::is_method(), "n"_a));
  nb::setattr(cls, "polygamma_",
              nb::cpp_function(
                  [](nb::object self, int64_t n) {
                    Tensor& s = nb::cast<Tensor&>(self);
                    write_inplace("polygamma_", s, special_polygamma(n, s));
                    return self;
                  },
                  nb::scope(cls), nb::name("polygamma_"), nb::is_method(), "n"_a));
}
