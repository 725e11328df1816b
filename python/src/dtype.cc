// kiln.dtype objects (kiln.float32, ...), conversions from NumPy/torch/strings,
// and the promotion functions promote_types, result_type, can_cast.
#include <array>
#include <string>

#include "bind_util.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace kiln::py {
namespace {

// Singletons, created once by init_dtype. Owned by the module (attribute _dtypes);
// these are borrowed pointers, valid while the module lives.
std::array<PyObject*, kNumDTypes> g_dtype_objects{};
std::array<PyObject*, kNumDTypes> g_numpy_dtypes{};

bool is_ml_dtypes_type(DType d) { return d == DType::BFloat16 || is_fp8(d); }

// kiln.can_cast as torch.can_cast: no float -> integer, no complex -> real, and only
// bool converts to bool.
bool can_cast_impl(DType from, DType to) {
  if (is_complex(from) && !is_complex(to)) return false;
  if (is_floating(from) && is_integral(to, true)) return false;
  if (from != DType::Bool && to == DType::Bool) return false;
  return true;
}

}  // namespace

nb::object dtype_object(DType d) {
  PyObject* o = g_dtype_objects[size_t(d)];
  if (!o) throw NotImplementedError("[dtype] kiln dtypes are not initialized");
  return nb::borrow(o);
}

nb::object numpy_dtype(DType d) {
  PyObject*& slot = g_numpy_dtypes[size_t(d)];
  if (!slot) {
    nb::object dt;
    if (is_ml_dtypes_type(d)) {
      nb::module_ ml = nb::module_::import_("ml_dtypes");
      dt = nb::module_::import_("numpy").attr("dtype")(ml.attr(name(d)));
    } else {
      dt = nb::module_::import_("numpy").attr("dtype")(name(d));
    }
    slot = dt.release().ptr();
  }
  return nb::borrow(slot);
}

DType dtype_from_numpy(nb::handle np_dtype) {
  const std::string n = nb::cast<std::string>(np_dtype.attr("name"));
  if (!nb::cast<bool>(np_dtype.attr("isnative")))
    throw TypeError("[from_numpy] arrays with non-native byte order are not supported (dtype " +
                    nb::cast<std::string>(nb::str(np_dtype)) + "); convert with .astype(dtype.newbyteorder('='))");
  for (int i = 0; i < kNumDTypes; ++i)
    if (n == kDTypeTable[i].name) return DType(i);
  throw TypeError("[from_numpy] can't convert np.ndarray of type " + n +
                  ". The only supported types are: bool, uint8, int8, uint16, int16, uint32, int32, "
                  "uint64, int64, float16, bfloat16, float32, float64, float8_e4m3fn, float8_e5m2, "
                  "complex64 and complex128.");
}

DType to_dtype(nb::handle h) {
  if (nb::isinstance<PyDType>(h)) return nb::cast<PyDType&>(h).value;
  if (nb::isinstance<nb::str>(h)) {
    const std::string s(utf8(h, "dtype", "dtype name"));
    try {
      return dtype_from_name(s.rfind("kiln.", 0) == 0 ? s.substr(5) : s);
    } catch (const TypeError&) {
      // NumPy spellings ("f4", "<i8").
      try {
        return dtype_from_numpy(nb::module_::import_("numpy").attr("dtype")(h));
      } catch (...) {
        throw TypeError("[dtype] unknown dtype '" + s + "'");
      }
    }
  }
  if (h.ptr() == (PyObject*)&PyBool_Type) return DType::Bool;
  if (h.ptr() == (PyObject*)&PyLong_Type) return DType::Int64;
  if (h.ptr() == (PyObject*)&PyFloat_Type) return DType::Float64;
  if (h.ptr() == (PyObject*)&PyComplex_Type) return DType::Complex128;
  nb::handle tp = h.type();
  const std::string tp_name = py_str(nb::getattr(tp, "__name__", nb::str("")));
  const std::string tp_mod = py_str(nb::getattr(tp, "__module__", nb::str("")));
  if (tp_mod == "torch" && tp_name == "dtype") {
    std::string s = nb::cast<std::string>(nb::str(h));
    return dtype_from_name(s.substr(s.find('.') + 1));
  }
  // NumPy dtype instances, and NumPy/ml_dtypes scalar types (np.float32, ml_dtypes.bfloat16).
  nb::module_ np = nb::module_::import_("numpy");
  if (nb::isinstance(h, np.attr("dtype"))) return dtype_from_numpy(h);
  if (PyType_Check(h.ptr()) && PyObject_IsSubclass(h.ptr(), np.attr("generic").ptr()) == 1)
    return dtype_from_numpy(np.attr("dtype")(h));
  throw TypeError("[dtype] expected a kiln dtype, got " + py_repr(h));
}

std::optional<DType> to_optional_dtype(nb::handle h) {
  if (h.is_none()) return std::nullopt;
  return to_dtype(h);
}

void init_dtype(nb::module_& m) {
  nb::class_<PyDType>(m, "dtype", "A kiln element type (kiln.float32, kiln.bfloat16, ...).")
      .def("__repr__", [](const PyDType& d) { return std::string("kiln.") + name(d.value); })
      .def("__str__", [](const PyDType& d) { return std::string("kiln.") + name(d.value); })
      .def("__eq__", [](const PyDType& a, nb::handle b) -> nb::object {
        if (!nb::isinstance<PyDType>(b)) return nb::borrow(Py_NotImplemented);
        return nb::bool_(a.value == nb::cast<PyDType&>(b).value);
      })
      .def("__ne__", [](const PyDType& a, nb::handle b) -> nb::object {
        if (!nb::isinstance<PyDType>(b)) return nb::borrow(Py_NotImplemented);
        return nb::bool_(a.value != nb::cast<PyDType&>(b).value);
      })
      .def("__hash__", [](const PyDType& d) { return int(d.value) + 0x6b696c6e; })
      .def("__reduce__", [](const PyDType& d) { return std::string(name(d.value)); })
      .def_prop_ro("itemsize", [](const PyDType& d) { return int(itemsize(d.value)); })
      .def_prop_ro("name", [](const PyDType& d) { return std::string(name(d.value)); })
      .def_prop_ro("is_floating_point", [](const PyDType& d) { return is_floating(d.value); })
      .def_prop_ro("is_complex", [](const PyDType& d) { return is_complex(d.value); })
      .def_prop_ro("is_signed", [](const PyDType& d) { return is_signed(d.value); })
      .def("to_numpy", [](const PyDType& d) { return numpy_dtype(d.value); },
           "The matching NumPy dtype (ml_dtypes for bfloat16 and FP8).");

  nb::list table;
  for (int i = 0; i < kNumDTypes; ++i) {
    nb::object o = nb::cast(PyDType{DType(i)});
    g_dtype_objects[size_t(i)] = o.ptr();
    m.attr(kDTypeTable[i].name) = o;
    table.append(o);
  }
  m.attr("_dtypes") = nb::tuple(table);
  // torch's aliases.
  const std::pair<const char*, DType> aliases[] = {
      {"half", DType::Float16},  {"float", DType::Float32},      {"double", DType::Float64},
      {"short", DType::Int16},   {"int", DType::Int32},          {"long", DType::Int64},
      {"cfloat", DType::Complex64}, {"cdouble", DType::Complex128},
  };
  for (const auto& [alias, d] : aliases) m.attr(alias) = dtype_object(d);

  m.def("promote_types", [](DType a, DType b) { return promote_types(a, b); }, "type1"_a, "type2"_a,
        "The smallest dtype both convert to safely (torch.promote_types). FP8 mixing raises TypeError.");
  m.def("result_type", [](nb::handle a, nb::handle b) {
        ResultType rt;
        add_operand(rt, to_operand(a));
        add_operand(rt, to_operand(b));
        return rt.get();
      }, "tensor1"_a, "tensor2"_a,
      "The dtype an op on the two operands (tensors or numbers) computes in (torch.result_type).");
  m.def("can_cast", [](DType from, DType to) { return can_cast_impl(from, to); }, "from_"_a, "to"_a,
        "Whether torch's casting rules allow from_ -> to in an in-place or out= op.");
}

}  // namespace kiln::py
