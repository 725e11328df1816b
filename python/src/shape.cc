// Bindings for include/kiln/shape.h: kiln.cat (concat, concatenate), stack and
// the numpy stacking helpers with out=, and the split family (tuples of views),
// also as Tensor methods.
#include "kiln/shape.h"

#include <string>
#include <vector>

#include "bind_util.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace kiln::py {
namespace {

// A sequence of tensors (or anything to_tensor takes); TypeError otherwise.
std::vector<Tensor> tensor_list(nb::handle h, const char* op) {
  if (is_tensor(h) || !nb::isinstance<nb::sequence>(h) || nb::isinstance<nb::str>(h))
    throw TypeError(std::string("[") + op + "] expected a sequence of tensors, got " + py_type_name(h));
  std::vector<Tensor> r;
  for (nb::handle t : nb::iter(h)) r.push_back(to_tensor(t));
  return r;
}

nb::tuple to_tuple(const std::vector<Tensor>& ts) {
  nb::list l;
  for (const Tensor& t : ts) l.append(nb::cast(t));
  return nb::tuple(l);
}

int64_t to_int(nb::handle h, const char* op, const char* what) {
  if (!nb::isinstance<nb::int_>(h))
    throw TypeError(std::string("[") + op + "] " + what + " must be an int, got " + py_type_name(h));
  return nb::cast<int64_t>(h);
}

std::vector<int64_t> int_list(nb::handle h, const char* op, const char* what) {
  if (is_tensor(h)) {
    const Tensor t = nb::cast<Tensor>(h);
    if (t.dim() != 1 || !is_integral(t.dtype(), false))
      throw TypeError(std::string("[") + op + "] " + what + " tensor must be a 1-D integer tensor, got " +
                      t.shape_str() + " " + name(t.dtype()));
    std::vector<int64_t> r;
    const Tensor c = t.to(DType::Int64).contiguous().cpu();
    const int64_t* p = c.data<int64_t>();
    r.assign(p, p + c.numel());
    return r;
  }
  if (!nb::isinstance<nb::sequence>(h))
    throw TypeError(std::string("[") + op + "] " + what + " must be an int or a sequence of ints, got " +
                    py_type_name(h));
  std::vector<int64_t> r;
  for (nb::handle v : nb::iter(h)) r.push_back(to_int(v, op, what));
  return r;
}

// An int (or 0-d integer tensor) -> sections; a sequence or 1-D tensor -> indices.
template <typename Sections, typename Indices>
nb::tuple sections_or_indices(nb::handle h, const char* op, Sections s, Indices i) {
  if (is_tensor(h) && nb::cast<Tensor>(h).dim() == 0) {
    const Tensor t = nb::cast<Tensor>(h);
    if (!is_integral(t.dtype(), false))
      throw TypeError(std::string("[") + op + "] indices_or_sections must be an integer tensor, got " +
                      name(t.dtype()));
    return to_tuple(s(t.item<int64_t>()));
  }
  if (nb::isinstance<nb::int_>(h)) return to_tuple(s(nb::cast<int64_t>(h)));
  return to_tuple(i(int_list(h, op, "indices_or_sections")));
}

using JoinFn = Tensor (*)(std::span<const Tensor>, int);
using JoinOutFn = void (*)(std::span<const Tensor>, int, const Tensor&);

void def_join(nb::module_& m, const char* name, const char* op, JoinFn fn, JoinOutFn out_fn) {
  m.def(
      name,
      [op, fn, out_fn](nb::handle tensors, int dim, nb::handle out) -> nb::object {
        const std::vector<Tensor> xs = tensor_list(tensors, op);
        if (out.is_none()) return nb::cast(fn(xs, dim));
        out_fn(xs, dim, nb::cast<Tensor>(out));
        return nb::borrow(out);
      },
      "tensors"_a, "dim"_a = 0, nb::kw_only(), "out"_a = nb::none());
}

using StackFn = Tensor (*)(std::span<const Tensor>);

void def_stack_helper(nb::module_& m, const char* name, StackFn fn) {
  m.def(
      name,
      [name, fn](nb::handle tensors, nb::handle out) -> nb::object {
        const Tensor r = fn(tensor_list(tensors, name));
        if (out.is_none()) return nb::cast(r);
        Tensor o = nb::cast<Tensor>(out);
        cat_out(std::vector<Tensor>{r}, 0, o);
        return nb::borrow(out);
      },
      "tensors"_a, nb::kw_only(), "out"_a = nb::none());
}

}  // namespace
}  // namespace kiln::py

void init_shape_reorder(nb::module_& m);  // shape_reorder.cc
void init_shape_alias(nb::module_& m);    // shape_alias.cc

void init_shape(nb::module_& m) {
  init_shape_reorder(m);
  init_shape_alias(m);
  using namespace kiln;
  using namespace kiln::py;
  for (const char* n : {"cat", "concat", "concatenate"}) def_join(m, n, "cat", &cat, &cat_out);
  def_join(m, "stack", "stack", &stack, &stack_out);
  def_stack_helper(m, "hstack", &hstack);
  def_stack_helper(m, "vstack", &vstack);
  def_stack_helper(m, "row_stack", &vstack);
  def_stack_helper(m, "dstack", &dstack);
  def_stack_helper(m, "column_stack", &column_stack);

  m.def(
      "split",
      [](nb::handle x, nb::handle size, int dim) {
        const Tensor t = to_tensor(x);
        if (nb::isinstance<nb::int_>(size)) return to_tuple(split(t, nb::cast<int64_t>(size), dim));
        return to_tuple(split_with_sizes(t, int_list(size, "split", "split_size_or_sections"), dim));
      },
      "tensor"_a, "split_size_or_sections"_a, "dim"_a = 0);
  m.def(
      "split_with_sizes",
      [](nb::handle x, nb::handle sizes, int dim) {
        return to_tuple(
            split_with_sizes(to_tensor(x), int_list(sizes, "split_with_sizes", "split_sizes"), dim));
      },
      "input"_a, "split_sizes"_a, "dim"_a = 0);
  m.def(
      "chunk",
      [](nb::handle x, nb::handle chunks, int dim) {
        return to_tuple(chunk(to_tensor(x), to_int(chunks, "chunk", "chunks"), dim));
      },
      "input"_a, "chunks"_a, "dim"_a = 0);
  m.def(
      "tensor_split",
      [](nb::handle x, nb::handle ios, int dim) {
        const Tensor t = to_tensor(x);
        return sections_or_indices(
            ios, "tensor_split", [&](int64_t s) { return tensor_split(t, s, dim); },
            [&](const std::vector<int64_t>& i) { return tensor_split(t, i, dim); });
      },
      "input"_a, "indices_or_sections"_a, "dim"_a = 0);
  m.def(
      "unbind", [](nb::handle x, int dim) { return to_tuple(unbind(to_tensor(x), dim)); }, "input"_a,
      "dim"_a = 0);
#define KILN_BIND_NSPLIT(fname)                                          \
  m.def(                                                                 \
      #fname,                                                            \
      [](nb::handle x, nb::handle ios) {                                 \
        const Tensor t = to_tensor(x);                                   \
        return sections_or_indices(                                      \
            ios, #fname, [&](int64_t s) { return fname(t, s); },         \
            [&](const std::vector<int64_t>& i) { return fname(t, i); }); \
      },                                                                 \
      "input"_a, "indices_or_sections"_a)
  KILN_BIND_NSPLIT(hsplit);
  KILN_BIND_NSPLIT(vsplit);
  KILN_BIND_NSPLIT(dsplit);
#undef KILN_BIND_NSPLIT
  for (const char* n :
       {"split", "split_with_sizes", "chunk", "tensor_split", "unbind", "hsplit", "vsplit", "dsplit"})
    def_tensor_method(m, n);
}
