// Bindings of flip, fliplr, flipud, roll, rot90, repeat, tile,
// repeat_interleave, tril/triu (out=, in-place) and their Tensor methods.
#include <string>
#include <vector>

#include "bind_util.h"
#include "kiln/shape.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace kiln::py {
namespace {

// An int or a sequence of ints (torch's int[] arguments).
std::vector<int64_t> ints(nb::handle h, const char* op, const char* what) {
  if (nb::isinstance<nb::int_>(h)) return {nb::cast<int64_t>(h)};
  if (!nb::isinstance<nb::sequence>(h) || nb::isinstance<nb::str>(h))
    throw TypeError(std::string("[") + op + "] " + what + " must be an int or a sequence of ints, got " +
                    py_type_name(h));
  std::vector<int64_t> r;
  for (nb::handle v : nb::iter(h)) {
    if (!nb::isinstance<nb::int_>(v))
      throw TypeError(std::string("[") + op + "] " + what + " must hold ints, got " + py_type_name(v));
    r.push_back(nb::cast<int64_t>(v));
  }
  return r;
}

std::vector<int> dims_of(nb::handle h, const char* op) {
  std::vector<int> r;
  for (int64_t v : ints(h, op, "dims")) r.push_back(to_dim(nb::int_(v), op));
  return r;
}

// Tensor.<name>(*args): one argument is the int-list itself, several are its ints.
nb::handle one_or_many(const nb::args& args) { return args.size() == 1 ? args[0] : nb::handle(args); }

void def_method(nb::module_& m, const char* name, nb::object (*fn)(nb::handle self, nb::handle arg)) {
  nb::handle cls = nb::type<Tensor>();
  nb::setattr(cls, name,
              nb::cpp_function([fn](nb::handle self, nb::args args) { return fn(self, one_or_many(args)); },
                               nb::scope(cls), nb::name(name), nb::is_method()));
  (void)m;
}

Tensor do_flip(nb::handle x, nb::handle dims) { return flip(to_tensor(x), dims_of(dims, "flip")); }
Tensor do_repeat(nb::handle x, nb::handle reps) {
  return repeat(to_tensor(x), ints(reps, "repeat", "repeats"));
}
Tensor do_tile(nb::handle x, nb::handle reps) { return tile(to_tensor(x), ints(reps, "tile", "dims")); }

}  // namespace
}  // namespace kiln::py

void init_shape_reorder(nb::module_& m) {
  using namespace kiln;
  using namespace kiln::py;
  m.def("flip", &do_flip, "input"_a, "dims"_a);
  def_method(m, "flip", [](nb::handle s, nb::handle a) { return nb::cast(do_flip(s, a)); });
  m.def(
      "fliplr", [](nb::handle x) { return fliplr(to_tensor(x)); }, "input"_a);
  m.def(
      "flipud", [](nb::handle x) { return flipud(to_tensor(x)); }, "input"_a);
  def_tensor_method(m, "fliplr");
  def_tensor_method(m, "flipud");
  m.def(
      "roll",
      [](nb::handle x, nb::handle shifts, nb::handle dims) {
        const std::vector<int> d = dims.is_none() ? std::vector<int>{} : dims_of(dims, "roll");
        return roll(to_tensor(x), ints(shifts, "roll", "shifts"), d);
      },
      "input"_a, "shifts"_a, "dims"_a = nb::none());
  def_tensor_method(m, "roll");
  m.def(
      "rot90",
      [](nb::handle x, int64_t k, nb::handle dims) { return rot90(to_tensor(x), k, dims_of(dims, "rot90")); },
      "input"_a, "k"_a = 1, "dims"_a = nb::make_tuple(0, 1));
  def_tensor_method(m, "rot90");
  def_method(m, "repeat", [](nb::handle s, nb::handle a) { return nb::cast(do_repeat(s, a)); });
  m.def("tile", &do_tile, "input"_a, "dims"_a);
  def_method(m, "tile", [](nb::handle s, nb::handle a) { return nb::cast(do_tile(s, a)); });
  m.def(
      "repeat_interleave",
      [](nb::handle x, nb::handle repeats, nb::handle dim, nb::handle output_size) -> Tensor {
        (void)output_size;  // a hint for torch's device sync; the result is the same without it
        const Tensor t = to_tensor(x);
        if (repeats.is_none()) return repeat_interleave(t);
        std::optional<int> d;
        if (!dim.is_none()) d = to_dim(dim, "repeat_interleave");
        if (nb::isinstance<nb::int_>(repeats)) return repeat_interleave(t, nb::cast<int64_t>(repeats), d);
        return repeat_interleave(t, to_tensor(repeats), d);
      },
      "input"_a, "repeats"_a = nb::none(), "dim"_a = nb::none(), nb::kw_only(), "output_size"_a = nb::none());
  def_tensor_method(m, "repeat_interleave");
  using OutFn = void (*)(const Tensor&, int64_t, const Tensor&);
  using Fn = Tensor (*)(const Tensor&, int64_t);
  using InFn = Tensor& (*)(Tensor&, int64_t);
  struct Tri {
    const char* name;
    const char* inplace;
    Fn fn;
    OutFn out_fn;
    InFn in_fn;
  };
  for (const Tri& t :
       {Tri{"tril", "tril_", &tril, &tril_out, &tril_}, Tri{"triu", "triu_", &triu, &triu_out, &triu_}}) {
    m.def(
        t.name,
        [t](nb::handle x, int64_t diagonal, nb::handle out) -> nb::object {
          if (out.is_none()) return nb::cast(t.fn(to_tensor(x), diagonal));
          t.out_fn(to_tensor(x), diagonal, nb::cast<Tensor>(out));
          return nb::borrow(out);
        },
        "input"_a, "diagonal"_a = 0, nb::kw_only(), "out"_a = nb::none());
    def_tensor_method(m, t.name);
    m.def(
        t.inplace,
        [t](nb::object self, int64_t diagonal) {
          t.in_fn(nb::cast<Tensor&>(self), diagonal);
          return self;
        },
        "input"_a, "diagonal"_a = 0);
    def_tensor_method(m, t.inplace);
  }
}
