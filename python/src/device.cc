// kiln.device, as torch.device: kiln.device("cpu"), kiln.device("cuda", 1),
// kiln.device("cuda:1"); .type, .index (None when not given), torch's repr,
// equal only to another device (a string never equals a device in torch
// either), hashable. Also the conversion every device= argument goes through.
#include <nanobind/operators.h>

#include "bind_util.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace kiln::py {

namespace {

// A Python int device index in [lowest, 2**31); ValueError otherwise (-1 is torch's
// "no index" where an explicit index may be none).
int index_value(nb::handle h, long long lowest, const char* op) {
  int overflow = 0;
  const long long i = PyLong_AsLongLongAndOverflow(h.ptr(), &overflow);
  if (i == -1 && PyErr_Occurred()) throw nb::python_error();
  if (overflow < 0 || (overflow == 0 && i < lowest))
    throw ValueError(std::string("[") + op + "] device index must not be negative, got " + py_str(h));
  if (overflow > 0 || i > INT32_MAX)
    throw ValueError(std::string("[") + op + "] device index must be below 2**31, got " + py_str(h));
  return int(i);
}

// A device from one constructor argument (a device, a string, or torch's legacy
// int ordinal, which means a CUDA index); index: the explicit second argument.
Device make_device(nb::handle type, nb::handle index, const char* op) {
  if (nb::isinstance<Device>(type)) {
    if (!index.is_none()) throw TypeError(std::string("[") + op + "] an index cannot be given with a device");
    return nb::cast<Device>(type);
  }
  if (PyLong_Check(type.ptr()) && !PyBool_Check(type.ptr())) {
    if (!index.is_none())
      throw TypeError(std::string("[") + op + "] an index cannot be given with a device ordinal");
    return Device{DeviceKind::CUDA, index_value(type, 0, op)};
  }
  if (!nb::isinstance<nb::str>(type))
    throw TypeError(std::string("[") + op + "] expected a device type string (\"cpu\", \"cuda:1\"), a " +
                    "kiln.device or an int ordinal, got " + py_type_name(type));
  const Device d = Device::parse(utf8(type, op, "device string"), op);
  if (index.is_none()) return d;
  if (d.has_index())
    throw ValueError(std::string("[") + op + "] the device string '" + d.str() +
                     "' must not include an index when the index is passed separately");
  if (!PyLong_Check(index.ptr()) || PyBool_Check(index.ptr()))
    throw TypeError(std::string("[") + op + "] expected an int device index, got " + py_type_name(index));
  return Device::make(d.kind, index_value(index, -1, op), op);
}

std::string device_repr(const Device& d) {
  std::string s = std::string("device(type='") + device_kind_name(d.kind) + "'";
  if (d.has_index()) s += ", index=" + std::to_string(d.index);
  return s + ")";
}

}  // namespace

std::optional<Device> to_optional_device(nb::handle h, const char* op) {
  if (h.is_none()) return std::nullopt;
  if (nb::isinstance<Device>(h) || nb::isinstance<nb::str>(h) ||
      (PyLong_Check(h.ptr()) && !PyBool_Check(h.ptr())))
    return make_device(h, nb::none(), op);
  // Other libraries' devices (torch.device) print as "cpu", "cuda:0".
  if (nb::hasattr(h, "type") && nb::hasattr(h, "index")) return Device::parse(py_str(h), op);
  throw TypeError(std::string("[") + op + "] expected a device (\"cpu\", kiln.device(\"cpu\")), got " +
                  py_type_name(h));
}

Device check_device(nb::handle device, const char* op) {
  const Device d = to_optional_device(device, op).value_or(Device{});
  allocator_for(d, op);  // NotImplementedError for a device this build lacks
  return d;
}

void init_device(nb::module_& m) {
  nb::class_<Device>(m, "device",
                     "Where a tensor lives (torch.device): kiln.device('cpu'), kiln.device('cuda', 1), "
                     "kiln.device('cuda:1'). Only the CPU is available in this build.")
      .def(
          "__init__",
          [](Device* self, nb::handle type, nb::handle index) {
            new (self) Device(make_device(type, index, "device"));
          },
          "type"_a.none(), "index"_a.none() = nb::none())
      .def_prop_ro("type", [](const Device& d) { return device_kind_name(d.kind); })
      .def_prop_ro("index",
                   [](const Device& d) -> nb::object {
                     if (d.has_index()) return nb::int_(d.index);
                     return nb::none();
                   })
      .def("__repr__", &device_repr)
      .def("__str__", &Device::str)
      .def("__eq__",
           [](const Device& a, nb::handle b) -> nb::object {
             if (!nb::isinstance<Device>(b)) return nb::borrow(Py_NotImplemented);
             return nb::bool_(a == nb::cast<Device>(b));
           })
      .def("__ne__",
           [](const Device& a, nb::handle b) -> nb::object {
             if (!nb::isinstance<Device>(b)) return nb::borrow(Py_NotImplemented);
             return nb::bool_(!(a == nb::cast<Device>(b)));
           })
      .def("__hash__", [](const Device& d) { return nb::hash(nb::make_tuple(int(d.kind), d.index)); })
      .def("__reduce__", [](nb::handle self) {
        return nb::make_tuple(self.type(),
                              nb::make_tuple(nb::str(nb::cast<const Device&>(self).str().c_str())));
      });
  // For tests of device rules in a build that lacks the device: the same view over
  // t's host memory, in a storage that claims to live on `device`.
  m.def(
      "_claim_device",
      [](const Tensor& t, nb::handle device) {
        const Device d = to_optional_device(device, "_claim_device").value_or(Device{});
        const std::shared_ptr<Storage>& s = t.storage();
        auto claimed = std::make_shared<Storage>(
            s->data(), s->nbytes(), [keep = s] {}, d);
        return Tensor(claimed, t.dtype(), t.shape(), t.strides(), t.offset(), "_claim_device");
      },
      "tensor"_a, "device"_a, "Testing only: t's memory in a storage that claims to be on `device`.");
}

}  // namespace kiln::py
