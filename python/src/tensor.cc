// kiln.Tensor: attributes, element access, views and copies. Factories live in
// factories.cc, NumPy/DLPack interop in interop.cc, ops in the other binding files.
#include <nanobind/stl/tuple.h>

#include <algorithm>
#include <string>

#include "bind_util.h"
#include "memory_format.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace kiln::py {

void init_dtype(nb::module_& m);
void init_device(nb::module_& m);  // device.cc
void init_factories(nb::module_& m);
void init_interop(nb::module_& m, nb::class_<Tensor>& cls);
void init_autograd(nb::module_& m, nb::class_<Tensor>& cls);  // autograd.cc
void init_runtime(nb::module_& m);

namespace {

nb::tuple to_tuple(std::span<const int64_t> v) {
  nb::list l;
  for (int64_t x : v) l.append(x);
  return nb::tuple(l);
}

// One element at p (of dtype d) as a Python number; uint64 keeps its full range.
nb::object element_object(const char* p, DType d) {
  return dispatch<kAllSet>(d, "item", [&]<typename T>() -> nb::object {
    T v;
    std::memcpy(&v, p, sizeof(T));
    if constexpr (std::is_same_v<T, bool>) return nb::bool_(v);
    else if constexpr (is_complex_v<T>) return nb::steal(PyComplex_FromDoubles(double(v.real()), double(v.imag())));
    else if constexpr (std::is_integral_v<T> && std::is_unsigned_v<T>) return nb::steal(PyLong_FromUnsignedLongLong(v));
    else if constexpr (std::is_integral_v<T>) return nb::steal(PyLong_FromLongLong(v));
    else return nb::float_(double(compute_t<T>(v)));
  });
}

nb::object tolist_rec(const char*& p, const Tensor& t, int dim) {
  if (dim == t.dim()) {
    nb::object o = element_object(p, t.dtype());
    p += t.itemsize();
    return o;
  }
  nb::list l;
  for (int64_t i = 0; i < t.size(dim); ++i) l.append(tolist_rec(p, t, dim + 1));
  return l;
}

nb::object item(const Tensor& t) {
  if (t.numel() != 1)
    throw ValueError("[item] a Tensor with " + std::to_string(t.numel()) +
                     " elements cannot be converted to a scalar");
  return element_object(static_cast<const char*>(t.data_ptr()), t.dtype());
}

// t.to(...) as torch: to(dtype), to(device), to(device, dtype), to(other), with
// dtype=/device=/copy= keywords. To the tensor's own device (and dtype) it is the
// tensor itself; to a device this build lacks it raises NotImplementedError.
Tensor to_impl(const Tensor& t, nb::args args, nb::kwargs kwargs) {
  std::optional<DType> dtype;
  std::optional<Device> device;
  bool copy = false;
  MemoryFormat format = MemoryFormat::Preserve;
  for (nb::handle a : args) {
    if (is_tensor(a)) {
      const Tensor& other = nb::cast<const Tensor&>(a);
      dtype = other.dtype();
      device = other.device();
    } else if (nb::isinstance<PyDType>(a)) {
      dtype = to_dtype(a);
    } else if (nb::isinstance<Device>(a)) {
      device = nb::cast<Device>(a);
    } else if (a.is_none()) {
      continue;
    } else {
      if (nb::isinstance<nb::str>(a)) {
        // "cpu", "cuda:1": a device, whatever the dtype names are.
        const std::string_view s = utf8(a, "to", "argument");
        const std::string_view kind = s.substr(0, s.find(':'));
        if (kind == "cpu" || kind == "cuda") {
          device = to_optional_device(a, "to");
          continue;
        }
      }
      try {
        dtype = to_dtype(a);
      } catch (const TypeError&) {
        device = to_optional_device(a, "to");
      }
    }
  }
  for (auto [k, v] : kwargs) {
    const std::string key(utf8(k, "to", "keyword"));
    if (key == "dtype") dtype = to_optional_dtype(v);
    else if (key == "device") device = to_optional_device(v, "to");
    else if (key == "copy") copy = nb::cast<bool>(v);
    else if (key == "memory_format") format = to_memory_format(v, "to");
    else if (key == "non_blocking") continue;
    else throw TypeError("[to] unexpected keyword argument '" + key + "'");
  }
  const Tensor on = device ? t.to(*device) : t;  // t itself on its own device
  const DType d = dtype.value_or(t.dtype());
  // memory_format= lays out a copy that is made anyway, or makes one when t is
  // not laid out so (torch's rule).
  if (d == t.dtype()) {
    if (copy && on.storage() == t.storage()) return clone(t, format);
    return to(on, d, format);
  }
  return to(on, d, format);
}

// `self` when r is the very view self wraps (t.to("cpu") is t, as torch), else r.
nb::object self_when_same(nb::handle self, Tensor r) {
  const Tensor& t = nb::cast<const Tensor&>(self);
  if (r.storage() == t.storage() && r.dtype() == t.dtype() && r.offset() == t.offset() &&
      std::ranges::equal(r.shape(), t.shape()) && std::ranges::equal(r.strides(), t.strides()))
    return nb::borrow(self);
  return nb::cast(std::move(r));
}

Tensor& fill_impl(Tensor& t, nb::handle value) {
  if (is_tensor(value)) {
    const Tensor& v = nb::cast<const Tensor&>(value);
    if (v.dim() != 0)
      throw ValueError("[fill_] only supports 0-dimension value tensor but got tensor with " +
                       std::to_string(v.dim()) + " dimensions");
    return t.fill_(v.item());
  }
  const Scalar v = to_scalar(value, "fill_");
  check_fits(v, t.dtype(), "fill_");
  return t.fill_(v);
}

// kiln.Tensor(...) as torch.Tensor(...): no arguments -> an empty float32 tensor;
// ints -> an uninitialized float32 tensor of that size; a kiln.Tensor -> the same
// tensor (sharing storage); data (nested sequences of numbers, a NumPy array) ->
// a float32 copy. kiln.tensor(data, dtype=...) infers or takes the dtype.
Tensor construct(const nb::args& args, const nb::kwargs& kwargs) {
  for (auto [k, v] : kwargs) {
    const std::string_view key = utf8(k, "Tensor", "keyword");
    if (key == "device") {
      check_device(v, "Tensor");
      continue;
    }
    throw TypeError("[Tensor] unexpected keyword argument '" + std::string(key) +
                    "'; use kiln.tensor(data, dtype=...) to choose the dtype");
  }
  if (args.size() == 0) return empty({0}, kDefaultFloat);
  nb::handle a0 = args[0];
  if (args.size() == 1 && is_tensor(a0)) return nb::cast<const Tensor&>(a0);
  if (PyIndex_Check(a0.ptr()) && !PyBool_Check(a0.ptr()) && !is_tensor(a0) && !is_numpy_array(a0))
    return empty_checked("Tensor", shape_from_args(args, "Tensor"), kDefaultFloat);
  if (args.size() == 1 && (PySequence_Check(a0.ptr()) || is_numpy_array(a0)) && !PyUnicode_Check(a0.ptr()) &&
      !PyBytes_Check(a0.ptr()))
    return tensor_from_data(a0, kDefaultFloat);
  throw TypeError(
      "[Tensor] expected data (a nested sequence of numbers or a NumPy array), sizes (ints) or a "
      "kiln.Tensor, got " +
      py_type_name(a0) + (args.size() > 1 ? " and more" : "") +
      "; use kiln.tensor(data, dtype=...) for a number or another dtype");
}

}  // namespace

void init_tensor(nb::module_& m) {
  init_dtype(m);
  init_device(m);
  nb::class_<Tensor> cls(m, "Tensor", "A strided view of typed CPU memory (PyTorch's torch.Tensor).");
  cls.def("__init__",
          [](Tensor* self, nb::args args, nb::kwargs kwargs) { new (self) Tensor(construct(args, kwargs)); },
          "args"_a, "kwargs"_a,
          "kiln.Tensor(data) copies data as float32, kiln.Tensor(2, 3) is an uninitialized float32 tensor, "
          "kiln.Tensor(t) is t (as torch.Tensor); kiln.tensor(data, dtype=...) infers or takes the dtype.")
      // ---- attributes ----
      .def_prop_ro("dtype", &Tensor::dtype)
      .def_prop_ro("shape", [](const Tensor& t) { return to_tuple(t.shape()); })
      .def_prop_ro("strides", [](const Tensor& t) { return to_tuple(t.strides()); },
                   "Strides in elements (as torch's stride()), not bytes.")
      .def_prop_ro("device", &Tensor::device)
      .def_prop_ro("ndim", &Tensor::dim)
      .def_prop_ro("nbytes", [](const Tensor& t) { return t.nbytes(); })
      .def_prop_ro("itemsize", [](const Tensor& t) { return t.itemsize(); })
      .def_prop_ro("is_cpu", [](const Tensor& t) { return t.device().is_cpu(); })
      .def_prop_ro("is_cuda", [](const Tensor& t) { return t.device().is_cuda(); })
      .def_prop_ro("T", [](const Tensor& t) {
        std::vector<int> dims(size_t(t.dim()));
        for (int i = 0; i < t.dim(); ++i) dims[size_t(i)] = t.dim() - 1 - i;
        return t.permute(dims);
      })
      .def_prop_ro("mT", [](const Tensor& t) {
        if (t.dim() < 2) throw ValueError("[mT] tensor.mT is only supported on matrices or batches of matrices; got " + std::to_string(t.dim()) + "-D tensor");
        return t.transpose(-2, -1);
      })
      .def("dim", &Tensor::dim)
      .def("ndimension", &Tensor::dim)
      .def("numel", &Tensor::numel)
      .def("nelement", &Tensor::numel)
      .def("size", [](const Tensor& t, std::optional<int> d) -> nb::object {
        if (d) return nb::int_(t.size(*d));
        return to_tuple(t.shape());
      }, "dim"_a = nb::none())
      .def("stride", [](const Tensor& t, std::optional<int> d) -> nb::object {
        if (d) return nb::int_(t.stride(*d));
        return to_tuple(t.strides());
      }, "dim"_a = nb::none())
      .def("storage_offset", &Tensor::offset)
      .def("element_size", [](const Tensor& t) { return t.itemsize(); })
      .def("is_contiguous", [](const Tensor& t, nb::handle f) {
        return is_contiguous(t, to_memory_format(f, "is_contiguous", MemoryFormat::Contiguous));
      }, "memory_format"_a = nb::none())
      .def("is_floating_point", [](const Tensor& t) { return is_floating(t.dtype()); })
      .def("is_complex", [](const Tensor& t) { return is_complex(t.dtype()); })
      .def("data_ptr", [](const Tensor& t) { return reinterpret_cast<uintptr_t>(t.data_ptr()); })
      .def("__len__", [](const Tensor& t) {
        if (t.dim() == 0) throw nb::type_error("len() of a 0-d tensor");
        return t.size(0);
      })
      .def("__repr__", &Tensor::repr)
      .def("__str__", &Tensor::repr)
      // ---- elements ----
      .def("item", &item)
      .def("tolist", [](const Tensor& t) {
        const Tensor c = t.contiguous();
        const char* p = static_cast<const char*>(c.data_ptr());
        return tolist_rec(p, c, 0);
      })
      .def("__bool__", [](const Tensor& t) {
        if (t.numel() != 1)
          throw ValueError("[__bool__] Boolean value of Tensor with more than one value is ambiguous");
        return t.item().to<bool>();
      })
      .def("__float__", [](const Tensor& t) { return nb::float_(item(t)); })
      .def("__int__", [](const Tensor& t) { return nb::int_(item(t)); })
      .def("__complex__", [](const Tensor& t) {
        const complex128 c = t.item().to_complex();
        return nb::steal(PyComplex_FromDoubles(c.real(), c.imag()));
      })
      .def("__index__", [](const Tensor& t) {
        if (!is_integral(t.dtype(), true) || t.numel() != 1)
          throw nb::type_error("only integer tensors of a single element can be converted to an index");
        return item(t);
      })
      // ---- views ----
      .def("view", [](const Tensor& t, nb::args shape) { return t.view(shape_from_args(shape, "view")); },
           "shape"_a)
      .def("reshape",
           [](const Tensor& t, nb::args shape) { return t.reshape(shape_from_args(shape, "reshape")); },
           "shape"_a)
      .def("view_as", [](const Tensor& t, const Tensor& o) { return t.view(o.sizes()); }, "other"_a)
      .def("reshape_as", [](const Tensor& t, const Tensor& o) { return t.reshape(o.sizes()); }, "other"_a)
      .def("permute",
           [](const Tensor& t, nb::args dims) { return t.permute(dims_from_args(dims, "permute")); },
           "dims"_a)
      .def("transpose", &Tensor::transpose, "dim0"_a, "dim1"_a)
      .def("swapaxes", &Tensor::transpose, "axis0"_a, "axis1"_a)
      .def("t", &Tensor::t)
      .def("narrow", &Tensor::narrow, "dim"_a, "start"_a, "length"_a)
      .def("select", &Tensor::select, "dim"_a, "index"_a)
      .def("squeeze", [](const Tensor& t, nb::handle dim) {
        auto dims = to_dims(dim, "squeeze");
        if (!dims) return t.squeeze();
        // Squeeze the listed dims, highest first so earlier indices stay valid.
        std::vector<int> w;
        for (int d : *dims) w.push_back(wrap_dim(d, t.dim(), "squeeze"));
        std::sort(w.rbegin(), w.rend());
        if (std::adjacent_find(w.begin(), w.end()) != w.end())
          throw ValueError("[squeeze] a dim appears multiple times in the list of dims");
        Tensor r = t;
        for (int d : w) r = r.squeeze(d);
        return r;
      }, "dim"_a = nb::none())
      .def("unsqueeze", &Tensor::unsqueeze, "dim"_a)
      .def("expand",
           [](const Tensor& t, nb::args sizes) { return t.expand(shape_from_args(sizes, "expand")); },
           "size"_a)
      .def("expand_as", [](const Tensor& t, const Tensor& o) { return t.expand(o.sizes()); }, "other"_a)
      .def("as_strided", [](const Tensor& t, nb::handle size, nb::handle stride, std::optional<int64_t> offset) {
        return t.as_strided(to_shape(size, "as_strided"), to_shape(stride, "as_strided", "stride"),
                            offset.value_or(t.offset()));
      }, "size"_a, "stride"_a, "storage_offset"_a = nb::none())
      .def("flatten", &Tensor::flatten, "start_dim"_a = 0, "end_dim"_a = -1)
      .def("ravel", [](const Tensor& t) { return t.reshape({-1}); })
      // ---- copies and conversions ----
      .def("contiguous", [](const Tensor& t, nb::handle f) {
        return contiguous(t, to_memory_format(f, "contiguous", MemoryFormat::Contiguous));
      }, "memory_format"_a = nb::none())
      .def("clone", [](const Tensor& t, nb::handle f) {
        return clone(t, to_memory_format(f, "clone"));
      }, "memory_format"_a = nb::none())
      .def("to", [](nb::handle self, nb::args args, nb::kwargs kwargs) {
        return self_when_same(self, to_impl(nb::cast<const Tensor&>(self), args, kwargs));
      }, "args"_a, "kwargs"_a, "A copy on another device or dtype; the tensor itself when it is already there.")
      .def("type", [](const Tensor& t, nb::handle dtype) -> nb::object {
        if (dtype.is_none()) return nb::str(("kiln." + std::string(name(t.dtype()))).c_str());
        return nb::cast(t.to(to_dtype(dtype)));
      }, "dtype"_a = nb::none())
      .def("type_as", [](const Tensor& t, const Tensor& o) { return t.to(o.dtype()); }, "other"_a)
      .def("cpu", [](nb::handle self) { return self_when_same(self, nb::cast<const Tensor&>(self).cpu()); },
           "The tensor on the CPU (itself when it is there).")
      .def("copy_", [](Tensor& t, nb::handle src) -> Tensor& { return t.copy_(to_tensor(src)); },
           "src"_a, nb::rv_policy::reference)
      .def("fill_", &fill_impl, "value"_a, nb::rv_policy::reference)
      .def("zero_", [](Tensor& t) -> Tensor& { return t.fill_(Scalar(int64_t(0))); }, nb::rv_policy::reference);

  // dtype shortcuts: t.float(), t.half(), ...
  const std::pair<const char*, DType> shortcuts[] = {
      {"bool", DType::Bool},      {"byte", DType::UInt8},      {"char", DType::Int8},
      {"short", DType::Int16},    {"int", DType::Int32},       {"long", DType::Int64},
      {"half", DType::Float16},   {"bfloat16", DType::BFloat16}, {"float", DType::Float32},
      {"double", DType::Float64}, {"cfloat", DType::Complex64}, {"cdouble", DType::Complex128},
  };
  for (const auto& [n, d] : shortcuts) {
    const DType dt = d;
    cls.def(n, [dt](const Tensor& t) { return t.to(dt); });
  }

  init_factories(m);
  init_interop(m, cls);
  init_autograd(m, cls);
  init_runtime(m);
}

}  // namespace kiln::py

// module.cc declares init_tensor at global scope.
void init_tensor(nanobind::module_& m) { kiln::py::init_tensor(m); }
