// Python str / path arguments -> UTF-8 std::string with kiln messages. nanobind's
// own std::string caster refuses a str holding a lone surrogate (say "\ud800",
// which Python allows) with "incompatible function arguments"; these helpers
// name the op and the position instead.
#include "bind_util.h"

namespace nb = nanobind;

namespace kiln::py {
namespace {

// The index of the first lone surrogate in s (-1 if none).
Py_ssize_t first_surrogate(PyObject* s) {
  const Py_ssize_t n = PyUnicode_GetLength(s);
  for (Py_ssize_t i = 0; i < n; ++i) {
    const Py_UCS4 c = PyUnicode_ReadChar(s, i);
    if (c >= 0xD800 && c <= 0xDFFF) return i;
  }
  return -1;
}

std::string hex4(Py_UCS4 c) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "U+%04X", unsigned(c));
  return buf;
}

[[noreturn]] void throw_surrogate(PyObject* s, const char* op, const char* what, const char* why) {
  PyErr_Clear();
  const Py_ssize_t i = first_surrogate(s);
  if (i < 0) throw nb::python_error();  // some other failure (memory)
  throw ValueError(std::string("[") + op + "] " + what + " " + why + " (lone surrogate " +
                   hex4(PyUnicode_ReadChar(s, i)) + " at index " + std::to_string(i) + ")");
}

}  // namespace

std::string py_str(nb::handle h) {
  nb::object s = nb::steal(PyObject_Str(h.ptr()));
  if (!s.is_valid()) throw nb::python_error();
  Py_ssize_t n = 0;
  const char* p = PyUnicode_AsUTF8AndSize(s.ptr(), &n);
  if (p == nullptr) {  // lone surrogates: write the value escaped
    PyErr_Clear();
    return py_repr(h);
  }
  return std::string(p, size_t(n));
}

std::string py_repr(nb::handle h) {
  // ascii(): escapes everything outside ASCII, so the text is always valid UTF-8.
  nb::object s = nb::steal(PyObject_ASCII(h.ptr()));
  if (!s.is_valid()) throw nb::python_error();
  Py_ssize_t n = 0;
  const char* p = PyUnicode_AsUTF8AndSize(s.ptr(), &n);
  if (p == nullptr) throw nb::python_error();
  return std::string(p, size_t(n));
}

std::string py_type_name(nb::handle h) { return Py_TYPE(h.ptr())->tp_name; }

std::string_view utf8(nb::handle h, const char* op, const char* what) {
  if (!PyUnicode_Check(h.ptr()))
    throw TypeError(std::string("[") + op + "] " + what + " must be a str, got " + py_type_name(h));
  Py_ssize_t n = 0;
  const char* p = PyUnicode_AsUTF8AndSize(h.ptr(), &n);
  if (p == nullptr) throw_surrogate(h.ptr(), op, what, "is not valid Unicode");
  return {p, size_t(n)};
}

std::optional<std::string_view> optional_utf8(nb::handle h, const char* op, const char* what) {
  if (h.is_none()) return std::nullopt;
  return utf8(h, op, what);
}

std::string to_path(nb::handle h, const char* op) {
  PyObject* o = h.ptr();
  if (!PyUnicode_Check(o) && !PyBytes_Check(o) && !PyObject_HasAttrString(o, "__fspath__"))
    throw TypeError(std::string("[") + op + "] expected a path (str, bytes or os.PathLike), got " +
                    py_type_name(h));
  nb::object fs = nb::steal(PyOS_FSPath(o));
  if (!fs.is_valid()) throw nb::python_error();
  // The file-system encoding with surrogateescape, as open() does: "\udcff" is the byte 0xff.
  nb::object bytes = PyBytes_Check(fs.ptr()) ? fs : nb::steal(PyUnicode_EncodeFSDefault(fs.ptr()));
  if (!bytes.is_valid()) throw_surrogate(fs.ptr(), op, "path", "cannot be encoded for the file system");
  char* p = nullptr;
  Py_ssize_t n = 0;
  if (PyBytes_AsStringAndSize(bytes.ptr(), &p, &n) != 0) throw nb::python_error();
  if (std::memchr(p, 0, size_t(n)) != nullptr)
    throw ValueError(std::string("[") + op + "] path " + py_repr(fs) + " contains a NUL byte");
  return std::string(p, size_t(n));
}

}  // namespace kiln::py
