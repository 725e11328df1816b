// kiln.memory_format: torch's memory-format singletons (repr kiln.channels_last,
// ...) and kiln.suggest_memory_format. The methods that take memory_format= are
// bound with Tensor (tensor.cc) and the factories (factories.cc).
#include "memory_format.h"

#include <array>
#include <string>

#include "bind_util.h"

namespace kiln::py {

using namespace nb::literals;

namespace {

struct PyMemoryFormat {
  MemoryFormat value;
};

constexpr std::array kFormats = {MemoryFormat::Contiguous, MemoryFormat::ChannelsLast,
                                 MemoryFormat::ChannelsLast3d, MemoryFormat::Preserve};
std::array<PyObject*, kFormats.size()> g_objects{};  // module attributes keep them alive

std::string repr(MemoryFormat f) { return std::string("kiln.") + memory_format_name(f); }

nb::object format_object(MemoryFormat f) { return nb::borrow(g_objects[size_t(f)]); }

}  // namespace

MemoryFormat to_memory_format(nb::handle h, const char* op, MemoryFormat fallback) {
  if (h.is_none()) return fallback;
  if (nb::isinstance<PyMemoryFormat>(h)) return nb::cast<PyMemoryFormat&>(h).value;
  // torch.channels_last and friends, by name, so torch code runs unchanged.
  if (std::string(nb::str(nb::getattr(h.type(), "__name__")).c_str()) == "memory_format") {
    const std::string s = nb::str(h).c_str();
    for (MemoryFormat f : kFormats)
      if (s == std::string("torch.") + memory_format_name(f)) return f;
  }
  throw TypeError(std::string("[") + op +
                  "] memory_format must be a kiln.memory_format (e.g. "
                  "kiln.channels_last), got " +
                  py_type_name(h));
}

}  // namespace kiln::py

void init_memory_format(nanobind::module_& m) {
  using namespace kiln;
  using namespace kiln::py;
  nb::class_<PyMemoryFormat>(m, "memory_format",
                             "A tensor memory format (kiln.contiguous_format, kiln.channels_last, "
                             "kiln.channels_last_3d, kiln.preserve_format), as torch's.")
      .def("__repr__", [](const PyMemoryFormat& f) { return repr(f.value); })
      .def("__str__", [](const PyMemoryFormat& f) { return repr(f.value); })
      .def("__eq__",
           [](const PyMemoryFormat& a, nb::handle b) -> nb::object {
             if (!nb::isinstance<PyMemoryFormat>(b)) return nb::borrow(Py_NotImplemented);
             return nb::bool_(a.value == nb::cast<PyMemoryFormat&>(b).value);
           })
      .def("__ne__",
           [](const PyMemoryFormat& a, nb::handle b) -> nb::object {
             if (!nb::isinstance<PyMemoryFormat>(b)) return nb::borrow(Py_NotImplemented);
             return nb::bool_(a.value != nb::cast<PyMemoryFormat&>(b).value);
           })
      .def("__hash__", [](const PyMemoryFormat& f) { return int(f.value) + 0x6d656d66; })
      .def("__reduce__", [](const PyMemoryFormat& f) { return std::string(memory_format_name(f.value)); });
  for (MemoryFormat f : kFormats) {
    nb::object o = nb::cast(PyMemoryFormat{f});
    g_objects[size_t(f)] = o.ptr();
    m.attr(memory_format_name(f)) = o;
  }
  m.def(
      "suggest_memory_format",
      [](const Tensor& t, bool exact_match) { return format_object(suggest_memory_format(t, exact_match)); },
      "input"_a, "channels_last_strides_exact_match"_a = false,
      "torch's suggest_memory_format: kiln.channels_last(_3d) when the strides order the dims as channels "
      "last, else kiln.contiguous_format.");
}
