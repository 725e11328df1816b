// Python argument -> kiln value conversions shared by every binding file
// (declared in bind_util.h): numbers, nested lists, shapes, dims, operands.
#include <climits>
#include <string>

#include "bind_util.h"
#include "kiln/out.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace kiln::py {
namespace {

// The kind of a Python number: 0 bool, 1 integer, 2 float, 3 complex; -1 when h is
// not a number. NumPy and ml_dtypes scalars report their dtype's kind.
int number_kind(nb::handle h) {
  PyObject* o = h.ptr();
  if (PyBool_Check(o)) return 0;
  if (PyLong_Check(o)) return 1;
  if (PyFloat_Check(o)) return 2;
  if (PyComplex_Check(o)) return 3;
  static nb::handle np_generic = nb::module_::import_("numpy").attr("generic").inc_ref();
  if (PyObject_IsInstance(o, np_generic.ptr()) == 1) {
    const std::string kind = nb::cast<std::string>(h.attr("dtype").attr("kind"));
    if (kind == "b") return 0;
    if (kind == "i" || kind == "u") return 1;
    if (kind == "f") return 2;
    if (kind == "c") return 3;
    if (kind == "V" && PyObject_HasAttrString(o, "__float__")) return 2;  // ml_dtypes scalars
    return -1;
  }
  return -1;
}

int dtype_kind(DType d) {
  if (d == DType::Bool) return 0;
  if (is_integral(d, false)) return 1;
  return is_complex(d) ? 3 : 2;
}

DType default_dtype_for_kind(int kind) {
  switch (kind) {
    case 0: return DType::Bool;
    case 1: return DType::Int64;
    case 3: return kDefaultComplex;
    default: return kDefaultFloat;
  }
}

bool is_sequence(nb::handle h) {
  return PyList_Check(h.ptr()) || PyTuple_Check(h.ptr()) || is_numpy_array(h);
}

// Walks nested sequences: fixes the shape from the first element at each depth,
// checks every other element against it, and collects the leaves in order.
struct ListScan {
  Shape shape;
  std::vector<nb::object> leaves;
  int kind = -1;
};

void scan(nb::handle h, size_t depth, ListScan& s) {
  if (is_sequence(h) && !(is_numpy_array(h) && nb::len(nb::object(h.attr("shape"))) == 0)) {
    const size_t n = nb::len(h);
    if (depth == s.shape.size()) {
      if (!s.leaves.empty())
        throw ValueError("[tensor] expected a number at depth " + std::to_string(depth) + ", got a sequence");
      s.shape.push_back(int64_t(n));
      if (s.shape.size() > size_t(kMaxDims))
        throw ValueError("[tensor] at most " + std::to_string(kMaxDims) + " dims are supported");
    } else if (depth > s.shape.size() || s.shape[depth] != int64_t(n)) {
      throw ValueError("[tensor] expected sequence of length " +
                       std::to_string(depth < s.shape.size() ? s.shape[depth] : 0) + " at dim " +
                       std::to_string(depth) + " (got " + std::to_string(n) + ")");
    }
    nb::object seq = nb::borrow(h);
    for (size_t i = 0; i < n; ++i) scan(seq[i], depth + 1, s);
    return;
  }
  // A leaf must sit at the full depth (the first leaf fixes it).
  if (depth != s.shape.size())
    throw ValueError("[tensor] ragged nested sequence: a number at depth " + std::to_string(depth) +
                     " where sequences of depth " + std::to_string(s.shape.size()) + " were seen");
  int k;
  if (is_tensor(h)) {
    const Tensor& t = nb::cast<const Tensor&>(h);
    if (t.numel() != 1)
      throw ValueError("[tensor] only one-element tensors can be converted to Python scalars, got shape " +
                       t.shape_str());
    k = dtype_kind(t.dtype());
  } else {
    k = number_kind(h);
    if (k < 0) {
      if (is_numpy_array(h)) {  // 0-d array
        k = dtype_kind(dtype_from_numpy(h.attr("dtype")));
      } else {
        throw TypeError("[tensor] could not convert an element of type " + py_type_name(h) + " to a number");
      }
    }
  }
  s.kind = std::max(s.kind, k);
  s.leaves.push_back(nb::borrow(h));
}

Scalar leaf_scalar(nb::handle h) {
  if (is_tensor(h)) return nb::cast<const Tensor&>(h).item();
  if (is_numpy_array(h)) return to_scalar(h.attr("item")(), "tensor");
  return to_scalar(h, "tensor");
}

}  // namespace

bool is_tensor(nb::handle h) { return nb::isinstance<Tensor>(h); }

bool is_number(nb::handle h) { return number_kind(h) >= 0; }

bool is_numpy_array(nb::handle h) {
  static nb::handle nd = nb::module_::import_("numpy").attr("ndarray").inc_ref();
  return PyObject_IsInstance(h.ptr(), nd.ptr()) == 1;
}

Scalar to_scalar(nb::handle h, const char* op) {
  PyObject* o = h.ptr();
  switch (number_kind(h)) {
    case 0: return Scalar(PyObject_IsTrue(o) == 1);
    case 1: {
      nb::object idx = nb::steal(PyNumber_Index(o));
      if (!idx.is_valid()) throw nb::python_error();
      int overflow = 0;
      const long long v = PyLong_AsLongLongAndOverflow(idx.ptr(), &overflow);
      if (overflow == 0) return Scalar(int64_t(v));
      if (overflow > 0) {
        const unsigned long long u = PyLong_AsUnsignedLongLong(idx.ptr());
        if (!PyErr_Occurred()) return Scalar(uint64_t(u));
        PyErr_Clear();
      }
      // torch's argument parser raises OverflowError here too (int too big to convert).
      throw OverflowError(std::string("[") + op + "] Python integer " + py_str(idx) +
                          " does not fit int64 or uint64");
    }
    case 2: {
      const double v = PyFloat_AsDouble(o);
      if (v == -1.0 && PyErr_Occurred()) throw nb::python_error();
      return Scalar(v);
    }
    case 3: {
      const Py_complex c = PyComplex_AsCComplex(o);
      if (c.real == -1.0 && PyErr_Occurred()) throw nb::python_error();
      return Scalar(complex128(c.real, c.imag));
    }
    default:
      throw TypeError(std::string("[") + op + "] expected a number (bool, int, float or complex), got " +
                      py_type_name(h));
  }
}

void check_fits(const Scalar& v, DType d, const char* op, const char* what) {
  // A complex value into a real dtype is a TypeError, as kiln's index_put_ / masked_fill_
  // have it (torch calls it an overflow).
  if (v.is_complex() && !is_complex(d) && d != DType::Bool && v.to_complex().imag() != 0)
    throw TypeError(std::string("[") + op + "] cannot convert the complex " + what + " " + v.str() + " to " +
                    name(d));
  if (!v.fits(d))
    throw OverflowError(std::string("[") + op + "] " + what + " " + v.str() + " cannot be converted to " +
                        name(d) + " without overflow");
}

int64_t to_int64(nb::handle h, const char* op, const char* what) {
  PyObject* o = h.ptr();
  if (!PyIndex_Check(o) || PyBool_Check(o) || is_tensor(h))
    throw TypeError(std::string("[") + op + "] " + what + " must be an int, got " + py_type_name(h));
  nb::object idx = nb::steal(PyNumber_Index(o));
  if (!idx.is_valid()) throw nb::python_error();
  int overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(idx.ptr(), &overflow);
  if (overflow != 0)
    throw OverflowError(std::string("[") + op + "] " + what + " " + py_str(idx) + " does not fit int64");
  if (v == -1 && PyErr_Occurred()) throw nb::python_error();
  return int64_t(v);
}

nb::object scalar_to_python(const Scalar& s) {
  switch (s.kind()) {
    case Scalar::Kind::Bool: return nb::bool_(s.to<bool>());
    case Scalar::Kind::Int: return nb::int_(s.to_int64());
    case Scalar::Kind::Float: return nb::float_(s.to_double());
    default: {
      const complex128 c = s.to_complex();
      return nb::steal(PyComplex_FromDoubles(c.real(), c.imag()));
    }
  }
}

Tensor tensor_from_data(nb::handle data, std::optional<DType> dtype) {
  if (is_tensor(data)) {
    const Tensor& t = nb::cast<const Tensor&>(data);
    return dtype && *dtype != t.dtype() ? t.to(*dtype) : t.clone();
  }
  if (is_numpy_array(data)) {
    nb::object a = nb::borrow(data);
    // Copy into a native-order contiguous array first: handles negative strides and
    // byte-swapped data.
    nb::object np = nb::module_::import_("numpy");
    nb::object dt = a.attr("dtype");
    if (!nb::cast<bool>(dt.attr("isnative"))) dt = dt.attr("newbyteorder")("=");
    // np.array, not ascontiguousarray: the latter turns a 0-d array into 1-d.
    a = np.attr("array")(a, "dtype"_a = dt, "order"_a = "C");
    Tensor view = from_numpy(a);
    return dtype && *dtype != view.dtype() ? view.to(*dtype) : view.clone();
  }
  ListScan s;
  scan(data, 0, s);
  // An empty sequence is float32, as torch.tensor([]).
  const DType d = dtype ? *dtype : default_dtype_for_kind(s.kind < 0 ? 2 : s.kind);
  // Every element is converted (and range-checked) before the output is allocated.
  std::vector<Scalar> values;
  values.reserve(s.leaves.size());
  for (nb::handle leaf : s.leaves) {
    values.push_back(leaf_scalar(leaf));
    const Scalar& v = values.back();
    if (!dtype && d == DType::Int64 && v.above_int64())
      throw OverflowError("[tensor] " + v.str() + " does not fit int64; pass dtype=kiln.uint64");
    // As torch.tensor: integer dtypes are range-checked, float dtypes round (to inf).
    if (is_integral(d, false)) check_fits(v, d, "tensor", "value");
  }
  Tensor out = empty(s.shape, d);
  dispatch<kAllSet>(d, "tensor", [&]<typename T>() {
    T* p = static_cast<T*>(out.data_ptr());
    for (size_t i = 0; i < values.size(); ++i) p[i] = values[i].template to<T>();
  });
  return out;
}

Tensor to_tensor(nb::handle h) {
  if (is_tensor(h)) return nb::cast<const Tensor&>(h);
  if (is_numpy_array(h)) {
    try {
      return from_numpy(h);
    } catch (const ValueError&) {
      return tensor_from_data(h, std::nullopt);  // negative or odd strides: copy
    } catch (const TypeError&) {
      return tensor_from_data(h, std::nullopt);  // byte-swapped: copy
    }
  }
  return tensor_from_data(h, std::nullopt);
}

Tensor out_tensor(nb::handle out, const char* op) {
  if (out.is_none()) return Tensor();
  if (!is_tensor(out)) throw TypeError(std::string("[") + op + "] expected a kiln.Tensor for out=");
  return nb::cast<const Tensor&>(out);
}

nb::object result_or_out(const char* op, Tensor result, nb::handle out) {
  if (out.is_none()) return nb::cast(std::move(result));
  write_out(op, result, out_tensor(out, op));
  return nb::borrow(out);
}

Operand to_operand(nb::handle h, const char* op) {
  if (is_tensor(h)) return nb::cast<const Tensor&>(h);
  if (is_number(h)) return to_scalar(h, op);
  return to_tensor(h);
}

void add_operand(ResultType& rt, const Operand& op) {
  if (const Tensor* t = std::get_if<Tensor>(&op)) {
    rt.add(t->dtype(), t->dim() == 0 ? Priority::ZeroDim : Priority::Dimensioned);
  } else {
    rt.add(std::get<Scalar>(op).promotion_dtype(), Priority::Scalar);
  }
}

Tensor operand_tensor(const Operand& op, DType d) {
  if (const Tensor* t = std::get_if<Tensor>(&op)) return *t;
  return scalar_tensor(std::get<Scalar>(op), d);
}

int to_dim(nb::handle d, const char* op) {
  if (!PyIndex_Check(d.ptr()) || PyBool_Check(d.ptr()) || is_tensor(d))
    throw TypeError(std::string("[") + op + "] dim must be an int, got " + py_repr(d));
  nb::object idx = nb::steal(PyNumber_Index(d.ptr()));
  if (!idx.is_valid()) throw nb::python_error();
  int overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(idx.ptr(), &overflow);
  if (overflow != 0 || v < INT_MIN || v > INT_MAX)
    throw IndexError(std::string("[") + op + "] dimension " + py_str(idx) + " is out of range");
  return int(v);
}

namespace {

// One size (or stride): an int that fits int64.
int64_t to_size(nb::handle e, const char* op, const char* what) {
  if (!PyIndex_Check(e.ptr()) || PyBool_Check(e.ptr()) || is_tensor(e))
    throw TypeError(std::string("[") + op + "] expected a sequence of ints for the " + what +
                    ", got an element " + py_repr(e));
  return to_int64(e, op, what);
}

}  // namespace

std::optional<std::vector<int>> to_dims(nb::handle h, const char* op) {
  if (h.is_none()) return std::nullopt;
  std::vector<int> dims;
  if (PyIndex_Check(h.ptr()) && !PyBool_Check(h.ptr())) {
    dims.push_back(to_dim(h, op));
    return dims;
  }
  if (PyList_Check(h.ptr()) || PyTuple_Check(h.ptr())) {
    for (nb::handle d : h) dims.push_back(to_dim(d, op));
    return dims;
  }
  throw TypeError(std::string("[") + op + "] expected None, an int or a tuple of ints for dim, got " +
                  py_repr(h));
}

std::vector<int> dims_from_args(const nb::args& args, const char* op) {
  if (args.size() == 1 && !PyIndex_Check(args[0].ptr()))
    return to_dims(args[0], op).value_or(std::vector<int>{});
  std::vector<int> dims;
  for (nb::handle a : args) dims.push_back(to_dim(a, op));
  return dims;
}

Shape to_shape(nb::handle h, const char* op, const char* what) {
  Shape shape;
  if (PyIndex_Check(h.ptr()) && !PyBool_Check(h.ptr()) && !is_tensor(h)) {
    shape.push_back(to_int64(h, op, what));
    return shape;
  }
  if (PyList_Check(h.ptr()) || PyTuple_Check(h.ptr()) || PySequence_Check(h.ptr())) {
    const size_t n = nb::len(h);
    nb::object seq = nb::borrow(h);
    for (size_t i = 0; i < n; ++i) shape.push_back(to_size(seq[i], op, what));
    return shape;
  }
  throw TypeError(std::string("[") + op + "] expected an int or a sequence of ints for the " + what +
                  ", got " + py_repr(h));
}

Shape shape_from_args(const nb::args& args, const char* op) {
  if (args.size() == 1 && !PyIndex_Check(args[0].ptr())) return to_shape(args[0], op);
  Shape shape;
  for (nb::handle a : args) {
    if (!PyIndex_Check(a.ptr()) || PyBool_Check(a.ptr()))
      throw TypeError(std::string("[") + op + "] expected ints or one sequence of ints for the size, got " +
                      py_repr(a));
    shape.push_back(to_int64(a, op, "size"));
  }
  return shape;
}

void def_tensor_method(nb::module_& m, const char* method, const char* function) {
  nb::object fn = m.attr(function ? function : method);
  nb::handle cls = nb::type<Tensor>();
  nb::object meth = nb::cpp_function(
      [fn](nb::args args, nb::kwargs kwargs) { return fn(*args, **kwargs); }, nb::scope(cls),
      nb::name(method), nb::is_method());
  nb::setattr(cls, method, meth);
}

}  // namespace kiln::py
