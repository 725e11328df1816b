// Bindings for indexing, gather/scatter, masks, sort/topk and bincount, and
// Tensor.__getitem__ / __setitem__ (Python keys -> kiln::TensorIndex).
#include "kiln/index.h"

#include <Python.h>

#include "bind_util.h"
#include "kiln/sort.h"

namespace nb = nanobind;
using namespace nb::literals;
using namespace kiln;
using namespace kiln::py;

namespace {

// ---- Python key -> std::vector<TensorIndex> -----------------------------------

// A nested list / array used as an index: integer or bool tensor (an empty
// list is an empty int64 index, as in torch and NumPy).
Tensor sequence_index(nb::handle h) {
  Tensor t = to_tensor(h);
  if (t.numel() == 0 && !is_integral(t.dtype(), true)) t = t.to(DType::Int64);
  return t;
}

bool is_numpy_bool_scalar(nb::handle h) {
  static nb::handle np_bool = nb::module_::import_("numpy").attr("bool_").inc_ref();
  return PyObject_IsInstance(h.ptr(), np_bool.ptr()) == 1;
}

TensorIndex to_index_entry(nb::handle h) {
  PyObject* o = h.ptr();
  if (h.is_none()) return NoneIndex{};
  if (o == Py_Ellipsis) return EllipsisIndex{};
  if (PyBool_Check(o) || is_numpy_bool_scalar(h)) return TensorIndex(bool(PyObject_IsTrue(o)));
  if (is_tensor(h)) return TensorIndex(nb::cast<const Tensor&>(h));
  if (PySlice_Check(o)) {
    Py_ssize_t start, stop, step;
    if (PySlice_Unpack(o, &start, &stop, &step) < 0) throw nb::python_error();
    if (step < 0)
      throw ValueError(
          "[__getitem__] slice step must be greater than zero (negative steps are not supported)");
    PySliceObject* s = reinterpret_cast<PySliceObject*>(o);
    Slice sl;
    if (s->start != Py_None) sl.start = int64_t(start);
    if (s->stop != Py_None) sl.stop = int64_t(stop);
    sl.step = int64_t(step);
    return sl;
  }
  if (PyLong_Check(o) || (!is_numpy_array(h) && PyIndex_Check(o))) {
    nb::object idx = nb::steal(PyNumber_Index(o));
    if (!idx.is_valid()) throw nb::python_error();
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(idx.ptr(), &overflow);
    // Past int64 it is out of range for every dim (IndexError, as a list index).
    if (overflow != 0)
      throw IndexError("[__getitem__] index " + py_str(idx) + " is out of range (it does not fit int64)");
    if (v == -1 && PyErr_Occurred()) throw nb::python_error();
    return TensorIndex(int64_t(v));
  }
  if (PyList_Check(o) || PyTuple_Check(o) || is_numpy_array(h)) return sequence_index(h);
  throw IndexError(
      std::string("[__getitem__] only integers, slices (`:`), ellipsis (`...`), None and integer or "
                  "boolean tensors are valid indices (got ") +
      py_type_name(h) + ")");
}

std::vector<TensorIndex> to_indices(nb::handle key) {
  std::vector<TensorIndex> out;
  if (PyTuple_Check(key.ptr())) {
    for (nb::handle e : nb::borrow<nb::tuple>(key)) out.push_back(to_index_entry(e));
  } else {
    out.push_back(to_index_entry(key));
  }
  return out;
}

// ---- argument helpers ----------------------------------------------------------

Tensor& self_tensor(nb::handle self) { return nb::cast<Tensor&>(self); }

// Adds an in-place method that returns self (the same Python object, as torch).
template <typename F, typename... Extra>
void def_inplace(nb::handle cls, const char* name, F&& f, const Extra&... extra) {
  nb::object meth =
      nb::cpp_function(std::forward<F>(f), nb::scope(cls), nb::name(name), nb::is_method(), extra...);
  nb::setattr(cls, name, meth);
}

nb::object make_namedtuple(const char* name) {
  nb::object nt =
      nb::module_::import_("collections").attr("namedtuple")(name, nb::make_tuple("values", "indices"));
  nt.attr("__module__") = "kiln.return_types";
  return nt;
}

nb::object sort_result(const SortResult& r, nb::handle type) {
  return type(nb::cast(r.values), nb::cast(r.indices));
}

// A masked_fill / scatter value: a number (range-checked against dtype `d`, as torch
// does), or a 0-dim tensor for masked_fill.
Scalar value_scalar(nb::handle v, DType d, const char* op) {
  if (is_tensor(v)) {
    const Tensor& t = nb::cast<const Tensor&>(v);
    if (t.dim() != 0)
      throw ValueError(std::string("[") + op +
                       "] only supports a 0-dimensional value tensor, but got tensor with " +
                       std::to_string(t.dim()) + " dimension(s)");
    return t.item();
  }
  const Scalar s = to_scalar(v, op);
  check_fits(s, d, op);
  return s;
}

Tensor scatter_dispatch(Tensor& x, int dim, const Tensor& index, nb::handle src, nb::handle value,
                        bool inplace) {
  const bool has_src = !src.is_none(), has_value = !value.is_none();
  if (has_src == has_value)
    throw TypeError("[scatter] expected exactly one of src (a tensor) or value (a number)");
  nb::handle s = has_src ? src : value;
  const char* op = inplace ? "scatter_" : "scatter";
  if (is_number(s)) {
    const Scalar v = value_scalar(s, x.dtype(), op);
    Tensor out = inplace ? x : x.clone();
    scatter_(out, dim, index, v);
    return out;
  }
  Tensor out = inplace ? x : x.clone();
  scatter_(out, dim, index, to_tensor(s));
  return out;
}

}  // namespace

void init_index(nb::module_& m) {
  static nb::handle sort_type = make_namedtuple("sort").release();
  static nb::handle topk_type = make_namedtuple("topk").release();
  nb::handle cls = nb::type<Tensor>();

  // ---- x[key], x[key] = value ----
  def_inplace(
      cls, "__getitem__", [](const Tensor& x, nb::handle key) { return index(x, to_indices(key)); },
      "x[key]: a view for ints, slices, None and Ellipsis; a copy with integer/bool tensor indices.");
  def_inplace(
      cls, "__setitem__",
      [](Tensor& x, nb::handle key, nb::handle value) {
        const std::vector<TensorIndex> idx = to_indices(key);
        if (is_number(value))
          index_put_(x, idx, value_scalar(value, x.dtype(), "__setitem__"));
        else
          index_put_(x, idx, to_tensor(value));
      },
      "x[key] = value, value broadcast to x[key] and converted to x's dtype.");
  m.def(
      "index_put",
      [](const Tensor& x, nb::handle indices, const Tensor& values, bool accumulate) {
        return index_put(x, to_indices(nb::tuple(indices)), values, accumulate);
      },
      "input"_a, "indices"_a, "values"_a, "accumulate"_a = false);
  def_tensor_method(m, "index_put");
  def_inplace(
      cls, "index_put_",
      [](nb::handle self, nb::handle indices, const Tensor& values, bool accumulate) {
        index_put_(self_tensor(self), to_indices(nb::tuple(indices)), values, accumulate);
        return nb::borrow(self);
      },
      "indices"_a, "values"_a, "accumulate"_a = false);

  // ---- take / put ----
  m.def(
      "take", [](const Tensor& x, nb::handle index) { return take(x, to_tensor(index)); }, "input"_a,
      "index"_a);
  def_tensor_method(m, "take");
  m.def(
      "put",
      [](const Tensor& x, nb::handle index, nb::handle source, bool accumulate) {
        return put(x, to_tensor(index), to_tensor(source), accumulate);
      },
      "input"_a, "index"_a, "source"_a, "accumulate"_a = false);
  def_tensor_method(m, "put");
  def_inplace(
      cls, "put_",
      [](nb::handle self, nb::handle index, nb::handle source, bool accumulate) {
        put_(self_tensor(self), to_tensor(index), to_tensor(source), accumulate);
        return nb::borrow(self);
      },
      "index"_a, "source"_a, "accumulate"_a = false);

  // ---- gather / scatter ----
  m.def(
      "gather", [](const Tensor& x, int dim, nb::handle index) { return gather(x, dim, to_tensor(index)); },
      "input"_a, "dim"_a, "index"_a);
  def_tensor_method(m, "gather");
  m.def(
      "scatter",
      [](Tensor& x, int dim, nb::handle index, nb::handle src, nb::handle value) {
        return scatter_dispatch(x, dim, to_tensor(index), src, value, false);
      },
      "input"_a, "dim"_a, "index"_a, "src"_a = nb::none(), "value"_a = nb::none());
  def_tensor_method(m, "scatter");
  def_inplace(
      cls, "scatter_",
      [](nb::handle self, int dim, nb::handle index, nb::handle src, nb::handle value) {
        scatter_dispatch(self_tensor(self), dim, to_tensor(index), src, value, true);
        return nb::borrow(self);
      },
      "dim"_a, "index"_a, "src"_a = nb::none(), "value"_a = nb::none());
  m.def(
      "scatter_add",
      [](const Tensor& x, int dim, nb::handle index, nb::handle src) {
        return scatter_add(x, dim, to_tensor(index), to_tensor(src));
      },
      "input"_a, "dim"_a, "index"_a, "src"_a);
  def_tensor_method(m, "scatter_add");
  def_inplace(
      cls, "scatter_add_",
      [](nb::handle self, int dim, nb::handle index, nb::handle src) {
        scatter_add_(self_tensor(self), dim, to_tensor(index), to_tensor(src));
        return nb::borrow(self);
      },
      "dim"_a, "index"_a, "src"_a);

  // ---- index_select / index_add ----
  m.def(
      "index_select",
      [](const Tensor& x, int dim, nb::handle index) { return index_select(x, dim, to_tensor(index)); },
      "input"_a, "dim"_a, "index"_a);
  def_tensor_method(m, "index_select");
  m.def(
      "index_add",
      [](const Tensor& x, int dim, nb::handle index, nb::handle source, Scalar alpha) {
        return index_add(x, dim, to_tensor(index), to_tensor(source), alpha);
      },
      "input"_a, "dim"_a, "index"_a, "source"_a, nb::kw_only(), "alpha"_a = 1);
  def_tensor_method(m, "index_add");
  def_inplace(
      cls, "index_add_",
      [](nb::handle self, int dim, nb::handle index, nb::handle source, Scalar alpha) {
        index_add_(self_tensor(self), dim, to_tensor(index), to_tensor(source), alpha);
        return nb::borrow(self);
      },
      "dim"_a, "index"_a, "source"_a, nb::kw_only(), "alpha"_a = 1);

  // ---- masks ----
  m.def(
      "masked_fill",
      [](const Tensor& x, nb::handle mask, nb::handle value) {
        // A tensor value stays a tensor: it may require grad.
        if (is_tensor(value)) return masked_fill(x, to_tensor(mask), nb::cast<const Tensor&>(value));
        return masked_fill(x, to_tensor(mask), value_scalar(value, x.dtype(), "masked_fill"));
      },
      "input"_a, "mask"_a, "value"_a);
  def_tensor_method(m, "masked_fill");
  def_inplace(
      cls, "masked_fill_",
      [](nb::handle self, nb::handle mask, nb::handle value) {
        if (is_tensor(value))
          masked_fill_(self_tensor(self), to_tensor(mask), nb::cast<const Tensor&>(value));
        else
          masked_fill_(self_tensor(self), to_tensor(mask),
                       value_scalar(value, self_tensor(self).dtype(), "masked_fill_"));
        return nb::borrow(self);
      },
      "mask"_a, "value"_a);
  m.def(
      "masked_select", [](const Tensor& x, nb::handle mask) { return masked_select(x, to_tensor(mask)); },
      "input"_a, "mask"_a);
  def_tensor_method(m, "masked_select");
  m.def(
      "nonzero",
      [](const Tensor& x, bool as_tuple) -> nb::object {
        Tensor nz = nonzero(x);
        if (!as_tuple) return nb::cast(nz);
        // as_tuple: one 1-D tensor per dim (a 0-dim input counts as 1-D).
        if (x.dim() == 0) return nb::make_tuple(nb::cast(Tensor(zeros({nz.size(0)}, DType::Int64))));
        nb::list cols;
        for (int d = 0; d < x.dim(); ++d) cols.append(nb::cast(nz.select(1, d).contiguous()));
        return nb::tuple(cols);
      },
      "input"_a, nb::kw_only(), "as_tuple"_a = false);
  def_tensor_method(m, "nonzero");
  m.def(
      "argwhere", [](const Tensor& x) { return nonzero(x); }, "input"_a);
  def_tensor_method(m, "argwhere");

  // ---- sort / topk / bincount ----
  m.def(
      "sort",
      [](const Tensor& x, int dim, bool descending, bool stable) {
        return sort_result(sort(x, dim, descending, stable), sort_type);
      },
      "input"_a, "dim"_a = -1, "descending"_a = false, nb::kw_only(), "stable"_a = false);
  def_tensor_method(m, "sort");
  m.def(
      "argsort",
      [](const Tensor& x, int dim, bool descending, bool stable) {
        return argsort(x, dim, descending, stable);
      },
      "input"_a, "dim"_a = -1, "descending"_a = false, nb::kw_only(), "stable"_a = false);
  def_tensor_method(m, "argsort");
  m.def(
      "topk",
      [](const Tensor& x, int64_t k, int dim, bool largest, bool sorted) {
        return sort_result(topk(x, k, dim, largest, sorted), topk_type);
      },
      "input"_a, "k"_a, "dim"_a = -1, "largest"_a = true, "sorted"_a = true);
  def_tensor_method(m, "topk");
  m.def(
      "bincount",
      [](const Tensor& x, nb::handle weights, int64_t minlength) {
        return bincount(x, weights.is_none() ? Tensor() : to_tensor(weights), minlength);
      },
      "input"_a, "weights"_a = nb::none(), "minlength"_a = 0);
  def_tensor_method(m, "bincount");
  // kiln.kthvalue / median / nanmedian / mode (python/kiln/_sorting.py) make
  // the named tuples and take out=: (values, indices), or the 0-d median.
  auto pair = [](const ValuesIndices& r) { return nb::make_tuple(r.values, r.indices); };
  m.def(
      "_kthvalue",
      [pair](const Tensor& x, int64_t k, int dim, bool keepdim) {
        return pair(kthvalue(x, k, dim, keepdim));
      },
      "input"_a, "k"_a, "dim"_a, "keepdim"_a);
  m.def(
      "_median",
      [pair](const Tensor& x, std::optional<int> dim, bool keepdim, bool skip_nan) -> nb::object {
        if (!dim) return nb::cast(skip_nan ? nanmedian(x) : median(x));
        return pair(skip_nan ? nanmedian(x, *dim, keepdim) : median(x, *dim, keepdim));
      },
      "input"_a, "dim"_a.none(), "keepdim"_a, "skip_nan"_a);
  m.def(
      "_mode", [pair](const Tensor& x, int dim, bool keepdim) { return pair(mode(x, dim, keepdim)); },
      "input"_a, "dim"_a, "keepdim"_a);
  // kiln.searchsorted (python/kiln/_sorting.py) handles side=, scalars and out=.
  m.def(
      "_searchsorted",
      [](const Tensor& sorted, const Tensor& values, bool right, bool out_int32, nb::handle sorter) {
        return searchsorted(sorted, values, right, out_int32,
                            sorter.is_none() ? Tensor() : to_tensor(sorter));
      },
      "sorted_sequence"_a, "input"_a, "right"_a, "out_int32"_a, "sorter"_a = nb::none());
  // kiln.unique / unique_consecutive (python/kiln/_sorting.py) with dim=None:
  // (values, inverse or None, counts or None).
  auto unique_tuple = [](const UniqueResult& r) {
    auto opt = [](const Tensor& t) { return t.defined() ? nb::cast(t) : nb::none(); };
    return nb::make_tuple(r.values, opt(r.inverse), opt(r.counts));
  };
  m.def(
      "_unique",
      [unique_tuple](const Tensor& x, bool return_inverse, bool return_counts) {
        return unique_tuple(unique(x, return_inverse, return_counts));
      },
      "input"_a, "return_inverse"_a, "return_counts"_a);
  m.def(
      "_unique_consecutive",
      [unique_tuple](const Tensor& x, bool return_inverse, bool return_counts) {
        return unique_tuple(unique_consecutive(x, return_inverse, return_counts));
      },
      "input"_a, "return_inverse"_a, "return_counts"_a);
  // kiln.unique / unique_consecutive with dim=: sorted picks unique.
  m.def(
      "_unique_dim",
      [unique_tuple](const Tensor& x, int64_t dim, bool sorted, bool return_inverse, bool return_counts) {
        return unique_tuple(sorted ? unique_dim(x, dim, return_inverse, return_counts)
                                   : unique_consecutive_dim(x, dim, return_inverse, return_counts));
      },
      "input"_a, "dim"_a, "sorted"_a, "return_inverse"_a, "return_counts"_a);
}
