// Module-level forms of Tensor's view methods (kiln.reshape(x, ...) is
// x.reshape(...)), the in-place view methods (t_, transpose_, ...), and the
// bindings of movedim, broadcast_to/tensors/shapes, unflatten, atleast_*d,
// diagonal, diag, diag_embed, diagflat and trace.
#include <string>
#include <vector>

#include "bind_util.h"
#include "kiln/shape.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace kiln::py {
namespace {

// kiln.<name>(input, *args, **kwargs) = to_tensor(input).<method>(*args, **kwargs).
void def_forward(nb::module_& m, const char* name, const char* method) {
  m.def(name, [name, method](nb::args args, nb::kwargs kwargs) {
    nb::object x;
    nb::list rest;
    if (kwargs.contains("input")) {
      x = kwargs["input"];
      nb::del(kwargs["input"]);
      for (nb::handle a : args) rest.append(a);
    } else {
      if (args.size() == 0) throw TypeError(std::string("[") + name + "] missing required argument 'input'");
      x = nb::borrow(args[0]);
      for (size_t i = 1; i < args.size(); ++i) rest.append(args[i]);
    }
    const nb::tuple r(rest);
    return nb::cast(to_tensor(x)).attr(method)(*r, **kwargs);
  });
}

// Tensor.<name>(*args, **kwargs): self becomes self.<method>(...) (same storage).
void def_inplace_view(const char* name, const char* method) {
  nb::handle cls = nb::type<Tensor>();
  nb::setattr(cls, name,
              nb::cpp_function(
                  [method](nb::object self, nb::args args, nb::kwargs kwargs) {
                    const Tensor r = nb::cast<Tensor>(self.attr(method)(*args, **kwargs));
                    nb::cast<Tensor&>(self) = r;
                    return self;
                  },
                  nb::scope(cls), nb::name(name), nb::is_method()));
}

std::vector<int> dims_of(nb::handle h, const char* op) {
  if (nb::isinstance<nb::int_>(h)) return {to_dim(h, op)};
  std::vector<int> r;
  for (nb::handle v : nb::iter(h)) r.push_back(to_dim(v, op));
  return r;
}

// f(*tensors) / f(sequence): the tensors.
std::vector<Tensor> tensors_of(const nb::args& args) {
  nb::handle src = args;
  if (args.size() == 1 && !is_tensor(args[0]) && nb::isinstance<nb::sequence>(args[0])) src = args[0];
  std::vector<Tensor> r;
  for (nb::handle t : nb::iter(src)) r.push_back(to_tensor(t));
  return r;
}

nb::tuple tuple_of(const std::vector<Tensor>& ts) {
  nb::list l;
  for (const Tensor& t : ts) l.append(nb::cast(t));
  return nb::tuple(l);
}

void def_atleast(nb::module_& m, const char* name, Tensor (*fn)(const Tensor&)) {
  m.def(name, [fn](nb::args args) -> nb::object {
    if (args.size() == 1 && is_tensor(args[0])) return nb::cast(fn(nb::cast<Tensor>(args[0])));
    std::vector<Tensor> r;
    for (const Tensor& t : tensors_of(args)) r.push_back(fn(t));
    return tuple_of(r);
  });
}

}  // namespace
}  // namespace kiln::py

void init_shape_alias(nb::module_& m) {
  using namespace kiln;
  using namespace kiln::py;
  for (const char* n : {"reshape", "permute", "transpose", "swapaxes", "squeeze", "unsqueeze", "narrow",
                        "select", "flatten", "ravel", "t", "numel", "clone", "as_strided"})
    def_forward(m, n, n);
  nb::handle cls = nb::type<Tensor>();
  nb::setattr(cls, "swapdims", cls.attr("swapaxes"));
  def_forward(m, "swapdims", "transpose");
  for (const char* n : {"t", "transpose", "unsqueeze", "squeeze"}) {
    static std::vector<std::string> names;  // the method names outlive the module
    names.push_back(std::string(n) + "_");
    def_inplace_view(names.back().c_str(), n);
  }
  def_inplace_view("swapaxes_", "transpose");
  def_inplace_view("swapdims_", "transpose");

  for (const char* n : {"movedim", "moveaxis"}) {
    m.def(
        n,
        [n](nb::handle x, nb::handle source, nb::handle destination) {
          return movedim(to_tensor(x), dims_of(source, n), dims_of(destination, n));
        },
        "input"_a, "source"_a, "destination"_a);
    def_tensor_method(m, n);
  }
  m.def(
      "unflatten",
      [](nb::handle x, int dim, nb::handle sizes) {
        return unflatten(to_tensor(x), dim, to_shape(sizes, "unflatten", "sizes"));
      },
      "input"_a, "dim"_a, "sizes"_a);
  def_tensor_method(m, "unflatten");
  m.def(
      "broadcast_to",
      [](nb::handle x, nb::handle size) {
        return broadcast_to(to_tensor(x), to_shape(size, "broadcast_to"));
      },
      "input"_a, "size"_a);
  def_tensor_method(m, "broadcast_to");
  m.def("broadcast_tensors", [](nb::args args) { return tuple_of(broadcast_tensors(tensors_of(args))); });
  m.def("broadcast_shapes", [](nb::args args) {
    std::vector<Shape> shapes;
    for (nb::handle h : args) shapes.push_back(to_shape(h, "broadcast_shapes"));
    nb::list l;
    for (int64_t v : broadcast_shapes(shapes)) l.append(v);
    return nb::tuple(l);
  });
  def_atleast(m, "atleast_1d", &atleast_1d);
  def_atleast(m, "atleast_2d", &atleast_2d);
  def_atleast(m, "atleast_3d", &atleast_3d);

  m.def(
      "diagonal",
      [](nb::handle x, int64_t offset, int dim1, int dim2) {
        return diagonal(to_tensor(x), offset, dim1, dim2);
      },
      "input"_a, "offset"_a = 0, "dim1"_a = 0, "dim2"_a = 1);
  m.def(
      "diag", [](nb::handle x, int64_t d) { return diag(to_tensor(x), d); }, "input"_a, "diagonal"_a = 0);
  m.def(
      "diag_embed",
      [](nb::handle x, int64_t offset, int dim1, int dim2) {
        return diag_embed(to_tensor(x), offset, dim1, dim2);
      },
      "input"_a, "offset"_a = 0, "dim1"_a = -2, "dim2"_a = -1);
  m.def(
      "diagflat", [](nb::handle x, int64_t offset) { return diagflat(to_tensor(x), offset); }, "input"_a,
      "offset"_a = 0);
  m.def(
      "trace", [](nb::handle x) { return trace(to_tensor(x)); }, "input"_a);
  for (const char* n : {"diagonal", "diag", "diag_embed", "diagflat", "trace"}) def_tensor_method(m, n);
  // kiln.linalg.diagonal: the same view, over the last two dims by default.
  m.def(
      "linalg_diagonal",
      [](nb::handle a, int64_t offset, int dim1, int dim2) {
        return diagonal(to_tensor(a), offset, dim1, dim2);
      },
      "A"_a, nb::kw_only(), "offset"_a = 0, "dim1"_a = -2, "dim2"_a = -1);
}
