// Zero-copy exchange with NumPy and DLPack.
//
//   kiln.from_numpy(a)      view of a NumPy array (ml_dtypes bfloat16/FP8 included); keeps a alive
//   t.numpy(), np.asarray(t) view of the tensor as a NumPy array; keeps the tensor's storage alive
//   kiln.from_dlpack(x)     view of any __dlpack__ producer (NumPy, torch, ...) on the CPU
//   t.__dlpack__()          DLPack capsule (versioned when asked); bfloat16 uses kDLBfloat, the
//                           FP8 types kDLFloat8_e4m3fn / kDLFloat8_e5m2 (DLPack >= 1.1 codes)
//
// Negative strides are refused (ValueError) rather than copied, as torch.from_numpy does:
// kiln views never step backwards. Shapes and strides from a producer go through from_blob,
// which refuses (ValueError) element counts and extents that overflow int64 or exceed the
// largest possible allocation; DLPack does not say how large the producer's buffer is, so a
// capsule's extent is trusted within that bound, as torch.from_dlpack does. Memory owned by
// Python is released under the GIL from whichever thread drops the last view.
#include <nanobind/ndarray.h>

#include "bind_util.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace kiln::py {
namespace {

namespace dl = nb::dlpack;

dl::dtype dl_dtype(DType d) {
  auto make = [](dl::dtype_code c, int bits) { return dl::dtype{uint8_t(c), uint8_t(bits), 1}; };
  const int bits = int(itemsize(d)) * 8;
  switch (info(d).kind) {
    case DKind::Bool: return make(dl::dtype_code::Bool, 8);
    case DKind::Unsigned: return make(dl::dtype_code::UInt, bits);
    case DKind::Signed: return make(dl::dtype_code::Int, bits);
    case DKind::Complex: return make(dl::dtype_code::Complex, bits);
    case DKind::Float8:
      return make(d == DType::Float8_e4m3fn ? dl::dtype_code::Float8_E4M3FN : dl::dtype_code::Float8_E5M2, 8);
    case DKind::Float:
      return make(d == DType::BFloat16 ? dl::dtype_code::Bfloat : dl::dtype_code::Float, bits);
  }
  return make(dl::dtype_code::UInt, bits);
}

std::optional<DType> dtype_from_dl(dl::dtype t) {
  if (t.lanes != 1) return std::nullopt;
  for (int i = 0; i < kNumDTypes; ++i) {
    const dl::dtype k = dl_dtype(DType(i));
    if (k.code == t.code && k.bits == t.bits) return DType(i);
  }
  return std::nullopt;
}

// A release callback owning `obj` (a Python reference, or a handle holding one), deleted
// under the GIL when the last view goes (from any thread), or with the callback when the
// view is never made (from_blob refused the shape). Skipped once the interpreter is gone
// (the process is exiting anyway).
template <typename T>
std::function<void()> release_under_gil(T* obj) {
  std::shared_ptr<T> hold(obj, [](T* p) {
    if (!Py_IsInitialized()) return;
    nb::gil_scoped_acquire gil;
    delete p;
  });
  return [hold]() mutable { hold.reset(); };
}

void check_non_negative(const Shape& strides, const char* op) {
  for (int64_t s : strides)
    if (s < 0)
      throw ValueError(std::string("[") + op +
                       "] at least one stride in the given array is negative, "
                       "and tensors with negative strides are not supported (use np.ascontiguousarray(a) "
                       "or kiln.tensor(a) to copy)");
}

// Strides in bytes -> elements; ValueError for negative or misaligned strides.
Shape element_strides(const Shape& byte_strides, size_t isz, const char* op) {
  check_non_negative(byte_strides, op);
  Shape out(byte_strides.size());
  for (size_t i = 0; i < byte_strides.size(); ++i) {
    if (byte_strides[i] % int64_t(isz) != 0)
      throw ValueError(std::string("[") + op + "] given array strides " + shape_to_string(byte_strides) +
                       " are not a multiple of the element byte size " + std::to_string(isz) +
                       "; copy the array first");
    out[i] = byte_strides[i] / int64_t(isz);
  }
  return out;
}

// DLPack's (device_type, device_id) for a kiln device: kDLCPU (1) with id 0,
// kDLCUDA (2) with the CUDA index.
struct DLDeviceRef {
  int type;
  int id;
};
DLDeviceRef dl_device(Device d) {
  if (d.is_cuda()) return {nb::device::cuda::value, d.has_index() ? d.index : 0};
  return {nb::device::cpu::value, 0};
}

// A nanobind ndarray describing t, owned by a capsule holding a copy of t (so the
// storage lives as long as any consumer holds the export).
template <typename Framework>
nb::ndarray<Framework> export_ndarray(const Tensor& t, dl::dtype dt) {
  auto* keep = new Tensor(t);
  nb::capsule owner(keep, [](void* p) noexcept { delete static_cast<Tensor*>(p); });
  size_t shape[kMaxDims];
  int64_t strides[kMaxDims];
  for (int i = 0; i < t.dim(); ++i) {
    shape[i] = size_t(t.shape()[size_t(i)]);
    strides[i] = t.strides()[size_t(i)];
  }
  const DLDeviceRef dev = dl_device(t.device());
  return nb::ndarray<Framework>(t.data_ptr(), size_t(t.dim()), shape, owner, strides, dt, dev.type, dev.id);
}

// t as a NumPy array sharing memory; bfloat16/FP8 go out as raw bits and are
// reinterpreted as the ml_dtypes dtype (NumPy's buffer protocol has no code for them).
nb::object to_numpy(const Tensor& t) {
  if (!t.device().is_cpu())
    throw TypeError("[numpy] cannot convert a tensor on " + t.device().str() +
                    " to NumPy; use Tensor.cpu() to copy it to host memory first");
  const DType d = t.dtype();
  const bool ml = d == DType::BFloat16 || is_fp8(d);
  const dl::dtype carrier = ml ? dl::dtype{uint8_t(dl::dtype_code::UInt), uint8_t(itemsize(d) * 8), 1}
                               : dl_dtype(d);
  nb::object a = export_ndarray<nb::numpy>(t, carrier).cast();
  if (ml) a = a.attr("view")(numpy_dtype(d));
  return a;
}

// The object whose __dlpack__/__dlpack_device__ implement the tensor's.
nb::object dlpack_exporter(const Tensor& t) {
  return export_ndarray<nb::array_api>(t, dl_dtype(t.dtype())).cast();
}

Tensor from_dlpack_impl(nb::handle x) {
  if (is_tensor(x)) return nb::cast<const Tensor&>(x);
  nb::ndarray<nb::ro> arr;
  if (!nb::try_cast(x, arr, /*convert=*/false)) {
    // NumPy refuses DLPack export of ml_dtypes arrays (bfloat16, FP8); read those directly.
    if (is_numpy_array(x)) return from_numpy(x);
    throw TypeError("[from_dlpack] expected an object with __dlpack__ (or a DLPack capsule), got " +
                    nb::cast<std::string>(nb::str(x.type().attr("__name__"))));
  }
  if (arr.device_type() == nb::device::cuda::value)  // raises: no CUDA in this build
    allocator_for(Device{DeviceKind::CUDA, int(arr.device_id())}, "from_dlpack");
  if (arr.device_type() != nb::device::cpu::value)
    throw NotImplementedError("[from_dlpack] only CPU tensors can be imported (DLPack device type " +
                              std::to_string(arr.device_type()) + ")");
  const auto d = dtype_from_dl(arr.dtype());
  if (!d)
    throw TypeError("[from_dlpack] unsupported DLPack dtype (code " + std::to_string(arr.dtype().code) +
                    ", bits " + std::to_string(arr.dtype().bits) + ", lanes " +
                    std::to_string(arr.dtype().lanes) + ")");
  if (arr.ndim() > size_t(kMaxDims))
    throw ValueError("[from_dlpack] at most " + std::to_string(kMaxDims) + " dims are supported, got " +
                     std::to_string(arr.ndim()));
  // DLPack strides count elements: used as they are (scaling them to bytes and back
  // could wrap); from_blob checks the sizes and the extent they span.
  Shape shape(arr.ndim()), strides(arr.ndim());
  for (size_t i = 0; i < arr.ndim(); ++i) {
    shape[i] = int64_t(arr.shape(i));
    strides[i] = arr.stride(i);
  }
  check_non_negative(strides, "from_dlpack");
  // The ndarray handle keeps the producer's buffer alive.
  return from_blob(const_cast<void*>(static_cast<const void*>(arr.data())), shape, strides, *d,
                   release_under_gil(new nb::ndarray<nb::ro>(arr)), "from_dlpack");
}

}  // namespace

Tensor from_numpy(nb::handle a) {
  if (!is_numpy_array(a))
    throw TypeError("[from_numpy] expected np.ndarray (got " +
                    nb::cast<std::string>(nb::str(a.type().attr("__name__"))) + ")");
  const DType d = dtype_from_numpy(a.attr("dtype"));
  const Shape shape = nb::cast<Shape>(a.attr("shape"));
  if (shape.size() > size_t(kMaxDims))
    throw ValueError("[from_numpy] at most " + std::to_string(kMaxDims) + " dims are supported, got " +
                     std::to_string(shape.size()));
  const Shape strides = element_strides(nb::cast<Shape>(a.attr("strides")), itemsize(d), "from_numpy");
  nb::object iface = a.attr("__array_interface__");
  const uintptr_t ptr = nb::cast<uintptr_t>(iface["data"][0]);
  if (!nb::cast<bool>(a.attr("flags").attr("writeable"))) {
    if (PyErr_WarnEx(PyExc_UserWarning,
                     "The given NumPy array is not writable; kiln shares its memory and writing to the "
                     "tensor is undefined behaviour. Copy the array (or use kiln.tensor) to avoid this.",
                     1) != 0)
      throw nb::python_error();  // warnings turned into errors
  }
  return from_blob(reinterpret_cast<void*>(ptr), shape, strides, d,
                   release_under_gil(new nb::object(nb::borrow(a))), "from_numpy");
}

void init_interop(nb::module_& m, nb::class_<Tensor>& tcls) {
  m.def("from_numpy", &from_numpy, "ndarray"_a,
        "A tensor sharing memory with a NumPy array (bfloat16/FP8 via ml_dtypes dtypes). The array "
        "stays alive while the tensor does. Negative strides raise ValueError.");
  m.def("from_dlpack", &from_dlpack_impl, "ext_tensor"_a,
        "A tensor sharing memory with any CPU DLPack producer (an object with __dlpack__, or a capsule).");

  tcls.def("numpy", [](const Tensor& t, bool force) { return to_numpy(force ? t.clone() : t); },
           nb::kw_only(), "force"_a = false,
           "A NumPy array sharing memory with the tensor (ml_dtypes dtypes for bfloat16 and FP8).")
      .def("__array__", [](const Tensor& t, nb::handle dtype, nb::handle copy) {
        nb::object a = to_numpy(t);
        if (!dtype.is_none()) {
          nb::object dt = nb::module_::import_("numpy").attr("dtype")(dtype);
          if (!nb::cast<bool>(dt.attr("__eq__")(a.attr("dtype"))))
            return a.attr("astype")(dt);
        }
        if (!copy.is_none() && nb::cast<bool>(copy)) return a.attr("copy")();
        return a;
      }, "dtype"_a = nb::none(), "copy"_a = nb::none())
      .def("__dlpack__", [](const Tensor& t, nb::handle stream, nb::handle max_version, nb::handle dl_device,
                            nb::handle copy) {
        const bool do_copy = !copy.is_none() && nb::cast<bool>(copy);
        nb::object exporter = dlpack_exporter(do_copy ? t.clone() : t);
        nb::kwargs kw;
        if (!max_version.is_none()) kw["max_version"] = max_version;
        if (!dl_device.is_none()) kw["dl_device"] = dl_device;
        return exporter.attr("__dlpack__")(**kw);
      }, nb::kw_only(), "stream"_a = nb::none(), "max_version"_a = nb::none(), "dl_device"_a = nb::none(),
         "copy"_a = nb::none())
      .def("__dlpack_device__", [](const Tensor& t) {
        const DLDeviceRef d = dl_device(t.device());
        return nb::make_tuple(d.type, d.id);
      });
}

}  // namespace kiln::py
